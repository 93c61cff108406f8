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
Arrow's buffers come from its own allocator (mimalloc), not from these. Peak RSS does not grow (a
freed block is reused by the next batch, not added to); the memory goes back when the process
exits. Elsewhere than glibc, or when the user set malloc tunables (``GLIBC_TUNABLES`` / ``MALLOC_*``
in the environment: theirs win), it does nothing.
"""

from __future__ import annotations

import ctypes
import os
import platform

M_TRIM_THRESHOLD = -1  # <malloc.h>
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
MMAP_THRESHOLD = 32 << 20  # glibc refuses more (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 1 << 30

_done: bool | None = None


def _user_tuned() -> bool:
    return "GLIBC_TUNABLES" in os.environ or any(k.startswith("MALLOC_") for k in os.environ)


def keep_heap() -> bool:
    """Set the two thresholds once in this process; returns whether they are set (glibc, not user-tuned).

    >>> keep_heap() == keep_heap()  # idempotent
    True
    """
    global _done
    if _done is None:
        _done = False
        if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc" and not _user_tuned():
            try:
                libc = ctypes.CDLL(None)
                _done = all(
                    libc.mallopt(option, value)
                    for option, value in ((M_ARENA_MAX, 1), (M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                                          (M_TRIM_THRESHOLD, TRIM_THRESHOLD))
                )  # fmt: skip
            except (OSError, AttributeError):  # no mallopt in this libc: nothing to tune
                _done = False
    return _done
