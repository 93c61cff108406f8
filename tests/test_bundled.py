"""pipeline/bundled.py: the audit queries and the quick start's files, found in the checkout or the wheel."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pipeline import bundled

ROOT = Path(__file__).resolve().parents[1]


def test_setup_bundles_what_the_package_looks_for() -> None:
    """setup.py's copy list is pipeline.bundled.RESOURCES (setup.py cannot import the package)."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    [value] = [n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "BUNDLED"]
    assert ast.literal_eval(value) == bundled.RESOURCES


def test_checkout_resources_are_the_repository_folders() -> None:
    assert bundled.resource_dir("sql") == ROOT / "sql"
    assert [p.name for p in bundled.resource_files("jobs")] == ["sample.toml"]
    assert {p.name for p in bundled.resource_files("data")} == {
        "sample-anthropic.jsonl", "sample-chat.jsonl", "sample-responses.jsonl"}  # fmt: skip


def test_the_wheel_copy_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed package reads its own copy, never a folder that happens to sit beside it."""
    (tmp_path / "_bundled" / "sql").mkdir(parents=True)
    monkeypatch.setattr(bundled, "BUNDLED", tmp_path / "_bundled")
    assert bundled.resource_dir("sql") == tmp_path / "_bundled" / "sql"


def test_missing_resources_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither copy (a broken install): an error naming both places, not an empty audit."""
    monkeypatch.setattr(bundled, "BUNDLED", tmp_path / "_bundled")
    monkeypatch.setattr(bundled, "CHECKOUT", tmp_path)
    with pytest.raises(FileNotFoundError, match="reinstall chatlake"):
        bundled.resource_dir("sql")
