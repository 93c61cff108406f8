"""Compaction signal: items, markers in user/assistant text only, never in system text."""

from __future__ import annotations

import polars as pl

from pipeline.formats import decode_records
from pipeline.transforms import apply_steps, make_step
from tests.cases import CASES

MARK = "This session is being continued from a previous conversation that ran out of context."


def signal(records: list[dict], fmt: str, **params: object) -> list[tuple]:
    table = decode_records(records, fmt).table
    kept, _ = apply_steps(pl.from_arrow(table), [make_step("compaction", **params)])
    return kept.select("compacted", "compaction_count", "first_compaction_index").rows()


def test_compaction_items_and_anthropic_blocks() -> None:
    assert signal(
        [dict(CASES["responses"])["custom_tool_compaction_reference_hosted_unknown"]], "responses"
    ) == [(True, 2, 2)]
    assert signal([dict(CASES["anthropic"])["system_blocks_and_thinking_tools"]], "anthropic") == [
        (True, 1, 14)
    ]


def test_markers_in_user_and_assistant_text() -> None:
    recs = [
        {"messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": MARK}]},
        {"messages": [{"role": "assistant", "content": [{"type": "text", "text": "x " + MARK}]}]},
    ]
    assert signal(recs, "chat") == [(True, 1, 1), (True, 1, 0)]


def test_system_prompt_quoting_the_marker_does_not_trigger() -> None:
    recs = [
        {"messages": [{"role": "system", "content": MARK}, {"role": "developer", "content": MARK}]},
        {"instructions": MARK, "input": [{"role": "developer", "content": MARK}]},
    ]
    assert signal(recs[:1], "chat") == [(False, 0, None)]
    assert signal(recs[1:], "responses") == [(False, 0, None)]
    table = decode_records([{"system": MARK, "messages": []}], "anthropic").table
    kept, _ = apply_steps(pl.from_arrow(table), [make_step("compaction")])
    assert kept["compacted"].to_list() == [False]


def test_codex_summary_prefix_and_custom_markers() -> None:
    codex = (
        "Another language model started to solve this problem and produced a summary of its thinking process."
    )
    assert signal([{"input": [{"role": "user", "content": codex}]}], "responses") == [(True, 1, 0)]
    assert signal([{"input": [{"role": "user", "content": "CUT here"}]}], "responses", markers=["CUT"]) == [
        (True, 1, 0)
    ]
    assert signal([{"input": [{"role": "user", "content": "cut here"}]}], "responses", markers=["CUT"]) == [
        (False, 0, None)
    ]


def test_marker_with_newline_spans_two_blocks() -> None:
    """Item text joins blocks with "\\n": a marker containing one can match across two blocks, which
    a search block by block would miss; without "\\n" in the marker it cannot."""
    blocks = [{"type": "text", "text": "end of part one"}, {"type": "text", "text": "start of two"}]
    recs = [
        {"messages": [{"role": "user", "content": "x"}, {"role": "user", "content": blocks}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "one\nstart"}]}]},
        {"messages": [{"role": "system", "content": blocks}]},
    ]
    assert signal(recs, "chat", markers=["one\nstart"]) == [(True, 1, 1), (True, 1, 0), (False, 0, None)]
    assert signal(recs, "chat", markers=["onestart"]) == [(False, 0, None)] * 3
    many = ["@1", "@2", "@3", "@4", "one\nstart"]  # five markers: the Aho-Corasick path
    assert signal(recs, "chat", markers=many) == [(True, 1, 1), (True, 1, 0), (False, 0, None)]
