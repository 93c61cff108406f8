"""Pieces every wire format shares: record errors, content blocks, and the canonical-row view
that encoders read.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.formats import _build as b
from pipeline.formats._build import I_CALL_ID, I_FORM, I_NAME, I_ROLE, I_WRAPPER, OPEN_TAIL
from pipeline.schema import FORM_ABSENT, FORM_NULL, FORM_PARTS, FORM_STRING


class RecordError(ValueError):
    """A record that breaks its wire format; ``path`` is a JSONPath-like location (``$.input[3]``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


def json_type(value: Any) -> str:
    """The JSON name of a Python value, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def not_object(path: str, value: Any) -> RecordError:
    """The error for a value that should have been a JSON object."""
    return RecordError(path, f"expected object, got {json_type(value)}")


def list_at(rec: dict[str, Any], key: str) -> list[Any]:
    """``rec[key]``, which the format requires to be an array."""
    value = rec.get(key, ...)
    if type(value) is not list:
        got = "nothing" if value is ... else json_type(value)
        raise RecordError(f"$.{key}", f"expected array, got {got}")
    return value


def got(obj: dict[str, Any], key: str) -> str:
    """What ``obj[key]`` is, for an error message: its JSON type, or "nothing" when absent."""
    return json_type(obj[key]) if key in obj else "nothing"


def require(obj: dict[str, Any], key: str, path: str, kind: type = str, *, nullable: bool = False) -> None:
    """Reject the record unless ``obj[key]`` is a ``kind`` (a field the wire format requires, that
    no other format could write back as it was); ``path`` locates ``obj``. ``nullable``: an
    explicit null is accepted too (the decoder records it; logs in the wild hold it)."""
    value = obj.get(key, ...)
    if type(value) is not kind and not (nullable and value is None):
        want = {str: "string", dict: "object", list: "array"}[kind]
        raise RecordError(f"{path}.{key}", f"expected {want}, got {got(obj, key)}")


def check_tools(rec: dict[str, Any], name_of: Any) -> None:
    """Reject a ``tools`` list whose tools lack a string name, and a ``tool_choice`` naming a tool
    without a string name: every target needs the name, and would fill an empty one.
    ``name_of(value, path)`` gives the object that holds the name and its path (None: the value
    has none to check, a hosted tool, a ``tool_choice`` of "auto")."""
    tools = rec.get("tools")
    if type(tools) is list:
        for k, tool in enumerate(tools):
            if type(tool) is not dict:  # encoders report it ("not a tool object")
                continue
            holder = name_of(tool, f"$.tools[{k}]")
            if holder is not None:
                require(holder[0], "name", holder[1])
    choice = rec.get("tool_choice")
    if type(choice) is dict and "type" in choice:  # every format's tool_choice object names its type
        require(choice, "type", "$.tool_choice")
    if type(choice) is dict and type(choice.get("type")) is str:
        holder = name_of(choice, "$.tool_choice", True)
        if holder is not None:
            require(holder[0], "name", holder[1])


def add_instructions(tb: b.TableBuilder, value: Any) -> bool:
    """Close the row's instructions when ``value`` is absent (``...``), null or a string.

    Returns False, closing nothing, for any other value: each format decides what a list means.
    """
    if value is ...:
        tb.close_instructions(FORM_ABSENT)
    elif value is None:
        tb.close_instructions(FORM_NULL)
    elif type(value) is str:
        tb.instr.rows.append((None, value, None, None, None, None, None, None))
        tb.close_instructions(FORM_STRING)
    else:
        return False
    return True


# The key that holds a block's text, when it is not "text".
TEXT_KEY = {"refusal": "refusal", "thinking": "thinking"}
# Block keys whose JSON value has its own column, in BLOCK_ROW order from slot 2.
_BLOCK_JSON = {"annotations": 2, "logprobs": 3, "cache_control": 4, "citations": 5}


def block_row(part: dict[str, Any]) -> tuple[Any, ...]:
    """One content block (a JSON object) as a block row; unmodelled keys go to its extra_json.

    >>> block_row({"type": "output_text", "text": "hi", "annotations": [], "id": 7})
    ('output_text', 'hi', '[]', None, None, None, '{"id":7}', None)
    """
    btype = part.get("type")
    if type(btype) is str:
        text_key = TEXT_KEY.get(btype, "text")
        if len(part) == 2:  # the common {"type", "text"} block, without the general loop
            text = part.get(text_key)
            if type(text) is str:
                return (btype, text, None, None, None, None, None, None)
    else:
        text_key = "text"
    row: list[Any] = [None, None, None, None, None, None, None, None]
    extra: dict[str, Any] | None = None
    for k, v in part.items():
        if k == "type" or k == text_key:
            if type(v) is str:
                row[0 if k == "type" else 1] = v
                continue
            if v is None:
                row[7] = [*(row[7] or ()), "type" if k == "type" else "text"]
                continue
        else:
            slot = _BLOCK_JSON.get(k)
            if slot is not None:
                if v is None:
                    row[7] = [*(row[7] or ()), k]
                else:  # Responses output text always carries "annotations": [] (often "logprobs": [])
                    row[slot] = "[]" if type(v) is list and not v else b.dumps(v)
                continue
        if extra is None:
            extra = {}
        extra[k] = v
    if extra is not None:
        row[6] = b.dumps(extra)
    return tuple(row)


def add_blocks(cols: b.BlockCols, parts: list[Any], path: str) -> None:
    """Append every block of a content list; ``path`` locates the list (for errors)."""
    append = cols.rows.append
    for i, part in enumerate(parts):
        if type(part) is not dict:
            raise not_object(f"{path}[{i}]", part)
        append(block_row(part))


def add_content(cols: b.BlockCols, row: list[Any], value: Any, path: str, *, strict: bool = True) -> bool:
    """Store a string-or-list value (message content, tool output) as blocks; set the item's form.

    Returns whether the item's content list is valid (non-null). With ``strict=False`` a value of
    another JSON type is ignored (the caller keeps it verbatim) instead of rejecting the record.
    """
    if type(value) is str:
        row[I_FORM] = FORM_STRING
        cols.rows.append((None, value, None, None, None, None, None, None))
        return True
    if type(value) is list:
        row[I_FORM] = FORM_PARTS
        add_blocks(cols, value, path)
        return True
    if value is None:
        row[I_FORM] = FORM_NULL
        return False
    if strict:
        raise RecordError(path, f"expected string or array, got {json_type(value)}")
    return False


# Chat-shaped messages (Chat, HF): these roles hold a tool's output.
OUTPUT_ROLES = frozenset(("tool", "function"))


def add_chat_message(
    cols: b.ItemCols, msg: Any, section: str, group: int, path: str, wrapper: str | None, lenient: bool
) -> tuple[str, list[Any] | None]:
    """Append the head item of a Chat-shaped message; return its role and its tool calls (None
    when there are none to split into items: absent, null or empty, kept verbatim instead).

    ``lenient``: content that is not a string, null or a list of objects stays verbatim in
    extra_json instead of rejecting the record (HF rows carry odd shapes).
    """
    if type(msg) is not dict:
        raise not_object(path, msg)
    role = msg.get("role")
    if type(role) is not str:
        raise RecordError(path, "message without role")
    row = [section, group, None, "function_call_output" if role in OUTPUT_ROLES else "message", *OPEN_TAIL]
    row[I_ROLE] = role
    row[I_WRAPPER] = wrapper
    tool_calls = None
    has_content = False
    for k, v in msg.items():
        if k == "role":
            continue
        if k == "content" and (not lenient or _is_content(v)):
            has_content = add_content(cols.content, row, v, f"{path}.content")
        elif k == "name":
            b.set_str(row, I_NAME, k, v)
        elif k == "tool_call_id" and row[3] == "function_call_output":  # elsewhere it pairs nothing
            b.set_str(row, I_CALL_ID, k, v)
        elif k == "tool_calls" and type(v) is list and v:
            tool_calls = v
        else:  # includes tool_calls that are null or [] (nothing to split), odd content when lenient
            b.keep(row, k, v)
    if row[I_FORM] is None:
        row[I_FORM] = FORM_ABSENT
    b.close_item(cols, row, has_content, False)
    return role, tool_calls


def _is_content(value: Any) -> bool:
    """What ``add_content`` can hold exactly: a string, null, or a list of objects."""
    return (
        type(value) is str or value is None or (type(value) is list and all(type(p) is dict for p in value))
    )


# ---------------------------------------------------------------------------------------------
# Reading canonical rows back: flat Python lists per leaf column, sliced per conversation.


def _list_offsets(arr: pa.ListArray) -> list[int]:
    """Offsets into ``arr.flatten()``; null lists count as empty."""
    lengths = pc.fill_null(pc.list_value_length(arr), 0)
    out = [0]
    total = 0
    for n in lengths.to_pylist():
        total += n
        out.append(total)
    return out


def splice(d: dict[str, Any], extra: bytes | None) -> Any:
    """``d`` plus the keys of ``extra`` (a JSON object's text), without parsing ``extra``.

    Returns ``d`` itself or an ``orjson.Fragment``; both serialise with ``orjson.dumps``. Keys in
    ``extra`` never repeat keys of ``d``: decoders only put keys there that have no column.
    """
    if extra is None or len(extra) <= 2:
        return d
    if not d:
        return orjson.Fragment(extra)
    return orjson.Fragment(orjson.dumps(d)[:-1] + b"," + extra[1:])


def _bytes(arr: pa.Array) -> list[bytes | None]:
    """A string column as ``bytes`` (zero-copy cast): JSON text goes out without a parse."""
    return arr.cast(pa.binary()).to_pylist()


class BlockView:
    """Flat columns of a ``list<Block>`` level, read with one ``to_pylist`` per field."""

    __slots__ = (
        "_json_columns", "annotations", "cache_control", "citations", "extra", "logprobs", "nulls", "text",
        "type",
    )  # fmt: skip

    def __init__(self, blocks: pa.StructArray) -> None:
        self.type = blocks.field("type").to_pylist()
        self.text = blocks.field("text").to_pylist()
        self.annotations = _bytes(blocks.field("annotations"))
        self.logprobs = _bytes(blocks.field("logprobs"))
        self.cache_control = _bytes(blocks.field("cache_control"))
        self.citations = _bytes(blocks.field("citations"))
        self.extra = _bytes(blocks.field("extra_json"))
        self.nulls = blocks.field("null_fields").to_pylist()
        self._json_columns = tuple((name, getattr(self, name)) for name in _BLOCK_JSON)

    def block(self, j: int) -> Any:
        """Rebuild block ``j`` as its wire object (a dict or an ``orjson.Fragment``)."""
        d: dict[str, Any] = {}
        t = self.type[j]
        if t is not None:
            d["type"] = t
        text = self.text[j]
        if text is not None:
            d[TEXT_KEY.get(t, "text") if t is not None else "text"] = text
        for name, col in self._json_columns:
            x = col[j]
            if x is not None:
                d[name] = orjson.Fragment(x)
        nulls = self.nulls[j]
        if nulls:
            for name in nulls:
                d[(TEXT_KEY.get(t, "text") if t is not None else "text") if name == "text" else name] = None
        return splice(d, self.extra[j])

    def blocks(self, start: int, end: int) -> list[Any]:
        block = self.block
        return [block(j) for j in range(start, end)]


def wire_value(form: str | None, blocks: BlockView, start: int, end: int) -> Any:
    """A string-or-list field rebuilt from its form and its blocks ``start:end``; ``...`` when absent."""
    if form == FORM_STRING:
        return blocks.text[start]
    if form == FORM_PARTS:
        return blocks.blocks(start, end)
    if form == FORM_NULL:
        return None
    return ...


class ItemView:
    """Flat columns of the ``items`` level plus its block levels."""

    def __init__(self, items: pa.StructArray) -> None:
        for name in b.ItemCols.SCALARS:
            setattr(self, name, items.field(name).to_pylist())
        self.group = items.field("group").to_pylist()
        self.part = items.field("part").to_pylist()
        self.extra = _bytes(items.field("extra_json"))
        self.wrapper = _bytes(items.field("wrapper_json"))
        self.nulls = items.field("null_fields").to_pylist()
        content = items.field("content")
        self.content_off = _list_offsets(content)
        self.content = BlockView(content.flatten())
        summary = items.field("summary")
        self.summary_off = _list_offsets(summary)
        self.summary_valid = summary.is_valid().to_pylist()
        self.summary = BlockView(summary.flatten())

    def content_value(self, i: int) -> Any:
        """The item's content/output as its wire value (string, list or None); ``...`` if absent."""
        form = self.content_form[i]  # type: ignore[attr-defined]
        return wire_value(form, self.content, self.content_off[i], self.content_off[i + 1])

    def summary_value(self, i: int) -> Any:
        if self.summary_valid[i]:
            return self.summary.blocks(self.summary_off[i], self.summary_off[i + 1])
        return None if "summary" in (self.nulls[i] or ()) else ...

    def put(self, d: dict[str, Any], key: str, field: str, i: int) -> None:
        """Set ``d[key]`` from a string field, honouring missing vs null."""
        v = getattr(self, field)[i]
        if v is not None:
            d[key] = v
        elif field in (self.nulls[i] or ()):
            d[key] = None

    def finish(self, d: dict[str, Any], i: int) -> Any:
        """``d`` plus the item's verbatim extra keys."""
        return splice(d, self.extra[i])


class ConversationView:
    """Row-wise access to a canonical table for encoders (test and reference speed, batch-sized)."""

    def __init__(self, table: pa.Table) -> None:
        table = table.combine_chunks()
        self.n = table.num_rows
        self.conversation_id = table.column("conversation_id").to_pylist()
        self.source_format = table.column("source_format").to_pylist()
        self.record_kind = table.column("record_kind").to_pylist()
        self.model = table.column("model").to_pylist()
        self.items_form = table.column("items_form").to_pylist()
        self.tools = _bytes(table.column("tools").chunk(0)) if table.num_rows else []
        self.tool_choice = _bytes(table.column("tool_choice").chunk(0)) if table.num_rows else []
        self.extra = _bytes(table.column("extra_json").chunk(0)) if table.num_rows else []
        self.nulls = table.column("null_fields").to_pylist()
        instr = table.column("instructions").chunk(0) if table.num_rows else None
        if instr is not None:
            self.instr_form = instr.field("form").to_pylist()
            icontent = instr.field("content")
            self.instr_off = _list_offsets(icontent)
            self.instr = BlockView(icontent.flatten())
            items = table.column("items").chunk(0)
            self.items_off = _list_offsets(items)
            self.items = ItemView(items.flatten())

    def instructions_value(self, r: int) -> Any:
        # ``...`` for absent, and for "items" (the encoder collects them)
        return wire_value(self.instr_form[r], self.instr, self.instr_off[r], self.instr_off[r + 1])

    def top(self, r: int, d: dict[str, Any]) -> Any:
        """Add model, tools, tool_choice and every other top-level key to ``d``."""
        if self.model[r] is not None:
            d["model"] = self.model[r]
        if self.tools[r] is not None:
            d["tools"] = orjson.Fragment(self.tools[r])
        if self.tool_choice[r] is not None:
            d["tool_choice"] = orjson.Fragment(self.tool_choice[r])
        nulls = self.nulls[r]
        if nulls:
            for name in nulls:
                d[name] = None
        return splice(d, self.extra[r])
