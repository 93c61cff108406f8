"""Kiln task runs. No Kiln file is in the shared corpus: these runs are hand-made after Kiln's
``kiln_ai.datamodel.TaskRun`` (libs/core/kiln_ai/datamodel/task_run.py: ``trace`` is a list of
OpenAI chat messages, or null), with the legacy JSON-string trace as well."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from pipeline.formats import encode_table
from pipeline.sources import detect_source, read_source

TRACE = [
    {"role": "system", "content": "You are a joke generator."},
    {"role": "user", "content": "Tell a joke about cats"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "pun", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "meow"},
    {"role": "assistant", "content": "Cats are purr-fect."},
]
RUN = {
    "v": 1,
    "id": "run_1",
    "created_at": "2025-06-01T10:00:00",
    "created_by": "me",
    "model_type": "task_run",
    "input": "Tell a joke about cats",
    "input_source": {"type": "human", "properties": {"created_by": "me"}},
    "output": {
        "v": 1,
        "output": "Cats are purr-fect.",
        "source": {"type": "synthetic", "properties": {"model_name": "gpt-4o", "model_provider": "openai"}},
        "rating": {"type": "five_star", "value": 4.0, "requirement_ratings": {}},
    },
    "intermediate_outputs": {"chain_of_thought": "think"},
    "tags": ["golden"],
    "usage": {"input_tokens": 10, "output_tokens": 5},
    "trace": TRACE,
}


def _read(path: Path):
    results = list(read_source(path, "kiln"))
    return results[-1].table, [x for r in results for x in r.rejected], results[-1].counts


def test_task_run_trace(tmp_path: Path) -> None:
    path = tmp_path / "task_run.kiln"
    path.write_text(json.dumps(RUN, indent=2))
    assert detect_source(path) == "kiln"
    table, rejected, _ = _read(path)
    assert rejected == []
    [rec] = encode_table(table, "chat")
    assert rec == {"messages": TRACE, "model": "gpt-4o"}
    prov = table.column("provenance").combine_chunks()
    assert prov.field("session_id").to_pylist() == ["run_1"]
    assert prov.field("score").to_pylist() == [4.0]
    assert prov.field("started_at").to_pylist() == ["2025-06-01T10:00:00"]
    meta = orjson.loads(prov.field("meta_json")[0].as_py())
    assert "trace" not in meta and meta["tags"] == ["golden"] and meta["intermediate_outputs"]


def test_legacy_string_trace_and_missing_trace(tmp_path: Path) -> None:
    legacy = {**RUN, "id": "run_2", "trace": json.dumps(TRACE)}
    bare = {k: v for k, v in RUN.items() if k != "trace"} | {"id": "run_3"}
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([legacy, bare]))
    table, rejected, counts = _read(path)
    assert rejected == []
    recs = encode_table(table, "chat")
    assert recs[0]["messages"] == TRACE
    assert recs[1]["messages"] == [
        {"role": "user", "content": "Tell a joke about cats"},
        {"role": "assistant", "content": "Cats are purr-fect."},
    ]
    assert counts["built_from_input_output"] == 1
    meta = orjson.loads(table.column("provenance").combine_chunks().field("meta_json")[0].as_py())
    assert meta["trace_was_string"] is True
