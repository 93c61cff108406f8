"""chatlake: LLM conversations as one canonical Arrow table.

The public API:

>>> from pipeline import decode_records, encode_table
>>> t = decode_records([{"messages": [{"role": "user", "content": "hi"}]}], "chat").table
>>> t.column("n_items").to_pylist()
[1]
>>> encode_table(t, "chat")
[{'messages': [{'role': 'user', 'content': 'hi'}]}]
"""

import os as _os
import sys as _sys

from pipeline.libc import glibc as _glibc

# Arrow's buffers from jemalloc (4 KiB pages, freed memory kept a second for the next batch), not
# pyarrow's default mimalloc, which re-faults freed memory as huge pages zeroed whole (engine/heap.py
# says what that cost). pyarrow reads this once, when it is first imported, hence here; Linux wheels
# of pyarrow ship jemalloc (keep_heap falls back to the system pool where a build does not, and sets
# what it can where pyarrow was imported first). A pool the user names wins.
if _glibc() and "pyarrow" not in _sys.modules:
    _os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")

from pipeline.formats import decode_lines, decode_records, encode_table
from pipeline.schema import CONVERSATION_SCHEMA, SCHEMA_VERSION

__all__ = ["CONVERSATION_SCHEMA", "SCHEMA_VERSION", "decode_lines", "decode_records", "encode_table"]
