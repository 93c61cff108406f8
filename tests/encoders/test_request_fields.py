"""--set values written into the canonical table, and the model_provider check (request_fields.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest

from pipeline.encoders import convert_table
from pipeline.encoders.encode_rows import encode_rows
from pipeline.encoders.request_fields import (
    _set_token_limit,
    apply_sets,
    check_sets,
    model_provider_losses,
    parse_sets,
    parse_value,
    set_token_limit_one,
)
from pipeline.errors import ConfigError
from pipeline.formats import decode_records
from tests.sdk_validate import validate_request

HI = [{"role": "user", "content": "hi"}]
# one request of each wire source, with and without a token limit of its own
SOURCES: dict[str, list[dict[str, Any]]] = {
    "chat": [
        {"model": "gpt-4o", "messages": HI},
        {"model": None, "max_tokens": 5, "temperature": 1, "messages": HI},
        {"messages": HI, "max_completion_tokens": 7, "metadata": {"max_tokens": "3"}},
    ],
    "responses": [
        {"model": "gpt-5", "input": "hi"},
        {"input": [{"role": "user", "content": "hi"}], "max_output_tokens": 9, "store": False},
    ],
    "anthropic": [
        {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": HI},
    ],
    "hf": [{"messages": HI}],
}
TARGET_KEY = {"anthropic": "max_tokens", "chat": "max_completion_tokens", "responses": "max_output_tokens"}


def test_values_are_json_scalars_or_text() -> None:
    assert parse_value("4096") == 4096 and type(parse_value("4096")) is int
    assert parse_value("0.5") == 0.5 and parse_value("true") is True
    assert parse_value('"4096"') == "4096" and parse_value("gpt-5") == "gpt-5"
    for bad in ("null", "[1]", '{"a": 1}'):
        with pytest.raises(ConfigError, match="not a scalar"):
            parse_value(bad)
    assert parse_sets(["model=a=b", "max_tokens= 12"]) == {"model": "a=b", "max_tokens": 12}


@pytest.mark.parametrize(
    ("pairs", "target", "message"),
    [
        (["max_tokens"], "anthropic", "write FIELD=VALUE"),
        (["=3"], "anthropic", "write FIELD=VALUE"),
        (["model=a", "model=b"], "anthropic", "given twice"),
        (["max_tokens=100"], "chat", "its token limit is max_completion_tokens"),
        (["max_output_tokens=100"], "anthropic", "its token limit is max_tokens"),
        (["temperature=0.5"], "responses", "takes model and max_output_tokens, not 'temperature'"),
        (["max_tokens=0"], "anthropic", "whole number of tokens >= 1"),
        (["max_tokens=1.5"], "anthropic", "whole number of tokens >= 1"),
        (["max_tokens=true"], "anthropic", "whole number of tokens >= 1"),
        (["max_tokens=lots"], "anthropic", "whole number of tokens >= 1"),
        (["model=4"], "anthropic", "model must be a non-empty string"),
        (["model="], "anthropic", "model must be a non-empty string"),
        (["model=x"], "hf", "no request fields to set"),
        (["model=x"], "parquet", "no request fields to set"),
    ],
)
def test_a_bad_field_or_value_says_what_to_write(pairs: list[str], target: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_sets(parse_sets(pairs), target)


def test_job_file_values_keep_their_type() -> None:
    # a TOML int is an int; a TOML string that is a JSON number is parsed like the command line's
    typed = {"max_tokens": 4096, "model": "4096"}
    assert check_sets(typed, "anthropic") == typed
    assert check_sets({"max_tokens": "4096"}, "anthropic") == {"max_tokens": 4096}


@pytest.mark.parametrize("target", ["anthropic", "chat", "responses"])
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_set_values_reach_every_target(source: str, target: str) -> None:
    """Every request of every source comes out with the set model and token limit, reports one
    ``set`` addition per field, keeps its other fields, and validates against the target's SDK."""
    table = decode_records(SOURCES[source], source).table
    sets = check_sets({"model": "m-1", TARGET_KEY[target]: 321}, target)
    enc = encode_rows(table, target, sets)
    assert enc.errors.null_count == len(enc.errors)
    losses = enc.losses.to_pylist()
    for row, text in enumerate(enc.records.to_pylist()):
        body = orjson.loads(text)
        assert body["model"] == "m-1" and body[TARGET_KEY[target]] == 321, body
        # no other token-limit key survives beside the set one
        others = {"max_tokens", "max_completion_tokens", "max_output_tokens"} - {TARGET_KEY[target]}
        assert not others & set(body)
        validate_request(target, body)
        mine = [loss for loss in losses if loss["row"] == row]
        added = [(loss["path"], loss["detail"]) for loss in mine if loss["kind"] == "set"]
        assert len(added) == 2 and added[0][0] == "/model", mine
        assert added[0][1].startswith('model set to "m-1" (--set / [set])')
        assert added[1][1].startswith(f"{TARGET_KEY[target]} set to 321 (--set / [set])")
        # what an encoder says about a field the user set is replaced by the set addition
        set_paths = {p for p, _ in added}
        assert not [x for x in mine if x["kind"] == "request_field" and x["path"] in set_paths]
        assert not [x for x in mine if x["kind"] in ("filled_default", "model_provider")]
    # the source's other keys are still there (or reported), as without --set
    if source == "chat" and target == "responses":
        assert orjson.loads(enc.records[1].as_py())["temperature"] == 1


def test_the_set_detail_says_when_a_source_value_is_replaced() -> None:
    table = decode_records(SOURCES["chat"], "chat").table
    _, added = apply_sets(table, check_sets({"max_tokens": 50}, "anthropic"), "anthropic")
    said = "max_tokens set to 50 (--set / [set])"
    replaced = said + ", replacing the source's value"
    assert added.to_pylist() == [
        {"row": 0, "path": "/max_completion_tokens", "kind": "set", "detail": said},
        {"row": 1, "path": "/max_completion_tokens", "kind": "set", "detail": replaced},
        {"row": 2, "path": "/max_completion_tokens", "kind": "set", "detail": replaced},
    ]
    # a nested key of the same name is not a token limit: row 2's metadata keeps it
    t2, _ = apply_sets(table, check_sets({"max_tokens": 50}, "anthropic"), "anthropic")
    assert orjson.loads(t2.column("extra_json")[2].as_py()) == {"max_completion_tokens": 50,
                                                                "metadata": {"max_tokens": "3"}}  # fmt: skip


def test_response_objects_are_left_alone() -> None:
    response = {"id": "resp_1", "object": "response", "model": "gpt-5", "output": [], "created_at": 1}
    table = decode_records([response], "responses").table
    if table.column("record_kind")[0].as_py() != "response":
        pytest.skip("the responses decoder did not read this as a response object")
    t2, added = apply_sets(table, check_sets({"model": "claude-x"}, "anthropic"), "anthropic")
    assert t2.column("model").to_pylist() == ["gpt-5"] and added.num_rows == 0


def test_without_sets_nothing_changes() -> None:
    table = decode_records(SOURCES["chat"], "chat").table
    t2, added = apply_sets(table, {}, "anthropic")
    assert t2 is table and added.num_rows == 0


@pytest.mark.parametrize(
    ("source", "model", "target", "owner"),
    [
        ("anthropic", "claude-sonnet-4-5", "chat", "Anthropic"),
        ("anthropic", "claude-3-5-haiku-latest", "responses", "Anthropic"),
        ("chat", "gpt-4o", "anthropic", "OpenAI"),
        ("responses", "o3-mini", "anthropic", "OpenAI"),
        ("chat", "chatgpt-4o-latest", "anthropic", "OpenAI"),
        ("chat", "claude-opus-4", "responses", "Anthropic"),  # a Chat log of a Claude model (a proxy)
    ],
)
def test_a_model_of_another_provider_is_reported(source: str, model: str, target: str, owner: str) -> None:
    rec = SOURCES[source][0] | {"model": model}
    table = decode_records([rec], source).table
    [c] = convert_table(table, target)
    [loss] = [x for x in c.losses if x.kind == "model_provider"]
    assert loss.path == "/model" and loss.detail.startswith(f"'{model}' is an {owner} model")
    assert "--set model=NAME" in loss.detail
    # encode_rows reports the same, and --set model= is the way out
    enc = encode_rows(table, target)
    assert [x for x in enc.losses.to_pylist() if x["kind"] == "model_provider"] == [
        {"row": 0, "path": loss.path, "kind": loss.kind, "detail": loss.detail}
    ]
    fixed = encode_rows(table, target, check_sets({"model": "m"}, target))
    assert "model_provider" not in fixed.losses.column("kind").to_pylist()


@pytest.mark.parametrize(
    ("source", "model", "target"),
    [
        ("chat", "gpt-4o", "responses"),  # same provider
        ("chat", "llama-3.1-8b", "anthropic"),  # nobody's prefix: not reported
        ("chat", "omni-moderation-latest", "anthropic"),  # "o" then a letter is not an o-series model
        ("anthropic", "claude-sonnet-4-5", "anthropic"),  # same format: written as it came
        ("chat", "claude-x", "chat"),  # same format
        ("anthropic", "claude-sonnet-4-5", "hf"),  # HF rows carry no model
    ],
)
def test_a_model_of_the_target_provider_or_no_known_one_is_not(source: str, model: str, target: str) -> None:
    table = decode_records([SOURCES[source][0] | {"model": model}], source).table
    assert model_provider_losses(table, target).num_rows == 0
    assert all(x.kind != "model_provider" for c in convert_table(table, target) for x in c.losses)


def test_the_native_encoder_rows_report_model_provider_like_convert_table() -> None:
    """Responses -> Chat goes through the compiled encoder when it is active: its rows get the loss
    from encode_rows, the others from convert_table; both give the same report."""
    recs = [{"model": "claude-sonnet-4-5", "input": "hi"}, {"model": "gpt-5", "input": "hi"},
            {"model": "claude-x", "input": [{"type": "reasoning", "id": "rs_1", "summary": []},
                                            {"role": "user", "content": "hi"}]}]  # fmt: skip
    table = decode_records(recs, "responses").table
    enc = encode_rows(table, "chat")
    converted = convert_table(table, "chat")
    ref = [(r, x.path, x.kind, x.detail) for r, c in enumerate(converted) for x in c.losses]
    assert [tuple(x.values()) for x in enc.losses.to_pylist()] == ref
    assert [r for r, _, kind, _ in ref if kind == "model_provider"] == [0, 2]


EXTRAS = [
    None, "{}", '{"temperature":1}', '{"max_tokens":5}', '{"max_tokens":5,"temperature":1}',
    '{"temperature":1,"max_output_tokens":null}', '{"a":"x,\\"max_tokens\\":1","max_tokens":"5"}',
    '{"metadata":{"max_tokens":"3"}}', '{"metadata":{"k":"v"},"max_completion_tokens":7}',
    '{"max_tokens":5,"max_completion_tokens":6}', '{"a":[1,{"b":2}],"max_output_tokens":1,"c":true}',
    '{"a":-1500.0,"max_completion_tokens":7,"z":"é\\n"}', '{"max_tokens":{"n":1}}',
]  # fmt: skip


@pytest.mark.parametrize("source", ["chat", "responses", "anthropic", "hf"])
def test_the_column_rewrite_matches_the_one_row_reference(source: str) -> None:
    """Every shape of extra fields gets what set_token_limit_one (orjson, one row) gives it,
    whichever path the row takes (appended, cut out with the expressions, or the fallback)."""
    import polars as pl

    df = pl.DataFrame(
        {"source_format": [source] * len(EXTRAS), "extra_json": EXTRAS,
         "null_fields": [None] * len(EXTRAS)},
        schema={"source_format": pl.String, "extra_json": pl.String, "null_fields": pl.List(pl.String)},
    )  # fmt: skip
    out, had, keys = _set_token_limit(df, np.ones(len(EXTRAS), bool), "321")
    key = keys[0]
    for raw, got, flag in zip(EXTRAS, out.to_list(), had.to_list(), strict=True):
        assert raw is None or orjson.dumps(orjson.loads(raw)).decode() == raw  # as the decoder writes it
        assert (got, flag) == set_token_limit_one(raw, key, "321"), raw
    # rows that are not requests keep their text
    out, had, _ = _set_token_limit(df, np.zeros(len(EXTRAS), bool), "321")
    assert out.to_list() == EXTRAS and not any(had.to_list())
