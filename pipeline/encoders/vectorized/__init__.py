"""Table-to-table encoders: canonical table in, canonical table of the target format out.

They compute the same records and losses as the per-record encoders in :mod:`pipeline.encoders`
(which stay the reference), with Polars expressions and Arrow compute over the exploded items
instead of a Python loop over records. Rows that use a documented rare feature are routed to the
per-record encoder by a vectorized predicate (see each module).

:func:`encode_rows` is what ``chatlake convert`` and the job engine call: any batch, any target, the
per-record encoders' bytes and losses, column at a time where a table-to-table encoder exists.
"""

from pipeline.encoders.vectorized.chat_json import chat_json
from pipeline.encoders.vectorized.encode_rows import EncodedRows, encode_rows
from pipeline.encoders.vectorized.responses_to_chat import ChatConversion, responses_to_chat

__all__ = ["ChatConversion", "EncodedRows", "chat_json", "encode_rows", "responses_to_chat"]
