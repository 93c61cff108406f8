"""The local engine: shards on a pool of 2 workers by default, threads or spawned processes.

At most ``2 x workers`` shards are queued at once and each worker holds one batch at a time, so
memory is bounded by the batch size, not the input. Workers report progress after each batch
through a queue; results (manifest entries) come back as shards finish.

``pool = "threads"`` (what ``auto``, the default, picks while the compiled codec is active) runs
:func:`run_shard` on threads of this process: no spawn, no second import of Polars / pyarrow, no
pickling of entries, one heap. It pays off as far as the work releases the GIL (the compiled
decoder's parse and walk, the compiled encoder, Arrow, Polars and Parquet kernels do; the Python
decoder, the encoders' Python parts and batch glue do not); ``pool = "processes"`` runs it in
spawned processes. docs/internals/profile.md ("Threads vs processes") measures both.
A thread cannot be killed, so on an error or Ctrl-C the others stop after their current batch,
and their shards' temp files are removed (``ShardWriter.abort``); a SIGKILL leaves temp files
that the next run cleans, as with processes.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import queue as queue_mod
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from typing import Any

from pipeline import codec

from .heap import keep_heap
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


Task = Callable[..., dict[str, Any]]  # (shard_json, work, progress) -> manifest entry


def _remote(task: Task, shard: dict[str, Any], work: Work) -> dict[str, Any]:
    return task(shard, work, _report)


AUTO, PROCESSES, THREADS = "auto", "processes", "threads"


class _Stopped(Exception):
    """Raised in a worker thread after a batch when the job is failing or interrupted."""


def execute(
    shards: Iterable[Shard],
    work: Work,
    workers: int,
    on_done: OnDone,
    on_progress: OnProgress,
    pool: str = AUTO,
    task: Task | None = None,
    ordered: bool = False,
) -> None:
    """Run every shard; ``on_done(entry)`` is called in the parent as each one finishes (with
    ``ordered``, in the order the shards were given: a finished shard waits for the ones before it,
    and counts against the ``2 x workers`` in flight, so at most that many are held).

    ``pool`` says what the workers are: ``processes`` (spawned), ``threads`` (of this process), or
    ``auto``: threads when the compiled codec is active (its decode and encode release the GIL),
    processes on the pure-Python codec, which holds the GIL and would run two threads on one core
    (200,000 Responses -> Chat records: 97.9 s on threads, README "Conversion end to end").
    ``task`` runs one shard (a module-level function: it is pickled for processes); the default is
    :func:`run_shard` (looked up at call time, so a test can patch it), the two-stage job passes its
    stages' (engine/partition.py).
    """
    task = task or run_shard
    keep_heap()  # before the worker threads' first allocation: they share the main heap
    if pool == AUTO:
        pool = THREADS if codec.status().native else PROCESSES
    if workers == 1:
        for s in shards:
            on_done(task(s.to_json(), work, on_progress))
        return
    if pool == THREADS:
        _threads(shards, work, workers, on_done, on_progress, task, ordered)
    else:
        _processes(shards, work, workers, on_done, on_progress, task, ordered)


def _processes(
    shards: Iterable[Shard], work: Work, workers: int, on_done: OnDone, on_progress: OnProgress, task: Task,
    ordered: bool,
) -> None:
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    executor = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init, initargs=(q, os.getpid()))
    _drive(
        executor,
        shards,
        lambda s: executor.submit(_remote, task, s.to_json(), work),
        workers,
        q,
        on_done,
        on_progress,
        stop=lambda: None,  # workers die with the pool (and with the parent: PR_SET_PDEATHSIG)
        ordered=ordered,
    )


def _threads(
    shards: Iterable[Shard], work: Work, workers: int, on_done: OnDone, on_progress: OnProgress, task: Task,
    ordered: bool,
) -> None:
    q: queue_mod.SimpleQueue[tuple[int, int]] = queue_mod.SimpleQueue()
    stopping = threading.Event()

    def report(records: int, nbytes: int) -> None:
        if stopping.is_set():  # the job failed or was interrupted: abort this shard after its batch
            raise _Stopped
        q.put((records, nbytes))

    executor = ThreadPoolExecutor(workers, thread_name_prefix="chatlake-shard")
    _drive(
        executor,
        shards,
        lambda s: executor.submit(task, s.to_json(), work, report),
        workers,
        q,
        on_done,
        on_progress,
        stop=stopping.set,
        ordered=ordered,
    )


def _drive(
    executor: Executor,
    shards: Iterable[Shard],
    submit: Callable[[Shard], Future[dict[str, Any]]],
    workers: int,
    q: Any,
    on_done: OnDone,
    on_progress: OnProgress,
    stop: Callable[[], None],
    ordered: bool = False,
) -> None:
    """Keep ``2 x workers`` shards in flight; hand progress and finished entries to the callbacks
    in this thread (the manifest and progress bar are not thread-safe)."""

    def drain() -> None:
        while True:
            try:
                on_progress(*q.get_nowait())
            except queue_mod.Empty:
                return

    inflight: set[Future[dict[str, Any]]] = set()
    number: dict[Future[dict[str, Any]], int] = {}  # ordered: each future's place in the order given
    held: dict[int, dict[str, Any]] = {}  # ordered: finished entries waiting for an earlier one
    given = handed = 0

    def collect(timeout: float | None) -> None:
        nonlocal handed
        done, _ = wait(inflight, timeout=timeout, return_when=FIRST_COMPLETED)
        drain()
        for f in done:
            inflight.discard(f)
            if not ordered:
                on_done(f.result())
                continue
            held[number.pop(f)] = f.result()
            while handed in held:
                on_done(held.pop(handed))
                handed += 1

    try:
        for s in shards:
            while len(inflight) + len(held) >= 2 * workers:
                collect(0.2)
            f = submit(s)
            inflight.add(f)
            number[f] = given
            given += 1
        while inflight:
            collect(0.2)
        drain()
    except BaseException:
        stop()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
