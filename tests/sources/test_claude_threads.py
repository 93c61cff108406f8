"""Claude Code rewinds and branches: the active chain, each abandoned branch on its own, nothing lost.

Hand-written transcripts (one line per dict below, ``u``/``a`` = user/assistant). The hypothesis test
checks random trees against a plain reference: the active conversation is the parentUuid walk from
the most recent leaf, and every message line is in exactly one conversation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.formats import encode_table
from pipeline.sources import read_source

S = "sess-1"


def user(uuid: str, parent: str | None, text: str | list[dict[str, Any]] | None = None, **kw: Any) -> dict:
    return {
        "type": "user",
        "sessionId": S,
        "uuid": uuid,
        "parentUuid": parent,
        "message": {"role": "user", "content": text if text is not None else f"text {uuid}"},
        **kw,
    }


def asst(
    uuid: str,
    parent: str | None,
    content: list[dict[str, Any]] | None = None,
    mid: str | None = None,
    **kw: Any,
):
    return {
        "type": "assistant",
        "sessionId": S,
        "uuid": uuid,
        "parentUuid": parent,
        "message": {
            "id": mid or f"msg_{uuid}",
            "role": "assistant",
            "model": "claude-x",
            "content": content or [{"type": "text", "text": f"text {uuid}"}],
        },
        **kw,
    }


def tool_use(call: str) -> dict:
    return {"type": "tool_use", "id": call, "name": "f", "input": {}}


def tool_result(call: str) -> list[dict]:
    return [{"type": "tool_result", "tool_use_id": call, "content": "ok"}]


def _read(tmp_path: Path, lines: list[dict]) -> tuple[list[dict], list[str | None], list[dict], dict, list]:
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    results = list(read_source(path, "claude-code"))
    table = pa.concat_tables([r.table for r in results])
    prov = table.column("provenance").combine_chunks()
    metas = [orjson.loads(m) for m in prov.field("meta_json").to_pylist()]
    rejected = [x for r in results for x in r.rejected]
    return (
        encode_table(table, "anthropic"),
        prov.field("sample_id").to_pylist(),
        metas,
        results[-1].counts,
        rejected,
    )


def _texts(rec: dict) -> list[str]:
    """Each message as the uuids of its text parts (what a test can compare at a glance)."""
    out = []
    for m in rec["messages"]:
        c = m["content"]
        out.append(
            c if isinstance(c, str) else "+".join(b.get("text") or b.get("id") or b["tool_use_id"] for b in c)
        )
    return out


def _lines(meta: dict) -> list[int]:
    return [e["line"] for e in meta["lines"]]


def test_rewind_keeps_the_active_chain_and_the_abandoned_branch(tmp_path: Path) -> None:
    lines = [
        user("u1", None),
        asst("a1", "u1"),
        user("u2", "a1"),  # abandoned: the user pressed Esc-Esc and edited this prompt
        asst("a2", "u2"),
        user("u3", "a1"),  # the edited prompt
        asst("a3", "u3"),
    ]
    recs, sample_ids, metas, counts, rejected = _read(tmp_path, lines)
    assert rejected == []
    assert [_texts(r) for r in recs] == [
        ["text u1", "text a1", "text u3", "text a3"],
        ["text u2", "text a2"],
    ]
    assert sample_ids == [None, "branch:a2"]
    assert metas[1]["branch"] == {
        "leaf": "a2",
        "leaf_line": 4,
        "fork_uuid": "a1",
        "fork_line": 2,
        "fork_leaf": None,
    }
    assert [m["threading"] for m in metas] == ["tree", "tree"] and "branch" not in metas[0]
    assert counts["branches"] == 1 and counts["conversations"] == 2
    assert sorted(_lines(metas[0]) + _lines(metas[1])) == [1, 2, 3, 4, 5, 6]  # each line exactly once


def test_branch_of_a_branch_names_the_conversation_it_forks_from(tmp_path: Path) -> None:
    lines = [
        user("u1", None),
        asst("a1", "u1"),
        user("u2", "a1"),
        asst("a2", "u2"),  # regenerated below: a2 and a2b share parent u2
        asst("a2b", "u2"),
        user("u3", "a1"),
        asst("a3", "u3"),
    ]
    recs, sample_ids, metas, _, _ = _read(tmp_path, lines)
    assert sample_ids == [None, "branch:a2b", "branch:a2"]  # most recent leaf first
    assert [_texts(r) for r in recs] == [
        ["text u1", "text a1", "text u3", "text a3"],
        ["text u2", "text a2b"],
        ["text a2"],
    ]
    assert metas[2]["branch"]["fork_uuid"] == "u2" and metas[2]["branch"]["fork_leaf"] == "a2b"


def test_parallel_tool_use_is_not_a_branch(tmp_path: Path) -> None:
    """One API message streamed as one line per tool_use; each result's parent is its own tool_use line."""
    lines = [
        user("u1", None),
        asst("a1", "u1", [tool_use("t1")], mid="msg_1"),
        asst("a2", "a1", [tool_use("t2")], mid="msg_1"),
        user("r1", "a1", tool_result("t1")),
        user("r2", "a2", tool_result("t2")),
        asst("a3", "r2"),
    ]
    recs, sample_ids, metas, counts, _ = _read(tmp_path, lines)
    assert sample_ids == [None] and "branches" not in counts
    assert _texts(recs[0]) == ["text u1", "t1+t2", "t1", "t2", "text a3"]
    assert _lines(metas[0]) == [1, 2, 3, 4, 5, 6]


def test_non_message_lines_link_the_chain(tmp_path: Path) -> None:
    lines = [
        user("u1", None),
        {"type": "system", "subtype": "x", "sessionId": S, "uuid": "s1", "parentUuid": "u1"},
        {"type": "attachment", "sessionId": S, "uuid": "at1", "parentUuid": "s1"},
        asst("a1", "at1"),
    ]
    recs, sample_ids, _, counts, _ = _read(tmp_path, lines)
    assert sample_ids == [None] and _texts(recs[0]) == ["text u1", "text a1"]
    assert counts["line_types:system"] == 1 and counts["line_types:attachment"] == 1


def test_sidechain_branches_stay_in_the_sidechain(tmp_path: Path) -> None:
    side = {"isSidechain": True, "agentId": "ag"}
    lines = [
        user("u1", None),
        user("s1", None, **side),
        asst("sa1", "s1", **side),
        asst("sa2", "s1", **side),  # a retried sub-agent answer
        asst("a1", "u1"),
    ]
    recs, sample_ids, metas, _, _ = _read(tmp_path, lines)
    assert sample_ids == [None, "sidechain:ag", "sidechain:ag/branch:sa1"]
    assert [_texts(r) for r in recs] == [["text u1", "text a1"], ["text s1", "text sa2"], ["text sa1"]]
    assert metas[2]["branch"]["fork_uuid"] == "s1"


def test_missing_parent_starts_a_chain_and_loses_nothing(tmp_path: Path) -> None:
    lines = [user("u1", None), asst("a1", "u1"), user("u2", "not-in-this-file"), asst("a2", "u2")]
    recs, sample_ids, metas, counts, rejected = _read(tmp_path, lines)
    assert rejected == [] and counts["missing_parents"] == 1
    assert sample_ids == [None, "branch:a1"]
    assert [_texts(r) for r in recs] == [["text u2", "text a2"], ["text u1", "text a1"]]
    assert "fork_uuid" not in metas[1]["branch"]  # its own root: forks off nothing


def test_compaction_boundary_starts_a_new_root(tmp_path: Path) -> None:
    """Like a Codex context window: what came before the compaction is a row of its own."""
    lines = [
        user("u1", None),
        asst("a1", "u1"),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "sessionId": S,
            "uuid": "cb",
            "parentUuid": None,
            "logicalParentUuid": "a1",
        },
        user("u2", "cb", "summary of the conversation so far", isCompactSummary=True),
        asst("a2", "u2"),
    ]
    recs, sample_ids, metas, _, _ = _read(tmp_path, lines)
    assert sample_ids == [None, "branch:a1"]
    assert [_texts(r) for r in recs] == [
        ["summary of the conversation so far", "text a2"],
        ["text u1", "text a1"],
    ]
    assert metas[1]["branch"] == {"leaf": "a1", "leaf_line": 2}


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "lines",
    [
        [user("u1", "a1"), asst("a1", "u1"), user("u2", "a1")],  # message lines point at each other
        [user("u1", "u1"), asst("a1", "u1")],  # a line is its own parent
        [
            {"type": "system", "sessionId": S, "uuid": "s1", "parentUuid": "s2"},
            {"type": "system", "sessionId": S, "uuid": "s2", "parentUuid": "s1"},
            user("u1", "s1"),  # the walk up through non-message lines loops
            asst("a1", "u1"),
        ],
    ],
    ids=["message-cycle", "self-parent", "cycle-through-system-lines"],
)
def test_cycle_does_not_hang_and_keeps_file_order(tmp_path: Path, lines: list[dict]) -> None:
    recs, sample_ids, metas, counts, rejected = _read(tmp_path, lines)
    assert rejected == [] and sample_ids == [None]
    assert counts["threading_file_order:cycle"] == 1
    assert metas[0]["threading"] == "file_order" and metas[0]["threading_reason"] == "cycle"
    n_messages = sum(x["type"] in ("user", "assistant") for x in lines)
    assert len(recs[0]["messages"]) == n_messages  # everything kept, in file order


def test_duplicate_uuid_and_missing_links_keep_file_order(tmp_path: Path) -> None:
    dup = [user("u1", None), asst("a1", "u1"), user("u1", "a1"), asst("a2", "u1")]
    _, _, metas, counts, _ = _read(tmp_path, dup)
    assert (
        metas[0]["threading_reason"] == "duplicate_uuid"
        and counts["threading_file_order:duplicate_uuid"] == 1
    )
    no_links = [user("u1", None), {k: v for k, v in asst("a1", "u1").items() if k != "parentUuid"}]
    _, _, metas, counts, _ = _read(tmp_path, no_links)
    assert metas[0]["threading_reason"] == "no_links"


def test_rejected_line_in_the_chain_is_passed_through(tmp_path: Path) -> None:
    """A line the codec refuses is in the rejected file; its child still hangs from its parent."""
    bad = user("u2", "a1")
    bad["message"]["content"] = 5
    lines = [user("u1", None), asst("a1", "u1"), bad, asst("a2", "u2")]
    recs, sample_ids, _, _, rejected = _read(tmp_path, lines)
    assert [r.line for r in rejected] == [3] and sample_ids == [None]
    assert _texts(recs[0]) == ["text u1", "text a1", "text a2"]


@pytest.mark.timeout(120)
def test_deep_chain_and_wide_fan_complete(tmp_path: Path) -> None:
    """20,000 lines in one chain (no recursion limit) and 2,000 regenerations of one prompt."""
    deep = [user("l0", None)] + [(asst if i % 2 else user)(f"l{i}", f"l{i - 1}") for i in range(1, 20_000)]
    recs, sample_ids, _, _, _ = _read(tmp_path, deep)
    assert sample_ids == [None] and len(recs[0]["messages"]) == 20_000
    fan = [user("u", None)] + [asst(f"a{i}", "u") for i in range(2_000)]
    recs, sample_ids, _, counts, _ = _read(tmp_path, fan)
    assert counts["branches"] == 1_999 and sum(len(r["messages"]) for r in recs) == 2_001


def _reference_active(lines: list[dict]) -> list[str]:
    """Plain reference: walk parentUuid from the most recent leaf up to the root."""
    by_uuid = {x["uuid"]: x for x in lines}
    parents = {x["parentUuid"] for x in lines}
    leaf = [x for x in lines if x["uuid"] not in parents][-1]
    chain = []
    cur: dict | None = leaf
    while cur is not None:
        chain.append(cur["uuid"])
        cur = by_uuid.get(cur["parentUuid"])
    return chain[::-1]


@st.composite
def _trees(draw: st.DrawFn) -> list[dict]:
    n = draw(st.integers(1, 25))
    lines = [user("n0", None)]
    for i in range(1, n):
        parent = draw(st.integers(0, i - 1))
        make = asst if draw(st.booleans()) else user
        lines.append(make(f"n{i}", f"n{parent}"))
    return lines


@settings(max_examples=60, deadline=None)
@given(_trees())
def test_random_trees_against_the_reference(lines: list[dict]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        recs, sample_ids, metas, counts, _ = _read(Path(d), lines)
    assert sample_ids[0] is None
    assert [f"text {u}" for u in _reference_active(lines)] == _texts(recs[0])
    every = sorted(n for m in metas for n in _lines(m))
    assert every == list(range(1, len(lines) + 1))  # each line in exactly one conversation
    leaves = len({x["uuid"] for x in lines} - {x["parentUuid"] for x in lines})
    assert len(recs) == leaves == counts["conversations"]
