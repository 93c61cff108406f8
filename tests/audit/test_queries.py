"""Every ``sql/*.sql`` query against the fixture run, checked against a plain-Python reference.

The references below walk the records the fixture wrote (per-record Python is fine in tests) and
restate each query's question independently of its SQL; results are compared row by row, in the
query's documented order.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pipeline.audit import load_queries, load_query, open_run, query_names
from pipeline.audit.derived import DERIVED
from pipeline.audit.queries import parse_query
from pipeline.audit.views import RunDamaged, define_loss_kinds
from pipeline.encoders.rules import RULE
from pipeline.errors import ConfigError
from pipeline.formats import decode_records
from pipeline.io.item_index import item_index
from pipeline.io.record_index import written_records
from pipeline.io.run_tables import REJECTED_SCHEMA
from pipeline.io.shard_counts import record_counts
from pipeline.losses import LOSS_KINDS
from tests.audit.fixture import AUDIT_RECORDS, LOSSES_SCHEMA, FixtureRun

Rows = list[dict[str, Any]]


def _written(fx: FixtureRun) -> Rows:
    return fx.conversations.to_pylist()


def _lost(fx: FixtureRun) -> Rows:
    """The fixture's loss rows that are losses (additions, such as filled defaults, are not)."""
    return [loss for loss in fx.losses if not LOSS_KINDS[loss["kind"]].addition]


def ref_loss_totals_by_kind(fx: FixtureRun) -> Rows:
    n = fx.conversations.num_rows
    by: dict[str, list[str]] = defaultdict(list)
    for loss in fx.losses:
        by[loss["kind"]].append(loss["conversation_id"])
    rows = [
        {"kind": k, "losses": len(ids), "records": len(set(ids)), "share_of_written": len(set(ids)) / n,
         "addition": LOSS_KINDS[k].addition}
        for k, ids in by.items()
    ]
    return sorted(rows, key=lambda r: (r["addition"], -r["losses"], r["kind"]))


def ref_loss_totals_by_direction(fx: FixtureRun) -> Rows:
    written = Counter(c["source_format"] for c in _written(fx))
    rows = []
    for sf, w in sorted(written.items()):
        ls = [loss for loss in _lost(fx) if loss["source_format"] == sf]
        recs = len({loss["conversation_id"] for loss in ls})
        rows.append(
            {
                "source_format": sf,
                "target_format": fx.target,
                "written": w,
                "records_with_losses": recs,
                "losses": len(ls),
                "lossless_share": 1 - recs / w,
            }
        )
    return rows


def ref_lossless_share_by_dataset(fx: FixtureRun) -> Rows:
    lossy = {loss["conversation_id"] for loss in _lost(fx)}
    files = sorted({c["source_file"] for c in _written(fx)} | {r["source_file"] for r in fx.rejected})
    rows = []
    for f in files:
        w = [c for c in _written(fx) if c["source_file"] == f]
        rej = sum(1 for r in fx.rejected if r["source_file"] == f)
        lossless = sum(1 for c in w if c["conversation_id"] not in lossy)
        rows.append(
            {
                "dataset": f,
                "read": len(w) + rej,
                "rejected": rej,
                "written": len(w),
                "lossless": lossless,
                "lossless_share": lossless / len(w) if w else None,
            }
        )
    return rows


def ref_rejected_records_by_reason(fx: FixtureRun) -> Rows:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in fx.rejected:
        groups[(r["stage"], r["step"], re.sub(r"^\$[^ ]*: ", "", r["reason"]))].append(r)
    rows = []
    for (stage, step, reason), rs in groups.items():
        first = min(rs, key=lambda r: (r["source_file"], r["source_line"]))
        rows.append(
            {
                "stage": stage,
                "step": step,
                "reason": reason,
                "records": len(rs),
                "example_file": first["source_file"],
                "example_line": first["source_line"],
                "example_reason": first["reason"],
            }
        )
    return sorted(rows, key=lambda r: (-r["records"], r["stage"], r["reason"]))


def ref_target_rule_repairs_and_rejections(fx: FixtureRun) -> Rows:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for loss in fx.losses:
        rule = loss["detail"].split(": ", 1)[0]
        if rule in RULE:
            groups[(rule, "repaired")].append({**loss, "example": loss["detail"]})
    for r in fx.rejected:
        rule = r["reason"].removeprefix("encode: ").split(": ", 1)[0]
        if r["stage"] == "convert" and r["reason"].startswith("encode: ") and rule in RULE:
            groups[(rule, "rejected")].append({**r, "kind": None, "example": r["reason"]})
    rows = []
    for (rule, outcome), events in groups.items():
        first = min(events, key=lambda e: (e["source_file"], e["source_line"], e["example"]))
        assert outcome == "rejected" or {e["kind"] for e in events} == {RULE[rule].repair}
        rows.append(
            {
                "rule": rule,
                "outcome": outcome,
                "kind": events[0]["kind"],
                "occurrences": len(events),
                "records": len({e["conversation_id"] for e in events}),
                "example_file": first["source_file"],
                "example_line": first["source_line"],
                "example": first["example"],
            }
        )
    return sorted(rows, key=lambda r: (-r["records"], r["rule"], r["outcome"]))


def ref_item_kinds_and_roles(fx: FixtureRun) -> Rows:
    items: Counter[tuple[Any, ...]] = Counter()
    convs: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for c in _written(fx):
        for it in c["items"]:
            key = (c["source_format"], it["type"], it["role"])
            items[key] += 1
            convs[key].add(c["conversation_id"])
    rows = [
        {"source_format": k[0], "type": k[1], "role": k[2], "items": n, "conversations": len(convs[k])}
        for k, n in items.items()
    ]
    return sorted(rows, key=lambda r: (-r["items"], r["source_format"], r["type"], r["role"] or ""))


CALLS = ("function_call", "custom_tool_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _positional_pairs(items: list[tuple[int, dict[str, Any]]]) -> tuple[set[int], set[int]]:
    """The id-less outputs that find no call and the id-less calls no output answers: each id-less
    output answers the oldest unanswered id-less call before it (docs/conversion.md, "Calls without
    ids"), walked as a queue, independently of the SQL's running balance."""
    pending: list[int] = []
    lonely: set[int] = set()
    for i, it in items:
        if it["call_id"] is not None:
            continue
        if it["type"] in CALLS:
            pending.append(i)
        elif it["type"] in OUTPUTS:
            if pending:
                pending.pop(0)
            else:
                lonely.add(i)
    return lonely, set(pending)


def ref_tool_pairing_problems(fx: FixtureRun) -> Rows:
    rows = []
    for c in _written(fx):
        items = list(enumerate(c["items"]))
        call_ids = [it["call_id"] for _, it in items if it["type"] in CALLS]
        out_ids = {it["call_id"] for _, it in items if it["type"] in OUTPUTS}
        lonely_outputs, unanswered_calls = _positional_pairs(items)
        for i, it in items:
            problems = []
            cid = it["call_id"]
            if it["type"] in OUTPUTS and (i in lonely_outputs if cid is None else cid not in call_ids):
                problems.append("output_without_call")
            if it["type"] in CALLS and (i in unanswered_calls if cid is None else cid not in out_ids):
                problems.append("call_without_output")
            if it["type"] in CALLS and cid is not None and call_ids.count(cid) > 1:
                problems.append("duplicate_call_id")
            rows += [
                {
                    "conversation_id": c["conversation_id"],
                    "source_file": c["source_file"],
                    "source_line": c["source_line"],
                    "problem": p,
                    "call_id": cid,
                    "item_index": i,
                    "type": it["type"],
                }
                for p in problems
            ]
    return sorted(rows, key=lambda r: (r["conversation_id"], r["item_index"], r["problem"]))


def ref_phase_coverage(fx: FixtureRun) -> Rows:
    counts: Counter[tuple[str, str]] = Counter()
    for c in _written(fx):
        for it in c["items"]:
            if it["type"] == "message" and it["role"] == "assistant":
                nulls = it["null_fields"] or []
                phase = it["phase"] or ("(null)" if "phase" in nulls else "(absent)")
                counts[(c["source_format"], phase)] += 1
    per_format = Counter()
    for (sf, _), n in counts.items():
        per_format[sf] += n
    rows = [
        {"source_format": sf, "phase": p, "messages": n, "share": n / per_format[sf]}
        for (sf, p), n in counts.items()
    ]
    return sorted(rows, key=lambda r: (r["source_format"], -r["messages"], r["phase"]))


def ref_compaction_statistics(fx: FixtureRun) -> Rows:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in _written(fx):
        by[c["source_format"]].append(c)
    rows = []
    for sf, convs in sorted(by.items()):
        per = []
        for c in convs:
            idx = [i for i, it in enumerate(c["items"]) if it["type"] == "compaction"]
            enc = sum(len(c["items"][i]["encrypted_content"] or "") for i in idx)
            per.append((len(idx), len(c["items"]) - 1 - idx[-1] if idx else None, enc))
        compacted = [p for p in per if p[0]]
        rows.append(
            {
                "source_format": sf,
                "conversations": len(convs),
                "compacted": len(compacted),
                "compaction_items": sum(p[0] for p in per),
                "max_per_conversation": max(p[0] for p in per),
                "avg_items_after_last": sum(p[1] for p in compacted) / len(compacted) if compacted else None,
                "encrypted_bytes": sum(p[2] for p in per),
            }
        )
    return rows


def side(it: dict[str, Any]) -> str | None:
    """The turn rule of turn_count_distribution.sql, restated."""
    t, role = it["type"], it["role"]
    if it["section"] == "instructions":
        return None
    if t.endswith("call_output"):
        return "tool"
    if t == "message":
        return {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}.get(role)
    if t in ("reasoning", "server_tool_use") or t.endswith("_call") or t.endswith("_tool_result"):
        return "assistant"
    return None


def turns(items: list[dict[str, Any]]) -> Counter[str]:
    sides = [s for s in map(side, items) if s is not None]
    return Counter(s for i, s in enumerate(sides) if i == 0 or s != sides[i - 1])


def ref_turn_count_distribution(fx: FixtureRun) -> Rows:
    by: dict[int, list[Counter[str]]] = defaultdict(list)
    for c in _written(fx):
        t = turns(c["items"])
        by[t["user"] + t["assistant"]].append(t)
    n = fx.conversations.num_rows
    return [
        {
            "all_turns": k,
            "conversations": len(ts),
            "share": len(ts) / n,
            "human_turns": sum(t["user"] for t in ts),
            "ai_turns": sum(t["assistant"] for t in ts),
            "tool_turns": sum(t["tool"] for t in ts),
            "system_turns": sum(t["system"] for t in ts),
        }
        for k, ts in sorted(by.items())
    ]


def ref_worst_records(fx: FixtureRun, n: int = 10) -> Rows:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for loss in _lost(fx):
        by[loss["conversation_id"]].append(loss)
    rows = [
        {
            "conversation_id": cid,
            "source_file": ls[0]["source_file"],
            "source_line": ls[0]["source_line"],
            "source_format": ls[0]["source_format"],
            "losses": len(ls),
            "kinds": sorted({loss["kind"] for loss in ls}),
            "paths": sorted(loss["path"] for loss in ls)[:5],
        }
        for cid, ls in by.items()
    ]
    return sorted(rows, key=lambda r: (-r["losses"], r["conversation_id"]))[:n]


def ref_empty(fx: FixtureRun) -> Rows:
    return []


REFERENCES: dict[str, Callable[[FixtureRun], Rows]] = {
    "loss_totals_by_kind": ref_loss_totals_by_kind,
    "loss_totals_by_direction": ref_loss_totals_by_direction,
    "lossless_share_by_dataset": ref_lossless_share_by_dataset,
    "rejected_records_by_reason": ref_rejected_records_by_reason,
    "target_rule_repairs_and_rejections": ref_target_rule_repairs_and_rejections,
    "item_kinds_and_roles": ref_item_kinds_and_roles,
    "tool_pairing_problems": ref_tool_pairing_problems,
    "phase_coverage": ref_phase_coverage,
    "compaction_statistics": ref_compaction_statistics,
    "turn_count_distribution": ref_turn_count_distribution,
    "worst_records": ref_worst_records,
    "run_counts_mismatch": ref_empty,
    "threads_by_dataset": ref_empty,  # the fixture has no threads step; tests/engine/test_partition.py
}


def _close(actual: Rows, expected: Rows) -> None:
    assert len(actual) == len(expected), (len(actual), len(expected))
    for a, e in zip(actual, expected, strict=True):
        assert a.keys() == e.keys(), (list(a), list(e))
        for k in a:
            if isinstance(e[k], float):
                assert a[k] == pytest.approx(e[k], rel=1e-12), (k, a, e)
            else:
                assert a[k] == e[k] and type(a[k]) is type(e[k]), (k, a[k], e[k])


def test_every_query_has_a_reference() -> None:
    assert sorted(REFERENCES) == query_names()


@pytest.mark.parametrize("name", query_names())
def test_query_matches_reference(fixture_run: FixtureRun, name: str) -> None:
    con = open_run(fixture_run.path)
    actual = load_query(name).run(con).to_pylist()
    _close(actual, REFERENCES[name](fixture_run))


def test_the_fixture_exercises_every_query(fixture_run: FixtureRun) -> None:
    """Each report query has rows to check, and every tool pairing problem occurs."""
    for name, ref in REFERENCES.items():
        if ref is not ref_empty:
            assert ref(fixture_run), name
    problems = {r["problem"] for r in ref_tool_pairing_problems(fixture_run)}
    assert problems == {"output_without_call", "call_without_output", "duplicate_call_id"}
    idless = {r["problem"] for r in ref_tool_pairing_problems(fixture_run) if r["call_id"] is None}
    assert idless == {"output_without_call", "call_without_output"}
    assert {r["stage"] for r in fixture_run.rejected} == {"read", "decode", "convert"}
    outcomes = {r["outcome"] for r in ref_target_rule_repairs_and_rejections(fixture_run)}
    assert outcomes == {"repaired", "rejected"}


def test_calls_paired_by_position_are_not_pairing_problems(fixture_run: FixtureRun) -> None:
    """Id-less calls answered by position get generated ids (a loss), not a red audit."""
    con = open_run(fixture_run.path)
    rows = load_query("tool_pairing_problems").run(con).to_pylist()
    clean = {c["conversation_id"] for c in _written(fixture_run) if c["source_line"] is not None} - {
        r["conversation_id"] for r in rows
    }
    positional = [
        c for c in _written(fixture_run)
        if c["conversation_id"] in clean
        and any(it["call_id"] is None and it["type"] in CALLS for it in c["items"])
    ]  # fmt: skip
    assert len(positional) >= 2, "the id-less cases of tests/cases.py (responses, chat) are clean"
    # converted to another format (responses -> chat), their calls got ids, reported as losses
    generated = {r["conversation_id"] for r in fixture_run.losses if r["kind"] == "generated_id"}
    converted = [c for c in positional if c["source_format"] != fixture_run.target]
    assert converted and all(c["conversation_id"] in generated for c in converted)


def test_worst_records_binds_n(fixture_run: FixtureRun) -> None:
    con = open_run(fixture_run.path)
    q = load_query("worst_records")
    _close(q.run(con, {"n": "3"}).to_pylist(), ref_worst_records(fixture_run, 3))
    with pytest.raises(ConfigError, match="expected an INTEGER"):
        q.run(con, {"n": "3; DROP TABLE x"})
    with pytest.raises(ConfigError, match="has no parameter 'm'"):
        q.run(con, {"m": "3"})


@pytest.mark.parametrize("facts", ["written", "derived"])
def test_turns_of_a_hand_counted_conversation(facts: str) -> None:
    """user, compaction, user, assistant, call, output, assistant: 1 user, 2 assistant, 1 tool turn.

    Counted from the facts the engine writes (record index -> record_counts) and from the views
    computed in SQL for runs without them (pipeline/audit/derived.py).
    """
    import duckdb

    table = decode_records([AUDIT_RECORDS[1]], "responses").table  # compaction, then phases
    con = duckdb.connect()
    items = item_index(table)
    if facts == "written":
        records = written_records(table, items, None, "part-00000", "chat")
        con.register("record_counts", record_counts(records))
    else:
        con.register("conversations", table)
        con.register("items", items)
        con.register("losses", LOSSES_SCHEMA.empty_table())
        con.register("rejected", REJECTED_SCHEMA.empty_table())
        con.sql("CREATE VIEW summary AS SELECT 'chat' AS target")
        define_loss_kinds(con)
        con.execute(DERIVED["records"])
        con.execute(DERIVED["record_counts"])
    rows = load_query("turn_count_distribution").run(con).to_pylist()
    assert rows == [
        {
            "all_turns": 3,
            "conversations": 1,
            "share": 1.0,
            "human_turns": 1,
            "ai_turns": 2,
            "tool_turns": 1,
            "system_turns": 0,
        }
    ]


def _broken_copy(fx: FixtureRun, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(fx.path, run)
    return run


def test_audits_find_a_broken_run(fixture_run: FixtureRun, tmp_path: Path) -> None:
    # Losses without a written record are chatlake verify's (tests/engine/test_verify.py) since the
    # losses_without_written_record query moved there.
    run = _broken_copy(fixture_run, tmp_path)
    summary = json.loads((run / "summary.json").read_text())
    summary["written"] += 1
    summary["read"] += 1
    (run / "summary.json").write_text(json.dumps(summary))
    con = open_run(run)
    w = fixture_run.conversations.num_rows
    assert load_query("run_counts_mismatch").run(con).to_pylist() == [
        {"count": "read", "in_summary": fixture_run.read + 1, "on_disk": fixture_run.read},
        {"count": "written", "in_summary": w + 1, "on_disk": w},
    ]


def test_an_unlisted_or_truncated_shard_fails_before_any_query(
    fixture_run: FixtureRun, tmp_path: Path
) -> None:
    run = _broken_copy(fixture_run, tmp_path)
    pa_file = run / "losses" / "part-00000.parquet"
    (run / "losses" / "part-09999.parquet").write_bytes(pa_file.read_bytes())
    with pytest.raises(RunDamaged, match=r"part-09999.parquet: a shard file that manifest.json does not"):
        open_run(run)
    (run / "losses" / "part-09999.parquet").unlink()
    pa_file.write_bytes(pa_file.read_bytes()[:-1])
    with pytest.raises(RunDamaged, match=r"losses/part-00000.parquet: \d+ bytes, manifest.json says \d+"):
        open_run(run)


def test_not_a_run_fails_before_work(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        open_run(tmp_path / "missing")
    (tmp_path / "conversations").mkdir()
    with pytest.raises(ConfigError, match="conversations/ has no Parquet shards"):
        open_run(tmp_path)
    with pytest.raises(ConfigError, match="no audit query 'nope'; known queries: compaction_statistics"):
        load_query("nope")


def test_header_needs_question_and_result() -> None:
    with pytest.raises(ValueError, match="must have"):
        parse_query("x", "-- question: q\nSELECT 1")
    q = parse_query(
        "x", "-- question: q?\n--   more\n-- result: r\n-- param: k VARCHAR = a: the k\nSELECT $k"
    )
    assert (q.question, q.result, q.bind()) == ("q? more", "r", {"k": "a"})


def test_an_empty_query_folder_is_an_error_not_an_empty_audit(tmp_path: Path) -> None:
    """No *.sql to run (a broken install) raises, so `audit` never prints an empty healthy result."""
    with pytest.raises(FileNotFoundError, match=r"no audit queries \(\*\.sql\)"):
        load_queries(sql_dir=tmp_path)
