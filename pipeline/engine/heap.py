"""Keep freed heap memory in the process for the next batch instead of handing it back to the kernel.

A worker decodes and encodes one batch after another, each allocating about the same buffers (tens of
MB of JSON text, Arrow children, loss columns). glibc's defaults give large blocks their own ``mmap``
and trim the heap's top after every free, so each batch faults its memory in afresh: the kernel zeroes
every page, which on a virtual machine whose host backs guest pages lazily costs more than the codec
(``chatlake convert`` of 200,000 Responses records, 2 workers, two A/B pairs on an idle machine:
543,709-612,426 minor faults and 3.9-4.7 s system time with the defaults, 190,802-190,887 and
2.4-3.7 s with the settings below; README, "Conversion end to end").

:func:`keep_heap` sets three options once per process through ``mallopt``: blocks under 32 MiB
(glibc's ceiling for ``M_MMAP_THRESHOLD``) come from the heap; the heap's top is trimmed only past
1 GiB of free space; and one arena (``M_ARENA_MAX``), so that worker threads share the main heap (a
thread's own arena is a set of 64 MiB mmapped heaps, unmapped when empty, which no threshold keeps:
tests/engine/test_heap.py measures it). It must run before the worker threads first allocate: the
local engine calls it before it starts them, :func:`run_shard` in every spawned or Ray worker.
Peak RSS does not grow (a freed block is reused by the next batch, not added to); the memory goes
back when the process exits. Elsewhere than glibc, or when the user set malloc tunables
(``GLIBC_TUNABLES`` / ``MALLOC_*`` in the environment: theirs win), it does nothing.

Arrow's buffers come from jemalloc: ``import pipeline`` sets ``ARROW_DEFAULT_MEMORY_POOL=jemalloc``
before pyarrow loads (pyarrow reads it once), and :func:`keep_heap` sets pyarrow's pool where pyarrow
was imported first (the system pool, i.e. this heap, where a pyarrow build has no jemalloc); a pool
the user names wins. pyarrow's default, mimalloc, hands freed memory back and faults it in again as
transparent huge pages, each zeroed whole: ``perf`` put 75% of a batch's first ``take`` in the
kernel's ``clear_page_erms`` under ``do_huge_pmd_anonymous_page`` (2.0 s against 0.24 s with 4 KiB
pages). ``chatlake transform --step threads:keep=leaves`` of 39,093 requests: 13.4-14.0 s wall and
10.7-11.2 s system with mimalloc; 8.7-8.8 s and 2.0-2.6 s with the system or jemalloc pool. At
960,731 requests the system pool (glibc keeps freed memory: the trim threshold above) peaked at
2,092 MB, jemalloc (which returns it after a second) at 1,761 MB in about the same time;
docs/internals/profile.md, "Memory: the heap and Arrow's allocator".
"""

from __future__ import annotations

import ctypes
import os

import pyarrow as pa

from pipeline.libc import glibc

M_TRIM_THRESHOLD = -1  # <malloc.h>
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
MMAP_THRESHOLD = 32 << 20  # glibc refuses more (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 1 << 30

_done: bool | None = None


def _user_tuned() -> bool:
    return "GLIBC_TUNABLES" in os.environ or any(k.startswith("MALLOC_") for k in os.environ)


def keep_heap() -> bool:
    """Set the three options (and Arrow's pool) once in this process; returns whether they are set
    (glibc, not user-tuned).

    >>> keep_heap() == keep_heap()  # idempotent
    True
    """
    global _done
    if _done is None:
        _done = False
        if glibc() and not _user_tuned():
            try:
                libc = ctypes.CDLL(None)
                _done = all(
                    libc.mallopt(option, value)
                    for option, value in ((M_ARENA_MAX, 1), (M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                                          (M_TRIM_THRESHOLD, TRIM_THRESHOLD))
                )  # fmt: skip
            except (OSError, AttributeError):  # no mallopt in this libc: nothing to tune
                _done = False
        if glibc():
            _arrow_pool()
    return _done


def _arrow_pool() -> None:
    """Arrow's default pool away from mimalloc unless the user chose it (module docstring):
    jemalloc where this pyarrow has it, else the system pool (the heap :func:`keep_heap` tunes)."""
    chosen = os.environ.get("ARROW_DEFAULT_MEMORY_POOL")
    if chosen not in (None, "jemalloc") or pa.default_memory_pool().backend_name != "mimalloc":
        return
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except NotImplementedError:  # a pyarrow built without jemalloc
        pa.set_memory_pool(pa.system_memory_pool())
