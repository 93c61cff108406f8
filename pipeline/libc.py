"""Whether this process runs on Linux with glibc: where chatlake tunes the malloc heap and moves
Arrow off mimalloc (engine/heap.py). Imports nothing else, so ``pipeline/__init__`` can ask before
pyarrow loads.

>>> isinstance(glibc(), bool)
True
"""

from __future__ import annotations

import os
import sys


def glibc() -> bool:
    # the platform test first: os.confstr and its names exist on Linux only
    return sys.platform == "linux" and "glibc" in (os.confstr("CS_GNU_LIBC_VERSION") or "")
