"""The canonical conversation table: one row per conversation, items as ``list<struct>``.

Every reader and writer in chatlake goes through :data:`CONVERSATION_SCHEMA`. Types are pinned to
plain ``string`` / ``list`` / signed ints so that pyarrow, Polars, DuckDB and ``datasets`` open the
Parquet without casts (no unions, views, dictionaries or large types on disk).

Three rules make the table lossless:

* **missing vs null** -- a modelled key that was present with value ``null`` is listed in the
  ``null_fields`` of its level (conversation, item or block); a null value whose name is not listed
  was absent. Invariant: every listed name has a null value.
* **form columns** record what a string-or-list field was: ``content_form`` is ``absent``,
  ``null``, ``string`` or ``parts``; a string is stored as one block whose ``type`` is null.
* **extra_json** keeps every key that is not modelled, verbatim, as a JSON object in source
  order, at conversation, item and block level; ``wrapper_json`` keeps the keys of a native
  container that is split into several items (an Anthropic message, a Chat choice).

Item kinds (``type``) are the Responses vocabulary, which is the richest; ``native_type`` keeps the
wire tag exactly as it was (null when the key was absent, e.g. an EasyInputMessage or any Chat
message). ``section``/``group``/``part`` say where an item sat in the source: ``group`` is the index
of the native message (or Responses item, or Chat choice) and ``part`` the index of its first
block or tool call inside that message, so the native grouping can be rebuilt.

========================  ==================================  =====================================
wire element              canonical item ``type``              ``native_type``
========================  ==================================  =====================================
Responses ``message``     ``message``                          ``"message"`` or null (absent)
Chat message (non-tool)   ``message`` (head of its group)      null
Chat ``tool_calls[i]``    ``function_call`` /                  ``"function"`` / ``"custom"``
                          ``custom_tool_call``
Chat ``tool`` message     ``function_call_output``             null
Anthropic text/image/...  ``message`` (a run of such blocks)   null
Anthropic ``tool_use``    ``function_call``                    ``"tool_use"``
Anthropic ``tool_result`` ``function_call_output``             ``"tool_result"``
Anthropic ``thinking``    ``reasoning``                        ``"thinking"``
other tags                the tag itself                       the tag itself
========================  ==================================  =====================================
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 2  # 2: provenance column, item fingerprint

FORMATS = ("responses", "chat", "anthropic", "hf", "sharegpt")
RECORD_KINDS = ("request", "response")

# Forms of a string-or-list value (content, tool output, instructions, input).
FORM_ABSENT = "absent"
FORM_NULL = "null"
FORM_STRING = "string"
FORM_PARTS = "parts"

_str = pa.string()
_nullable_names = pa.list_(pa.field("item", _str))

BLOCK = pa.struct(
    [
        pa.field("type", _str),  # null: the content was a plain string (see content_form)
        pa.field("text", _str),  # exact text, under the block's own key (text/refusal/thinking)
        pa.field("annotations", _str),  # JSON text, Responses output_text
        pa.field("logprobs", _str),  # JSON text
        pa.field("cache_control", _str),  # JSON text, Anthropic
        pa.field("citations", _str),  # JSON text, Anthropic
        pa.field("extra_json", _str),  # every other key of the block, verbatim JSON object
        pa.field("null_fields", _nullable_names),
    ]
)

ITEM = pa.struct(
    [
        pa.field("section", _str),  # input | output | instructions | messages | system | choices
        pa.field("group", pa.int32()),  # index of the native element this item came from
        pa.field("part", pa.int32()),  # index of its first block / tool call inside that element
        pa.field("type", _str),  # canonical kind
        pa.field("native_type", _str),  # wire tag as it was (null = key absent)
        pa.field("role", _str),
        pa.field("id", _str),
        pa.field("call_id", _str),
        pa.field("name", _str),
        pa.field("namespace", _str),
        pa.field("arguments", _str),  # exact string (Anthropic tool_use input: its JSON text)
        pa.field("input", _str),  # custom tool call free-form input
        pa.field("status", _str),
        pa.field("phase", _str),
        pa.field("content_form", _str),  # absent | null | string | parts
        pa.field("content", pa.list_(pa.field("item", BLOCK))),  # message content / tool output
        pa.field("summary", pa.list_(pa.field("item", BLOCK))),  # reasoning summary
        pa.field("encrypted_content", _str),
        pa.field("signature", _str),
        pa.field("extra_json", _str),
        pa.field("wrapper_json", _str),  # keys of the native container (first item of a group)
        pa.field("null_fields", _nullable_names),
        pa.field("fingerprint", _str),  # content hash at decode (pipeline.fingerprint); null: no state
    ]
)

INSTRUCTIONS = pa.struct(
    [
        pa.field("form", _str),  # absent | null | string | parts | items
        pa.field("content", pa.list_(pa.field("item", BLOCK))),
    ]
)

PROVENANCE = pa.struct(
    [
        pa.field("source", _str),  # adapter that read it (codex-rollout, ...); null: a wire format
        pa.field("session_id", _str),  # session / run / trajectory id as the source names it
        pa.field("sample_id", _str),  # sample / task id inside a multi-conversation file
        pa.field("started_at", _str),  # timestamps exactly as the source wrote them
        pa.field("ended_at", _str),
        pa.field("score", pa.float64()),  # the primary numeric score or reward, when there is one
        pa.field("meta_json", _str),  # every other provenance value (all scores, cwd, git, ...) as JSON
    ]
)

CONVERSATION_SCHEMA = pa.schema(
    [
        pa.field("conversation_id", _str, nullable=False),
        pa.field("source_format", _str, nullable=False),  # responses | chat | anthropic | hf | sharegpt
        pa.field("record_kind", _str, nullable=False),  # request | response
        pa.field("source_file", _str),
        pa.field("source_line", pa.int64()),
        pa.field("model", _str),
        pa.field("instructions", INSTRUCTIONS),  # Responses instructions / Anthropic system
        pa.field("items_form", _str),  # Responses input: string | parts (list); others: parts
        pa.field("items", pa.list_(pa.field("item", ITEM))),
        pa.field("tools", _str),  # JSON text, verbatim
        pa.field("tool_choice", _str),  # JSON text, verbatim
        pa.field("extra_json", _str),  # every other top-level key, verbatim JSON object
        pa.field("null_fields", _nullable_names),
        pa.field("n_items", pa.int32(), nullable=False),
        pa.field("provenance", PROVENANCE),  # null for records read from a wire format directly
    ],
    metadata={b"chatlake.schema_version": str(SCHEMA_VERSION).encode()},
)

ITEM_FIELDS = tuple(f.name for f in ITEM)
BLOCK_FIELDS = tuple(f.name for f in BLOCK)


def cast_to_canonical(table: pa.Table) -> pa.Table:
    """Cast a table read from any engine (Polars' large types, DuckDB) to the canonical schema.

    Raises ``ValueError`` naming the missing columns when the table is not a chatlake table.
    """
    missing = [n for n in CONVERSATION_SCHEMA.names if n not in table.column_names]
    if missing:
        raise ValueError(f"not a chatlake conversation table: missing columns {missing}")
    table = table.select(CONVERSATION_SCHEMA.names)
    if table.schema.equals(CONVERSATION_SCHEMA, check_metadata=False):
        return table.replace_schema_metadata(CONVERSATION_SCHEMA.metadata)
    return table.cast(CONVERSATION_SCHEMA)
