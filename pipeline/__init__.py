"""chatlake: LLM conversations as one canonical Arrow table.

The public API:

>>> from pipeline import decode_records, encode_table
>>> t = decode_records([{"messages": [{"role": "user", "content": "hi"}]}], "chat").table
>>> t.column("n_items").to_pylist()
[1]
>>> encode_table(t, "chat")
[{'messages': [{'role': 'user', 'content': 'hi'}]}]
"""

from pipeline.formats import decode_lines, decode_records, encode_table
from pipeline.schema import CONVERSATION_SCHEMA, SCHEMA_VERSION

__all__ = ["CONVERSATION_SCHEMA", "SCHEMA_VERSION", "decode_lines", "decode_records", "encode_table"]
