"""One run at a time per run directory: an exclusive ``flock`` on ``RUN/.chatlake.lock``.

The lock file holds the holder's pid, host and start time, so a second run can say whom it waits
for. The kernel drops the lock when the holder dies (even by ``kill -9``), so a stale file never
blocks; the holder deletes the file when it finishes.
"""

from __future__ import annotations

import fcntl
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import orjson

from pipeline.errors import ConfigError

from .atomic import open_plain

LOCK = ".chatlake.lock"


class RunLocked(ConfigError):
    """Another chatlake process is running into the same run directory (exit code 2)."""


def _holder(fd: int) -> str:
    try:
        doc = orjson.loads(os.pread(fd, 4096, 0))
        return f"pid {doc['pid']} on {doc['host']}, since {doc['since']}"
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):  # it is still writing them
        return "pid unknown: it has just started"


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run directory's lock for the ``with`` block; :class:`RunLocked` when it is taken."""
    path = run_dir / LOCK
    while True:
        fd = open_plain(path, os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise RunLocked(
                f"{run_dir} is in use by another chatlake run ({holder}); wait for it to finish, "
                "or stop it and run again (it resumes)"
            ) from None
        # A holder that just finished deletes the file after we opened it: we then hold a lock on
        # a name nobody else sees. Lock the file that is at the path now instead.
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        os.ftruncate(fd, 0)
        os.pwrite(fd, orjson.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": now}), 0)
        yield
    finally:
        path.unlink(missing_ok=True)  # while still holding it: a waiter then retries on a new file
        os.close(fd)
