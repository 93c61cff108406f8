"""ShareGPT (LLaMA-Factory) rows: exact round trips, the glaive demo file, and where values land.

The codec is registered here by the fixture, so these tests run whether or not ``"sharegpt"`` is in
``pipeline.formats.CODECS`` yet.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.formats import CODECS, decode_lines, decode_records, sharegpt
from tests.corpus import CORPUS_DIR
from tests.helpers import assert_identical, json_diff, roundtrip

GLAIVE = CORPUS_DIR / "llama-factory" / "glaive_toolcall_en_demo.json"
TOOLS = '[{"name": "weather", "description": "Current weather", "parameters": {"type": "object"}}]'

SHAREGPT_CASES: list[tuple[str, dict[str, Any]]] = [
    (
        "glaive_like",
        {
            "conversations": [
                {"from": "human", "value": "Weather in Paris?"},
                {"from": "function_call", "value": '{"name": "weather", "arguments": {"city": "Paris"}}'},
                {"from": "observation", "value": '{"temp": "18C"}'},
                {"from": "gpt", "value": "18C."},
            ],
            "tools": TOOLS,
        },
    ),
    (
        "system_column_and_first_system_turn",
        {
            "conversations": [
                {"from": "system", "value": "turn system"},
                {"from": "human", "value": "hi"},
                {"from": "gpt", "value": ""},
            ],
            "system": "column system",
        },
    ),
    ("system_null", {"conversations": [], "system": None}),
    ("system_empty", {"conversations": [{"from": "human", "value": "x"}], "system": ""}),
    ("system_not_a_string", {"conversations": [], "system": ["a", "b"]}),
    (
        "aliases_and_unknown_tags",
        {
            "conversations": [
                {"from": "user", "value": "a"},
                {"from": "assistant", "value": "b"},
                {"from": "chatgpt", "value": "c"},
                {"from": "bing", "value": "d"},
                {"from": "bard", "value": "e"},
                {"from": "tool", "value": "f"},
                {"from": "narrator", "value": "g"},
                {"from": "", "value": "h"},
            ]
        },
    ),
    (
        "parallel_calls_and_odd_values",
        {
            "conversations": [
                {"from": "human", "value": "two cities"},
                {
                    "from": "function_call",
                    "value": '[{"name": "weather", "arguments": {"city": "Paris"}}, '
                    '{"name": "weather", "arguments": {"city": "Rome"}}]',
                },
                {"from": "observation", "value": "18C"},
                {"from": "observation", "value": "21C"},
                {"from": "function_call", "value": "weather(city='Paris')"},
                {"from": "function_call", "value": '{"tool": "no name"}'},
                {"from": "function_call", "value": '{"name":"f","arguments":"{\\"a\\": 1}"}'},
                {"from": "function_call", "value": '{"name": "f", "arguments": {"x": 1.0}, "id": "c1"}'},
                {"from": "function_call", "value": '{"name": "caf\\u00e9", "arguments": {}}'},
                {"from": "function_call", "value": "[]"},
                {"from": "function_call", "value": '{"name": "g"}'},
                {"from": "function_call", "value": None},
                {"from": "function_call"},
            ]
        },
    ),
    (
        "value_forms_and_turn_keys",
        {
            "conversations": [
                {"from": "human"},
                {"from": "human", "value": None},
                {"from": "human", "value": ""},
                {"from": "gpt", "value": 7},
                {"from": "gpt", "value": ["a", {"b": 1}]},
                {"from": "gpt", "value": "  spaced  \n", "weight": 0, "loss": False},
            ]
        },
    ),
    ("tools_empty_list_string", {"conversations": [], "tools": "[]"}),
    ("tools_not_json_text", {"conversations": [], "tools": ""}),
    ("tools_as_a_list", {"conversations": [], "tools": [{"name": "f"}]}),
    ("tools_null", {"conversations": [], "tools": None}),
    ("tools_odd_whitespace", {"conversations": [], "tools": ' [ {"name" :"f"} ]\n'}),
    (
        "extra_columns",
        {
            "id": "row-1",
            "conversations": [{"from": "human", "value": "<image>What is this?"}],
            "images": ["a.jpg"],
            "chosen": {"from": "gpt", "value": "a cat"},
            "rejected": {"from": "gpt", "value": "a dog"},
            "model": "m",
        },
    ),
]

REJECTED = [
    ({"messages": []}, "$.conversations: expected array, got nothing"),
    ({"conversations": "hi"}, "$.conversations: expected array, got string"),
    ({"conversations": [["human", "hi"]]}, "$.conversations[0]: expected object, got array"),
    ({"conversations": [{"value": "hi"}]}, "$.conversations[0]: turn without a string 'from'"),
    ({"conversations": [{"from": 1, "value": "hi"}]}, "$.conversations[0]: turn without a string 'from'"),
]


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CODECS, "sharegpt", sharegpt)


@pytest.mark.parametrize(
    "record", [rec for _, rec in SHAREGPT_CASES], ids=[name for name, _ in SHAREGPT_CASES]
)
def test_case_roundtrips_exactly(record: dict[str, Any], tmp_path: Path) -> None:
    [back] = roundtrip([record], "sharegpt", tmp_path)
    assert_identical(record, back)


def test_all_cases_in_one_table(tmp_path: Path) -> None:
    records = [rec for _, rec in SHAREGPT_CASES]
    back = roundtrip(records, "sharegpt", tmp_path)
    assert [json_diff(a, b) for a, b in zip(records, back, strict=True)] == [None] * len(records)


@pytest.mark.parametrize(("record", "error"), REJECTED)
def test_format_violations_are_rejected_with_a_path(record: dict[str, Any], error: str) -> None:
    res = decode_lines([json.dumps(record).encode()], "sharegpt")
    assert res.table.num_rows == 0
    assert res.rejected[0].error == error


def _glaive() -> list[dict[str, Any]]:
    if not GLAIVE.is_file():
        pytest.skip(f"{GLAIVE} not found: the LLaMA-Factory corpus file is needed (CI has it)")
    with open(GLAIVE, encoding="utf-8") as f:
        return json.load(f)  # a JSON list, not JSONL


def test_glaive_demo_roundtrips_exactly_record_by_record(tmp_path: Path) -> None:
    records = _glaive()
    back = roundtrip(records, "sharegpt", tmp_path)
    diffs = [(n, d) for n, (a, b) in enumerate(zip(records, back, strict=True)) if (d := json_diff(a, b))]
    tags = Counter(turn["from"] for rec in records for turn in rec["conversations"])
    print(f"\nglaive: {len(records)} records, turns {dict(tags)}, {len(diffs)} differ")
    assert len(records) == 300
    assert diffs == []
    assert all(isinstance(b["tools"], str) for b in back)  # the tools string stays a string


def test_glaive_decodes_into_modelled_columns() -> None:
    records = _glaive()
    table = decode_records(records, "sharegpt").table
    items = table.column("items").combine_chunks().flatten()
    kinds = Counter(zip(items.field("type").to_pylist(), items.field("role").to_pylist(), strict=True))
    assert kinds == {
        ("message", "user"): 746,
        ("message", "assistant"): 746,
        ("function_call", "assistant"): 211,
        ("function_call_output", "tool"): 211,
    }
    columns = (items.field(f).to_pylist() for f in ("type", "name", "arguments"))
    calls = [(n, a) for t, n, a in zip(*columns, strict=True) if t == "function_call"]
    assert all(n and orjson.loads(a) is not None for n, a in calls)  # every value parsed into views
    assert items.field("extra_json").null_count == len(items)
    tools = table.column("tools").to_pylist()
    assert all(isinstance(orjson.loads(t), list) for t in tools)  # the column holds the list's JSON
    assert all(sharegpt.llamafactory_problems(rec) == [] for rec in records)


def _items(name: str) -> list[dict[str, Any]]:
    return decode_records([dict(SHAREGPT_CASES)[name]], "sharegpt").table.column("items").to_pylist()[0]


def test_function_call_values_and_their_parsed_views() -> None:
    items = _items("parallel_calls_and_odd_values")
    view = [(i["group"], i["part"], i["type"], i["name"], i["arguments"], i["content_form"]) for i in items]
    assert view[1:3] == [
        (1, 0, "function_call", "weather", '{"city":"Paris"}', "string"),
        (1, 1, "function_call", "weather", '{"city":"Rome"}', None),  # a view only: no value of its own
    ]
    assert view[3:5] == [
        (2, None, "function_call_output", None, None, "string"),
        (3, None, "function_call_output", None, None, "string"),
    ]
    assert [v[3:5] for v in view[5:]] == [
        (None, None),  # not JSON
        (None, None),  # JSON, not a call
        ("f", '{"a": 1}'),  # a string of arguments is the arguments text itself
        ("f", '{"x":1.0}'),
        ("café", "{}"),
        (None, None),  # an empty list: no calls
        ("g", None),
        (None, None),
        (None, None),
    ]
    assert [v[5] for v in view[-2:]] == ["null", "absent"]
    assert items[1]["content"][0]["text"].startswith('[{"name": "weather"')  # the exact value string


def test_tags_become_kinds_and_roles() -> None:
    items = _items("aliases_and_unknown_tags")
    assert [(i["native_type"], i["type"], i["role"]) for i in items] == [
        ("user", "message", "user"),
        ("assistant", "message", "assistant"),
        ("chatgpt", "message", "assistant"),
        ("bing", "message", "assistant"),
        ("bard", "message", "assistant"),
        ("tool", "function_call_output", "tool"),
        ("narrator", "message", "narrator"),
        ("", "message", ""),
    ]


def test_top_level_system_and_tools() -> None:
    rows = decode_records([rec for _, rec in SHAREGPT_CASES], "sharegpt").table.to_pylist()
    by_name = dict(zip([name for name, _ in SHAREGPT_CASES], rows, strict=True))
    assert by_name["glaive_like"]["tools"] == TOOLS
    instr = by_name["system_column_and_first_system_turn"]["instructions"]
    assert (instr["form"], instr["content"][0]["text"]) == ("string", "column system")
    assert by_name["system_null"]["instructions"]["form"] == "null"
    assert orjson.loads(by_name["system_not_a_string"]["extra_json"]) == {"system": ["a", "b"]}
    assert by_name["tools_not_json_text"]["tools"] is None
    assert orjson.loads(by_name["tools_not_json_text"]["extra_json"]) == {"tools": ""}
    assert orjson.loads(by_name["tools_as_a_list"]["extra_json"]) == {"tools": [{"name": "f"}]}
    assert by_name["tools_null"]["null_fields"] == ["tools"]


def test_llamafactory_problems() -> None:
    ok = dict(SHAREGPT_CASES)["glaive_like"]
    assert sharegpt.llamafactory_problems(ok) == []
    assert sharegpt.llamafactory_problems({"conversations": [{"from": "human", "value": "x"}]}) == [
        "an odd number of turns"
    ]
    both = dict(SHAREGPT_CASES)["system_column_and_first_system_turn"]
    assert sharegpt.llamafactory_problems(both) == [
        "a first system turn replaces the system column, which is ignored"
    ]
    two_users = {"conversations": [{"from": "human", "value": "a"}, {"from": "human", "value": "b"}]}
    assert sharegpt.llamafactory_problems(two_users) == [
        "turn 1: 'human' where one of ('gpt', 'function_call') is expected"
    ]
