"""``manifest.json``: the job's fingerprint and the shards that are finished, sorted by id.

Written atomically after every finished shard. It holds no timestamps, so a resumed run and an
uninterrupted one end with the same manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from pipeline.errors import ConfigError

from .atomic import write_atomic
from .join_log import joined_files

MANIFEST = "manifest.json"
VERSION = 1


def check_files(run_dir: Path, entry: dict[str, Any]) -> list[str]:
    """What is wrong with the files of one manifest entry: missing, or bytes / sha256 not as listed.

    Sizes are compared first, so a truncated file is found without reading it. A single-file
    layout's staged file that the join appended and deleted is not missing (engine/join_log.py).
    """
    from .writers import sha256_file  # writers imports pyarrow: only when a resume checks files

    problems = []
    joined: frozenset[str] | None = None
    for f in entry["files"].values():
        path = run_dir / f["path"]
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            joined = joined_files(run_dir) if joined is None else joined
            if f["path"] not in joined:
                problems.append(f"{f['path']}: missing")
            continue
        if size != f["bytes"]:
            problems.append(f"{f['path']}: {size} bytes, the manifest says {f['bytes']}")
        elif sha256_file(path) != f["sha256"]:
            problems.append(f"{f['path']}: sha256 differs from the manifest (the file changed)")
    return problems


class Manifest:
    """Finished shards of one run directory."""

    def __init__(self, run_dir: Path, job: str, fingerprint: str) -> None:
        self.path = run_dir / MANIFEST
        self.job = job
        self.fingerprint = fingerprint
        self.shards: dict[str, dict[str, Any]] = {}
        # stage 1 of a two-stage job (engine/partition.py): its shards, apart from the output shards
        self.partitions: dict[str, dict[str, Any]] = {}

    @classmethod
    def open(cls, run_dir: Path, job: str, fingerprint: str) -> Manifest:
        """Load the run directory's manifest (a new one when absent); ConfigError if another job's."""
        m = cls(run_dir, job, fingerprint)
        if not m.path.exists():
            return m
        try:
            doc = orjson.loads(m.path.read_bytes())
        except orjson.JSONDecodeError:
            raise ConfigError(f"{m.path} is not valid JSON; pass --fresh to start over") from None
        if doc.get("job", job) != job:  # the same work under another name: another job's directory
            raise ConfigError(
                f"{run_dir} holds a run of job {doc['job']!r}, not {job!r}; give this job another "
                "output.path, use the job's old name, or pass --fresh to delete it and start over"
            )
        if doc.get("fingerprint") != fingerprint:
            raise ConfigError(
                f"{run_dir} holds a run of another job (or of changed inputs or settings); "
                "choose another output.path, or pass --fresh to delete it and start over"
            )
        m.shards = {s["id"]: s for s in doc.get("shards", [])}
        m.partitions = {s["id"]: s for s in doc.get("partitions", [])}
        return m

    def problem(self, shard_id: str) -> str | None:
        """Why a listed shard's files cannot be trusted (the first bad file), None when they can.

        A file that went missing, or whose bytes or sha256 differ from the entry (truncated, bit
        flipped, overwritten), makes the shard be redone rather than kept.
        """
        return self.problem_of(self.shards[shard_id])

    def problem_of(self, entry: dict[str, Any]) -> str | None:
        """:meth:`problem` for any entry (an output shard's or a stage-1 shard's)."""
        problems = check_files(self.path.parent, entry)
        return problems[0] if problems else None

    def add(self, entry: dict[str, Any]) -> None:
        self.shards[entry["id"]] = entry
        self.save()

    def add_partition(self, entry: dict[str, Any]) -> None:
        """List a finished stage-1 shard of a two-stage job (under ``partitions``)."""
        self.partitions[entry["id"]] = entry
        self.save()

    def save(self) -> None:
        doc = {
            "version": VERSION,
            "job": self.job,
            "fingerprint": self.fingerprint,
            "shards": [self.shards[k] for k in sorted(self.shards)],
        }
        if self.partitions:  # only a two-stage job's manifest has the key
            doc["partitions"] = [self.partitions[k] for k in sorted(self.partitions)]
        write_atomic(self.path, orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
