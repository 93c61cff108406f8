"""Which run directory a user means: a path, a run id from the catalog, or ``latest``.

Shared by the commands that read a run (audit, sql, export-hf, verify) and the notebook, so a run
id means the same thing everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.catalog import Catalog
from pipeline.errors import ConfigError
from pipeline.storage import as_path

# the checkout this package runs from: notebooks/ and the quick start's runs/ are relative to it
REPO = Path(__file__).resolve().parents[2]
SAMPLE_RUN = REPO / "runs" / "sample"  # where jobs/sample.toml (the quick start) writes


def resolve_run(run: str | Path, catalog: str | Path | None = None) -> Path | str:
    """RUN as given: a path that exists; else a run id (or ``latest``) in the catalog (its URL, as a
    string, for a run written to object storage: docs/storage.md#outputs).

    A name with a directory part (``runs/r1``) is a path whatever the catalog holds: it is returned
    as is, so the caller says it does not exist. Raises ConfigError for a bare name that is
    neither a directory nor a run id of the catalog (default: :func:`pipeline.catalog.default_catalog`).
    """
    path = Path(run)
    if path.exists() or len(path.parts) > 1:
        return path
    cat = Catalog(catalog)
    found = cat.run_dir(str(run))
    if found is None:
        raise ConfigError(
            f"{str(run)!r} is neither a run directory nor a run id in the catalog {cat.path} "
            "(`chatlake runs` lists the runs and their ids)"
        )
    return as_path(found)


def notebook_run(catalog: str | Path | None = None) -> Path:
    """The run ``notebooks/audit.ipynb`` looks at, from whatever directory the notebook runs in.

    ``CHATLAKE_RUN`` when set (a path, relative to the current directory or to the repository, or a
    run id, or ``latest``); else the latest run in the catalog whose directory still exists; else
    the quick start's ``runs/sample`` of the repository. Raises ConfigError saying what to do when
    there is none.
    """
    given = os.environ.get("CHATLAKE_RUN")
    if given:
        in_repo = REPO / given
        if not Path(given).exists() and not Path(given).is_absolute() and in_repo.exists():
            return in_repo
        found = resolve_run(given, catalog)
        if isinstance(found, str):
            raise ConfigError(f"CHATLAKE_RUN {given!r} is at a URL ({found}); the notebook reads local runs")
        return found
    latest = Catalog(catalog).run_dir("latest")
    if latest is not None and Path(latest).is_dir():
        return Path(latest)
    if SAMPLE_RUN.is_dir():
        return SAMPLE_RUN
    raise ConfigError(
        "no run to audit: set CHATLAKE_RUN to a run directory or run id, or run the quick start "
        f"(`chatlake run jobs/sample.toml` in {REPO}) first"
    )
