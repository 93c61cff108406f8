"""The repository reads as a product, not a lab notebook: what users and contributors read carries
no development history, and every link in it leads somewhere.

Where: README.md, CHANGELOG.md, CONTRIBUTING.md and every page under docs/ (all of their text);
the comments and docstrings of every Python module under pipeline/, benchmarks/ and tests/ (but
this one, whose examples must show what is refused) and the comments of chatlake's own C sources
(pipeline/_native, not the vendored yyjson); and the names of tests (test files, test functions
and test classes under tests/).

What is refused there (:data:`RULES`, case-insensitive):

* a **development-round label**: "session", "round", "sprint" or "iteration" followed by a number
  ("session 9", "sessions 8-9", "round 3"). A round *trip* has no number; "stage 1" and "phase"
  (a field of the canonical table) are not on the list.
* a **tracker reference**: "issue" or "issues" followed by a number, with or without ``#``
  ("issue 16's target", "issues 3, 14"). Other numbers are not references: an HTTP status
  ("error 429", "status 500"), a count or a version.
* an **absolute path of a development machine**: anything under ``/work/``, ``/root/``, ``/home/``,
  ``/Users/`` or ``/mnt/``, and a path two or more levels under ``/tmp/`` (``/tmp/hA/in.jsonl``:
  a scratch tree of one machine). One name right under ``/tmp`` (``/tmp/s50k.jsonl``), ``~/``
  paths (``~/.codex/sessions/``) and system paths (``/dev/shm``, ``/usr/bin/time``) are what a user
  would type anywhere, and stay.

A docs link (``[text](target)``) to a file of the repository must name one that exists, and a
``#fragment`` into a Markdown file must be one of its headings (GitHub's anchor rule).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RULES = {
    "development-round label": re.compile(r"\b(?:sessions?|rounds?|sprints?|iterations?)\s+\d+", re.I),
    "tracker reference": re.compile(r"\bissues?\s+#?\d+", re.I),
    "machine path": re.compile(r"(?<![\w.~-])/(?:(?:work|root|home|Users|mnt)/|tmp/[^\s/`'\")]+/[^\s`'\")])"),
}


def prose_files() -> list[Path]:
    """The files users and contributors read as text."""
    top = [ROOT / name for name in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md")]
    return [p for p in top if p.is_file()] + sorted((ROOT / "docs").rglob("*.md"))


def python_commentary(path: Path) -> list[tuple[int, str]]:
    """A Python module's comments and docstrings, with the line each starts on."""
    text = path.read_text()
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                first.value.value, str
            ):
                found.append((first.lineno, first.value.value))
    return found


C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def c_commentary(path: Path) -> list[tuple[int, str]]:
    """A C source's comments, with the line each starts on (string literals are not comments, but
    chatlake's C holds no ``/*`` or ``//`` inside one)."""
    text = path.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group()) for m in C_COMMENT.finditer(text)]


def code_files() -> list[Path]:
    """Sources whose comments are checked: pipeline/, benchmarks/ and tests/ Python, chatlake's own C."""
    python = [
        p
        for folder in ("pipeline", "benchmarks", "tests")
        for p in sorted((ROOT / folder).rglob("*.py"))
        if p != Path(__file__).resolve()
    ]
    native = ROOT / "pipeline" / "_native"
    c = sorted(p for p in native.rglob("*") if p.suffix in (".c", ".h") and "vendor" not in p.parts)
    return python + c


def named_tests() -> list[tuple[Path, int, str]]:
    """Every test file's name and the names of its test functions and classes."""
    found = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        found.append((path, 0, path.name))
        for node in ast.walk(ast.parse(path.read_text())):
            named = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            if named and node.name.startswith(("test", "Test")):
                found.append((path, node.lineno, node.name))
    return found


def _hits(text: str) -> list[str]:
    return [f"{rule}: {m.group()!r}" for rule, rx in RULES.items() for m in rx.finditer(text)]


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def test_the_rules_catch_what_they_should_and_nothing_else() -> None:
    """The patterns themselves, on the kinds of text the module docstring names."""
    caught = (
        "Session 9's figures", "sessions 8-9 measured", "round 3", "issue 16's target", "(issues 3, 14)",
        "issue #7", "/work/bench10/run.sh", "/root/.cache/x", "/home/ann/data", "/tmp/hC/prof/stages.py",
    )  # fmt: skip
    kept = (
        "a round trip", "A → B → A round trips", "stage 1 partitions", "HTTP 429 and 500 responses",
        "status 404", "the session's id", "phase", "/tmp/s50k.jsonl", "~/.codex/sessions/", "/dev/shm",
        "/usr/bin/time -v", "bench-out/job-full", "an issue with the input", "2 issues",
    )  # fmt: skip
    assert [t for t in caught if not _hits(t)] == []
    assert [(t, _hits(t)) for t in kept if _hits(t)] == []


def test_prose_has_no_history_labels_or_machine_paths() -> None:
    found = [
        f"{_where(p, n)}: {hit}"
        for p in prose_files()
        for n, line in enumerate(p.read_text().splitlines(), 1)
        for hit in _hits(line)
    ]
    assert found == [], "\n".join(found)


def test_test_names_have_no_history_labels() -> None:
    names = named_tests()
    assert len(names) > 500  # the collector found the suite
    found = [f"{_where(p, n)}: {hit}" for p, n, name in names for hit in _hits(name.replace("_", " "))]
    assert found == [], "\n".join(found)


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown file: lower case, punctuation dropped, spaces to ``-``."""
    out, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and (m := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)):
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-"))
    return out


@pytest.mark.parametrize("doc", prose_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_lead_somewhere(doc: Path) -> None:
    broken = []
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):  # https:, mailto: ...
                continue
            name, _, fragment = target.partition("#")
            file = (doc.parent / name).resolve() if name else doc
            if not file.exists():
                broken.append(f"{_where(doc, n)}: {target} (no such file)")
            elif fragment and file.suffix == ".md" and fragment not in _anchors(file):
                broken.append(f"{_where(doc, n)}: {target} (no such heading)")
    assert broken == [], "\n".join(broken)
