"""``manifest.json``: the job's fingerprint and the shards that are finished, sorted by id.

A finished shard is appended to ``manifest.journal`` as one JSON line (``{"shards": entry}`` or
``{"partitions": entry}``); ``manifest.json`` is written whole (atomically) only when the run
starts listing shards and when it ends, and the journal is then folded in and removed. So a run's
cost per shard does not grow with the number of shards (rewriting the whole manifest after each
one wrote 67 GB for 10,000 one-record files). Reading a manifest (:func:`read`) applies the
journal's lines in order, a later line for the same id replacing an earlier one; a last line cut
short by a kill is ignored (its shard is redone). The manifest holds no timestamps, so a resumed
run and an uninterrupted one end with the same manifest.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from pipeline.errors import ConfigError

from .atomic import write_atomic

MANIFEST = "manifest.json"
JOURNAL = "manifest.journal"
VERSION = 1
_LISTS = ("shards", "partitions")


def dumps(doc: dict[str, Any]) -> bytes:
    """A manifest document's bytes, as ``manifest.json`` holds them."""
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def read(run_dir: Path) -> dict[str, Any]:
    """``manifest.json`` with the journal's entries applied (shards and partitions sorted by id).

    Raises FileNotFoundError when there is no manifest, orjson.JSONDecodeError when it is not JSON.
    """
    doc = orjson.loads((run_dir / MANIFEST).read_bytes())
    try:
        lines = (run_dir / JOURNAL).read_bytes().split(b"\n")
    except FileNotFoundError:
        return doc
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for line in lines:
        try:
            item = orjson.loads(line)
            key = next(k for k in _LISTS if k in item)
            found.setdefault(key, {})[item[key]["id"]] = item[key]
        except (orjson.JSONDecodeError, StopIteration, KeyError, TypeError):
            break  # an empty or cut-short last line
    for key, entries in found.items():
        merged = {e["id"]: e for e in doc.get(key, [])} | entries
        doc[key] = [merged[k] for k in sorted(merged)]
    return doc


def check_files(run_dir: Path, entry: dict[str, Any]) -> list[str]:
    """What is wrong with the files of one manifest entry: missing, or bytes / sha256 not as listed.

    Sizes are compared first, so a truncated file is found without reading it. A shard appended
    to a single file (no ``path``) is checked by engine/single_file.py when the run resumes.
    """
    from .writers import sha256_file  # writers imports pyarrow: only when a resume checks files

    problems = []
    for f in entry["files"].values():
        if "path" not in f:
            continue
        path = run_dir / f["path"]
        try:
            size = path.stat().st_size
        except FileNotFoundError:
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
            doc = read(run_dir)
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
        """List a finished shard (one line appended to the journal)."""
        self.shards[entry["id"]] = entry
        self._append("shards", entry)

    def add_partition(self, entry: dict[str, Any]) -> None:
        """List a finished stage-1 shard of a two-stage job (under ``partitions``)."""
        self.partitions[entry["id"]] = entry
        self._append("partitions", entry)

    def _append(self, key: str, entry: dict[str, Any]) -> None:
        if not self.path.exists():  # the directory shows it is a run from its first finished shard on
            self.save()
            return
        # one write of a whole line; not synced, like the shard files it lists: after a crash a
        # line the disk lost only makes its shard be redone
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self.path.parent / JOURNAL, flags, 0o644)
        try:
            os.write(fd, orjson.dumps({key: entry}) + b"\n")
        finally:
            os.close(fd)

    def save(self) -> None:
        """Write ``manifest.json`` whole (atomically), then drop the journal it now holds."""
        doc = {
            "version": VERSION,
            "job": self.job,
            "fingerprint": self.fingerprint,
            "shards": [self.shards[k] for k in sorted(self.shards)],
        }
        if self.partitions:  # only a two-stage job's manifest has the key
            doc["partitions"] = [self.partitions[k] for k in sorted(self.partitions)]
        write_atomic(self.path, dumps(doc))
        (self.path.parent / JOURNAL).unlink(missing_ok=True)
