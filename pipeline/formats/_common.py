"""Pieces every wire format shares: record errors, content blocks, and the canonical-row view
that encoders read.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.formats._build import BlockCols, Item, ItemCols, dumps
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


# The key that holds a block's text, when it is not "text".
TEXT_KEY = {"refusal": "refusal", "thinking": "thinking"}
_BLOCK_JSON = ("annotations", "logprobs", "cache_control", "citations")


def add_block(cols: BlockCols, part: Any, path: str) -> None:
    """Append one content block (a JSON object) to ``cols``; unmodelled keys go to extra_json."""
    if type(part) is not dict:
        raise RecordError(path, f"expected object, got {json_type(part)}")
    btype = part.get("type")
    text_key = TEXT_KEY.get(btype, "text") if type(btype) is str else "text"
    t = text = ann = lp = cc = cit = None
    extra: dict[str, Any] | None = None
    nulls: list[str] | None = None
    for k, v in part.items():
        if k == "type" or k == text_key:
            if type(v) is str:
                if k == "type":
                    t = v
                else:
                    text = v
                continue
            if v is None:
                nulls = [*(nulls or ()), "type" if k == "type" else "text"]
                continue
        elif k in _BLOCK_JSON:
            if v is None:
                nulls = [*(nulls or ()), k]
                continue
            if k == "annotations":
                ann = dumps(v)
            elif k == "logprobs":
                lp = dumps(v)
            elif k == "cache_control":
                cc = dumps(v)
            else:
                cit = dumps(v)
            continue
        if extra is None:
            extra = {}
        extra[k] = v
    cols.rows.append((t, text, ann, lp, cc, cit, None if extra is None else dumps(extra), nulls))


def add_content(cols: BlockCols, it: Item, value: Any, path: str, *, strict: bool = True) -> bool:
    """Store a string-or-list value (message content, tool output) as blocks; set ``it.content_form``.

    Returns whether the item's content list is valid (non-null). With ``strict=False`` a value of
    another JSON type is kept verbatim in the item's extra_json under ``path``'s last key instead of
    rejecting the record (tool outputs in the wild hold objects).
    """
    if type(value) is str:
        it.content_form = FORM_STRING
        cols.add_text(value)
        return True
    if type(value) is list:
        it.content_form = FORM_PARTS
        for i, part in enumerate(value):
            add_block(cols, part, f"{path}[{i}]")
        return True
    if value is None:
        it.content_form = FORM_NULL
        return False
    if strict:
        raise RecordError(path, f"expected string or array, got {json_type(value)}")
    return False


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

    __slots__ = ("annotations", "cache_control", "citations", "extra", "logprobs", "nulls", "text", "type")

    def __init__(self, blocks: pa.StructArray) -> None:
        self.type = blocks.field("type").to_pylist()
        self.text = blocks.field("text").to_pylist()
        self.annotations = _bytes(blocks.field("annotations"))
        self.logprobs = _bytes(blocks.field("logprobs"))
        self.cache_control = _bytes(blocks.field("cache_control"))
        self.citations = _bytes(blocks.field("citations"))
        self.extra = _bytes(blocks.field("extra_json"))
        self.nulls = blocks.field("null_fields").to_pylist()

    def block(self, j: int) -> Any:
        """Rebuild block ``j`` as its wire object (a dict or an ``orjson.Fragment``)."""
        d: dict[str, Any] = {}
        t = self.type[j]
        if t is not None:
            d["type"] = t
        text = self.text[j]
        if text is not None:
            d[TEXT_KEY.get(t, "text") if t is not None else "text"] = text
        x = self.annotations[j]
        if x is not None:
            d["annotations"] = orjson.Fragment(x)
        x = self.logprobs[j]
        if x is not None:
            d["logprobs"] = orjson.Fragment(x)
        x = self.cache_control[j]
        if x is not None:
            d["cache_control"] = orjson.Fragment(x)
        x = self.citations[j]
        if x is not None:
            d["citations"] = orjson.Fragment(x)
        nulls = self.nulls[j]
        if nulls:
            for name in nulls:
                d[(TEXT_KEY.get(t, "text") if t is not None else "text") if name == "text" else name] = None
        return splice(d, self.extra[j])

    def blocks(self, start: int, end: int) -> list[Any]:
        block = self.block
        return [block(j) for j in range(start, end)]


class ItemView:
    """Flat columns of the ``items`` level plus its block levels."""

    def __init__(self, items: pa.StructArray) -> None:
        for name in ItemCols.SCALARS:
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
        if form == FORM_STRING:
            return self.content.text[self.content_off[i]]
        if form == FORM_PARTS:
            return self.content.blocks(self.content_off[i], self.content_off[i + 1])
        if form == FORM_NULL:
            return None
        return ...

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
        form = self.instr_form[r]
        if form == FORM_STRING:
            return self.instr.text[self.instr_off[r]]
        if form == FORM_PARTS:
            return self.instr.blocks(self.instr_off[r], self.instr_off[r + 1])
        if form == FORM_NULL:
            return None
        return ...  # absent, or "items" (the encoder collects them)

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


FORMS = (FORM_ABSENT, FORM_NULL, FORM_STRING, FORM_PARTS)
