"""What chatlake writes in a run directory, by name: the one place that ``--fresh``, the temp-file
clean-up and ``chatlake verify`` ask whether a file is chatlake's (docs/run-layout.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.errors import ConfigError

from .dropped import DROPPED
from .lock import LOCK
from .manifest import MANIFEST
from .writers import FOLDERS, TMP_SUFFIX

SUMMARY = "summary.json"
# the temp files of write_atomic (manifest, summary) and the lock
TOP_CHATLAKE = re.compile(r"(manifest\.json|summary\.json|\.manifest\.json\.tmp|\.summary\.json\.tmp)$")
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


def check_fresh(run_dir: Path) -> None:
    """Refuse ``--fresh`` on a directory that holds anything but a chatlake run (ConfigError).

    A directory is a run when it has a manifest, or nothing but names chatlake writes (a run killed
    before its first shard finished); an absent or empty directory is fine.
    """
    if not run_dir.exists() or (run_dir / MANIFEST).is_file():
        return
    others = sorted(p.name for p in run_dir.iterdir() if not is_chatlake_name(p.name))
    if others:
        raise ConfigError(
            f"{run_dir} is not a chatlake run directory (no {MANIFEST}; it holds {others[:3]}), so "
            "--fresh will not delete anything in it; choose another output.path"
        )


def clear(run_dir: Path) -> None:
    """Delete the files chatlake wrote in ``run_dir`` (``--fresh``), and nothing else.

    A layout folder is removed only when that leaves it empty; the lock file is kept (the caller
    holds it).
    """
    for name in (*FOLDERS, DROPPED, PARTITIONS):
        folder = run_dir / name
        if not folder.is_dir():
            continue
        for p in folder.iterdir():
            if is_chatlake_name(f"{name}/{p.name}") and p.is_file():
                p.unlink()
        if not any(folder.iterdir()):
            folder.rmdir()
    for p in run_dir.iterdir():
        if p.is_file() and TOP_CHATLAKE.match(p.name):
            p.unlink()


def clean_temp_files(run_dir: Path) -> None:
    """Delete the temp files a killed run left (they are never listed in the manifest)."""
    for name in (*FOLDERS, DROPPED):
        for tmp in (run_dir / name).glob(f".*{TMP_SUFFIX}"):
            if TEMP_FILE.match(tmp.name):
                tmp.unlink(missing_ok=True)
    for tmp in (run_dir / PARTITIONS).glob(f".*{TMP_SUFFIX}"):
        if PARTITION_TEMP.match(tmp.name):
            tmp.unlink(missing_ok=True)
