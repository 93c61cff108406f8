"""Column builders: decoders append plain Python tuples here; :meth:`TableBuilder.finish` turns them
into one canonical Arrow table with a handful of ``pa.array`` calls (no per-row Arrow objects).

An item being decoded is a plain ``list`` in :data:`ITEM_ROW` order (slots ``I_*``): decoders set
its slots by index, and :func:`close_item` appends it as a tuple. A content / summary / instructions
block is one tuple in :data:`BLOCK_ROW` order. Tuples of a struct's fields are what ``pa.array(rows,
type=struct)`` converts fastest: about half the time of transposing them into column lists first.

==============  ========================================================
item row slot   holds
==============  ========================================================
``I_EXTRA``     a dict of kept keys while decoding; its JSON text once closed
``I_NULLS``     names (canonical) of modelled keys that were explicit nulls
last four       content end, content valid, summary end, summary valid
==============  ========================================================

A record that fails half-way is rolled back with :meth:`TableBuilder.mark` / :meth:`rollback`, so a
rejected record leaves no partial rows behind.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.fingerprint import fingerprints, needed
from pipeline.schema import BLOCK, CONVERSATION_SCHEMA, FORM_PARTS, FORM_STRING, INSTRUCTIONS, ITEM

_STRING_LIST = pa.list_(pa.field("item", pa.string()))


def dumps(value: Any) -> str:
    """Compact JSON text of a verbatim value (orjson keeps key order, 1 vs 1.0 and exact strings).

    Returned as ``str``, not orjson's ``bytes``: orjson 3.12+ returns each result in a buffer of
    4 KiB or more that is never trimmed, so the builder's many small JSON values (``[]``
    annotations, extra_json) kept that much each until ``finish``. The ``str`` copy is right-sized
    and costs no more than the call; Arrow stores both as the same ``string``.
    """
    return orjson.dumps(value).decode()


# Order of a block row: the fields of schema.BLOCK.
BLOCK_ROW = tuple(f.name for f in BLOCK)

# Order of an item row; the last four close its content and summary lists.
ITEM_ROW = (
    "section", "group", "part", "type", "native_type", "role", "id", "call_id", "name", "namespace",
    "arguments", "input", "status", "phase", "content_form", "encrypted_content", "signature",
    "extra_json", "wrapper_json", "null_fields",
    "content_end", "content_valid", "summary_end", "summary_valid",
)  # fmt: skip
(
    I_SECTION, I_GROUP, I_PART, I_TYPE, I_NATIVE, I_ROLE, I_ID, I_CALL_ID, I_NAME, I_NAMESPACE,
    I_ARGUMENTS, I_INPUT, I_STATUS, I_PHASE, I_FORM, I_ENCRYPTED, I_SIGNATURE,
    I_EXTRA, I_WRAPPER, I_NULLS,
) = range(20)  # fmt: skip
# An open item is [section, group, part, type, *OPEN_TAIL]; close_item appends the last four.
OPEN_TAIL = (None,) * 16

_s = pa.string()
_ITEM_ROW_TYPE = pa.struct(
    [pa.field(n, pa.int32() if n in ("group", "part") else _s) for n in ITEM_ROW[:I_NULLS]]
    + [
        pa.field("null_fields", _STRING_LIST),
        pa.field("content_end", pa.int32()),
        pa.field("content_valid", pa.bool_()),
        pa.field("summary_end", pa.int32()),
        pa.field("summary_valid", pa.bool_()),
    ]
)


def null(row: list[Any], name: str) -> None:
    """Record that modelled field ``name`` was an explicit null."""
    nulls = row[I_NULLS]
    if nulls is None:
        row[I_NULLS] = [name]
    else:
        nulls.append(name)


def keep(row: list[Any], key: str, value: Any) -> None:
    """Keep a key that is not modelled (or has an unexpected type) verbatim in the item's extra_json."""
    extra = row[I_EXTRA]
    if extra is None:
        row[I_EXTRA] = {key: value}
    else:
        extra[key] = value


def set_str(row: list[Any], slot: int, key: str, value: Any) -> None:
    """Wire key ``key`` into string slot ``slot``: null to null_fields, another type verbatim."""
    if type(value) is str:
        row[slot] = value
    elif value is None:
        null(row, ITEM_ROW[slot])
    else:
        keep(row, key, value)


class BlockCols:
    """Rows of one ``list<Block>`` level (content, summary or instructions blocks), one tuple each."""

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
        return pa.array(self.rows, BLOCK)


def _list_of_blocks(ends: pa.Array, valid: pa.Array, values: pa.Array) -> pa.ListArray:
    """A ``list<Block>`` column from each row's end offset and validity."""
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), ends])
    mask = None if pc.all(valid).as_py() else pc.invert(valid)
    return pa.ListArray.from_arrays(offsets, values, type=pa.list_(pa.field("item", BLOCK)), mask=mask)


class ItemCols:
    """Rows of the ``items`` struct (one tuple per item, :data:`ITEM_ROW` order) plus its blocks."""

    # string columns of an item, in ITEM_ROW order (encoders read them by name)
    SCALARS = tuple(n for n in ITEM_ROW[:I_EXTRA] if n not in ("group", "part"))

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

    def to_arrow(self) -> pa.StructArray:
        rows = pa.array(self.rows, _ITEM_ROW_TYPE)
        arrays: dict[str, pa.Array] = {name: rows.field(name) for name in ITEM_ROW[: I_NULLS + 1]}
        arrays["content"] = _list_of_blocks(
            rows.field("content_end"), rows.field("content_valid"), self.content.to_arrow()
        )
        arrays["summary"] = _list_of_blocks(
            rows.field("summary_end"), rows.field("summary_valid"), self.summary.to_arrow()
        )
        return item_struct(arrays)


def item_struct(arrays: dict[str, pa.Array]) -> pa.StructArray:
    """The ``items`` struct from its field arrays (all but ``fingerprint``, which is computed here,
    unless the caller needs none: :func:`pipeline.fingerprint.unneeded`).

    Shared by this builder and the compiled decoder's assembly (``_native_decode``).
    """
    base = [f for f in ITEM if f.name != "fingerprint"]
    if needed():
        found = fingerprints(pa.StructArray.from_arrays([arrays[f.name] for f in base], fields=base))
    else:
        found = pa.nulls(len(arrays[base[0].name]), pa.string())
    arrays = {**arrays, "fingerprint": found}
    return pa.StructArray.from_arrays([arrays[f.name] for f in ITEM], fields=list(ITEM))


def close_item(cols: ItemCols, row: list[Any], has_content: bool, has_summary: bool) -> None:
    """Close an item whose content/summary blocks (if any) were already appended to ``cols``."""
    extra = row[I_EXTRA]
    if extra is not None:
        row[I_EXTRA] = dumps(extra)
    cols.rows.append((*row, len(cols.content.rows), has_content, len(cols.summary.rows), has_summary))


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
        self.tools: list[str | None] = []
        self.tool_choice: list[str | None] = []
        self.extra: list[str | None] = []
        self.nulls: list[list[str] | None] = []

    def __len__(self) -> int:
        return len(self.conversation_id)

    def close_instructions(self, form: str) -> None:
        """Close this row's instructions after their blocks (if any) were appended to ``instr``.

        Only the ``string`` and ``parts`` forms hold blocks; the list is null for the others.
        """
        self.instr_form.append(form)
        self.instr_off.close(len(self.instr.rows), form in (FORM_STRING, FORM_PARTS))

    def mark(self) -> tuple[int, int]:
        """A restore point taken before decoding a record."""
        return len(self.items.rows), len(self.instr.rows)

    def rollback(self, mark: tuple[int, int]) -> None:
        """Drop whatever a failed record appended (rows are only closed when a record succeeds)."""
        n_items, n_instr = mark
        rows = len(self.conversation_id)
        self.items.truncate(n_items)
        self.instr.truncate(n_instr)
        self.instr_off.truncate(rows)
        del self.instr_form[rows:]

    def finish(self) -> pa.Table:
        """The canonical table of every row so far."""
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
