"""Edit-aware rebuild: drop the stale provider state of items whose content changed since decoding.

Runs on the whole table before any encoder (same-format or cross-format), in Arrow compute plus
one DuckDB hash pass (:mod:`pipeline.fingerprint`): an item whose stored ``fingerprint`` differs from
the fingerprint of its current content loses ``id``, ``encrypted_content`` and ``signature``;
untouched items keep everything. Each dropped item is reported as one ``edited`` loss.

=========================  ===============  ==================================================
item                       fingerprint      on encode
=========================  ===============  ==================================================
untouched                  equal            unchanged (id, encrypted content, signature kept)
text / arguments edited    differs          id, encrypted_content, signature dropped; ``edited``
inserted by a transform    null             nothing to drop
=========================  ===============  ==================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import one_array
from pipeline.fingerprint import fingerprints

STATE_FIELDS = ("id", "encrypted_content", "signature")


@dataclass(frozen=True)
class EditedItem:
    """An item whose stale state was dropped: its row, its index in the row, and what it held."""

    row: int
    index: int
    dropped: dict[str, str]


def clear_stale_state(table: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """Return ``table`` with the state of edited items nulled, and the flat indices of those items
    (positions in ``items`` flattened, in order; empty when nothing was edited).

    The table is returned as is (no copy) when nothing was edited. Column at a time: the
    native encoder path builds its ``edited`` losses from the indices (encode_rows.py).
    """
    none = np.zeros(0, np.int64)
    if table.num_rows == 0 or "fingerprint" not in table.schema.field("items").type.value_type.names:
        return table, none
    items = one_array(table.column("items"))
    flat = items.flatten()
    if len(flat) == 0:
        return table, none
    stored = flat.field("fingerprint")
    edited = pc.fill_null(pc.not_equal(stored, fingerprints(flat)), False)
    if not pc.any(edited).as_py():
        return table, none

    fields = list(flat.type)
    arrays = [
        pc.if_else(edited, pa.nulls(len(flat), f.type), flat.field(f.name))
        if f.name in (*STATE_FIELDS, "fingerprint")
        else flat.field(f.name)
        for f in fields
    ]
    new_flat = pa.StructArray.from_arrays(arrays, fields=fields, mask=pc.invert(flat.is_valid()))
    new_items = pa.ListArray.from_arrays(
        pc.subtract(items.offsets, items.offsets[0]),
        new_flat,
        type=items.type,
        mask=pc.invert(items.is_valid()) if items.null_count else None,
    )
    i = table.schema.get_field_index("items")
    cleaned = table.set_column(i, table.schema.field(i), pa.chunked_array([new_items]))
    return cleaned, np.flatnonzero(edited.to_numpy(zero_copy_only=False))


def drop_stale_state(table: pa.Table) -> tuple[pa.Table, list[EditedItem]]:
    """Return ``table`` with the state of edited items nulled, and the list of those items
    (:func:`clear_stale_state`, reported item by item for the per-record encoders).

    The table is returned as is (no copy) when nothing was edited.
    """
    cleaned, where = clear_stale_state(table)
    if not len(where):
        return table, []
    items = one_array(table.column("items"))
    flat = items.flatten()
    offsets = items.offsets.to_numpy()
    rows = np.searchsorted(offsets, where + offsets[0], side="right") - 1
    state = {name: flat.field(name).take(pa.array(where)).to_pylist() for name in STATE_FIELDS}
    return cleaned, [
        EditedItem(
            int(r),
            int(w + offsets[0] - offsets[r]),
            {name: state[name][k] for name in STATE_FIELDS if state[name][k] is not None},
        )
        for k, (r, w) in enumerate(zip(rows, where, strict=True))
    ]
