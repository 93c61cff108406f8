"""What chatlake writes in a run directory, by name: the one place that ``--fresh``, the temp-file
clean-up and ``chatlake verify`` ask whether a file is chatlake's (docs/run-layout.md).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from pipeline.errors import ConfigError
from pipeline.oserrors import describe

from .atomic import UnsafePath
from .dropped import DROPPED
from .lock import LOCK
from .manifest import MANIFEST
from .writers import FOLDERS, TMP_SUFFIX

SUMMARY = "summary.json"
# the run's records and the temp files of write_atomic (manifest, summary); .final-ROLE.tmp: a
# single-file command's files being written (engine/single_file.py)
TOP_RECORDS = re.compile(r"(manifest\.json|manifest\.journal|summary\.json)$")
TOP_TEMP = re.compile(r"(\.manifest\.json\.tmp|\.summary\.json\.tmp|\.final-\w+\.tmp)$")
TOP_CHATLAKE = re.compile(f"{TOP_RECORDS.pattern}|{TOP_TEMP.pattern}")
SHARD_FILE = re.compile(r"part-\d{5,}\.(parquet|jsonl|arrow)$")
TEMP_FILE = re.compile(r"\.part-\d{5,}\.(parquet|jsonl|arrow)\.\d+" + re.escape(TMP_SUFFIX) + "$")
# stage 1 of a two-stage job (engine/partition.py): partitions/part-NNNNN.pNNNN.arrow (.parquet
# before session 9), part-NNNNN.rejected.parquet
PARTITIONS = "partitions"
PARTITION_FILE = re.compile(r"part-\d{5,}\.(p\d{4,}|rejected)\.(parquet|arrow)$")
PARTITION_TEMP = re.compile(
    r"\.part-\d{5,}\.(p\d{4,}|rejected)\.(parquet|arrow)\.\d+" + re.escape(TMP_SUFFIX) + "$"
)


def is_chatlake_name(relative: str) -> bool:
    """Whether ``relative`` (a path inside a run directory) is a name chatlake writes."""
    parts = relative.split("/")
    if len(parts) == 1:
        folder = parts[0] in (*FOLDERS, DROPPED, PARTITIONS)
        return folder or parts[0] == LOCK or bool(TOP_CHATLAKE.match(parts[0]))
    if len(parts) == 2 and parts[0] in (*FOLDERS, DROPPED):
        return bool(SHARD_FILE.match(parts[1]) or TEMP_FILE.match(parts[1]))
    if len(parts) == 2 and parts[0] == PARTITIONS:
        return bool(PARTITION_FILE.match(parts[1]) or PARTITION_TEMP.match(parts[1]))
    return False


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def check_links(run_dir: Path) -> None:
    """Refuse (UnsafePath, before any work) a run directory holding a symbolic link at a name
    chatlake writes: a layout folder, the lock, the manifest, the summary, a shard or a temp file.

    The run directory itself may be a link (the user named it); nothing inside it is followed.
    """
    if not run_dir.is_dir():
        return
    for p in sorted(run_dir.iterdir()):
        if not is_chatlake_name(p.name):
            continue
        if _is_link(p):
            raise UnsafePath(
                f"{run_dir} holds a symbolic link where chatlake writes ({p.name}); chatlake does "
                "not write through links: remove it, or choose another output.path"
            )
        if p.name in (*FOLDERS, DROPPED, PARTITIONS) and p.is_dir():
            for q in sorted(p.iterdir()):
                if is_chatlake_name(f"{p.name}/{q.name}") and _is_link(q):
                    raise UnsafePath(
                        f"{run_dir} holds a symbolic link where chatlake writes ({p.name}/{q.name}); "
                        "chatlake does not write through links: remove it, or choose another output.path"
                    )


def _empty_layout(p: Path) -> bool:
    """A layout folder with nothing in it but empty folders (what an older run made first)."""
    return p.name in (*FOLDERS, DROPPED, PARTITIONS) and not _is_link(p) and p.is_dir() and not any(
        q for q in p.rglob("*") if not q.is_dir()
    )


def check_run_dir(run_dir: Path, fresh: bool = False) -> None:
    """Refuse (ConfigError, before any work) a run directory that is not chatlake's to write in.

    Absent or empty is fine, and so is a directory with chatlake's ``manifest.json`` (whose job
    :class:`~pipeline.engine.manifest.Manifest` checks). Without one, a directory holding anything
    but the lock, a manifest temp file or empty layout folders is someone else's: a run would write
    (``--fresh``: delete) files under names that may be theirs, e.g. ``output/part-00000.jsonl``.
    """
    try:
        os.stat(run_dir)
    except FileNotFoundError:
        pass
    except OSError as e:  # a loop of links, a path through a file: one line, before any work
        raise ConfigError(f"run directory {str(run_dir)!r}: {describe(e)}") from None
    check_links(run_dir)
    if not run_dir.exists():
        return
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir} exists and is not a directory; choose another output.path")
    if (run_dir / MANIFEST).is_file():
        return
    allowed = {LOCK, f".{MANIFEST}.tmp"}
    others = sorted(p.name for p in run_dir.iterdir() if p.name not in allowed and not _empty_layout(p))
    if others:
        doing = "--fresh will not delete anything in it" if fresh else "chatlake will not write into it"
        raise ConfigError(
            f"{run_dir} is not empty and is not a chatlake run directory (no {MANIFEST}; it holds "
            f"{others[:3]}), so {doing}; choose an empty or new output.path"
        )


def check_fresh(run_dir: Path) -> None:
    """Refuse ``--fresh`` on a directory that holds anything but a chatlake run (ConfigError)."""
    check_run_dir(run_dir, fresh=True)


def _listed(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The files the run directory's manifest lists (relative path -> entry), checked to be plain
    relative paths inside it (no ``..``, not absolute); an unreadable manifest lists nothing."""
    try:
        doc = orjson.loads((run_dir / MANIFEST).read_bytes())
        entries = [*doc.get("shards", []), *doc.get("partitions", [])]
        files = [f for e in entries for f in e["files"].values()]
        listed = {str(f["path"]): f for f in files if isinstance(f.get("bytes"), int) and f.get("sha256")}
    except (OSError, orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
        return {}
    return {
        rel: f for rel, f in listed.items()
        if not PurePosixPath(rel).is_absolute() and ".." not in PurePosixPath(rel).parts
        and "\\" not in rel and is_chatlake_name(rel)
    }  # fmt: skip


def _unchanged(path: Path, entry: dict[str, Any]) -> bool:
    """Whether ``path`` is a regular file (not through any link) with the entry's size and sha256."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size != entry["bytes"]:
            return False
        h = hashlib.sha256()
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest() == entry["sha256"]


def fresh_plan(run_dir: Path) -> tuple[list[Path], list[str]]:
    """What ``--fresh`` deletes, and what it leaves (relative names).

    Deleted: each file the manifest lists with its size and sha256 unchanged, inside a layout
    folder that is not a link; temp files at chatlake's temp names; and, with a manifest of ours,
    the run's records (``manifest.json``, ``summary.json``). Left: everything else.
    """
    if not run_dir.is_dir():
        return [], []
    listed = _listed(run_dir)
    delete: list[Path] = []
    kept: list[str] = []
    for name in (*FOLDERS, DROPPED, PARTITIONS):
        folder = run_dir / name
        if _is_link(folder) or not folder.is_dir():
            continue
        for p in sorted(folder.iterdir()):
            rel = f"{name}/{p.name}"
            temp = TEMP_FILE.match(p.name) or PARTITION_TEMP.match(p.name)
            if not _is_link(p) and p.is_file() and (temp or (rel in listed and _unchanged(p, listed[rel]))):
                delete.append(p)
            else:
                kept.append(rel)
    for p in sorted(run_dir.iterdir()):
        if _is_link(p) or not p.is_file():
            continue
        if TOP_TEMP.match(p.name) or (TOP_RECORDS.match(p.name) and (listed or _ours(run_dir))):
            delete.append(p)
    return delete, kept


def _ours(run_dir: Path) -> bool:
    """Whether the manifest is chatlake's (a JSON object with a job, a fingerprint and shards)."""
    try:
        doc = orjson.loads((run_dir / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(doc, dict) and {"job", "fingerprint", "shards"} <= set(doc)


def clear(run_dir: Path) -> list[str]:
    """Delete what chatlake wrote in ``run_dir`` and can still vouch for (``--fresh``); returns
    the files it left (relative names).

    Refused (ConfigError, nothing deleted) when a file left is at a name the run writes (a shard of
    a layout folder the manifest does not list, or that changed since): the run would overwrite it.
    A layout folder is removed only when that leaves it empty; the lock file is kept (the caller
    holds it).
    """
    delete, kept = fresh_plan(run_dir)
    blocking = [k for k in kept if is_chatlake_name(k)]
    if blocking:
        more = f" and {len(blocking) - 3} more" if len(blocking) > 3 else ""
        raise ConfigError(
            f"--fresh deletes only files {MANIFEST} lists and that are unchanged since; {run_dir} holds "
            f"{', '.join(blocking[:3])}{more} that a new run would overwrite: move them away and run again"
        )
    for p in delete:
        p.unlink()
    for name in (*FOLDERS, DROPPED, PARTITIONS):
        folder = run_dir / name
        if not _is_link(folder) and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    return kept


def clean_temp_files(run_dir: Path) -> None:
    """Delete the temp files a killed run left (they are never listed in the manifest)."""
    for name in (*FOLDERS, DROPPED):
        for tmp in (run_dir / name).glob(f".*{TMP_SUFFIX}"):
            if TEMP_FILE.match(tmp.name):
                tmp.unlink(missing_ok=True)
    for tmp in (run_dir / PARTITIONS).glob(f".*{TMP_SUFFIX}"):
        if PARTITION_TEMP.match(tmp.name):
            tmp.unlink(missing_ok=True)
