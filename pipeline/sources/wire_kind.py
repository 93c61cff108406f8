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


# The top-level values the rule looks at, extracted with one parse of each line (one json_extract
# with many paths); the checks inside ``messages`` parse that value only, and only for the records
# that reach rule 6 (CASE evaluates a branch only for the rows that get there).
_TOP = ("input", "output", "choices", "conversations", "content", "messages", "system", "type", "role",
        *_REQUEST_KEYS)  # fmt: skip
_AT = {k: i + 1 for i, k in enumerate(_TOP)}  # DuckDB lists count from 1


def _has(key: str) -> str:
    return f"(v[{_AT[key]}] IS NOT NULL)"


def _is_list(key: str) -> str:  # the extracted JSON text starts with '[' (no second parse)
    return f"(left(v[{_AT[key]}]::VARCHAR, 1) = '[')"


def _string(key: str) -> str:
    return f"(v[{_AT[key]}]::VARCHAR)"


def _any_key(names: Sequence[str]) -> str:
    return "(" + " OR ".join(_has(n) for n in names) + ")"


_M = f"v[{_AT['messages']}]"
_CHAT_SIGN = (
    f"(list_has_any(json_extract_string({_M}, '$[*].role'), {_sql_list(_CHAT_ROLES)})"
    f" OR len(json_type({_M}, '$[*].tool_calls')) > 0"
    f" OR len(json_type({_M}, '$[*].tool_call_id')) > 0"
    f" OR len(json_type({_M}, '$[*].function_call')) > 0"
    f" OR {_has('max_completion_tokens')})"
)
_ANTHROPIC_SIGN = (
    f"({_has('system')}"
    f" OR list_has_any(json_extract_string({_M}, '$[*].content[*].type'), {_sql_list(_ANTHROPIC_BLOCKS)})"
    f" OR ({_has('max_tokens')} AND NOT {_CHAT_SIGN}))"
)
# What HF dataset rows (transformers chat templates) never hold: legacy functions, string arguments.
_CHAT_ONLY = (
    f"(list_has_any(json_extract_string({_M}, '$[*].role'), ['function'])"
    f" OR len(json_type({_M}, '$[*].function_call')) > 0"
    f" OR list_has_any(json_type({_M}, '$[*].tool_calls[*].function.arguments'), ['VARCHAR']))"
)
RULE = f"""
CASE
  WHEN v IS NULL THEN NULL
  WHEN {_has("input")} THEN 'responses'
  WHEN {_is_list("output")} THEN 'responses'
  WHEN {_is_list("choices")} THEN 'chat'
  WHEN {_is_list("conversations")} THEN 'sharegpt'
  WHEN {_is_list("content")} AND NOT {_has("messages")}
       AND ({_string("type")} = '"message"' OR {_string("role")} = '"assistant"') THEN 'anthropic'
  WHEN NOT coalesce({_is_list("messages")}, false) THEN '{NO_FORMAT}'
  WHEN {_ANTHROPIC_SIGN} THEN 'anthropic'
  WHEN {_any_key(_REQUEST_KEYS)} OR {_CHAT_ONLY} THEN 'chat'
  ELSE 'hf'
END
"""
# A record the rule gives one format may be a valid record of another too (the ambiguous records
# below). ALSO names that other format, so a file's records follow the file's format
# (:func:`follow_the_file`):
# * an ``hf`` row (rule 8) whose tool call arguments, if any, are strings is a valid Chat body;
# * a Chat body by a request key (rule 7) with no legacy ``function`` role or ``function_call`` is a
#   valid HF row (a dataset keeps unknown columns);
# * an Anthropic request by ``max_tokens`` alone (rule 6, no top-level ``system``, no block only
#   Anthropic has) is a valid Chat body.
_NOT_STRING = _sql_list(("OBJECT", "ARRAY", "BIGINT", "UBIGINT", "DOUBLE", "BOOLEAN", "NULL"))
ALSO = f"""
CASE
  WHEN kind = 'hf'
       AND NOT list_has_any(json_type({_M}, '$[*].tool_calls[*].function.arguments'), {_NOT_STRING})
       THEN 'chat'
  WHEN kind = 'chat' AND coalesce({_is_list("messages")}, false)
       AND NOT list_has_any(json_extract_string({_M}, '$[*].role'), ['function'])
       AND len(json_type({_M}, '$[*].function_call')) = 0 THEN 'hf'
  WHEN kind = 'anthropic' AND coalesce({_is_list("messages")}, false) AND NOT {_has("system")}
       AND NOT list_has_any(json_extract_string({_M}, '$[*].content[*].type'), {_sql_list(_ANTHROPIC_BLOCKS)})
       THEN 'chat'
END
"""
_PATHS = "[" + ", ".join(f"'$.\"{k}\"'" for k in _TOP) + "]"
# Two queries: DuckDB would compute ``v`` again for every use of it in RULE, so the top-level
# values are extracted first (one parse per line) and RULE runs over them.
_EXTRACT = f"""
SELECT CASE WHEN json_valid(j) AND left(ltrim(j, ' \t\n\r'), 1) = '{{'
            THEN json_extract(j, {_PATHS}) END AS v
FROM lines
"""
_QUERY = f"SELECT {RULE} AS kind, {ALSO} AS also FROM tops"

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
    return classify_fits(lines)[0]


def classify_fits(lines: Sequence[bytes]) -> tuple[list[str | None], list[str | None]]:
    """Each line's format by :data:`RULE` (as :func:`classify`), and the other format it is a valid
    record of (:data:`ALSO`; None when none)."""
    if not lines:
        return [], []
    table = pa.table({"j": _strings(lines)})
    con = _connection()
    con.register("lines", table)
    try:
        tops = con.sql(_EXTRACT).to_arrow_table()
    finally:
        con.unregister("lines")
    con.register("tops", tops)
    try:
        result = con.sql(_QUERY).to_arrow_table()
    finally:
        con.unregister("tops")
    out, also = result.column("kind").to_pylist(), result.column("also").to_pylist()
    if len(out) != len(lines):  # DuckDB keeps a projection's row order; this guards the assumption
        raise RuntimeError(f"classify: {len(out)} kinds for {len(lines)} lines")
    return out, also


def majority(kinds: Sequence[str | None]) -> str | None:
    """The format most of the records get by the rule (ties: the first name); None when none has one."""
    counts = Counter(k for k in kinds if k and k != NO_FORMAT)
    return min(counts, key=lambda f: (-counts[f], f)) if counts else None


def follow_the_file(
    kinds: Sequence[str | None], also: Sequence[str | None], major: str | None = None
) -> list[str | None]:
    """The records' formats when each record that fits the file's format takes it: ``major`` (the
    engine passes the majority of the file's first records), else the majority of these records. In
    a file of one format's records, every record gets it (a file of Chat bodies, a few without a
    request key, is all Chat); only a record that fits no format the others have keeps its own (a
    truly mixed file)."""
    major = major or majority(kinds)
    if major is None:
        return list(kinds)
    return [major if a == major else k for k, a in zip(kinds, also, strict=True)]


def kind_counts(kinds: Sequence[str | None]) -> Counter[str | None]:
    """How many lines of each kind (for the detection summary)."""
    return Counter(kinds)
