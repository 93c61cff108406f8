"""Column builders: decoders append plain Python values here; :meth:`TableBuilder.finish` turns the
columns into one canonical Arrow table in a handful of ``pa.array`` calls (no per-row Arrow objects).

A record that fails half-way is rolled back with :meth:`TableBuilder.mark` / :meth:`rollback`, so a
rejected record leaves no partial rows behind.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa

from pipeline.fingerprint import fingerprints
from pipeline.schema import BLOCK, CONVERSATION_SCHEMA, FORM_PARTS, FORM_STRING, INSTRUCTIONS, ITEM

_STRING_LIST = pa.list_(pa.field("item", pa.string()))


def dumps(value: Any) -> bytes:
    """Compact JSON for verbatim values; orjson keeps key order, 1 vs 1.0 and exact strings."""
    return orjson.dumps(value)


class BlockCols:
    """Rows of one ``list<Block>`` level (content, summary or instructions blocks).

    Each block is one tuple in :data:`BLOCK_ROW` order; :meth:`to_arrow` transposes them with
    ``zip`` (C speed) rather than appending to eight lists per block.
    """

    __slots__ = ("rows",)

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def __len__(self) -> int:
        return len(self.rows)

    def truncate(self, n: int) -> None:
        del self.rows[n:]

    def add_text(self, text: str, btype: str | None = None) -> None:
        """Append a block holding only text (a plain-string content, or a thinking text)."""
        self.rows.append((btype, text, None, None, None, None, None, None))

    def to_arrow(self) -> pa.StructArray:
        s = pa.string()
        # lists, not the tuples zip yields: pa.array converts a list ~30x faster than a tuple
        cols = [list(c) for c in zip(*self.rows, strict=True)] if self.rows else [[]] * len(BLOCK)
        types = [s, s, s, s, s, s, s, _STRING_LIST]
        return pa.StructArray.from_arrays(
            [pa.array(c, t) for c, t in zip(cols, types, strict=True)], fields=list(BLOCK)
        )


# Order of a block row: type, text, annotations, logprobs, cache_control, citations, extra, nulls.
BLOCK_ROW = (
    "type",
    "text",
    "annotations",
    "logprobs",
    "cache_control",
    "citations",
    "extra_json",
    "null_fields",
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
    """Rows of the ``items`` struct (one tuple per item, :data:`ITEM_ROW` order) plus its blocks."""

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
        self.rows: list[tuple[Any, ...]] = []
        self.content = BlockCols()
        self.summary = BlockCols()

    def __len__(self) -> int:
        return len(self.rows)

    def truncate(self, n: int) -> None:
        content_end = summary_end = 0
        if n:
            content_end, summary_end = self.rows[n - 1][-4], self.rows[n - 1][-2]
        del self.rows[n:]
        self.content.truncate(content_end)
        self.summary.truncate(summary_end)

    @staticmethod
    def _list(ends: tuple[int, ...], valid: tuple[bool, ...], values: pa.Array) -> pa.ListArray:
        offsets = pa.array([0, *ends], pa.int32())
        mask = None if all(valid) else pa.array([not v for v in valid], pa.bool_())
        return pa.ListArray.from_arrays(offsets, values, type=pa.list_(pa.field("item", BLOCK)), mask=mask)

    def to_arrow(self) -> pa.StructArray:
        s = pa.string()
        transposed = [list(c) for c in zip(*self.rows, strict=True)] if self.rows else [[]] * len(ITEM_ROW)
        cols = dict(zip(ITEM_ROW, transposed, strict=True))
        arrays: dict[str, pa.Array] = {name: pa.array(cols[name], s) for name in self.SCALARS}
        arrays["group"] = pa.array(cols["group"], pa.int32())
        arrays["part"] = pa.array(cols["part"], pa.int32())
        arrays["extra_json"] = pa.array(cols["extra_json"], s)
        arrays["wrapper_json"] = pa.array(cols["wrapper_json"], s)
        arrays["null_fields"] = pa.array(cols["null_fields"], _STRING_LIST)
        arrays["content"] = self._list(cols["content_end"], cols["content_valid"], self.content.to_arrow())
        arrays["summary"] = self._list(cols["summary_end"], cols["summary_valid"], self.summary.to_arrow())
        base = [f for f in ITEM if f.name != "fingerprint"]
        arrays["fingerprint"] = fingerprints(
            pa.StructArray.from_arrays([arrays[f.name] for f in base], fields=base)
        )
        return pa.StructArray.from_arrays([arrays[f.name] for f in ITEM], fields=list(ITEM))


# Order of an item row; the last four close its content and summary lists.
ITEM_ROW = (
    "section", "group", "part", "type", "native_type", "role", "id", "call_id", "name", "namespace",
    "arguments", "input", "status", "phase", "content_form", "encrypted_content", "signature",
    "extra_json", "wrapper_json", "null_fields",
    "content_end", "content_valid", "summary_end", "summary_valid",
)  # fmt: skip


class Item:
    """One item being decoded: set attributes, then :func:`append_item` it.

    Attributes left None are missing; names in ``nulls`` were explicit nulls.
    """

    __slots__ = (
        "arguments", "call_id", "content_form", "encrypted_content", "extra", "group", "id", "input",
        "name", "namespace", "native_type", "nulls", "part", "phase", "role", "section", "signature",
        "status", "type", "wrapper",
    )  # fmt: skip

    def __init__(self, section: str, group: int, part: int | None, kind: str) -> None:
        self.section = section
        self.group = group
        self.part = part
        self.type = kind
        self.native_type = self.role = self.id = self.call_id = self.name = self.namespace = None
        self.arguments = self.input = self.status = self.phase = self.encrypted_content = None
        self.signature = self.content_form = self.extra = self.wrapper = self.nulls = None

    def null(self, name: str) -> None:
        if self.nulls is None:
            self.nulls = [name]
        else:
            self.nulls.append(name)

    def set_str(self, field: str, key: str, value: Any) -> None:
        """Wire key ``key`` into string column ``field``: null to ``nulls``, another type verbatim."""
        if type(value) is str:
            setattr(self, field, value)
        elif value is None:
            self.null(field)
        else:
            self.keep(key, value)

    def keep(self, key: str, value: Any) -> None:
        """Keep a key that is not modelled (or has an unexpected type) verbatim."""
        if self.extra is None:
            self.extra = {key: value}
        else:
            self.extra[key] = value


def append_item(cols: ItemCols, it: Item, has_content: bool, has_summary: bool) -> None:
    """Close an item whose content/summary blocks (if any) were already appended to ``cols``."""
    extra = it.extra
    cols.rows.append(
        (
            it.section, it.group, it.part, it.type, it.native_type, it.role, it.id, it.call_id, it.name,
            it.namespace, it.arguments, it.input, it.status, it.phase, it.content_form,
            it.encrypted_content, it.signature, None if extra is None else dumps(extra), it.wrapper,
            it.nulls, len(cols.content.rows), has_content, len(cols.summary.rows), has_summary,
        )
    )  # fmt: skip


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

    def close_instructions(self, form: str) -> None:
        """Close this row's instructions after their blocks (if any) were appended to ``instr``.

        Only the ``string`` and ``parts`` forms hold blocks; the list is null for the others.
        """
        self.instr_form.append(form)
        self.instr_off.close(len(self.instr), form in (FORM_STRING, FORM_PARTS))

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
            pa.nulls(len(self.conversation_id), CONVERSATION_SCHEMA.field("provenance").type),
        ]
        return pa.Table.from_arrays(columns, schema=CONVERSATION_SCHEMA)
