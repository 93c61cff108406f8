"""The threads step: content hashes, prefix trees over request logs, dedupe to leaves, compaction.

The vectorized step must equal the plain per-record reference (tests/transforms/reference.py,
``threads_reference``) and recover the trees a request log was generated from: random
conversations cut into per-turn requests, with shuffling, duplicates, missing requests, branches
(a retry that edits the last user turn, a regenerated answer) and compactions.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.engine.process import frame_to_disk
from pipeline.formats import decode_records
from pipeline.transforms import apply_steps, make_step, parse_step
from pipeline.transforms._flat import arrow, split
from pipeline.transforms.threads import THREAD_COLUMNS, item_hashes
from tests.helpers import json_diff
from tests.transforms.reference import item_key, threads_reference


def user(t: str) -> dict:
    return {"role": "user", "content": t}


def assistant(t: str) -> dict:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}]}


def compaction(t: str) -> dict:
    return {"type": "compaction", "encrypted_content": f"enc-{t}"}


def table_of(records: list[dict], fmt: str = "responses", ids: list[str] | None = None) -> pa.Table:
    res = decode_records(records, fmt)
    assert res.rejected == []
    t = res.table
    if ids is not None:
        t = t.set_column(0, "conversation_id", pa.array(ids, pa.string()))
    return t


def run(table: pa.Table, spec: str = "threads") -> tuple[list[dict], pl.DataFrame]:
    kept, rejected = apply_steps(pl.from_arrow(table), [parse_step(spec)])  # type: ignore[arg-type]
    assert len(kept) + len(rejected) == table.num_rows
    return frame_to_disk(kept).to_pylist(), rejected


def check_reference(table: pa.Table, keep: str = "all") -> list[dict]:
    """The step equals the reference on every row; returns the step's kept rows."""
    got, rejected = run(table, f"threads:keep={keep}")
    params = make_step("threads").params
    want, dropped = threads_reference(table.to_pylist(), keep, params.markers, params.item_types)  # type: ignore[attr-defined]
    assert [r["conversation_id"] for r in got] == [r["conversation_id"] for r in want]
    for g, w in zip(got, want, strict=True):
        d = json_diff(w, g)
        assert d is None, d
    ids = table.column("conversation_id").to_pylist()
    assert sorted(
        zip(rejected["conversation_id"].to_list(), rejected["reason"].to_list(), strict=True)
    ) == sorted((ids[i], r) for i, r in dropped.items())
    return got


# -- item content hash ----------------------------------------------------------------------------


def hashes(table: pa.Table) -> list[tuple[int, int]]:
    h1, h2 = item_hashes(split(arrow(pl.from_arrow(table).get_column("items"))).values)  # type: ignore[union-attr]
    return list(zip(h1.tolist(), h2.tolist(), strict=True))


def test_an_item_reference_hashes_by_its_id() -> None:
    """An item_reference is nothing but an id: different references are different items (they once
    hashed alike, so requests opening with different references were threaded together), the same
    reference in either spelling is one item, and any other item's id stays out of the hash."""
    t = table_of([{"input": [
        {"type": "item_reference", "id": "msg_a"}, {"id": "msg_a"}, {"type": "item_reference", "id": "msg_b"},
        {"type": "message", "id": "m1", "role": "user", "content": "hi"},
        {"type": "message", "id": "m2", "role": "user", "content": "hi"},
    ]}])  # fmt: skip
    h = hashes(t)
    assert h[0] == h[1] and h[0] != h[2] and h[3] == h[4]
    logs = table_of(
        [{"input": [{"type": "item_reference", "id": r}, user("go")]} for r in ("msg_a", "msg_b")],
        ids=["a", "b"],
    )
    got = check_reference(logs)
    assert got[0]["thread_id"] != got[1]["thread_id"]


def test_item_hash_is_the_same_for_chat_and_responses() -> None:
    chat = table_of(
        [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}], "chat"
    )
    resp = table_of([{"input": [
        {"type": "message", "id": "msg_1", "status": "completed", "role": "user",
         "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo"}]},
    ]}])  # fmt: skip
    assert hashes(chat) == hashes(resp)


def test_item_hash_fixed_value() -> None:
    # MD5 is fixed: a changed value here means files threaded by an older version no longer match
    # (docs/schema.md): fields joined by U+001F, NUL for null, blocks as type U+001D text U+001D extra
    (h,) = hashes(table_of([{"messages": [{"role": "user", "content": "hi"}]}], "chat"))
    text = "\x1f".join(["message", "user", *["\x00"] * 7, "text\x1dhi\x1d\x00", "\x00"])
    digest = hashlib.md5(text.encode()).digest()
    assert h == (int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little"))


@pytest.mark.parametrize(
    "other",
    [
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "hi!"},
        {"role": "user", "content": [{"type": "input_image", "image_url": "u"}]},
        {"role": "user", "content": "hi", "x": 1},
    ],
)
def test_item_hash_sees_content(other: dict) -> None:
    a = hashes(table_of([{"input": [user("hi")]}]))
    b = hashes(table_of([{"input": [other]}]))
    assert a != b


# -- hand-written logs ----------------------------------------------------------------------------

T1 = [user("task"), assistant("a1"), user("u2")]
T1b = [user("task"), assistant("a1"), user("u2 edited")]


def test_prefix_tree_parent_shared_leaf_duplicate() -> None:
    recs = [
        {"model": "m", "input": T1[:1]},
        {"model": "m", "input": T1},
        {"model": "m", "input": T1b},
        {"model": "m", "input": T1},  # duplicate of r2
        {"model": "other", "input": T1},  # same items, another model: not a duplicate
        {"model": "m", "input": [user("elsewhere")]},
    ]
    t = table_of(recs, ids=["r1", "r2", "r3", "r4", "r5", "r6"])
    got = check_reference(t)
    cols = [tuple(r[c] for c in THREAD_COLUMNS) for r in got]
    assert cols == [
        ("r1", None, 0, False, None, None),
        ("r1", "r1", 1, True, None, None),
        ("r1", "r1", 1, True, None, None),
        ("r1", "r1", 1, True, "r2", None),
        ("r1", "r1", 1, True, None, None),
        ("r6", None, 0, True, None, None),
    ]


def test_keep_leaves_names_the_leaf_and_counts_add_up() -> None:
    recs = [{"input": T1[:1]}, {"input": T1}, {"input": T1}, {"input": T1b}, {"input": []}, {"input": []}]
    t = table_of(recs, ids=["r1", "r2", "r3", "r4", "e1", "e2"])
    got = check_reference(t, "leaves")
    assert [r["conversation_id"] for r in got] == ["r2", "r4", "e1"]
    _, rejected = run(t, "threads:keep=leaves")
    assert dict(zip(rejected["conversation_id"], rejected["reason"], strict=True)) == {
        "r1": "threads: items are a prefix of a longer record (in leaf r2)",
        "r3": "threads: duplicate of an identical record (in leaf r2)",
        "e2": "threads: duplicate of an identical record (in leaf e1)",
    }


def test_compaction_starts_a_new_thread_linked_to_the_old_one() -> None:
    window = [user("task"), user("u2"), compaction("c1")]
    recs = [
        {"input": T1[:1]},
        {"input": T1},
        {"input": [*window, user("u3")]},
        {"input": [*window, user("u3"), assistant("a3"), user("u4")]},
    ]
    got = check_reference(table_of(recs, ids=["a", "b", "c", "d"]))
    assert [(r["thread_id"], r["parent_id"], r["continues_thread"]) for r in got] == [
        ("a", None, None), ("a", "a", None), ("c", None, "a"), ("c", "c", "a"),
    ]  # fmt: skip


def test_step_runs_on_the_whole_frame_not_in_runs() -> None:
    recs = [{"input": T1[: 1 + (i % 3)]} for i in range(9000)]
    kept, _ = apply_steps(pl.from_arrow(table_of(recs)), [parse_step("threads")], chunks=4)  # type: ignore[arg-type]
    assert kept.get_column("thread_id").n_unique() == 1


def test_bad_keep_is_a_config_error() -> None:
    from pipeline.errors import ConfigError

    with pytest.raises(ConfigError, match="keep"):
        parse_step("threads:keep=roots")


# -- generated request logs -----------------------------------------------------------------------


@st.composite
def request_log(draw: st.DrawFn) -> tuple[list[dict], list[int], list[dict]]:
    """A request log: its records, the generated request each record is a copy of, and per
    generated request its ``ancestor`` (the request it extends, None for the first of a window)
    and, for the first request after a compaction, ``before`` (the last request before it)."""
    word = st.sampled_from(["a", "b", "hi", "é", "x y", ""])
    gen: list[dict] = []

    def add(items: list[dict], ancestor: int | None, before: int | None = None) -> int:
        gen.append({"items": list(items), "ancestor": ancestor, "before": before})
        return len(gen) - 1

    for t in range(draw(st.integers(1, 3))):
        history = [user(f"task {t}")]
        last = add(history, None)
        users = [history[0]]
        compacted = False
        for k in range(draw(st.integers(0, 4))):
            reply = assistant(draw(word))
            if draw(st.integers(0, 4)) == 0:  # a regenerated answer: a sibling of the next request
                add([*history, assistant(draw(word) + "~"), user(f"{t}:{k}:regen")], last)
            u = user(f"{t}:{k}:{draw(word)}")
            if draw(st.integers(0, 4)) == 0:  # a retry that edits the last user turn
                add([*history, reply, user(f"{t}:{k}:edited")], last)
            history = [*history, reply, u]
            users.append(u)
            last = add(history, last)
            if not compacted and k >= 1 and draw(st.integers(0, 2)) == 0:
                compacted = True  # the history is replaced by its user turns and a compaction item
                history = [*users, compaction(f"{t}:{k}"), user(f"{t}:{k}:after")]
                last = add(history, None, last)
    # each generated request is in the log 0 (missing), 1 or 2 times; a copy may differ in model
    records, source = [], []
    for i, g in enumerate(gen):
        for copy in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):
            records.append({"model": "m" if copy == 0 or draw(st.booleans()) else "m2", "input": g["items"]})
            source.append(i)
    order = draw(st.permutations(range(len(records))))
    return [records[i] for i in order], [source[i] for i in order], gen


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(log=request_log(), seed=st.integers(0, 10**6))
def test_generated_logs_recover_the_generating_trees(
    log: tuple[list[dict], list[int], list[dict]], seed: int
) -> None:
    records, source, gen = log
    rng = random.Random(seed)
    ids = [f"r{rng.randrange(10**6):06d}-{i}" for i in range(len(records))]
    table = table_of(records, ids=ids)
    got = check_reference(table)
    check_reference(table, "leaves")
    present = set(source)
    rep: dict[int, str] = {}  # generated request -> its record (smallest id among its copies)
    for i in sorted(range(len(records)), key=lambda i: ids[i]):
        rep.setdefault(source[i], ids[i])
    thread_of = {ids[i]: row["thread_id"] for i, row in enumerate(got)}

    def ancestors(g: int) -> list[int]:  # nearest first
        out, a = [], gen[g]["ancestor"]
        while a is not None:
            out.append(a)
            a = gen[a]["ancestor"]
        return out

    for i, row in enumerate(got):
        g = source[i]
        logged = [a for a in ancestors(g) if a in present]
        assert row["parent_id"] == (rep[logged[0]] if logged else None), i
        assert row["shared_items"] == (len(gen[logged[0]]["items"]) if logged else 0)
        # the root: the first request of its path that is in the log
        assert row["thread_id"] == rep[next(x for x in [g, *ancestors(g)][::-1] if x in present)]
        first = ([g, *ancestors(g)])[-1]
        before = gen[first]["before"]
        if before is None:
            assert row["continues_thread"] is None
        elif before in present:
            assert row["continues_thread"] == thread_of[rep[before]]
        extended = any(gen[s]["items"][: len(gen[g]["items"])] == gen[g]["items"] and s != g
                       and g in ancestors(s) for s in present)  # fmt: skip
        assert row["is_leaf"] == (not extended)


def test_reference_equality_on_random_shuffles() -> None:
    rng = random.Random(7)
    recs: list[dict[str, Any]] = []
    for t in range(20):
        h = [user(f"t{t}")]
        for _ in range(rng.randrange(1, 6)):
            recs.append({"input": list(h)})
            h = [*h, assistant(rng.choice("ab")), user(rng.choice("xyz"))]
    rng.shuffle(recs)
    check_reference(table_of(recs, ids=[f"c{rng.randrange(1000)}" for _ in recs]), "leaves")


# -- the shared corpus ----------------------------------------------------------------------------


def _corpus_logs() -> dict[str, tuple[str, list[tuple[str, dict]]]]:
    """Request logs in the corpus, by name: (format, [(id, request body)]).

    The pydantic-ai cassettes' successive requests (one log per cassette line and format), inspect's
    model calls (one log per file), and the Codex rollouts cut into the request before each model
    call (after every user message or run of tool outputs)."""
    from tests.corpus import corpus_records

    logs: dict[str, tuple[str, list[tuple[str, dict]]]] = {}
    for r in corpus_records():
        if r.kind != "request":
            continue
        path, _, part = r.source.partition("#")
        if path.startswith(("pydantic-ai-cassettes/", "inspect-ai-logs/")):
            name = f"{path}#{part.split('/')[0]}" if path.startswith("pydantic") else path
            logs.setdefault(f"{name} {r.format}", (r.format, []))[1].append((r.source, r.record))
        elif path.startswith("codex-rollouts-"):
            items = r.record["input"]
            for k, it in enumerate(items):
                nxt = items[k + 1] if k + 1 < len(items) else {}
                calls_model = it.get("role") == "user" or str(it.get("type")).endswith("_call_output")
                if calls_model and not (
                    nxt.get("role") == "user" or str(nxt.get("type")).endswith("_call_output")
                ):
                    logs.setdefault(path, ("responses", []))[1].append(
                        (f"{path}@{k + 1:04d}", {"input": items[: k + 1]})
                    )
    return logs


def test_corpus_request_logs_thread_like_the_reference() -> None:
    from tests.corpus import corpus_available

    if not corpus_available():
        pytest.skip("the shared corpus (../shared/corpus) is absent: no corpus request logs to thread")
    logs = _corpus_logs()
    assert any(k.startswith("codex-rollouts-") for k in logs) and any("inspect" in k for k in logs)
    linked = 0
    for name, (fmt, reqs) in sorted(logs.items()):
        table = table_of([body for _, body in reqs], fmt, ids=[i for i, _ in reqs])
        got = check_reference(table)
        linked += sum(r["parent_id"] is not None for r in got)
        if name.startswith("codex-rollouts-"):  # one conversation cut per turn: one chain
            assert {r["thread_id"] for r in got} == {reqs[0][0]}, name
            assert [r["parent_id"] for r in got] == [None, *(i for i, _ in reqs[:-1])], name
        leaves = check_reference(table, "leaves")
        # dedupe keeps every item: every request's items are a prefix of a kept leaf's
        seqs = {r["conversation_id"]: [item_key(it) for it in r["items"]] for r in table.to_pylist()}
        for cid, items in seqs.items():
            assert any(seqs[leaf["conversation_id"]][: len(items)] == items for leaf in leaves), (name, cid)
    assert linked > 0


@pytest.mark.parametrize(
    ("fmt", "kind"), [(f, k) for f in ("responses", "chat", "anthropic") for k in ("request", "response")]
)
def test_random_records_and_their_prefixes_equal_the_reference(fmt: str, kind: str) -> None:
    """Every item shape the decoders produce (nulls, extras, images, reasoning, hosted calls), with
    copies of the records cut at random lengths so prefixes, duplicates and branches occur."""
    from tests.strategies import wire_record

    @settings(
        max_examples=15,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(records=st.lists(wire_record(fmt, kind), min_size=1, max_size=3), data=st.data())
    def check(records: list[dict], data: st.DataObject) -> None:
        table = decode_records(records, fmt).table
        rows = pl.from_arrow(table)
        assert isinstance(rows, pl.DataFrame)
        cuts = data.draw(st.lists(st.tuples(st.integers(0, len(rows) - 1), st.integers(0, 6)), max_size=6))
        copies = [rows.slice(r, 1).with_columns(pl.col("items").list.head(k)) for r, k in cuts]
        frame = pl.concat([rows, *copies]).with_columns(
            pl.format("c{}", pl.int_range(pl.len()).reverse()).alias("conversation_id"),
            pl.col("items").list.len().cast(pl.Int32).alias("n_items"),
        )
        check_reference(frame_to_disk(frame))
        check_reference(frame_to_disk(frame), "leaves")

    check()
