"""Which run a name means (pipeline/audit/locate.py): a path, a run id, latest; the notebook's run."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.audit import locate
from pipeline.audit.locate import notebook_run, resolve_run
from pipeline.catalog import Catalog
from pipeline.errors import ConfigError


def _catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(tmp_path / "cat.duckdb")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    cat.start("job-1", "job", str(tmp_path / "a"), "local", "2026-01-01T00:00:00Z", "")
    cat.start("job-2", "job", str(tmp_path / "b"), "local", "2026-01-02T00:00:00Z", "")
    return cat


def test_resolve_run_takes_a_path_a_run_id_or_latest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cat = _catalog(tmp_path)
    assert resolve_run("job-1", cat.path) == tmp_path / "a"
    assert resolve_run("latest", cat.path) == tmp_path / "b"
    monkeypatch.chdir(tmp_path)
    assert resolve_run("a", cat.path) == Path("a")  # an existing directory wins
    assert resolve_run("runs/none", cat.path) == Path("runs/none")  # a path: its reader says it is missing
    with pytest.raises(ConfigError, match="'job-3' is neither a run directory nor a run id in the catalog"):
        resolve_run("job-3", cat.path)


def test_notebook_run_from_the_environment_the_catalog_or_the_quick_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(locate, "REPO", tmp_path / "repo")
    monkeypatch.setattr(locate, "SAMPLE_RUN", tmp_path / "repo" / "runs" / "sample")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CHATLAKE_RUN", raising=False)
    empty = tmp_path / "empty.duckdb"
    hint = r"no run to audit: set CHATLAKE_RUN .*`chatlake run jobs/sample\.toml`"
    with pytest.raises(ConfigError, match=hint):
        notebook_run(empty)
    (tmp_path / "repo" / "runs" / "sample").mkdir(parents=True)
    assert notebook_run(empty) == tmp_path / "repo" / "runs" / "sample"
    cat = _catalog(tmp_path)
    assert notebook_run(cat.path) == tmp_path / "b"  # the latest run
    monkeypatch.setenv("CHATLAKE_RUN", "job-1")
    assert notebook_run(cat.path) == tmp_path / "a"
    monkeypatch.setenv("CHATLAKE_RUN", "runs/sample")  # relative to the repository, from anywhere
    assert notebook_run(cat.path) == tmp_path / "repo" / "runs" / "sample"
    monkeypatch.setenv("CHATLAKE_RUN", str(tmp_path / "a"))
    assert notebook_run(cat.path) == tmp_path / "a"
