"""setup.py builds pipeline._native when it can and installs without it when it cannot.

Both tests run ``setup.py build_ext --inplace`` on a copy of setup.py and pipeline/ in a temp dir
(without pyproject.toml: the venv's own setuptools is older than the one pip's isolated build
uses, and build_ext does not need the project metadata), then import that copy in a subprocess.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXT = sysconfig.get_config_var("EXT_SUFFIX")
PROBE = """
import pipeline, sys
from pipeline import codec
from pipeline.formats import decode_lines
assert pipeline.__file__.startswith(sys.argv[1]), pipeline.__file__
from pipeline.encoders.encode_rows import encode_rows
res = decode_lines([b'{"input": "hi", "a": 1.5e3}'], "responses")
enc = encode_rows(res.table, "chat")
print(codec.status().native, res.table.num_rows, res.native_fallback, enc.native.to_pylist())
"""


def _copy(tmp: Path) -> Path:
    shutil.copy(ROOT / "setup.py", tmp / "setup.py")
    shutil.copytree(
        ROOT / "pipeline", tmp / "pipeline", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__")
    )
    return tmp


def _build(tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=tmp,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _probe(tmp: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "CHATLAKE_NATIVE"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp)], cwd=tmp, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_install_without_a_compiler_warns_and_runs_the_python_codec(tmp_path: Path) -> None:
    tmp = _copy(tmp_path)
    res = _build(tmp, CC="/bin/false", LDSHARED="/bin/false")
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("WARNING: chatlake's compiled decoder (pipeline._native) could not be built") == 1
    assert not list((tmp / "pipeline").glob(f"_native{EXT}"))
    assert _probe(tmp) == "False 1 {} [False]"


def test_require_native_makes_a_failed_compile_fatal(tmp_path: Path) -> None:
    res = _build(_copy(tmp_path), CC="/bin/false", LDSHARED="/bin/false", CHATLAKE_REQUIRE_NATIVE="1")
    assert res.returncode != 0


@pytest.mark.skipif(shutil.which(sysconfig.get_config_var("CC").split()[0]) is None, reason="no C compiler")
def test_setup_py_builds_a_working_extension(tmp_path: Path) -> None:
    tmp = _copy(tmp_path)
    res = _build(tmp)
    assert res.returncode == 0, res.stderr
    assert (tmp / "pipeline" / f"_native{EXT}").exists(), res.stdout + res.stderr
    assert _probe(tmp) == "True 1 {'number': 1} [True]"


def test_every_c_file_is_built_by_setup_py_and_the_sanitizer_build() -> None:
    """A C file under pipeline/_native that setup.py does not list would be missing from wheels and
    from the ASan/UBSan build alike (tests/native/build_native.py reads setup.py's list)."""
    from tests.native.build_native import SOURCES, SRC

    ours = set(SRC.glob("*.c")) | {SRC / "vendor" / "yyjson" / "yyjson.c"}
    assert set(SOURCES) == ours, sorted(p.name for p in ours ^ set(SOURCES))
