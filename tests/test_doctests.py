"""The examples in pipeline's docstrings run and print what they show (``>>>`` blocks).

An example nobody runs drifts from the code it documents; this runs every one of them, module by
module, the way ``python -m doctest`` would.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PIPELINE = Path(__file__).resolve().parents[1] / "pipeline"
SKIP = {"pipeline.__main__"}  # runs the CLI when imported


def _modules() -> list[str]:
    names = []
    for path in sorted(PIPELINE.rglob("*.py")):
        parts = path.relative_to(PIPELINE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name not in SKIP:
            names.append(name)
    return names


def _with_examples() -> list[str]:
    return [name for name in _modules() if ">>>" in _source(name)]


def _source(name: str) -> str:
    rel = Path(*name.split("."))
    path = PIPELINE.parent / rel.with_suffix(".py")
    return (path if path.exists() else PIPELINE.parent / rel / "__init__.py").read_text(encoding="utf-8")


def test_every_module_with_examples_is_checked() -> None:
    """The list below is not empty and names real modules (a broken walk would pass vacuously)."""
    assert "pipeline.transforms._flat" in _with_examples()
    assert "pipeline.engine.dropped" in _with_examples()


@pytest.mark.parametrize("name", _with_examples())
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(module, name) if t.examples]
    assert tests, f"{name} has '>>>' in its source but no example doctest finds"
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} example(s) of {name} failed (output above)"
