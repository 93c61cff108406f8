"""Which wire format a JSON record is, decided per record from its keys (``--from auto``).

The rule is one SQL ``CASE`` (:data:`RULE`), run by DuckDB over a whole batch of lines at once
(DuckDB parses JSON with yyjson, in C): no Python runs per record. The first match wins; the table
is the one in docs/sources.md#auto.

==  ==============================================================  =============================
#   the record (a JSON object) has                                  format
==  ==============================================================  =============================
1   ``input``                                                       ``responses`` (request)
2   an ``output`` list                                              ``responses`` (response)
3   a ``choices`` list                                              ``chat`` (completion)
4   a ``conversations`` list                                        ``sharegpt``
5   a ``content`` list, no ``messages``, ``type: "message"`` or     ``anthropic`` (message)
    ``role: "assistant"``
6   a ``messages`` list and an Anthropic sign: a top-level          ``anthropic`` (request)
    ``system``, a block type only Anthropic has (``tool_use``,
    ``tool_result``, ``thinking``, ...), or ``max_tokens`` with no
    Chat sign (a ``system``/``developer``/``tool``/``function``
    role, ``tool_calls``, ``tool_call_id``, ``function_call``,
    ``max_completion_tokens``)
7   a ``messages`` list and a request key (``model``,               ``chat`` (request)
    ``max_tokens``, ``temperature``, ``stream``, ...) or a sign
    only Chat has: a ``function`` role, a ``function_call``, a
    tool call whose ``function.arguments`` is a string
8   a ``messages`` list                                             ``hf`` (a dataset row: no
                                                                    request keys; tool call
                                                                    arguments are objects)
==  ==============================================================  =============================

A JSON object that fits none is :data:`NO_FORMAT`; a line that is not a JSON object is None (the
codec rejects it as invalid JSON / not an object, as for any format).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

NO_FORMAT = ""  # a JSON object that fits no wire format

_ANTHROPIC_BLOCKS = (
    "tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use",
    "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "mcp_tool_use", "mcp_tool_result", "container_upload", "search_result", "document",
)  # fmt: skip
_CHAT_ROLES = ("system", "developer", "tool", "function")
_REQUEST_KEYS = (
    "model", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stream", "stop",
    "tool_choice", "n", "seed", "response_format", "frequency_penalty", "presence_penalty",
    "logprobs", "top_logprobs", "logit_bias", "parallel_tool_calls", "reasoning_effort",
    "stream_options", "modalities", "store", "stop_sequences", "top_k", "thinking",
)  # fmt: skip


def _sql_list(names: Sequence[str]) -> str:
    return "[" + ", ".join(f"'{n}'" for n in names) + "]"


def _any_key(names: Sequence[str]) -> str:
    return "(" + " OR ".join(f"json_exists(o, '$.\"{n}\"')" for n in names) + ")"


_CHAT_SIGN = (
    f"(list_has_any(json_extract_string(o, '$.messages[*].role'), {_sql_list(_CHAT_ROLES)})"
    " OR len(json_extract(o, '$.messages[*].tool_calls')) > 0"
    " OR len(json_extract(o, '$.messages[*].tool_call_id')) > 0"
    " OR len(json_extract(o, '$.messages[*].function_call')) > 0"
    " OR json_exists(o, '$.max_completion_tokens'))"
)
_ANTHROPIC_SIGN = (
    "(json_exists(o, '$.system')"
    " OR list_has_any(json_extract_string(o, '$.messages[*].content[*].type'),"
    f" {_sql_list(_ANTHROPIC_BLOCKS)})"
    f" OR (json_exists(o, '$.max_tokens') AND NOT {_CHAT_SIGN}))"
)
# What HF dataset rows (transformers chat templates) never hold: legacy functions, string arguments.
_CHAT_ONLY = (
    "(list_has_any(json_extract_string(o, '$.messages[*].role'), ['function'])"
    " OR len(json_extract(o, '$.messages[*].function_call')) > 0"
    " OR list_has_any(json_type(o, '$.messages[*].tool_calls[*].function.arguments'), ['VARCHAR']))"
)
RULE = f"""
CASE
  WHEN o IS NULL THEN NULL
  WHEN json_exists(o, '$.input') THEN 'responses'
  WHEN json_type(o, '$.output') = 'ARRAY' THEN 'responses'
  WHEN json_type(o, '$.choices') = 'ARRAY' THEN 'chat'
  WHEN json_type(o, '$.conversations') = 'ARRAY' THEN 'sharegpt'
  WHEN json_type(o, '$.content') = 'ARRAY' AND NOT json_exists(o, '$.messages')
       AND (json_extract_string(o, '$.type') = 'message' OR json_extract_string(o, '$.role') = 'assistant')
       THEN 'anthropic'
  WHEN json_type(o, '$.messages') <> 'ARRAY' OR json_type(o, '$.messages') IS NULL THEN '{NO_FORMAT}'
  WHEN {_ANTHROPIC_SIGN} THEN 'anthropic'
  WHEN {_any_key(_REQUEST_KEYS)} OR {_CHAT_ONLY} THEN 'chat'
  ELSE 'hf'
END
"""
_QUERY = f"""
SELECT {RULE} AS kind FROM (
  SELECT CASE WHEN json_valid(j) AND json_type(j) = 'OBJECT' THEN j::JSON END AS o FROM lines
)
"""

_local = threading.local()


def _connection() -> duckdb.DuckDBPyConnection:
    con = getattr(_local, "con", None)
    if con is None:  # one in-memory connection per thread: workers may be threads
        con = _local.con = duckdb.connect(config={"threads": 1})
    return con


def _strings(lines: Sequence[bytes]) -> pa.Array:
    """The lines as a string array; a line that is not UTF-8 becomes null (not a JSON record)."""
    binary = pa.array(lines, pa.binary())
    try:
        return binary.cast(pa.string())
    except pa.ArrowInvalid:  # rare: find the bad lines one by one, only on this slow path
        ok = []
        for line in lines:
            try:
                line.decode("utf-8")
                ok.append(True)
            except UnicodeDecodeError:
                ok.append(False)
        return pc.if_else(pa.array(ok), binary, pa.scalar(None, pa.binary())).cast(pa.string())


def classify(lines: Sequence[bytes]) -> list[str | None]:
    """The wire format of each line by :data:`RULE`: a format name, :data:`NO_FORMAT`, or None."""
    if not lines:
        return []
    table = pa.table({"j": _strings(lines)})
    con = _connection()
    con.register("lines", table)
    try:
        kinds = con.sql(_QUERY).to_arrow_table().column("kind")
    finally:
        con.unregister("lines")
    out = kinds.to_pylist()
    if len(out) != len(lines):  # DuckDB keeps a projection's row order; this guards the assumption
        raise RuntimeError(f"classify: {len(out)} kinds for {len(lines)} lines")
    return out


def kind_counts(kinds: Sequence[str | None]) -> Counter[str | None]:
    """How many lines of each kind (for the detection summary)."""
    return Counter(kinds)
