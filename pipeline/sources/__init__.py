"""Source adapters: the files agent tools and eval harnesses write -> the canonical table.

Each adapter reads one file and yields :class:`SourceResult` batches whose table has
``provenance`` filled (``source`` = the adapter name). See ``docs/sources.md``.

>>> from pathlib import Path
>>> sorted(SOURCES)  # doctest: +NORMALIZE_WHITESPACE
['claude-code', 'codex-rollout', 'http-cassette', 'inspect-log', 'kiln', 'llamafactory', 'sharegpt',
 'swe-agent', 'tau-bench']
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigError
from pipeline.sources import (
    claude_code,
    codex_rollout,
    http_cassette,
    inspect_log,
    kiln,
    llamafactory,
    sharegpt,
    swe_agent,
    tau_bench,
)
from pipeline.sources._base import SourceResult, check_options
from pipeline.sources.detect import detect_source
from pipeline.storage import as_path


@dataclass(frozen=True)
class SourceAdapter:
    """One source: its name, the options it takes (name -> type) and its reader."""

    name: str
    options: dict[str, type]
    read: Callable[..., Iterator[SourceResult]]
    doc: str


SOURCES: dict[str, SourceAdapter] = {
    m.NAME: SourceAdapter(m.NAME, m.OPTIONS, m.read, (m.__doc__ or "").strip().splitlines()[0])
    for m in (
        codex_rollout,
        claude_code,
        inspect_log,
        tau_bench,
        swe_agent,
        kiln,
        sharegpt,
        llamafactory,
        http_cassette,
    )
}


def read_source(path: Path, source: str, **options: Any) -> Iterator[SourceResult]:
    """Read ``path`` with adapter ``source`` (``"auto"``: detected from the file).

    Unknown sources and options raise :class:`~pipeline.errors.ConfigError` before reading.
    """
    path = as_path(path)  # a URL stays a string
    if source == "auto":
        detected = detect_source(path)
        if detected is None:
            raise ConfigError(f"cannot tell which source {str(path)!r} is; pass --from with one of {names()}")
        source = detected
    adapter = SOURCES.get(source)
    if adapter is None:
        raise ConfigError(f"unknown source {source!r}; use one of {names()}")
    check_options(source, options, adapter.options)
    return adapter.read(path, **options)


def names() -> str:
    return ", ".join(SOURCES)


__all__ = ["SOURCES", "SourceAdapter", "SourceResult", "detect_source", "read_source"]
