"""Column builders: decoders append plain Python values here; :meth:`TableBuilder.finish` turns the
columns into one canonical Arrow table in a handful of ``pa.array`` calls (no per-row Arrow objects).

A record that fails half-way is rolled back with :meth:`TableBuilder.mark` / :meth:`rollback`, so a
rejected record leaves no partial rows behind.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa

from pipeline.schema import BLOCK, CONVERSATION_SCHEMA, INSTRUCTIONS, ITEM

_STRING_LIST = pa.list_(pa.field("item", pa.string()))


def dumps(value: Any) -> bytes:
    """Compact JSON for verbatim values; orjson keeps key order, 1 vs 1.0 and exact strings."""
    return orjson.dumps(value)


class BlockCols:
    """Columns of one ``list<Block>`` level (content, summary or instructions blocks)."""

    __slots__ = ("annotations", "cache_control", "citations", "extra", "logprobs", "nulls", "text", "type")

    def __init__(self) -> None:
        self.type: list[str | None] = []
        self.text: list[str | None] = []
        self.annotations: list[bytes | None] = []
        self.logprobs: list[bytes | None] = []
        self.cache_control: list[bytes | None] = []
        self.citations: list[bytes | None] = []
        self.extra: list[bytes | None] = []
        self.nulls: list[list[str] | None] = []

    def __len__(self) -> int:
        return len(self.type)

    def truncate(self, n: int) -> None:
        for name in self.__slots__:
            del getattr(self, name)[n:]

    def add_text(self, text: str, btype: str | None = None) -> None:
        """Append a block holding only text (a plain-string content, or a thinking text)."""
        self.type.append(btype)
        self.text.append(text)
        self.annotations.append(None)
        self.logprobs.append(None)
        self.cache_control.append(None)
        self.citations.append(None)
        self.extra.append(None)
        self.nulls.append(None)

    def to_arrow(self) -> pa.StructArray:
        s = pa.string()
        return pa.StructArray.from_arrays(
            [
                pa.array(self.type, s),
                pa.array(self.text, s),
                pa.array(self.annotations, s),
                pa.array(self.logprobs, s),
                pa.array(self.cache_control, s),
                pa.array(self.citations, s),
                pa.array(self.extra, s),
                pa.array(self.nulls, _STRING_LIST),
            ],
            fields=list(BLOCK),
        )


class _ListOffsets:
    """Offsets + validity of a list column whose values live in a :class:`BlockCols`."""

    __slots__ = ("offsets", "valid")

    def __init__(self) -> None:
        self.offsets: list[int] = [0]
        self.valid: list[bool] = []

    def truncate(self, n: int) -> None:
        del self.offsets[n + 1 :]
        del self.valid[n:]

    def close(self, end: int, valid: bool) -> None:
        self.offsets.append(end)
        self.valid.append(valid)

    def to_arrow(self, values: pa.Array, item_type: pa.DataType) -> pa.ListArray:
        mask = None if all(self.valid) else pa.array([not v for v in self.valid], pa.bool_())
        return pa.ListArray.from_arrays(
            pa.array(self.offsets, pa.int32()), values, type=pa.list_(pa.field("item", item_type)), mask=mask
        )


class ItemCols:
    """Columns of the ``items`` struct; content and summary blocks hang off it."""

    SCALARS = (
        "section",
        "type",
        "native_type",
        "role",
        "id",
        "call_id",
        "name",
        "namespace",
        "arguments",
        "input",
        "status",
        "phase",
        "content_form",
        "encrypted_content",
        "signature",
    )

    def __init__(self) -> None:
        for name in self.SCALARS:
            setattr(self, name, [])
        self.group: list[int] = []
        self.part: list[int | None] = []
        self.extra: list[bytes | None] = []
        self.wrapper: list[bytes | None] = []
        self.nulls: list[list[str] | None] = []
        self.content = BlockCols()
        self.content_off = _ListOffsets()
        self.summary = BlockCols()
        self.summary_off = _ListOffsets()

    def __len__(self) -> int:
        return len(self.group)

    def truncate(self, n: int) -> None:
        for name in (*self.SCALARS, "group", "part", "extra", "wrapper", "nulls"):
            del getattr(self, name)[n:]
        self.content.truncate(self.content_off.offsets[n])
        self.content_off.truncate(n)
        self.summary.truncate(self.summary_off.offsets[n])
        self.summary_off.truncate(n)

    def to_arrow(self) -> pa.StructArray:
        s = pa.string()
        arrays: dict[str, pa.Array] = {name: pa.array(getattr(self, name), s) for name in self.SCALARS}
        arrays["group"] = pa.array(self.group, pa.int32())
        arrays["part"] = pa.array(self.part, pa.int32())
        arrays["extra_json"] = pa.array(self.extra, s)
        arrays["wrapper_json"] = pa.array(self.wrapper, s)
        arrays["null_fields"] = pa.array(self.nulls, _STRING_LIST)
        arrays["content"] = self.content_off.to_arrow(self.content.to_arrow(), BLOCK)
        arrays["summary"] = self.summary_off.to_arrow(self.summary.to_arrow(), BLOCK)
        return pa.StructArray.from_arrays([arrays[f.name] for f in ITEM], fields=list(ITEM))


class Item:
    """One item being decoded: set attributes, then :meth:`ItemCols.append` it.

    Unset attributes are missing; names in ``nulls`` were explicit nulls.
    """

    __slots__ = (
        "arguments",
        "call_id",
        "content_form",
        "encrypted_content",
        "extra",
        "group",
        "id",
        "input",
        "name",
        "namespace",
        "native_type",
        "nulls",
        "part",
        "phase",
        "role",
        "section",
        "signature",
        "status",
        "type",
        "wrapper",
    )

    def __init__(self, section: str, group: int, part: int | None, kind: str) -> None:
        self.section = section
        self.group = group
        self.part = part
        self.type = kind
        self.native_type = self.role = self.id = self.call_id = self.name = self.namespace = None
        self.arguments = self.input = self.status = self.phase = self.encrypted_content = None
        self.signature = None
        self.content_form = None
        self.extra: dict[str, Any] | None = None
        self.wrapper: bytes | None = None
        self.nulls: list[str] | None = None

    def null(self, name: str) -> None:
        if self.nulls is None:
            self.nulls = [name]
        else:
            self.nulls.append(name)

    def keep(self, key: str, value: Any) -> None:
        """Keep a key that is not modelled (or has an unexpected type) verbatim."""
        if self.extra is None:
            self.extra = {key: value}
        else:
            self.extra[key] = value


def append_item(cols: ItemCols, it: Item, has_content: bool, has_summary: bool) -> None:
    """Close an item whose content/summary blocks (if any) were already appended to ``cols``."""
    cols.section.append(it.section)
    cols.group.append(it.group)
    cols.part.append(it.part)
    cols.type.append(it.type)
    cols.native_type.append(it.native_type)
    cols.role.append(it.role)
    cols.id.append(it.id)
    cols.call_id.append(it.call_id)
    cols.name.append(it.name)
    cols.namespace.append(it.namespace)
    cols.arguments.append(it.arguments)
    cols.input.append(it.input)
    cols.status.append(it.status)
    cols.phase.append(it.phase)
    cols.content_form.append(it.content_form)
    cols.encrypted_content.append(it.encrypted_content)
    cols.signature.append(it.signature)
    cols.extra.append(None if it.extra is None else dumps(it.extra))
    cols.wrapper.append(it.wrapper)
    cols.nulls.append(it.nulls)
    cols.content_off.close(len(cols.content), has_content)
    cols.summary_off.close(len(cols.summary), has_summary)


class TableBuilder:
    """Accumulates decoded conversations; :meth:`finish` returns the canonical table."""

    def __init__(self) -> None:
        self.conversation_id: list[str] = []
        self.source_format: list[str] = []
        self.record_kind: list[str] = []
        self.source_file: list[str | None] = []
        self.source_line: list[int | None] = []
        self.model: list[str | None] = []
        self.instr_form: list[str] = []
        self.instr = BlockCols()
        self.instr_off = _ListOffsets()
        self.items_form: list[str | None] = []
        self.items = ItemCols()
        self.items_off: list[int] = [0]
        self.tools: list[bytes | None] = []
        self.tool_choice: list[bytes | None] = []
        self.extra: list[bytes | None] = []
        self.nulls: list[list[str] | None] = []

    def __len__(self) -> int:
        return len(self.conversation_id)

    def mark(self) -> tuple[int, int]:
        """A restore point taken before decoding a record."""
        return len(self.items), len(self.instr)

    def rollback(self, mark: tuple[int, int]) -> None:
        """Drop whatever a failed record appended (rows are only closed when a record succeeds)."""
        n_items, n_instr = mark
        rows = len(self.conversation_id)
        self.items.truncate(n_items)
        self.instr.truncate(n_instr)
        self.instr_off.truncate(rows)
        del self.instr_form[rows:]

    def finish(self) -> pa.Table:
        s = pa.string()
        n_items_per_row = [b - a for a, b in zip(self.items_off, self.items_off[1:], strict=False)]
        instructions = pa.StructArray.from_arrays(
            [pa.array(self.instr_form, s), self.instr_off.to_arrow(self.instr.to_arrow(), BLOCK)],
            fields=list(INSTRUCTIONS),
        )
        items = pa.ListArray.from_arrays(
            pa.array(self.items_off, pa.int32()),
            self.items.to_arrow(),
            type=CONVERSATION_SCHEMA.field("items").type,
        )
        columns = [
            pa.array(self.conversation_id, s),
            pa.array(self.source_format, s),
            pa.array(self.record_kind, s),
            pa.array(self.source_file, s),
            pa.array(self.source_line, pa.int64()),
            pa.array(self.model, s),
            instructions,
            pa.array(self.items_form, s),
            items,
            pa.array(self.tools, s),
            pa.array(self.tool_choice, s),
            pa.array(self.extra, s),
            pa.array(self.nulls, _STRING_LIST),
            pa.array(n_items_per_row, pa.int32()),
        ]
        return pa.Table.from_arrays(columns, schema=CONVERSATION_SCHEMA)
