"""How far the single-file join got: which leading shards are already in the final temp files.

``chatlake convert -o FILE`` (engine/single_file.py) stages each shard's JSON Lines files, then
appends them, shard after shard, to temp files that become ``FILE``, ``FILE.losses.jsonl`` and
``FILE.rejected.jsonl``. A shard's staged files are deleted as soon as they are appended: written
once more into the temp files, they are not needed again, and deleting them at once lets the kernel
reuse their page-cache pages for the next writes instead of taking fresh ones (on the VMs we
measure on a fresh page costs more than the codec's work on it: docs/internals/profile.md, "Where
the system time goes").

So that an interrupted run still resumes without redoing those shards, the joiner records after
each shard, in ``join.json`` (written atomically), the next shard to append, each temp file's size
and the staged files it deleted. On resume the log is trusted only if every temp file is at least
as long as logged (they are cut back to the logged size, dropping a half-appended shard); then the
deleted files count as present (:func:`joined_files`, read by ``manifest.check_files``). Otherwise
(the machine went down before the temp files reached the disk) the log is ignored: the deleted
shards count as missing and are redone, and the join starts over. Both give the same bytes.

========  =====================================================================
key       value
========  =====================================================================
next      shards ``part-00000`` .. ``next - 1`` are appended
bytes     role (``output``, ``losses``, ``rejected``) -> temp file size after them
files     the staged files deleted, relative to the staging directory
========  =====================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import orjson

from .atomic import write_atomic

JOIN_LOG = "join.json"


def temp_path(run_dir: Path, role: str) -> Path:
    """The temp file a role's final file is joined into (renamed into place at the end)."""
    return run_dir / f".final-{role}.tmp"


@dataclass
class JoinLog:
    next: int = 0
    bytes: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def save(self, run_dir: Path) -> None:
        doc = {"next": self.next, "bytes": self.bytes, "files": self.files}
        write_atomic(run_dir / JOIN_LOG, orjson.dumps(doc))


def load(run_dir: Path) -> JoinLog | None:
    """The log, if there is one and every temp file it names holds at least its logged bytes."""
    path = run_dir / JOIN_LOG
    try:
        doc = orjson.loads(path.read_bytes())
        log = JoinLog(int(doc["next"]), {str(k): int(v) for k, v in doc["bytes"].items()},
                      [str(f) for f in doc["files"]])  # fmt: skip
    except (FileNotFoundError, orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None
    for role, size in log.bytes.items():
        try:
            if temp_path(run_dir, role).stat().st_size < size:
                return None
        except FileNotFoundError:
            return None
    return log


def joined_files(run_dir: Path) -> frozenset[str]:
    """Staged files (relative paths) that a trustworthy log says were appended, then deleted."""
    log = load(run_dir)
    return frozenset(log.files) if log is not None else frozenset()
