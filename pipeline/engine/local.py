"""The local engine: shards on a pool of spawned worker processes (2 by default).

At most ``2 x workers`` shards are queued at once and each worker holds one batch at a time, so
memory is bounded by the batch size, not the input. Workers report progress after each batch
through a queue; results (manifest entries) come back as shards finish.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import queue as queue_mod
import signal
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from .process import Work, run_shard
from .shards import Shard

OnDone = Callable[[dict[str, Any]], None]
OnProgress = Callable[[int, int], None]

_QUEUE: Any = None
_PARENT = 0


def _init(q: Any, parent: int) -> None:
    global _QUEUE, _PARENT
    _QUEUE, _PARENT = q, parent
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent() -> None:
    """Have the kernel kill this worker when its parent dies (Linux), even by ``kill -9``.

    Without it an orphaned worker finishes its batch and writes temp files into a run that a resume
    has already cleaned up. Elsewhere (or if prctl fails) the parent check in :func:`_report` is
    the fallback: the worker exits after its current batch.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no usable libc: keep the portable fallback
        pass


def _report(records: int, nbytes: int) -> None:
    if os.getppid() != _PARENT:  # the parent was killed: stop instead of finishing shards nobody lists
        os._exit(1)
    _QUEUE.put((records, nbytes))


def _remote(shard: dict[str, Any], work: Work) -> dict[str, Any]:
    return run_shard(shard, work, _report)


def execute(
    shards: Iterable[Shard], work: Work, workers: int, on_done: OnDone, on_progress: OnProgress
) -> None:
    """Run every shard; ``on_done(entry)`` is called in the parent as each one finishes."""
    if workers == 1:
        for s in shards:
            on_done(run_shard(s.to_json(), work, on_progress))
        return
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()

    def drain() -> None:
        while True:
            try:
                on_progress(*q.get_nowait())
            except queue_mod.Empty:
                return

    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init, initargs=(q, os.getpid()))
    inflight: set[Future[dict[str, Any]]] = set()

    def collect(timeout: float | None) -> None:
        done, _ = wait(inflight, timeout=timeout, return_when=FIRST_COMPLETED)
        drain()
        for f in done:
            inflight.discard(f)
            on_done(f.result())

    try:
        for s in shards:
            while len(inflight) >= 2 * workers:
                collect(0.2)
            inflight.add(pool.submit(_remote, s.to_json(), work))
        while inflight:
            collect(0.2)
        drain()
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
