"""Cross-format encoders to the dataset formats (HF / TRL rows, ShareGPT rows).

* every source record converts, decodes back as the target without rejection (and re-encodes
  exactly), and keeps its texts and tool arguments;
* every loss names a place in the source record;
* no silent loss between the two dataset formats (HF -> ShareGPT -> HF and back), whose both legs
  are these encoders;
* A -> HF/ShareGPT -> A for A in Chat/Responses: ``to_chat`` / ``to_responses`` read HF and
  ShareGPT rows (:mod:`pipeline.encoders.from_dataset`), and nothing changes that A -> HF/ShareGPT
  did not report.

Codecs and encoders are registered by the fixture, so this runs before the registries list them.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import orjson
import pyarrow as pa
import pytest

from pipeline import synth
from pipeline.encoders import ENCODERS, Converted, convert_table, to_hf, to_sharegpt
from pipeline.formats import CODECS, decode_records, encode_table, hf, sharegpt
from tests.cases import CASES
from tests.corpus import CORPUS_DIR, corpus_available, corpus_records
from tests.encoders.coverage import diff_paths, uncovered
from tests.formats.test_hf import HF_CASES
from tests.formats.test_sharegpt import SHAREGPT_CASES
from tests.helpers import json_diff, resolves

API_FORMATS = ("chat", "responses", "anthropic")
DATASET_FORMATS = ("hf", "sharegpt")
GLAIVE = CORPUS_DIR / "llama-factory" / "glaive_toolcall_en_demo.json"
TEXT_BLOCKS = frozenset(("input_text", "output_text", "text", "refusal", None))


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CODECS, "hf", hf)
    monkeypatch.setitem(CODECS, "sharegpt", sharegpt)
    monkeypatch.setitem(ENCODERS, "hf", to_hf)
    monkeypatch.setitem(ENCODERS, "sharegpt", to_sharegpt)


def _records(fmt: str, n: int = 300, corpus: bool = False) -> list[dict[str, Any]]:
    """Hand-written cases, synthetic records and (when asked and present) the corpus' requests."""
    records = [rec for _, rec in CASES[fmt]] + list(synth.generate(fmt, n, seed=7))
    if corpus and corpus_available():
        records.extend(r.record for r in corpus_records() if r.format == fmt and r.kind == "request")
    return records


def _convert(records: list[dict[str, Any]], a: str, b: str) -> list[tuple[dict[str, Any], Converted]]:
    """A -> B for every record; only "not supported yet" refusals are allowed (they are dropped)."""
    there = convert_table(decode_records(records, a).table, b)
    errors = Counter(c.error for c in there if c.error is not None)
    assert all("not supported yet" in e for e in errors), errors
    return [(rec, c) for rec, c in zip(records, there, strict=True) if c.error is None]


# -- what the canonical rows hold -------------------------------------------------------------


def _texts(table: pa.Table) -> list[list[str]]:
    """Per row: instructions text and the text blocks of its messages and tool outputs."""
    out = []
    for row in table.to_pylist():
        texts = [b["text"] for b in (row["instructions"]["content"] or []) if b["text"]]
        for it in row["items"]:
            if it["type"] in ("message", "function_call_output") and it["content"]:
                texts.extend(b["text"] for b in it["content"] if b["type"] in TEXT_BLOCKS and b["text"])
        out.append(texts)
    return out


def _arguments(table: pa.Table) -> list[list[bytes]]:
    """Per row: each function call's arguments object as sorted-key JSON (objects only)."""
    out = []
    for row in table.to_pylist():
        args = []
        for it in row["items"]:
            if it["type"] == "function_call" and it["arguments"] is not None:
                try:
                    obj = orjson.loads(it["arguments"])
                except orjson.JSONDecodeError:
                    continue
                if isinstance(obj, dict):
                    args.append(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS))
        out.append(args)
    return out


@pytest.mark.parametrize("b", DATASET_FORMATS)
@pytest.mark.parametrize("a", API_FORMATS)
def test_every_record_converts_decodes_and_keeps_its_texts(a: str, b: str) -> None:
    records = _records(a, corpus=True)
    kept = _convert(records, a, b)
    source = decode_records([rec for rec, _ in kept], a).table
    res = decode_records([c.record for _, c in kept], b)
    assert res.rejected == [], res.rejected[0].error
    written = [c.record for _, c in kept]
    assert [json_diff(w, e) for w, e in zip(written, encode_table(res.table, b), strict=True)] == [
        None
    ] * len(kept)
    missing = []
    for n, (texts, target_texts) in enumerate(zip(_texts(source), _texts(res.table), strict=True)):
        blob = "\x00".join(target_texts)
        missing.extend((n, t[:40]) for t in texts if t not in blob)
    assert missing == []
    for want, got in zip(_arguments(source), _arguments(res.table), strict=True):
        assert Counter(want) - Counter(got) == Counter()  # the target adds wrapped ones
    kinds = Counter(loss.kind for _, c in kept for loss in c.losses)
    print(f"\n{a} -> {b}: {len(kept)} of {len(records)} records, losses {dict(kinds)}")


# -- loss paths -------------------------------------------------------------------------------


def _sources(fmt: str) -> list[dict[str, Any]]:
    if fmt == "hf":
        return [rec for _, rec in HF_CASES] + [
            c.record for _, c in _convert(_records("chat", 100), "chat", "hf")
        ]
    if fmt == "sharegpt":
        recs = [c.record for _, c in _convert(_records("responses", 100), "responses", "sharegpt")]
        return [rec for _, rec in SHAREGPT_CASES] + recs
    return _records(fmt, 200)


@pytest.mark.parametrize(
    ("a", "b"), [(a, b) for a in (*API_FORMATS, *DATASET_FORMATS) for b in DATASET_FORMATS if a != b]
)
def test_loss_paths_point_into_the_source_record(a: str, b: str) -> None:
    """A loss names what was dropped: its parent exists in the source (the key itself may be absent,
    e.g. the instructions a leading system message will turn into)."""
    bad = []
    for rec, c in _convert(_sources(a), a, b):
        for loss in c.losses:
            parent = loss.path.rsplit("/", 1)[0]
            if not resolves(rec, parent):
                bad.append((loss.path, loss.kind))
    assert bad[:5] == []


# -- no silent loss ---------------------------------------------------------------------------


def _no_silent_loss(records: list[dict[str, Any]], a: str, b: str, label: str) -> None:
    kept = _convert(records, a, b)
    res = decode_records([c.record for _, c in kept], b)
    assert res.rejected == [], res.rejected[0].error
    back = convert_table(res.table, a)
    assert [c.error for c in back] == [None] * len(kept)
    problems = []
    paths = 0
    for (rec, there), k in zip(kept, back, strict=True):
        paths += len(diff_paths(rec, k.record))
        if bad := uncovered(rec, k.record, there.losses, dataset=a in ("hf", "sharegpt")):
            problems.append(bad)
    print(f"\n{label} {a} -> {b} -> {a}: {len(kept)} records, {paths} differing paths, "
          f"{len(problems)} records with uncovered ones")  # fmt: skip
    assert problems[:3] == []


def _dataset_records(fmt: str) -> list[dict[str, Any]]:
    """Hand-written rows plus rows converted from every API format (their shapes vary most)."""
    hand = HF_CASES if fmt == "hf" else SHAREGPT_CASES
    records = [rec for _, rec in hand]
    for a in API_FORMATS:
        records.extend(c.record for _, c in _convert(_records(a), a, fmt))
    return records


@pytest.mark.parametrize(("a", "b"), [("hf", "sharegpt"), ("sharegpt", "hf")])
def test_dataset_formats_no_silent_loss(a: str, b: str) -> None:
    _no_silent_loss(_dataset_records(a), a, b, "hand + converted")


def test_glaive_through_hf_and_back_is_lossless() -> None:
    if not GLAIVE.is_file():
        pytest.skip(f"{GLAIVE} not found: the LLaMA-Factory corpus file is needed (CI has it)")
    with open(GLAIVE, encoding="utf-8") as f:
        records = json.load(f)
    kept = _convert(records, "sharegpt", "hf")
    assert [c.losses for _, c in kept] == [[]] * len(records)  # nothing to report...
    back = convert_table(decode_records([c.record for _, c in kept], "hf").table, "sharegpt")
    assert [diff_paths(rec, k.record) for rec, k in zip(records, back, strict=True)] == [[]] * len(
        records
    )  # ...or lose


@pytest.mark.parametrize("b", DATASET_FORMATS)
@pytest.mark.parametrize("a", ("chat", "responses"))
def test_api_format_through_dataset_format_and_back(a: str, b: str) -> None:
    _no_silent_loss(_records(a), a, b, "cases + synthetic")


# -- what the output looks like -----------------------------------------------------------------


def _one(record: dict[str, Any], a: str, b: str) -> Converted:
    [c] = convert_table(decode_records([record], a).table, b)
    assert c.error is None, c.error
    return c


CHAT = {
    "model": "gpt-4o",
    "temperature": 0.2,
    "messages": [
        {"role": "system", "content": "Be terse."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Weather in "}, {"type": "text", "text": "Paris?"}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "clock", "arguments": "not json"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "12:00"},
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "assistant", "content": "18C at noon."},
    ],
    "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
}


def test_chat_to_hf_is_trl_shaped() -> None:
    c = _one(CHAT, "chat", "hf")
    assert c.record == {
        "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": {"city": "Paris"}},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "clock", "arguments": {"_raw_arguments": "not json"}},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_2", "name": "clock", "content": "12:00"},
            {"role": "tool", "tool_call_id": "call_1", "name": "weather", "content": "18C"},
            {"role": "assistant", "content": "18C at noon."},
        ],
        "tools": CHAT["tools"],
    }
    assert sorted((loss.path, loss.kind) for loss in c.losses) == [
        ("/messages/1/content", "block_boundary"),
        ("/messages/2/tool_calls/0/function/arguments", "argument_string"),
        ("/messages/2/tool_calls/1/function/arguments", "argument_string"),
        ("/model", "request_field"),
        ("/temperature", "request_field"),
    ]


def test_chat_to_sharegpt_is_llamafactory_shaped() -> None:
    c = _one(CHAT, "chat", "sharegpt")
    assert c.record == {
        "system": "Be terse.",
        "conversations": [
            {"from": "human", "value": "Weather in Paris?"},
            {
                "from": "function_call",
                "value": '[{"name": "weather", "arguments": {"city": "Paris"}}, '
                '{"name": "clock", "arguments": {"_raw_arguments": "not json"}}]',
            },
            {"from": "observation", "value": "18C"},  # put in call order: ShareGPT pairs by position
            {"from": "observation", "value": "12:00"},
            {"from": "gpt", "value": "18C at noon."},
        ],
        "tools": '[{"name": "weather", "parameters": {"type": "object"}}]',
    }
    kinds = Counter(loss.kind for loss in c.losses)
    assert kinds == {"item_id": 4, "tool_output_order": 2, "argument_string": 2, "block_boundary": 1,
                     "request_field": 2}  # fmt: skip
    # LLaMA-Factory rejects parallel calls answered by several observation turns; the row says so
    assert sharegpt.llamafactory_problems(c.record) != []


def test_sharegpt_to_hf_pairs_outputs_by_position_and_names_them() -> None:
    record = dict(SHAREGPT_CASES)["parallel_calls_and_odd_values"]
    short = {"conversations": record["conversations"][:4], "system": "S", "tools": "[]"}
    c = _one(short, "sharegpt", "hf")
    assert c.record == {
        "messages": [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "two cities"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"type": "function", "function": {"name": "weather", "arguments": {"city": "Paris"}}},
                    {"type": "function", "function": {"name": "weather", "arguments": {"city": "Rome"}}},
                ],
            },
            {"role": "tool", "name": "weather", "content": "18C"},
            {"role": "tool", "name": "weather", "content": "21C"},
        ],
        "tools": [],
    }
    assert c.losses == []


def test_responses_to_hf_reports_what_has_no_slot() -> None:
    record = {
        "instructions": "Be terse.",
        "input": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "developer",
                "content": "sandbox",
                "status": "completed",
            },
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
            {"type": "custom_tool_call", "call_id": "call_c", "name": "apply", "input": "*** Begin"},
            {"type": "custom_tool_call_output", "call_id": "call_c", "output": "ok"},
        ],
    }
    c = _one(record, "responses", "hf")
    assert c.record["messages"] == [
        {"role": "system", "content": "Be terse."},
        {"role": "system", "content": "sandbox"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_c",
                    "type": "function",
                    "function": {"name": "apply", "arguments": {"input": "*** Begin"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_c", "name": "apply", "content": "ok"},
    ]
    assert sorted((loss.path, loss.kind) for loss in c.losses) == [
        ("/input/0", "developer_role"),
        ("/input/0/id", "item_id"),
        ("/input/0/status", "status"),
        ("/input/0/type", "content_form"),
        ("/input/1", "reasoning"),
        ("/input/1/encrypted_content", "encrypted_reasoning"),
        ("/input/2", "custom_tool"),
        ("/input/3", "custom_tool"),
        ("/instructions", "instruction_position"),
    ]


# -- dataset rows as the source of an API format ------------------------------------------------


def test_sharegpt_to_chat_generates_ids_and_pairs_outputs_by_position() -> None:
    record = dict(SHAREGPT_CASES)["parallel_calls_and_odd_values"]
    short = {"conversations": record["conversations"][:4], "tools": "[]"}
    c = _one(short, "sharegpt", "chat")
    calls = c.record["messages"][1]["tool_calls"]
    outputs = c.record["messages"][2:4]
    assert [tc["function"]["arguments"] for tc in calls] == ['{"city":"Paris"}', '{"city":"Rome"}']
    assert all(tc["id"].startswith("call_") for tc in calls)
    assert [m["tool_call_id"] for m in outputs] == [tc["id"] for tc in calls]  # by position
    assert [m["content"] for m in outputs] == ["18C", "21C"]
    assert ("/conversations/1", "generated_id") in {(loss.path, loss.kind) for loss in c.losses}
    [again] = convert_table(decode_records([short], "sharegpt").table, "chat")
    assert again.record == c.record  # generated ids are deterministic


def test_generated_ids_do_not_depend_on_the_batch() -> None:
    # A shard or chunk boundary moves a record within its batch: its generated ids must not move.
    record = dict(SHAREGPT_CASES)["parallel_calls_and_odd_values"]
    batch = decode_records([record, record], "sharegpt").table
    alone = batch.take([1])  # the second row, now first in its batch (same conversation_id)
    [in_batch] = convert_table(batch, "chat")[1:]
    [by_itself] = convert_table(alone, "chat")
    ids = [tc["id"] for tc in in_batch.record["messages"][1]["tool_calls"]]
    assert ids == [tc["id"] for tc in by_itself.record["messages"][1]["tool_calls"]]
    assert in_batch.record == by_itself.record


def test_hf_string_arguments_and_tool_names_reach_chat() -> None:
    row = {
        "messages": [
            {"role": "user", "content": "hi", "name": "ann"},
            {
                "role": "assistant",
                "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
            },
            {"role": "tool", "name": "not_f", "content": "ok"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    }
    c = _one(row, "hf", "chat")
    msgs = c.record["messages"]
    assert msgs[0] == {"role": "user", "content": "hi", "name": "ann"}
    assert msgs[1]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a": 1}'}
    assert msgs[2]["tool_call_id"] == msgs[1]["tool_calls"][0]["id"]
    assert c.record["tools"] == row["tools"]
    assert sorted((loss.path, loss.kind) for loss in c.losses) == [
        ("/messages/1/tool_calls/0", "generated_id"),
        ("/messages/1/tool_calls/0/function/arguments", "argument_string"),
        ("/messages/2", "generated_id"),  # the tool message gets its call's id
        ("/messages/2/name", "name"),
    ]
    r = _one(row, "hf", "responses")
    assert r.record["tools"] == [
        {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": None}
    ]


# -- reasoning text chat templates read (issue 18 item 5) -----------------------------------------

CHAT_REASONING = {
    "model": "deepseek-reasoner",
    "messages": [
        {"role": "user", "content": "Weather in Paris?", "reasoning_content": "a user has none"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "Call the tool.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get", "arguments": '{"city":"Paris"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny.", "reasoning_content": "Say it.", "thinking": "gpt-oss"},
        {"role": "assistant", "content": "More.", "reasoning_content": {"text": "not a string"}},
    ],
}


def test_chat_reasoning_content_reaches_hf_and_comes_back() -> None:
    """A Chat assistant message's string ``reasoning_content`` / ``thinking`` is the HF message's
    own (what Qwen3 / DeepSeek-R1 / gpt-oss templates read) and HF -> Chat writes it back; a value
    that is not a string, or on a user message, is still reported."""
    c = _one(CHAT_REASONING, "chat", "hf")
    msgs = c.record["messages"]
    assert "reasoning_content" not in msgs[0]
    assert msgs[1]["reasoning_content"] == "Call the tool."
    assert (msgs[3]["reasoning_content"], msgs[3]["thinking"]) == ("Say it.", "gpt-oss")
    assert "reasoning_content" not in msgs[4]
    assert sorted((loss.path, loss.kind) for loss in c.losses) == [
        ("/messages/0/reasoning_content", "unknown_field"),
        ("/messages/4/reasoning_content", "unknown_field"),
        ("/model", "request_field"),
    ]
    back = _one(c.record, "hf", "chat")
    assert back.losses == []
    want = [{k: v for k, v in m.items() if k != "reasoning_content" or i not in (0, 4)}
            for i, m in enumerate(CHAT_REASONING["messages"])]  # fmt: skip
    assert back.record["messages"] == want


def test_hf_reasoning_content_reaches_chat() -> None:
    """HF -> Chat keeps an assistant message's string reasoning keys on the message; a non-string
    one, one on another role, or one whose text joins the calls' message before it is reported."""
    row = {
        "messages": [
            {"role": "user", "content": "q", "thinking": "not an assistant's"},
            {"role": "assistant", "content": "a", "reasoning_content": "why", "thinking": "how"},
            {"role": "assistant", "content": "b", "reasoning_content": ["x"]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {}}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c2", "type": "function", "function": {"name": "f", "arguments": {}}}]},
            {"role": "assistant", "content": "after", "reasoning_content": "lost with the merge"},
        ]
    }  # fmt: skip
    c = _one(row, "hf", "chat")
    msgs = c.record["messages"]
    assert msgs[1] == {"role": "assistant", "content": "a", "reasoning_content": "why", "thinking": "how"}
    assert "thinking" not in msgs[0] and "reasoning_content" not in msgs[2]
    assert msgs[5]["content"] == "after" and "reasoning_content" not in msgs[5]
    kinds = {(loss.path, loss.kind) for loss in c.losses}
    assert {
        ("/messages/0/thinking", "unknown_field"),
        ("/messages/2/reasoning_content", "unknown_field"),
        ("/messages/6/reasoning_content", "reasoning"),
    } <= kinds
    assert not any(p.startswith("/messages/1") for p, _ in kinds)



def test_dataset_nulls_are_absent_keys() -> None:
    """``datasets.Dataset.to_json`` writes every column on every row, null where a row has none: such
    nulls are not losses in any other format, and HF -> HF still writes them back exactly."""
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "P"}}}
    none = {"tool_calls": None, "tool_call_id": None, "name": None}
    row = {
        "messages": [
            {"role": "user", "content": "weather?", **none},
            {"role": "assistant", "content": None, **none, "tool_calls": [call]},
            {"role": "tool", "content": "sunny", **none, "tool_call_id": "c1", "name": "get_weather"},
            {"role": "assistant", "content": "Sunny.", **none},
        ],
        "tools": None,
        "images": None,
    }
    table = decode_records([row], "hf").table
    for target in ("chat", "responses", "anthropic", "sharegpt"):
        [out] = convert_table(table, target)
        assert out.error is None
        assert not [x for x in out.losses if x.kind in ("unknown_field", "request_field", "name")], target
    [same] = convert_table(table, "hf")
    assert same.record == row and same.losses == []
