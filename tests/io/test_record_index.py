"""The record index and the per-shard counts equal a per-record Python reading of the same records."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.encoders import convert_table
from pipeline.formats import decode_records
from pipeline.io import shard_counts
from pipeline.io.item_index import item_index
from pipeline.io.record_index import RECORD_INDEX_SCHEMA, rejected_records, top_losses, written_records
from pipeline.io.run_tables import LOSSES_SCHEMA
from pipeline.losses import LOSS_KINDS
from tests.audit.test_queries import turns
from tests.cases import CASES
from tests.strategies import wire_record


def _losses(table: pa.Table, target: str) -> pa.Table:
    """The conversion's real loss rows for ``table``, as the engine writes them."""
    ids = table.column("conversation_id").to_pylist()
    rows = []
    for cid, c in zip(ids, convert_table(table, target), strict=True):
        rows += [{"conversation_id": cid, "source_file": "f", "source_line": 1, "source_format": "x",
                  "target_format": target, **loss.to_json()} for loss in c.losses]  # fmt: skip
    return pa.Table.from_pylist(rows, LOSSES_SCHEMA)


def _reference(rows: list[dict[str, Any]], losses: list[dict[str, Any]], target: str) -> list[dict[str, Any]]:
    by_id: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for loss in losses:
        if not LOSS_KINDS[loss["kind"]].addition:  # a filled default is not a loss
            by_id[loss["conversation_id"]].append(loss)
    out = []
    for row in rows:
        items = row["items"] or []
        t = turns(items)
        comp = [k for k, it in enumerate(items) if it["type"] == "compaction"]
        ls = by_id[row["conversation_id"]]
        out.append(
            {
                "conversation_id": row["conversation_id"],
                "shard": "part-00007",
                "source_file": row["source_file"],
                "source_line": row["source_line"],
                "source_format": row["source_format"],
                "target_format": target,
                "status": "written",
                "stage": None,
                "n_items": len(items),
                "human_turns": t["user"],
                "ai_turns": t["assistant"],
                "tool_turns": t["tool"],
                "system_turns": t["system"],
                "all_turns": t["user"] + t["assistant"],
                "compactions": len(comp),
                "items_after_last_compaction": len(items) - 1 - comp[-1] if comp else None,
                "compaction_encrypted_bytes": sum(
                    len((items[k]["encrypted_content"] or "").encode()) for k in comp
                ),
                "losses": len(ls),
                "loss_kinds": sorted({x["kind"] for x in ls}),
                "loss_paths": sorted((x["path"] for x in ls), key=lambda p: p.encode())[:5],
            }
        )
    return out


def _check(table: pa.Table, target: str = "chat") -> pa.Table:
    losses = _losses(table, target)
    records = written_records(table, item_index(table), losses, "part-00007", target)
    assert records.schema == RECORD_INDEX_SCHEMA
    assert records.to_pylist() == _reference(table.to_pylist(), losses.to_pylist(), target)
    return records


def test_record_index_of_every_case() -> None:
    for fmt, cases in CASES.items():
        _check(decode_records([rec for _, rec in cases], fmt).table)


def test_record_index_has_losses_and_turns_to_check() -> None:
    """The cases exercise what the index computes: losses, several paths, compaction, every side."""
    table = decode_records([rec for _, rec in CASES["responses"]], "responses").table
    rows = _check(table).to_pylist()
    assert max(r["losses"] for r in rows) > 5 and any(len(r["loss_kinds"]) > 1 for r in rows)
    assert any(r["compactions"] for r in rows) and any(r["tool_turns"] for r in rows)
    assert any(r["system_turns"] for r in rows)


def test_record_index_of_a_slice_ignores_other_records_losses() -> None:
    table = decode_records([rec for _, rec in CASES["responses"]], "responses").table
    losses = _losses(table, "chat")
    part = table.slice(2, 3)
    records = written_records(part, item_index(part), losses, "part-00007", "chat")
    assert records.to_pylist() == _reference(part.to_pylist(), losses.to_pylist(), "chat")
    assert written_records(table.slice(0, 0), item_index(table.slice(0, 0)), None, "p", None).num_rows == 0


def test_record_index_whatever_the_order_of_losses() -> None:
    """written_records looks a record's losses up once per run of equal ids and skips its sort when
    they come sorted by record then path (the engine's order): every order gives the same index."""
    table = decode_records([rec for _, rec in CASES["responses"]], "responses").table
    losses = _losses(table, "chat")
    expected = _reference(table.to_pylist(), losses.to_pylist(), "chat")
    row = {cid: r for r, cid in enumerate(table.column("conversation_id").to_pylist())}
    engine = sorted(range(losses.num_rows), key=lambda k: (row[losses["conversation_id"][k].as_py()],
                                                           losses["path"][k].as_py().encode()))  # fmt: skip
    for order in (engine, engine[::-1], engine[1::2] + engine[0::2]):
        shuffled = losses.take(pa.array(order))
        got = written_records(table, item_index(table), shuffled, "part-00007", "chat")
        assert got.to_pylist() == expected


def test_rejected_records() -> None:
    rows = [{"source_file": "a.jsonl", "source_line": 3, "conversation_id": None, "stage": "decode",
             "step": None, "reason": "$.x: bad", "input": "{}"}]  # fmt: skip
    [r] = rejected_records(rows, "part-00001").to_pylist()
    assert (r["status"], r["stage"], r["shard"], r["source_line"], r["losses"], r["n_items"]) == (
        "rejected",
        "decode",
        "part-00001",
        3,
        None,
        None,
    )
    assert rejected_records([], "part-00001").num_rows == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_record_index_of_random_records(data: st.DataObject) -> None:
    fmt = data.draw(st.sampled_from(["responses", "chat", "anthropic"]))
    target = data.draw(st.sampled_from(["responses", "chat", "anthropic"]))
    records = data.draw(st.lists(wire_record(fmt, "request"), min_size=0, max_size=4))
    _check(decode_records(records, fmt).table, target)


def test_shard_counts_are_sums_over_batches() -> None:
    """Counting per batch and merging equals counting the whole shard at once, from a Python reading."""
    table = decode_records([rec for _, rec in CASES["responses"]], "responses").table
    losses = _losses(table, "chat")
    batches = [table.slice(0, 4), table.slice(4)]
    parts: dict[str, list[pa.Table]] = {n: [] for n in shard_counts.FOLDERS}
    for b in batches:
        index = item_index(b)
        records = written_records(b, index, losses, "part-00000", "chat")
        parts["record_counts"].append(shard_counts.record_counts(records))
        parents = pa.compute.list_parent_indices(b.column("items").combine_chunks()).to_numpy()
        parts["item_counts"].append(shard_counts.item_counts(index, parents))
        parts["phase_counts"].append(shard_counts.phase_counts(index))
        # the engine reports a batch's losses with the batch: a record's losses are in one batch
        own = pa.compute.is_in(losses.column("conversation_id"), value_set=b.column("conversation_id"))
        parts["loss_counts"].append(shard_counts.loss_counts(losses.filter(own)))
    merged = {n: shard_counts.merge(n, p) for n, p in parts.items()}
    for n, t in merged.items():
        assert t.schema == shard_counts.SCHEMAS[n], n

    rows = table.to_pylist()
    items: Counter[tuple[Any, ...]] = Counter()
    convs: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for c in rows:
        for it in c["items"]:
            items[(c["source_format"], it["type"], it["role"])] += 1
            convs[(c["source_format"], it["type"], it["role"])].add(c["conversation_id"])
    got = {(r["source_format"], r["type"], r["role"]): (r["items"], r["conversations"])
           for r in merged["item_counts"].to_pylist()}  # fmt: skip
    assert got == {k: (n, len(convs[k])) for k, n in items.items()}

    lrows = losses.to_pylist()
    kinds = Counter(x["kind"] for x in lrows)
    got = {r["kind"]: (r["losses"], r["records"]) for r in merged["loss_counts"].to_pylist()}
    ids = {k: {x["conversation_id"] for x in lrows if x["kind"] == k} for k in kinds}
    assert got == {k: (n, len(ids[k])) for k, n in kinds.items()}

    rc = merged["record_counts"].to_pylist()
    assert sum(r["records"] for r in rc) == table.num_rows
    assert sum(r["losses"] for r in rc) == losses.num_rows
    ref = _reference(rows, lrows, "chat")
    assert sum(r["records"] for r in rc if r["lossy"]) == sum(1 for r in ref if r["losses"])
    for col in ("human_turns", "ai_turns", "tool_turns", "system_turns", "compactions", "n_items"):
        assert sum(r[col] for r in rc) == sum(r[col] for r in ref), col
    assert max(r["max_compactions"] for r in rc) == max(r["compactions"] for r in ref)
    by_turns = Counter(r["all_turns"] for r in ref)
    got_turns: Counter[int] = Counter()
    for r in rc:
        got_turns[r["all_turns"]] += r["records"]
    assert got_turns == by_turns


def test_top_losses_of_shard_tops_are_the_run_top() -> None:
    """Tops of batches reduce to the shard's top, and the run's top n <= k is in the union of shard tops."""
    table = decode_records([rec for _, rec in CASES["responses"]], "responses").table
    losses = _losses(table, "chat")
    records = written_records(table, item_index(table), losses, "p", "chat")
    k = 2
    shards = [records.slice(i, 3) for i in range(0, records.num_rows, 3)]
    union = pa.concat_tables(top_losses(s, k) for s in shards)
    everything = top_losses(records, records.num_rows)
    assert everything.num_rows == sum(1 for r in records.to_pylist() if r["losses"])
    for n in (1, k):
        assert top_losses(union, n).to_pylist() == everything.slice(0, n).to_pylist()
    batches = [records.slice(0, 5), records.slice(5)]
    assert top_losses(pa.concat_tables(top_losses(b, k) for b in batches), k) == top_losses(records, k)
    ref = sorted(
        (r for r in records.to_pylist() if r["losses"]), key=lambda r: (-r["losses"], r["conversation_id"])
    )
    assert [r["conversation_id"] for r in everything.to_pylist()] == [r["conversation_id"] for r in ref]


def test_record_index_turns_are_the_transforms_turns() -> None:
    """The record index counts turns with the transforms' turn rule (one definition: label_code_of),
    leaving out the items of a Responses ``instructions`` list (which the turn view labels)."""
    import polars as pl

    from pipeline import synth
    from pipeline.engine.process import frame_to_disk as to_arrow
    from pipeline.transforms import apply_steps, make_step

    sided: Counter[str] = Counter()
    for fmt in ("responses", "chat", "anthropic"):
        records = [rec for _, rec in CASES[fmt]] + list(synth.generate(fmt, 60, seed=2))
        table = decode_records(records, fmt).table
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        conversation = frame.with_columns(
            pl.col("items").list.filter(pl.element().struct.field("section") != "instructions")
        )
        kept, _ = apply_steps(conversation, [make_step("turns")])
        view = to_arrow(kept).to_pylist()
        index = written_records(table, item_index(table), None, "p", None).to_pylist()
        assert len(view) == len(index) == table.num_rows
        for mine, theirs in zip(index, view, strict=True):
            for col in ("human_turns", "ai_turns", "tool_turns", "system_turns", "all_turns"):
                assert mine[col] == theirs[col], (mine["conversation_id"], col)
                sided[col] += mine[col]
        if fmt == "responses":  # the exclusion is exercised: some record has instructions items
            assert frame.select(pl.col("items").list.len().sum()).item() > conversation.select(
                pl.col("items").list.len().sum()).item()  # fmt: skip
    assert all(sided[col] > 0 for col in ("human_turns", "ai_turns", "tool_turns", "system_turns")), sided
