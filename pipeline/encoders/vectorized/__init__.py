"""Table-to-table encoders: canonical table in, canonical table of the target format out.

They compute the same records and losses as the per-record encoders in :mod:`pipeline.encoders`
(which stay the reference), with Polars expressions and Arrow compute over the exploded items
instead of a Python loop over records. Rows that use a documented rare feature are routed to the
per-record encoder by a vectorized predicate (see each module).
"""

from pipeline.encoders.vectorized.responses_to_chat import ChatConversion, responses_to_chat

__all__ = ["ChatConversion", "responses_to_chat"]
