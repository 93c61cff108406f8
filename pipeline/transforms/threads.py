"""Request logs into threads: which records share a history, which extend which, which repeat.

A request log (a proxy's, an eval harness', the successive requests of an agent run) holds turn *k*
of a conversation as a record whose items are turn *k-1*'s items plus a few new ones. This step
finds that structure across the records of a frame, with no per-record Python:

1. every item gets a **content hash** (:func:`item_hashes`, 128 bits of MD5 run by DuckDB: fixed
   across versions, unlike Polars' or DuckDB's internal hashes);
2. every prefix of every record gets a **prefix key**: the item hashes times a fixed 64-bit
   multiplier per position, summed with wrap-around (two independent lanes, plus the prefix length),
   so a prefix's key is one cumulative sum over the flat items (numpy, per-record offsets);
3. the full keys of the records are the **nodes** of a prefix tree; one join of the records'
   prefix keys with the node keys finds, for every record, each other record whose items are a
   prefix of its own: the shortest gives the thread root, the longest strict one the parent.

Added columns (one row per record, the record itself unchanged):

====================  =======  ================================================================
column                type     meaning
====================  =======  ================================================================
``thread_id``         string   ``conversation_id`` of the root of the record's prefix tree
``parent_id``         string   ``conversation_id`` of the longest other record whose items are a
                               strict prefix of this one's (null: a root)
``shared_items``      int32    length of that prefix (0 for a root)
``is_leaf``           bool     no other record's items extend this one's
``duplicate_of``      string   ``conversation_id`` of the first record with the same items and the
                               same top-level fields (null: this is the first, or it has none)
``continues_thread``  string   for a thread whose root starts after a compaction: the thread the
                               compacted history came from (null otherwise, or when not found)
====================  =======  ================================================================

"The" record of a set with identical items (as parent, root or duplicate original) is the one with
the smallest ``conversation_id`` (then the first in the frame), so the result does not depend on
the order of the log. ``keep="leaves"`` keeps only the leaves (one record per set of duplicates)
and returns every other record with an error naming the leaf whose items contain its items.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.fingerprint import run_sql
from pipeline.transforms._flat import Frame, arrow, child, eager, series, split
from pipeline.transforms._items import ERROR, LABELS, SYSTEM, label_code_of
from pipeline.transforms.compaction import DEFAULT_ITEM_TYPES, DEFAULT_MARKERS, compaction_flags

THREAD_COLUMNS = ("thread_id", "parent_id", "shared_items", "is_leaf", "duplicate_of", "continues_thread")

# -- 1. content hashes ----------------------------------------------------------------------------

# Text blocks hash by their text alone: a Chat string, a Responses input_text and an output_text
# block holding the same text are the same content.
_BLOCK_TYPE = (
    "CASE WHEN b.type IS NULL OR b.type IN ('text', 'input_text', 'output_text') THEN 'text' ELSE b.type END"
)
_BLOCKS = (
    "coalesce(array_to_string(list_transform({col}, lambda b: concat_ws(chr(29), " + _BLOCK_TYPE + ", "
    "coalesce(b.text, chr(0)), coalesce(b.extra_json, chr(0)))), chr(30)), chr(0))"
)
ITEM_HASH_FIELDS = (
    "type",
    "role",
    "name",
    "namespace",
    "call_id",
    "arguments",
    "input",
    "encrypted_content",
    "extra_json",
    "reference",  # an item_reference's id (its only content), else null: see item_hashes
)
_ITEM_TEXT = (
    "concat_ws(chr(31), "
    # concat_ws skips a NULL argument: the reference (null but on item_reference items) leaves every
    # other item's hash as it was before it was added
    + ", ".join(f if f == "reference" else f"coalesce({f}, chr(0))" for f in ITEM_HASH_FIELDS)
    + ", "
    + _BLOCKS.format(col="content")
    + ", "
    + _BLOCKS.format(col="summary")
    + ")"
)
ITEM_HASH_SQL = (
    f"SELECT md5_number_upper({_ITEM_TEXT}) AS h1, md5_number_lower({_ITEM_TEXT}) AS h2 FROM items"
)

RECORD_HASH_FIELDS = ("record_kind", "model", "tools", "tool_choice", "extra_json")
RECORD_HASH_SQL = (
    "SELECT md5(concat_ws(chr(31), "
    + ", ".join(f"coalesce({f}, chr(0))" for f in RECORD_HASH_FIELDS)
    + ", coalesce(instructions.form, chr(0)), "
    + _BLOCKS.format(col="instructions.content")
    + ")) AS h FROM items"
)


def item_hashes(items: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The content hash of every item of a flat item struct array, as two ``uint64`` lanes.

    Hashed (see docs/schema.md, "Item content hash"): ``type``, ``role``, ``name``, ``namespace``,
    ``call_id``, ``arguments``, ``input``, ``encrypted_content``, the item's ``extra_json``, and
    each content and summary block's type (every text type as ``text``), text and ``extra_json``,
    and the ``id`` of an ``item_reference`` (its only content). Not hashed: other items' ``id``,
    ``status``, ``phase``, where the item sat (``section``, ``group``, ``part``,
    ``native_type``, ``content_form``, ``wrapper_json``), ``signature``, ``fingerprint``, and
    provider metadata (annotations, logprobs, ``cache_control``, citations).
    """
    if len(items) == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    scalars = list(ITEM_HASH_FIELDS)
    struct = pa.Table.from_struct_array(items)
    # An item_reference is nothing but an id: without it, every reference hashed alike (two requests
    # opening with different references were one thread, and one partition took them all).
    ids = struct.column("id").cast(pa.string())  # short strings; Arrow's kernels take no string views
    is_reference = pc.equal(struct.column("type").cast(pa.string()), "item_reference")
    reference = pc.if_else(is_reference, ids, pa.nulls(len(ids), pa.string()))
    table = struct.append_column("reference", reference).select([*scalars, "content", "summary"])
    # A request log repeats each item in every later request (16x on the synthetic log): hash each
    # distinct item once. Equal items are found by exact group-bys (no hash decides equality): the
    # blocks by their hashed fields first, then the items by their fields and their block numbers
    # (grouping on the nested blocks directly costs twice as much).
    key = pl.from_arrow(table.select(scalars))
    assert isinstance(key, pl.DataFrame)
    key = key.with_columns(*(_block_numbers(table.column(name), name) for name in ("content", "summary")))
    first, group_of = _groups(key)
    full = pl.from_arrow(table)
    assert isinstance(full, pl.DataFrame)
    # DuckDB reads Polars' string views as they are (a cast to plain strings would copy every text)
    out = run_sql(full[first].to_arrow(compat_level=pl.CompatLevel.newest()), ITEM_HASH_SQL)
    g1 = out.column("h1").to_numpy().astype(np.uint64, copy=False)
    g2 = out.column("h2").to_numpy().astype(np.uint64, copy=False)
    return g1[group_of], g2[group_of]


def _groups(frame: pl.DataFrame) -> tuple[pl.Series, np.ndarray]:
    """The first row of each group of equal rows, and the group number of every row."""
    groups = frame.with_row_index("__i").group_by(frame.columns).agg(pl.col("__i")).get_column("__i")
    group_of = np.empty(len(frame), np.int64)
    group_of[groups.explode().to_numpy()] = np.repeat(np.arange(len(groups)), groups.list.len().to_numpy())
    return groups.list.first(), group_of


def _block_numbers(blocks: pa.ChunkedArray | pa.Array, name: str) -> pl.Series:
    """Each item's block list as a list of block numbers (equal ``type``, ``text`` and
    ``extra_json``: equal number); a null list stays null, an empty one empty."""
    flat = split(blocks)
    fields = pl.from_arrow(pa.Table.from_struct_array(flat.values).select(["type", "text", "extra_json"]))
    assert isinstance(fields, pl.DataFrame)
    _, number = _groups(fields)
    return series(flat.rewrap(pa.array(number, pa.int64())), name)


def record_hashes(df: pl.DataFrame) -> pl.Series:
    """MD5 (hex) of each record's top-level request fields other than its items: ``record_kind``,
    ``model``, ``tools``, ``tool_choice``, ``extra_json`` and the instructions' form and blocks (as
    items hash them). Records with the same items and the same record hash are duplicates."""
    t = df.select(*RECORD_HASH_FIELDS, "instructions").to_arrow(compat_level=pl.CompatLevel.newest())
    out = run_sql(t, RECORD_HASH_SQL)
    return pl.Series("__top", out.column("h"))


def root_keys(items: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Each record's **thread root key** (``uint64``): the first lane of its first item's content
    hash, 0 for a record without items.

    Every record of one prefix tree shares it (a record and every record whose items are a prefix
    of its own start with the same item; a compacted record's prefixes start at item 0 too), so a
    job hashes records to partitions by it (docs/transforms.md, "Threads at scale").
    """
    flat = split(items)
    offsets = flat.offsets.to_numpy()
    out = np.zeros(len(offsets) - 1, np.uint64)
    has = np.flatnonzero(np.diff(offsets) > 0)
    if len(has):
        h1, _ = item_hashes(flat.values.take(pa.array(offsets[has], pa.int64())))
        out[has] = h1
    return out


# -- 2. prefix keys -------------------------------------------------------------------------------


def _splitmix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 of each value (fixed constants: the multipliers never change between versions)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def prefix_keys(
    h1: np.ndarray, h2: np.ndarray, offsets: np.ndarray, parent: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(k1, k2, idx)`` per flat item: the key of the prefix ending at it, and its index.

    ``k = sum_{j <= idx} h[j] * m[j] (mod 2**64)`` with ``m`` a fixed odd multiplier per position
    (one table per lane), so equal prefixes have equal keys and a prefix's key is a segment of one
    cumulative sum.
    """
    idx = np.arange(len(parent), dtype=np.int64) - offsets[parent]
    top = int(idx.max()) + 1 if len(idx) else 0
    pos = np.arange(top, dtype=np.uint64)
    m1 = _splitmix(pos) | np.uint64(1)
    m2 = _splitmix(pos + np.uint64(1 << 40)) | np.uint64(1)
    out = []
    with np.errstate(over="ignore"):
        for h, m in ((h1, m1), (h2, m2)):
            c = np.cumsum(h * m[idx], dtype=np.uint64)
            before = np.concatenate([np.zeros(1, np.uint64), c])[offsets[parent]]
            out.append(c - before)
    return out[0], out[1], idx


# -- 3. the step ----------------------------------------------------------------------------------


def threads(
    frame: Frame,
    keep: str = "all",
    markers: tuple[str, ...] = DEFAULT_MARKERS,
    item_types: tuple[str, ...] = DEFAULT_ITEM_TYPES,
) -> Frame:
    """Add the thread columns (module docstring); with ``keep="leaves"``, mark every record that
    is not a leaf (or is a duplicate) with an ``__error`` naming its leaf.

    Unlike the other steps, the result of a row depends on the other rows: run it on the whole
    frame (:func:`pipeline.transforms.apply_steps` does, see ``GROUPING_STEPS``).

    >>> from pipeline.formats import decode_records
    >>> u = lambda t: {"role": "user", "content": t}
    >>> a = lambda t: {"role": "assistant", "content": t}
    >>> recs = [{"messages": [u("hi")]}, {"messages": [u("hi"), a("yo"), u("more")]},
    ...         {"messages": [u("hi"), a("yo"), u("less")]}]
    >>> t = pl.from_arrow(decode_records(recs, "chat").table).with_columns(
    ...     conversation_id=pl.Series(["r1", "r2", "r3"]))
    >>> threads(t).select("thread_id", "parent_id", "shared_items", "is_leaf").rows()
    [('r1', None, 0, False), ('r1', 'r1', 1, True), ('r1', 'r1', 1, True)]
    """
    return eager(frame, lambda df: _threads(df, keep, markers, item_types))


def _threads(
    df: pl.DataFrame, keep: str, markers: tuple[str, ...], item_types: tuple[str, ...]
) -> pl.DataFrame:
    """:func:`threads` on an eager frame: the thread columns of every record, and with
    ``keep="leaves"`` the ``__error`` of every record it drops."""
    n = len(df)
    flat = split(arrow(df.get_column("items")))
    offsets = flat.offsets.to_numpy()
    parent = flat.parent().to_numpy()
    lengths = np.diff(offsets)
    h1, h2 = item_hashes(flat.values)
    k1, k2, idx = prefix_keys(h1, h2, offsets, parent)
    flag, cut = _compaction_cuts(flat.values, markers, item_types, n, parent, idx)
    rows, nodes = _nodes(df, offsets, lengths, k1, k2)
    rows, cand = _tree(rows, nodes, parent, idx, cut, lengths, k1, k2)
    rows = _duplicates(rows)
    rows = rows.with_columns(
        _continues(rows, flat.values, parent, idx, h1, h2, cut, flag).alias("continues_thread")
    )
    out = df.with_columns(
        rows.get_column("thread_id"),
        rows.get_column("parent_id"),
        rows.get_column("shared_items"),
        rows.get_column("is_leaf"),
        rows.get_column("duplicate_of"),
        rows.get_column("continues_thread"),
    )
    if keep == "leaves":
        out = out.with_columns(_dropped(rows, cand).alias(ERROR))
    return out


# the node key of a record or a prefix: its item list's two hash lanes and its length
_KEY = ["k1", "k2", "len"]


def _compaction_cuts(
    items: pa.Array,
    markers: tuple[str, ...],
    item_types: tuple[str, ...],
    n: int,
    parent: np.ndarray,
    idx: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Which flat items are compactions, and per record the position of its last one (-1: none).

    A record's prefixes start there: a compacted history starts a new thread, never a branch of
    the thread it came from."""
    flag = compaction_flags(items, markers, item_types).to_numpy()
    cut = np.full(n, -1, np.int64)
    at = np.flatnonzero(flag)
    cut[parent[at]] = idx[at]  # ascending positions: the last write per record is its last compaction
    return flag, cut


def _nodes(
    df: pl.DataFrame, offsets: np.ndarray, lengths: np.ndarray, k1: np.ndarray, k2: np.ndarray
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One row per record (its number, conversation_id, item-list key, top-level hash and node),
    and the nodes: one per distinct item list, its record the smallest conversation_id, then the
    first row."""
    n = len(df)
    last = offsets[1:] - 1
    has = lengths > 0
    rows = pl.DataFrame(
        {
            "row": np.arange(n, dtype=np.int64),
            "cid": df.get_column("conversation_id"),
            "len": lengths.astype(np.int64),
            "k1": np.where(has, k1[np.where(has, last, 0)] if len(k1) else 0, 0).astype(np.uint64),
            "k2": np.where(has, k2[np.where(has, last, 0)] if len(k2) else 0, 0).astype(np.uint64),
            "top": record_hashes(df),
        }
    )
    ordered = rows.sort(["cid", "row"], nulls_last=True)
    nodes = (
        ordered.group_by(_KEY, maintain_order=True)
        .agg(pl.col("cid").first().alias("rep"))
        .with_row_index("node")
    )
    return rows.join(nodes, on=_KEY, how="left", maintain_order="left"), nodes


def _tree(
    rows: pl.DataFrame,
    nodes: pl.DataFrame,
    parent: np.ndarray,
    idx: np.ndarray,
    cut: np.ndarray,
    lengths: np.ndarray,
    k1: np.ndarray,
    k2: np.ndarray,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The rows (in row order) with thread_id, root_node, parent_id, shared_items and is_leaf, and
    the candidate prefixes: every prefix of every record that is some record's item list (has its
    length and key), from its last compaction on."""
    has = lengths > 0
    keep_at = (idx >= cut[parent]) & np.isin(idx + 1, np.unique(lengths[has]))
    cand = pl.DataFrame(
        {"row": parent[keep_at], "len": idx[keep_at] + 1, "k1": k1[keep_at], "k2": k2[keep_at]}
    ).join(nodes, on=_KEY, how="inner")
    root = cand.group_by("row").agg(
        pl.col("rep").sort_by("len").first().alias("thread_id"),
        pl.col("node").sort_by("len").first().alias("root_node"),
    )
    strict = cand.join(rows.select("row", pl.col("len").alias("own")), on="row").filter(
        pl.col("len") < pl.col("own")
    )
    par = strict.group_by("row").agg(
        pl.col("rep").sort_by("len").last().alias("parent_id"),
        pl.col("len").max().cast(pl.Int32).alias("shared_items"),
        pl.col("node").sort_by("len").last().alias("parent_node"),
    )
    rows = (
        rows.join(root, on="row", how="left")
        .join(par, on="row", how="left")
        .sort("row")
        .with_columns(
            pl.coalesce("thread_id", "rep").alias("thread_id"),
            pl.coalesce("root_node", "node").alias("root_node"),
            pl.col("shared_items").fill_null(0),
            (~pl.col("node").is_in(par.get_column("parent_node").unique().implode())).alias("is_leaf"),
        )
    )
    return rows, cand


def _duplicates(rows: pl.DataFrame) -> pl.DataFrame:
    """The rows with duplicate_of: a record with the same node and the same top-level fields as an
    earlier one by (conversation_id, row) names that one's conversation_id (the first is kept)."""
    first = (
        rows.sort(["cid", "row"], nulls_last=True)
        .group_by(["node", "top"], maintain_order=True)
        .agg(pl.col("row").first().alias("first_row"), pl.col("cid").first().alias("first_cid"))
    )
    return rows.join(first, on=["node", "top"], how="left", maintain_order="left").with_columns(
        pl.when(pl.col("row") != pl.col("first_row")).then(pl.col("first_cid")).alias("duplicate_of")
    )


def _dropped(rows: pl.DataFrame, cand: pl.DataFrame) -> pl.Series:
    """The error of every record ``keep="leaves"`` drops, naming the leaf that contains its items:
    the smallest ``conversation_id`` among the kept leaves whose prefixes include its items."""
    kept = rows.filter(pl.col("is_leaf") & pl.col("duplicate_of").is_null())
    # a kept leaf contains the nodes of its prefixes (cand) and its own (an empty record has none)
    contains = pl.concat([cand.select("row", "node"), kept.select("row", "node")])
    leaf_of = (
        contains.join(kept.select("row", pl.col("cid").alias("leaf")), on="row", how="inner")
        .group_by("node")
        .agg(pl.col("leaf").min())
    )
    r = rows.join(leaf_of, on="node", how="left", maintain_order="left")
    dropped = ~(pl.col("is_leaf") & pl.col("duplicate_of").is_null())
    why = (
        pl.when(pl.col("duplicate_of").is_not_null())
        .then(pl.lit("threads: duplicate of an identical record"))
        .otherwise(pl.lit("threads: items are a prefix of a longer record"))
    )
    return r.select(
        pl.when(dropped).then(pl.format("{} (in leaf {})", why, pl.col("leaf").fill_null("?"))).alias(ERROR)
    ).to_series()


def _continues(
    rows: pl.DataFrame,
    items: pa.Array,
    parent: np.ndarray,
    idx: np.ndarray,
    h1: np.ndarray,
    h2: np.ndarray,
    cut: np.ndarray,
    flag: np.ndarray,
) -> pl.Series:
    """``continues_thread`` of every record: for a thread whose root holds a compaction item, the
    other thread that holds every item the compaction kept (the root's non-system items before
    its last compaction item) and not the compaction item itself. Several: the one whose own root
    is compacted (the latest window of a chain), then the smallest thread_id (:func:`links`).

    Threads are their root node numbers here (integers: no string per item)."""
    n = len(rows)
    none = pl.repeat(None, n, dtype=pl.String, eager=True)
    thread_np = rows.get_column("root_node").to_numpy()
    compacted_root = (rows.get_column("node") == rows.get_column("root_node")).to_numpy() & (cut >= 0)
    if not compacted_root.any():
        return none
    kept, marks = compaction_sides(thread_np, items, parent, idx, h1, h2, cut, flag, compacted_root)
    if kept.height == 0:
        return none
    every = pl.DataFrame({"other": thread_np[parent], "h1": h1, "h2": h2})
    names = rows.group_by("root_node").agg(pl.col("thread_id").first()).rename({"root_node": "thread"})
    best = links(kept, marks, every, pl.Series(thread_np[compacted_root]).unique(), names)
    return (
        rows.select(pl.col("root_node").alias("thread"))
        .join(best, on="thread", how="left", maintain_order="left")
        .get_column("continues_thread")
    )


def compaction_sides(
    thread: np.ndarray,
    items: pa.Array,
    parent: np.ndarray,
    idx: np.ndarray,
    h1: np.ndarray,
    h2: np.ndarray,
    cut: np.ndarray,
    flag: np.ndarray,
    on: np.ndarray,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(kept, marks)``, each ``(thread, h1, h2)`` unique: the items the compaction kept (non-system
    items before the record's last compaction item) and that compaction item, of the records
    ``on`` (a bool per record; ``thread``: each record's thread key). Every record of a compacted
    thread has the same items up to its last compaction item (a record with a later one starts a
    thread of its own), so any of its records gives the thread's sides."""
    code = (
        pl.DataFrame([child(items, "type"), child(items, "role")])
        .select(label_code_of(pl.col("type"), pl.col("role")))
        .to_series()
    )
    not_system = code.ne_missing(LABELS.index(SYSTEM)).to_numpy()
    on_item = on[parent]
    kept_at = on_item & (idx < cut[parent]) & ~flag & not_system
    kept = pl.DataFrame({"thread": thread[parent[kept_at]], "h1": h1[kept_at], "h2": h2[kept_at]}).unique()
    # the root's compaction item: a thread holding it is another window of the same compaction
    # (its first request missing from the log), not the history it came from
    mark_at = on_item & (idx == cut[parent])
    marks = pl.DataFrame({"thread": thread[parent[mark_at]], "h1": h1[mark_at], "h2": h2[mark_at]}).unique()
    return kept, marks


def links(
    kept: pl.DataFrame, marks: pl.DataFrame, every: pl.DataFrame, compacted: pl.Series, names: pl.DataFrame
) -> pl.DataFrame:
    """``(thread, continues_thread)`` of the compacted threads (``kept``, ``marks``: their
    :func:`compaction_sides`) found in ``every`` (``other, h1, h2``: the items of every thread;
    rows whose hash no side holds may be left out). ``compacted``: the compacted threads' keys;
    ``names``: ``(thread, thread_id)`` of every thread. The same whether the threads come from one
    frame or from every partition of a job (engine/partition.py)."""
    need = kept.group_by("thread").agg(pl.len().alias("need"))
    wanted = pl.concat([kept.select("h1", "h2"), marks.select("h1", "h2")]).unique()
    every = every.select("other", "h1", "h2").join(wanted, on=["h1", "h2"], how="semi").unique()
    same_window = marks.join(every, on=["h1", "h2"], how="inner").select("thread", "other")
    # candidates come from each thread's rarest kept item (a common one, e.g. "continue", is in
    # thousands of threads); only those candidates are checked for the other kept items
    freq = every.group_by("h1", "h2").agg(pl.len().alias("freq"))
    anchor = (
        kept.join(freq, on=["h1", "h2"])
        .sort(["thread", "freq", "h1", "h2"])
        .group_by("thread", maintain_order=True)
        .agg(pl.col("h1").first(), pl.col("h2").first())
    )
    cands = (
        anchor.join(every, on=["h1", "h2"], how="inner")
        .select("thread", "other")
        .filter(pl.col("other") != pl.col("thread"))
        .join(same_window, on=["thread", "other"], how="anti")
    )
    found = (
        cands.join(kept, on="thread", how="inner")
        .join(every, on=["other", "h1", "h2"], how="semi")
        .group_by("thread", "other")
        .agg(pl.len().alias("got"))
        .join(need, on="thread")
        .filter(pl.col("got") == pl.col("need"))
    )
    return (
        found.join(names.rename({"thread": "other"}), on="other")
        .with_columns(pl.col("other").is_in(compacted.implode()).alias("c"))
        .sort(["thread", "c", "thread_id"], descending=[False, True, False])
        .group_by("thread", maintain_order=True)
        .agg(pl.col("thread_id").first().alias("continues_thread"))
    )
