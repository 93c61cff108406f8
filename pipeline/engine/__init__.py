"""The job engine: sharded, resumable, streaming execution of a job (local processes or Ray Data).

See docs/jobs.md for the job file and docs/run-layout.md for what a run writes. Imports are lazy so
that worker processes, which only need :mod:`pipeline.engine.process`, do not load DuckDB and rich.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SUMMARY", "JobFailed", "TooManyRejected", "run_job"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from pipeline.engine import run

        return getattr(run, name)
    raise AttributeError(name)
