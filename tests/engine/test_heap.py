"""keep_heap: worker memory is reused from batch to batch instead of being faulted in afresh."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from pipeline.engine.heap import keep_heap

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

# Batches as a worker thread allocates them: many 1 MiB blocks and a few of 20 MiB, freed, again.
# Transparent huge pages off for the process (PR_SET_THP_DISABLE): on a machine that has them on
# for all memory, one fault maps 512 pages and the counts below would measure that setting instead.
WORKLOAD = """
import ctypes, resource, sys, threading
ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)
from pipeline.engine.heap import keep_heap
tuned = keep_heap() if sys.argv[1] == "keep" else False
def batches():
    for _ in range(12):
        blocks = [bytearray(1 << 20) for _ in range(30)] + [bytearray(20 << 20) for _ in range(3)]
        del blocks
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
worker = threading.Thread(target=batches)
worker.start()
worker.join()
print(tuned, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str, env: dict[str, str]) -> tuple[bool, int]:
    out = subprocess.run(
        [sys.executable, "-c", WORKLOAD, mode], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0] == "True", int(out[1])


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES" and not k.startswith("MALLOC_")}


@pytest.mark.skipif(not GLIBC, reason="keep_heap tunes glibc's malloc only (this is not glibc)")
def test_a_worker_thread_reuses_its_memory() -> None:
    """12 batches of 90 MiB on a thread: with the defaults each batch faults its pages in again
    (a thread's arena unmaps its empty heaps: about half of them); with keep_heap only the first does."""
    tuned, kept = _faults("keep", _env())
    _, default = _faults("default", _env())
    assert tuned
    batch_pages = 90 * 256  # 90 MiB of 4 KiB pages
    assert default > 4 * batch_pages  # measured: ~6.4 batches' pages
    assert kept < 2 * batch_pages  # measured: ~1 batch's


@pytest.mark.skipif(not GLIBC, reason="keep_heap tunes glibc's malloc only (this is not glibc)")
def test_the_users_malloc_settings_win() -> None:
    tuned, _ = _faults("keep", {**_env(), "MALLOC_ARENA_MAX": "4"})
    assert not tuned


def test_idempotent() -> None:
    assert keep_heap() == keep_heap() == GLIBC


def _pool(code: str, env: dict[str, str]) -> str:
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


PRINT_POOL = "import pyarrow as pa; print(pa.default_memory_pool().backend_name)"


@pytest.mark.skipif(not GLIBC, reason="chatlake moves Arrow off mimalloc on Linux with glibc only")
def test_arrow_buffers_come_from_jemalloc_unless_the_user_chose_a_pool() -> None:
    """mimalloc re-faults freed memory as huge pages zeroed whole (heap.py's docstring): importing
    chatlake before pyarrow puts Arrow on jemalloc; a pool the user names is left alone."""
    env = {k: v for k, v in _env().items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    code = f"import pipeline; {PRINT_POOL}"
    assert _pool(code, env) == "jemalloc"  # pyarrow's Linux wheels have it
    assert _pool(code, {**env, "ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}) == "mimalloc"


@pytest.mark.skipif(not GLIBC, reason="chatlake moves Arrow off mimalloc on Linux with glibc only")
def test_keep_heap_moves_arrow_when_pyarrow_was_imported_first() -> None:
    """A worker that imported pyarrow before chatlake (Ray's do) still gets jemalloc where pyarrow
    lets Python choose the pool."""
    env = {k: v for k, v in _env().items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    first = "import pyarrow; from pipeline.engine.heap import keep_heap; keep_heap(); "
    assert _pool(first + PRINT_POOL, env) == "jemalloc"
