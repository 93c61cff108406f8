"""Encode a batch of canonical rows to wire JSON text, with losses as columns: the writers' entry point.

``chatlake convert`` and the job engine call :func:`encode_rows` instead of looping over
:func:`pipeline.encoders.convert_table`. It gives the same bytes, losses and refusals as that loop,
faster where a compiled encoder exists:

=====================================  ======================================================
rows                                   converted by
=====================================  ======================================================
Responses request bodies -> ``chat``   ``pipeline._native.encode_chat`` (C, ``encode.c``, with
(edited items included); Anthropic     ``anthropic_round_trip.c`` for Anthropic rows), when
request bodies (not edited ones)       the compiled codec is active (:mod:`pipeline.codec`)
Chat request bodies -> ``responses``   ``pipeline._native.encode_responses`` (C,
(edited items included); Anthropic     ``encode_responses.c``, with ``anthropic_round_trip.c``
request bodies (not edited ones)       for Anthropic rows), likewise
Responses and Chat request bodies ->   ``pipeline._native.encode_anthropic`` (C,
``anthropic`` (edited items included)  ``encode_anthropic.c``), likewise
rows of the target's own format        ``pipeline._native.encode_same_<target>`` (C,
(request bodies and response objects,  ``encode_same.c``: the exact codec's bytes), likewise
edited items included)
Responses and Chat request bodies ->   ``pipeline._native.encode_hf`` (C, ``encode_hf.c``),
``hf`` (edited items included)         likewise
rows they hand back (see the C files), ``convert_table`` (the per-record encoders: the
rows whose edited items' ids are not   specification the compiled encoder is tested against)
plain printable ASCII, every other
row, every row with CHATLAKE_NATIVE=0
=====================================  ======================================================

Before any encoder, :func:`pipeline.encoders.repairs.repair` repairs the rows that would break a
rule of the target (:mod:`pipeline.encoders.rules`) in the table both encoders get; its losses come
first in each row's losses. After encoding, the records of the rows it found suspect are checked
against the rules, and one that still breaks a rule is refused (its error names the rule).

Items edited since decoding (:mod:`pipeline.encoders.edits`) lose their stale state before any
encoder: the native rows are encoded from the table ``clear_stale_state`` returns, and each
edited item's ``edited`` loss is added here as a column, where ``convert_table`` puts it (before the
row's other losses, last item first). The per-record rows are converted on their own
(``table.take`` of the table as given): what the encoders generate (call ids) depends on the record
alone, not on its place in the batch.

>>> from pipeline.formats import decode_records
>>> t = decode_records([{"input": [{"type": "reasoning", "summary": []}, {"role": "user",
...                                  "content": "hi"}]}], "responses").table
>>> enc = encode_rows(t, "chat")
>>> enc.records.to_pylist(), enc.losses.column("kind").to_pylist()
(['{"messages":[{"role":"user","content":"hi"}]}'], ['reasoning'])
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline import codec
from pipeline.arrays import one_array
from pipeline.encoders import convert_table
from pipeline.encoders.edits import STATE_FIELDS, clear_stale_state
from pipeline.encoders.pointers import item_pointer
from pipeline.encoders.repairs import Repaired, refusals, repair
from pipeline.encoders.request_fields import ROW_LOSSES, apply_sets, model_provider_losses
from pipeline.losses import LossPolicy
from pipeline.schema import cast_to_canonical

# orjson's escaping: quote, backslash and the C0 controls (short forms where JSON has them, else
# \u00xx in lowercase hex); everything else, DEL and U+2028 included, is written as UTF-8.
_SHORT = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_ESCAPE_FROM = ["\\", '"', *(chr(c) for c in range(0x20))]
_ESCAPE_TO = ["\\\\", '\\"', *(_SHORT.get(chr(c), f"\\u{c:04x}") for c in range(0x20))]


def orjson_string(expr: pl.Expr) -> pl.Expr:
    """A string column as JSON string literals, byte for byte what ``orjson.dumps`` writes."""
    return pl.concat_str(pl.lit('"'), expr.str.replace_many(_ESCAPE_FROM, _ESCAPE_TO), pl.lit('"'))


@dataclass
class EncodedRows:
    """What :func:`encode_rows` returns, one entry per input row.

    * ``records`` -- the wire record as JSON text (``orjson.dumps`` bytes as ``large_string``); null when
      refused;
    * ``errors`` -- null when encoded, else why not (``convert_table``'s text);
    * ``losses`` -- ``row``, ``path``, ``kind``, ``detail``, rows ascending, each row's losses in the
      order its encoder reported them;
    * ``native`` -- the row went through the compiled encoder.
    """

    records: pa.Array
    errors: pa.Array
    losses: pa.Table
    native: pa.Array

    def refused_kinds(self, policy: LossPolicy) -> pa.Array:
        """Per row: the sorted distinct kinds ``policy`` refuses, joined with ``", "`` (null: none).

        Rows that failed to encode have no refused kinds (they are rejected for their error);
        additions are never refused (``LossPolicy.accepted``).
        """
        n = len(self.records)
        if policy.on_loss == "allow" or self.losses.num_rows == 0:
            return pa.nulls(n, pa.string())
        lf = pl.from_arrow(self.losses.select(["row", "kind"]))
        assert isinstance(lf, pl.DataFrame)
        refused = (
            lf.filter(~pl.col("kind").is_in(sorted(policy.accepted)))
            .unique()
            .sort("row", "kind")
            .group_by("row", maintain_order=True)
            .agg(pl.col("kind").str.join(", "))
        )
        out = pl.DataFrame({"row": pl.int_range(n, eager=True, dtype=pl.Int64)}).join(
            refused, on="row", how="left", maintain_order="left"
        )
        failed = pl.Series(self.errors.is_valid())
        return out.select(pl.when(~failed).then(pl.col("kind"))).to_series().to_arrow().cast(pa.string())

    def losses_of(self, rows: np.ndarray) -> dict[int, list[dict[str, str]]]:
        """The losses of a few rows (rejected ones) as ``Loss.to_json`` dicts, by row."""
        picked = self.losses.filter(pc.is_in(self.losses.column("row"), pa.array(rows, pa.int64())))
        out: dict[int, list[dict[str, str]]] = {}
        for loss in picked.to_pylist():  # rejected rows only: they are written one by one anyway
            out.setdefault(loss.pop("row"), []).append(loss)
        return out

    def kept_loss_counts(self, keep: np.ndarray) -> tuple[Counter[str], int]:
        """Loss totals by kind over the kept rows (kinds in order of first appearance, as a loop over
        records would count them) and how many kept rows lost something."""
        lf = pl.from_arrow(self.losses.select(["row", "kind"]))
        assert isinstance(lf, pl.DataFrame)
        lf = lf.filter(pl.Series(keep).gather(lf["row"]))
        counts = lf.group_by("kind", maintain_order=True).len()
        return Counter(dict(zip(counts["kind"].to_list(), counts["len"].to_list(), strict=True))), lf[
            "row"].n_unique()  # fmt: skip

    def jsonl(self, keep: np.ndarray) -> bytes | pa.Buffer:
        """The kept records as JSON Lines (each followed by a newline); empty when none is kept.

        With the compiled codec: one copy in C (``join_lines``) into a buffer the caller writes;
        else :func:`_lines` (Arrow's filter and join: the reference, the same bytes).
        """
        native = codec.native_lines()
        if native is not None:
            records = one_array(self.records)
            try:
                return pa.foreign_buffer(*native.join_lines(records, pa.array(keep, pa.bool_())))
            except ValueError:  # another string type than string / large_string: the reference
                pass
        # every row kept (the usual batch): no filter, which would copy every record's text once more
        return _lines(self.records if keep.all() else pc.filter(self.records, pa.array(keep)))

    def loss_lines(self, keep: np.ndarray, lines: pa.Array) -> bytes:
        """``{"line": N, "losses": [...]}`` for every kept row with losses (``PATH.losses.jsonl``),
        each loss the object ``orjson`` writes for ``Loss.to_json()``."""
        lf = pl.from_arrow(self.losses)
        assert isinstance(lf, pl.DataFrame)
        lf = lf.filter(pl.Series(keep).gather(lf["row"]))
        if lf.height == 0:
            return b""
        esc = orjson_string
        one = lf.select(
            pl.concat_str(
                pl.lit('{"path":'), esc(pl.col("path")), pl.lit(',"kind":'), esc(pl.col("kind")),
                pl.lit(',"detail":'), esc(pl.col("detail")), pl.lit("}"),
            )
        ).to_series()  # fmt: skip
        # losses are stored row by row: one list per row with losses, joined in place (no hashing)
        row = lf["row"].to_numpy()
        starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
        offsets = np.r_[starts, len(row)].astype(np.int32)
        per_row = pl.Series(pa.LargeListArray.from_arrays(pa.array(offsets.astype(np.int64)), one.to_arrow()))
        line = pl.Series(lines).cast(pl.Int64).gather(pl.Series(row[starts]))
        text = pl.select(
            pl.concat_str(pl.lit('{"line":'), line.cast(pl.String), pl.lit(',"losses":['),
                          per_row.list.join(","), pl.lit("]}"))
        ).to_series()  # fmt: skip
        return _lines(text.to_arrow())


def _lines(texts: pa.Array) -> bytes:
    """Strings as JSON Lines bytes: each followed by a newline, copied once from Arrow's buffer."""
    if len(texts) == 0:
        return b""
    joined = pc.binary_join_element_wise(texts.cast(pa.large_string()), pa.scalar("", pa.large_string()),
                                         pa.scalar("\n", pa.large_string()))  # fmt: skip
    offsets = np.frombuffer(joined.buffers()[1], np.int64)[joined.offset : joined.offset + len(joined) + 1]
    return joined.buffers()[2][int(offsets[0]) : int(offsets[-1])].to_pybytes()


def encode_rows(
    table: pa.Table,
    target: str,
    sets: Mapping[str, Any] | None = None,
    *,
    as_decoded: bool = False,
    ordered_losses: bool = True,
) -> EncodedRows:
    """Encode every row of a canonical table to ``target``; a failing row never raises.

    ``sets`` (checked by ``request_fields.check_sets``) are written into the table first, for every
    encoder to see; each is reported as a ``set`` addition per row, which replaces what an encoder
    says about that field (a ``request_field`` at the same path: the value is the user's, not the
    source's).

    ``as_decoded``: the caller decoded these rows from wire records in this process and nothing
    changed their items since (no step ran), so every item's stored fingerprint was computed from its
    present content and none is edited: the edit check (:func:`clear_stale_state`, one fingerprint
    per item) is skipped on the compiled path. Never set it for rows read from canonical Parquet
    (written after steps, their fingerprints are the original content's). ``sets`` touch top-level
    fields only, never items, so they do not change this.

    ``ordered_losses=False``: the rows' losses come in no particular row order (each row's own
    losses still in its encoders' order), for a caller that sorts them fully itself (the job engine
    sorts by row, path, kind, detail): it saves a gather of every loss row.
    :meth:`EncodedRows.loss_lines` and :meth:`EncodedRows.kept_loss_counts` need the default order.
    """
    table = cast_to_canonical(table).combine_chunks()
    table, added = apply_sets(table, sets or {}, target)
    # the target rules' repairs, in the table both encoders get (repairs.py)
    fixed = repair(table, target)
    table = fixed.table
    parts, fast = _native_parts(table, target, as_decoded)
    slow_rows = np.flatnonzero(~fast)
    if len(slow_rows):
        parts.append(_per_record(table, slow_rows, target))

    if not parts:
        return EncodedRows(
            pa.array([], pa.large_string()), pa.array([], pa.string()), ROW_LOSSES.empty_table(),
            pa.array([], pa.bool_()),
        )  # fmt: skip
    records, errors, losses = _interleave(parts)
    if fast.any():  # convert_table reported the per-record rows' model_provider losses itself
        model = model_provider_losses(table, target)
        losses = pa.concat_tables([losses, model.filter(pa.array(fast[model.column("row").to_numpy()]))])
    if added.num_rows:
        losses = _with_sets(losses, added, errors)
    if fixed.suspect.any():
        records, errors, losses = _refused_by_rules(records, errors, losses, fixed, target)
    if ordered_losses and (len(parts) > 1 or fast.any() or added.num_rows or fixed.losses.num_rows):
        losses = losses.take(np.argsort(losses.column("row").to_numpy(), kind="stable"))
    return EncodedRows(records, errors, losses, pa.array(fast))


# One encoded part of a table: its rows (ascending), their records and errors (null: encoded), and
# their losses (row numbers of the whole table).
_Part = tuple[np.ndarray, pa.Array, pa.Array, pa.Table]


def _native_parts(table: pa.Table, target: str, as_decoded: bool) -> tuple[list[_Part], np.ndarray]:
    """The rows the compiled encoders for ``target`` take, one part per encoder that took any, and
    the mask of those rows (the rest go to the per-record path). See :func:`encode_rows`."""
    n = table.num_rows
    fast = np.zeros(n, bool)
    natives = codec.native_encoder(target) if n else None
    active = [encode for encode, sources in natives or () if _any_row_of(table, sources, target)]
    parts: list[_Part] = []
    if not active:
        return parts, fast
    if as_decoded:
        cleaned, edited, not_plain = table, ROW_LOSSES.empty_table(), np.zeros(0, np.int64)
    else:
        cleaned, edited, not_plain = _edited_losses(table)
    for encode in active:  # their source formats do not overlap: each row is one encoder's at most
        records, losses, mine = _native(encode, cleaned)
        mine &= ~fast
        mine[not_plain] = False
        rows = np.flatnonzero(mine)
        if not len(rows):
            continue
        fast |= mine
        if len(rows) < n:
            records = records.filter(pa.array(mine))
            losses = losses.filter(pa.array(mine[losses.column("row").to_numpy()]))
        parts.append((rows, records, pa.nulls(len(rows), pa.string()), losses))
    if parts and edited.num_rows:
        # convert_table puts a row's edited losses before the encoder's: first here (the losses
        # are sorted by row, stably, in encode_rows)
        edited = edited.filter(pa.array(fast[edited.column("row").to_numpy()]))
        rows, records, errors, losses = parts[0]
        parts[0] = (rows, records, errors, pa.concat_tables([edited, losses]))
    return parts, fast


def _interleave(parts: list[_Part]) -> tuple[pa.Array, pa.Array, pa.Table]:
    """The parts' records and errors back in row order, and their losses (in part order: the caller
    sorts them by row when it needs to)."""
    if len(parts) == 1:  # one encoder took every row, in order: nothing to interleave
        _, records, errors, losses = parts[0]
        return records, errors, losses
    order = np.argsort(np.concatenate([p[0] for p in parts]), kind="stable")
    records = pa.concat_arrays([p[1] for p in parts]).take(pa.array(order))
    errors = pa.concat_arrays([p[2] for p in parts]).take(pa.array(order))
    return records, errors, pa.concat_tables([p[3] for p in parts])


def _refused_by_rules(
    records: pa.Array, errors: pa.Array, losses: pa.Table, fixed: Repaired, target: str
) -> tuple[pa.Array, pa.Array, pa.Table]:
    """The rows' records, errors and losses with the rule checks applied to the suspect rows: a
    record that still breaks a rule is refused (its error names the rule; no record, no losses),
    and the repairs' losses come first in the others' losses (they happened before any encoder)."""
    why = refusals(records, errors, fixed.suspect, target)
    repaired = fixed.losses
    if why.null_count < len(why):
        refused = np.asarray(why.is_valid().to_numpy(zero_copy_only=False), bool)
        errors = pc.if_else(pa.array(refused), why, errors)
        records = pc.if_else(pa.array(refused), pa.nulls(len(records), records.type), records)
        losses = losses.filter(pa.array(~refused[losses.column("row").to_numpy()]))
        repaired = repaired.filter(pa.array(~refused[repaired.column("row").to_numpy()]))
    ok = np.asarray(errors.is_null().to_numpy(zero_copy_only=False), bool)
    repaired = repaired.filter(pa.array(ok[repaired.column("row").to_numpy()]))
    return records, errors, pa.concat_tables([repaired, losses])


def _with_sets(losses: pa.Table, added: pa.Table, errors: pa.Array) -> pa.Table:
    """The encoders' losses with the ``set`` additions after them (rows that failed to encode
    report nothing), less any ``request_field`` loss at a path a value was set at."""
    ok = np.asarray(errors.is_null().to_numpy(zero_copy_only=False))
    added = added.filter(pa.array(ok[added.column("row").to_numpy()]))
    lf, at = pl.from_arrow(losses), pl.from_arrow(added.select(["row", "path"]))
    assert isinstance(lf, pl.DataFrame) and isinstance(at, pl.DataFrame)
    at = at.with_columns(pl.lit(True).alias("set"))
    joined = lf.join(at, on=["row", "path"], how="left", maintain_order="left")
    replaced = joined["set"].fill_null(False) & (lf["kind"] == "request_field")
    return pa.concat_tables([losses.filter(pa.array(~replaced.to_numpy())), added])


def _any_row_of(table: pa.Table, sources: frozenset[str], target: str) -> bool:
    """Does the batch hold a row a compiled encoder of ``sources`` takes: a request body of
    ``sources``, or any row of the target's own format? (Else it is not worth finding the edited
    items twice: ``convert_table`` does that for its rows.)"""
    fmt = table.column("source_format")
    rows = pc.and_(
        pc.is_in(fmt, pa.array(sorted(sources))),
        pc.or_(pc.equal(table.column("record_kind"), "request"), pc.equal(fmt, target)),
    )
    return bool(pc.any(rows).as_py())


def _native(
    encode: Callable[[pa.RecordBatch], Any], table: pa.Table
) -> tuple[pa.Array, pa.Table, np.ndarray]:
    """A compiled encoder (``encode_chat``, ``encode_responses``, ``encode_anthropic``,
    ``encode_same_*``) over every row:
    JSON texts (empty where not encoded), losses, and which rows it encoded (the others are the
    per-record encoders')."""
    [batch] = table.combine_chunks().to_batches()
    # each buffer comes as (address, size, owner): wrapped without a copy, freed with its owner
    text, offsets, native, loss_row, *cols = (pa.foreign_buffer(*b) for b in encode(batch))
    n = table.num_rows
    records = pa.LargeStringArray.from_buffers(n, offsets, text)
    rows = np.frombuffer(loss_row, np.int64)
    strings = [
        pa.LargeStringArray.from_buffers(len(rows), off, data).cast(pa.string())
        for data, off in zip(cols[0::2], cols[1::2], strict=True)
    ]
    losses = pa.Table.from_arrays([pa.array(rows, pa.int64()), *strings], schema=ROW_LOSSES)
    return records, losses, np.frombuffer(native, np.uint8).astype(bool)


def plain_repr(value: pl.Expr) -> pl.Expr:
    """Is Python's ``repr`` of the string ``value`` just ``'`` + value + ``'``? True for printable ASCII
    without a quote or backslash; other strings are left to the per-record encoders, whose losses
    quote them with ``repr``."""
    return value.str.contains(r"^[ -~]*$") & ~value.str.contains(r"['\\]")


_EDITED = "content changed since decoding; dropped "


def _edited_losses(table: pa.Table) -> tuple[pa.Table, pa.Table, np.ndarray]:
    """The table with edited items' stale state dropped, their ``edited`` losses, and the rows whose
    losses are not written here (an id that is not plain printable ASCII, or an item without a
    pointer): those stay on the per-record path.

    One loss per edited item of a Responses row, rows ascending and, within a row, last item first
    (``convert_table`` inserts each at the front in item order); the detail names the non-null
    state it had, in ``STATE_FIELDS`` order, the id with its Python ``repr``:

    ===  ========  ======  ===============================================================
    row  path      kind    detail
    ===  ========  ======  ===============================================================
    0    /input/3  edited  content changed since decoding; dropped id 'msg_2'
    0    /input/1  edited  content changed since decoding; dropped id 'rs_1', encrypted_content
    ===  ========  ======  ===============================================================
    """
    cleaned, edited = clear_stale_state(table)
    if not len(edited):
        return table, ROW_LOSSES.empty_table(), np.zeros(0, np.int64)
    items = table.column("items").chunk(0)
    flat = items.flatten()
    where = pa.array(edited)
    parent = pc.list_parent_indices(items).take(where)
    df = pl.from_arrow(
        pa.table(
            {
                "row": parent,
                "idx": where,
                "source_format": table.column("source_format").chunk(0).take(parent),
                "items_form": table.column("items_form").chunk(0).take(parent),
                **{f: flat.field(f).take(where) for f in ("section", "group", "part", *STATE_FIELDS)},
            }
        )
    )
    assert isinstance(df, pl.DataFrame)
    item_id = pl.col("id")
    plain = plain_repr(item_id)  # other ids stay per-record (their losses quote them with repr)
    dropped = pl.concat_str(
        [
            pl.when(item_id.is_not_null()).then(pl.concat_str(pl.lit("id '"), item_id, pl.lit("'"))),
            pl.when(pl.col("encrypted_content").is_not_null()).then(pl.lit("encrypted_content")),
            pl.when(pl.col("signature").is_not_null()).then(pl.lit("signature")),
        ],
        separator=", ",
        ignore_nulls=True,
    )
    df = df.select(
        pl.col("row").cast(pl.Int64),
        pl.col("idx"),
        item_pointer().alias("path"),
        pl.lit("edited").alias("kind"),
        pl.concat_str(pl.lit(_EDITED), dropped).alias("detail"),
        ((item_id.is_not_null() & ~plain.fill_null(False)) | item_pointer().is_null()).alias("slow"),
    ).sort(["row", "idx"], descending=[False, True])
    not_plain = df.filter(pl.col("slow"))["row"].unique().to_numpy()
    return cleaned, df.select("row", "path", "kind", "detail").to_arrow().cast(ROW_LOSSES), not_plain


def _per_record(
    table: pa.Table, rows: np.ndarray, target: str
) -> tuple[np.ndarray, pa.Array, pa.Array, pa.Table]:
    """The per-record encoders on ``rows``: records, errors and losses as columns."""
    subset = table if len(rows) == table.num_rows else table.take(pa.array(rows))
    picked = convert_table(subset, target, as_bytes=True)
    records = pa.array([c.record if c.error is None else None for c in picked], pa.large_binary()).cast(
        pa.large_string()
    )
    errors = pa.array([c.error for c in picked], pa.string())
    loss_rows: list[int] = []
    cols: tuple[list[str], list[str], list[str]] = ([], [], [])
    for r, c in zip(rows.tolist(), picked, strict=True):
        if c.error is None:  # a refused record's losses are not reported (as in the per-record loop)
            for loss in c.losses:
                loss_rows.append(r)
                cols[0].append(loss.path)
                cols[1].append(loss.kind)
                cols[2].append(loss.detail)
    losses = pa.Table.from_arrays(
        [pa.array(loss_rows, pa.int64()), *(pa.array(c, pa.string()) for c in cols)], schema=ROW_LOSSES
    )
    return rows, records, errors, losses
