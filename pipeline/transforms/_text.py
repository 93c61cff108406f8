"""Item text on flat columns: the blocks that make up each item's visible text, without joining them.

An item's visible text (:func:`pipeline.transforms._items.text`) is its content blocks' non-null
texts joined with ``\\n``, for messages and tool outputs only. Most uses do not need the joined
string: whether it is empty, whether a marker occurs in it, or the first few characters of a whole
turn all follow from the blocks. :class:`BlockTexts` holds those blocks (one row each, in item
order) and joins only the groups a caller asks for.

=====================  ==============  ================
blocks (texts)         visible text    ``nonempty``
=====================  ==============  ================
``["a", None, "b"]``   ``"a\\nb"``     true
``[""]``               ``""``          false
``["", ""]``           ``"\\n"``       true
``[None]``             ``""``          false
=====================  ==============  ================
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.transforms._flat import arrow, child, cumulative, offsets_by_row, regroup, series, split
from pipeline.transforms._items import tool_output_kind


@dataclass(frozen=True)
class BlockTexts:
    """The non-null block texts of the messages and tool outputs among some flat items.

    ``owner`` is the flat item index of each block (ascending), ``text`` its text; ``nonempty``
    has one entry per flat item: whether its visible text is not the empty string.
    """

    owner: pl.Series
    text: pl.Series
    nonempty: pl.Series

    def select(self, blocks: pl.Series) -> BlockTexts:
        """Only the blocks where ``blocks`` (a mask over the blocks) is true."""
        return BlockTexts(self.owner.filter(blocks), self.text.filter(blocks), self.nonempty)


def block_texts(items: pa.Array, kind: pl.Series) -> BlockTexts:
    """:class:`BlockTexts` of flat item structs ``items`` whose ``type`` column is ``kind``."""
    t = pl.col("type")
    is_textual = ((t == "message") | tool_output_kind(t)).fill_null(False)
    textual = pl.DataFrame([kind.alias("type")]).select(is_textual).to_series()
    content = split(pc.struct_field(items, "content"))
    owner = content.parent()
    text = child(content.values, "text")
    # the joined text has sum(len + 1) - 1 bytes over the non-null blocks: non-empty when that is > 0
    joined = content.segment_sum(text.str.len_bytes() + 1)
    nonempty = textual & (joined > 1)
    keep = text.is_not_null() & textual.gather(owner)
    at = keep.arg_true()
    return BlockTexts(owner.gather(at), text.gather(at), nonempty.alias("nonempty"))


def join_groups(
    keys: pl.Series, texts: pl.Series, groups: int, *, limit: int | None = None, absent_null: bool = False
) -> pl.Series:
    """``texts`` joined with ``\\n`` per key in ``0..groups-1`` (``keys`` ascending), cut to
    ``limit`` characters when given.

    A key with no texts gets ``""``, or null with ``absent_null``. Most groups hold one text, which
    is taken as is; only the groups with several are joined.

    ====  ========  =================  ==========================
    key   text      joined (groups=3)  ``limit=2``
    ====  ========  =================  ==========================
    0     ``ab``    ``"ab\\ncd"``       ``"ab"``
    0     ``cd``    ``""``             ``""``
    2     ``xyz``   ``"xyz"``          ``"xy"``
    ====  ========  =================  ==========================
    """
    if len(texts) == 0:
        return pl.repeat(None if absent_null else "", groups, dtype=pl.String, eager=True)
    o = series(offsets_by_row(keys, groups))
    starts, counts = o.slice(0, groups), o.slice(1) - o.slice(0, groups)
    out = texts.gather(starts.clip(upper_bound=len(texts) - 1))
    if limit is not None:
        out = out.str.head(limit)
    several = (counts >= 2).arg_true()
    if len(several):
        part = texts.filter(counts.gather(keys) >= 2)
        if limit is not None:  # each text adds at least one character (itself or a "\n"): cut first
            part = part.str.head(limit)
        joined = series(regroup(arrow(part), cumulative(counts.gather(several)))).list.join("\n")
        out = out.scatter(several, joined if limit is None else joined.str.head(limit))
    empty = (counts == 0).arg_true()
    if len(empty):
        out = out.scatter(
            empty, pl.repeat(None if absent_null else "", len(empty), dtype=pl.String, eager=True)
        )
    return out
