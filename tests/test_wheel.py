"""The built wheel works where users install it: outside the checkout, in a fresh virtualenv.

One wheel is built (``pip wheel --no-deps``) from a copy of the files an sdist holds and installed into
one fresh virtualenv (no system site-packages; dependencies come from the pip cache); every test of
the module runs the installed ``chatlake`` from a directory outside the checkout, so nothing can be
read from the repository by accident: the quick start (``chatlake quickstart``, ``run``), ``audit``
(every query of ``sql/`` gives its result) and ``audit --html``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# what setup.py needs to build (the sdist's contents: MANIFEST.in and the package)
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "pipeline", "sql", "jobs", "data")
BUILD_TIMEOUT_S = 600  # compiling the codec on a busy 2-core machine
INSTALL_TIMEOUT_S = 600  # the dependencies from the warm pip cache
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT_S + INSTALL_TIMEOUT_S + 300)


def _run(args: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> str:
    """Run a command; its stdout, or a failure with everything it printed."""
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert p.returncode == 0, f"{' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    assert "Traceback" not in p.stderr, p.stderr
    return p.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once for the module from a copy of the source files (the checkout stays clean)."""
    src = tmp_path_factory.mktemp("wheel-src")
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.o", "_bundled")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)], src,
         BUILD_TIMEOUT_S)  # fmt: skip
    [whl] = out.glob("chatlake-*.whl")
    return whl


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a fresh virtualenv with the wheel installed (PATH first to its bin/)."""
    venv = tmp_path_factory.mktemp("wheel-venv") / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], venv.parent, 120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", str(wheel)]
    _run(pip, venv.parent, INSTALL_TIMEOUT_S)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(tmp_path_factory.mktemp("wheel-home"))
    env["XDG_DATA_HOME"] = str(Path(env["HOME"]) / ".local" / "share")
    env.pop("CHATLAKE_CATALOG", None)
    return env


@pytest.fixture(scope="module")
def quick_start(installed: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quick start run by the installed chatlake in a directory outside the checkout."""
    where = tmp_path_factory.mktemp("wheel-user")
    _run(["chatlake", "quickstart", "demo"], where, 120, installed)
    demo = where / "demo"
    _run(["chatlake", "run", "jobs/sample.toml"], demo, 300, installed)
    return demo


def test_the_wheel_holds_every_bundled_file(wheel: Path) -> None:
    """Every audit query and the quick start's job and data are package data of the wheel."""
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"pipeline/_bundled/sql/{p.name}" for p in (ROOT / "sql").glob("*.sql")}
    expected |= {"pipeline/_bundled/jobs/sample.toml"}
    expected |= {f"pipeline/_bundled/data/{p.name}" for p in (ROOT / "data").glob("sample-*.jsonl")}
    assert expected <= names, sorted(expected - names)


def test_installed_chatlake_runs_outside_the_checkout(installed: dict[str, str], tmp_path: Path) -> None:
    """The installed package is the one imported (not the checkout), with its bundled files."""
    code = "import pipeline, pipeline.bundled as b; print(pipeline.__file__); print(b.resource_dir('sql'))"
    where = _run(["python", "-c", code], tmp_path, 60, installed).split()
    assert all(ROOT not in Path(p).parents for p in where), where
    assert Path(where[1]).name == "sql" and Path(where[1]).parent.name == "_bundled"


def test_quick_start_and_audit_every_query(quick_start: Path, installed: dict[str, str]) -> None:
    """``chatlake audit RUN`` runs every query of sql/ and prints each one's rows."""
    out = json.loads(_run(["chatlake", "audit", "runs/sample", "--format", "json"], quick_start, 300,
                          installed))  # fmt: skip
    assert set(out) == {p.stem for p in (ROOT / "sql").glob("*.sql")}
    assert all(isinstance(rows, list) for rows in out.values()), out
    assert out["loss_totals_by_kind"], "the sample job converts with losses; the totals list them"


def test_audit_html_report(quick_start: Path, installed: dict[str, str]) -> None:
    """``audit --html`` writes the report (its charts come from the bundled queries)."""
    _run(["chatlake", "audit", "runs/sample", "--query", "loss_totals_by_kind", "--html", "r.html"],
         quick_start, 300, installed)  # fmt: skip
    html = (quick_start / "r.html").read_text()
    assert "<svg" in html and "loss" in html.lower()
