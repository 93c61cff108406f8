"""Values that once killed a whole source file: deep nesting, and odd JSON types where adapters
used a value as a dict key or set member. The bad record is rejected (or kept verbatim) with its
file and line; the good records around it are read.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pipeline.formats import MAX_DEPTH
from pipeline.sources import detect_source, read_source

DEEP_MSG = f"nested deeper than {MAX_DEPTH} levels"


BIG = "123456789012345678901234"


def deep(levels: int, leaf: str = "1") -> bytes:
    return b"[" * levels + leaf.encode() + b"]" * levels


def _read(path: Path, source: str) -> tuple[int, list, dict[str, int]]:
    results = list(read_source(path, source))
    rows = sum(r.table.num_rows for r in results)
    return rows, [x for r in results for x in r.rejected], results[-1].counts


def _jsonl(path: Path, *lines: bytes) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


CODEX_MSG = b'{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}'
CLAUDE_USER = (
    b'{"type": "user", "sessionId": "s", "uuid": "u%d", "parentUuid": %s, '
    b'"message": {"role": "user", "content": "hi"}, "x": %s}'
)


@pytest.mark.parametrize("levels", [255, 300, 600, 1000])
def test_codex_rollout_deep_line_is_rejected_alone(tmp_path: Path, levels: int) -> None:
    path = _jsonl(
        tmp_path / "rollout.jsonl",
        b'{"timestamp": "t0", "type": "session_meta", "payload": {"id": "s1"}}',
        b'{"timestamp": "t1", "type": "response_item", "payload": ' + CODEX_MSG + b"}",
        b'{"timestamp": "t2", "type": "response_item", "payload": {"type": "message", "role": "user", '
        b'"content": ' + deep(levels) + b"}}",
        b'{"timestamp": "t3", "type": "response_item", "payload": ' + CODEX_MSG + b"}",
    )
    rows, rejected, counts = _read(path, "codex-rollout")
    assert [(r.line, r.file, DEEP_MSG in r.error) for r in rejected] == [(3, str(path), True)]
    assert rows == 1 and counts["line_types:response_item"] == 2


@pytest.mark.parametrize("levels", [255, 300, 1000])
def test_claude_code_deep_line_is_rejected_alone(tmp_path: Path, levels: int) -> None:
    path = _jsonl(
        tmp_path / "session.jsonl",
        CLAUDE_USER % (1, b"null", b"1"),
        CLAUDE_USER % (2, b'"u1"', deep(levels)),
        CLAUDE_USER % (3, b'"u1"', b"2"),
    )
    rows, rejected, _ = _read(path, "claude-code")
    assert [(r.line, DEEP_MSG in r.error) for r in rejected] == [(2, True)]
    assert rows >= 1


def _llama_typed(tool_value: str) -> dict:
    return {
        "messages": [
            {"role": "user", "content": [{"type": "text", "value": "weather?"}]},
            {"role": "assistant", "content": [{"type": "tool_call", "value": tool_value}]},
        ]
    }


@pytest.mark.parametrize("levels", [254, 300, 1000])
def test_llamafactory_deep_json_strings_stay_text(tmp_path: Path, levels: int) -> None:
    """A tool call value or a ``tools`` string holding JSON nested past the limit is not parsed: it
    stays the string it was (no crash when the row is written)."""
    text = deep(levels).decode()
    rows_in = [
        _llama_typed('{"name": "f", "arguments": ' + text + "}"),
        {"messages": [{"role": "user", "content": "hi"}], "tools": text},
        {"messages": [{"role": "user", "content": "ok"}]},
    ]
    path = tmp_path / "data.json"
    path.write_bytes(orjson.dumps(rows_in))
    rows, rejected, counts = _read(path, "llamafactory")
    assert (rows, rejected) == (3, [])
    assert counts["typed_parts_kept_verbatim"] == 1


@pytest.mark.parametrize("levels", [300, 1000])
def test_llamafactory_deep_line_is_rejected_alone(tmp_path: Path, levels: int) -> None:
    path = _jsonl(
        tmp_path / "data.jsonl",
        b'{"messages": [{"role": "user", "content": "a"}]}',
        b'{"messages": [{"role": "user", "content": "b"}], "images": ' + deep(levels) + b"}",
        b'{"messages": [{"role": "user", "content": "c"}]}',
    )
    rows, rejected, _ = _read(path, "llamafactory")
    assert [(r.line, DEEP_MSG in r.error) for r in rejected] == [(2, True)]
    assert rows == 2


@pytest.mark.parametrize("odd", [["text"], {"a": 1}, 1, None, 1.5, True])
def test_llamafactory_part_type_of_any_json_type_keeps_the_file(tmp_path: Path, odd: object) -> None:
    """A part whose ``type`` is a list or object raised ``TypeError: unhashable`` and lost the file."""
    bad = {"messages": [{"role": "assistant", "content": [{"type": odd, "value": "x"}]}]}
    good = {"messages": [{"role": "user", "content": [{"type": "text", "value": "hi"}]}]}
    path = tmp_path / "data.json"
    path.write_bytes(orjson.dumps([good, bad, good]))
    rows, rejected, counts = _read(path, "llamafactory")
    assert rows + len(rejected) == 3 and all(r.error for r in rejected)
    assert counts["typed_parts_kept_verbatim"] == 1


def test_inspect_log_deep_sample_is_rejected_alone(tmp_path: Path) -> None:
    """A JSON log is one document: a sample past the limit is rejected by its number, with the
    path; the other samples are read."""
    sample = b'{"id": %d, "epoch": 1, "messages": [{"role": "user", "content": "hi"}], "metadata": %s}'
    log = (
        b'{"version": 2, "eval": {"eval_id": "e", "model": "m"}, "samples": ['
        + b", ".join(
            sample % (i, x) for i, x in ((1, b"{}"), (2, b'{"x": ' + deep(500, BIG) + b"}"), (3, b"{}"))
        )
        + b"]}"
    )
    path = tmp_path / "log.json"
    path.write_bytes(log)
    rows, rejected, counts = _read(path, "inspect-log")
    assert rows == 2 and counts["samples_read"] == 3
    [rej] = rejected
    assert rej.line == 2 and rej.error.startswith("$.samples[1].metadata.x[0]") and DEEP_MSG in rej.error


@pytest.mark.parametrize(
    ("source", "good"),
    [
        ("tau-bench", {"task_id": 1, "traj": [{"role": "user", "content": "x"}]}),
        ("sharegpt", {"conversations": [{"from": "human", "value": "x"}]}),
        ("llamafactory", {"messages": [{"role": "user", "content": "x"}]}),
        ("kiln", {"id": "r", "input": "x", "output": {"output": "y"}, "trace": None}),
    ],
)
def test_json_list_file_rejects_a_bad_record_alone(tmp_path: Path, source: str, good: dict) -> None:
    """A record nested too deep, or holding an integer beyond 64 bits, rejected the whole file (or
    crashed it): now that record alone, by its number."""
    g = orjson.dumps(good)
    too_deep = g[:-1] + b', "x": ' + deep(300) + b"}"
    big = g[:-1] + b', "x": [' + BIG.encode() + b"]}"
    path = tmp_path / "data.json"
    path.write_bytes(b"[" + b", ".join([g, too_deep, g, big, g]) + b"]")
    rows, rejected, counts = _read(path, source)
    assert rows == 3 and counts["records_read"] == 5
    assert [(r.line, r.error) for r in rejected] == [
        (2, "$[1].x[0][0][0][0][0][0][0][0][0][0][0]...: " + DEEP_MSG),
        (4, "$[3].x[0]: integer outside the 64-bit range cannot be stored exactly"),
    ]
    assert orjson.loads(rejected[0].input) == orjson.loads(too_deep)  # the record as it was


def test_json_file_deep_outside_the_records_is_one_rejection(tmp_path: Path) -> None:
    path = tmp_path / "log.json"
    path.write_bytes(b'{"version": 2, "eval": {"x": ' + deep(300) + b'}, "samples": []}')
    rows, rejected, _ = _read(path, "inspect-log")
    assert rows == 0 and [(r.line, r.error.startswith("$.eval.x[0]")) for r in rejected] == [(1, True)]


@pytest.mark.parametrize("odd", [[], ["user"], {"a": 1}, None, 1])
def test_detection_with_an_odd_line_type_does_not_raise(tmp_path: Path, odd: object) -> None:
    """``--from auto`` sniffed a line's ``type`` by looking it up in a set: a list or object raised
    ``TypeError: unhashable`` before any work instead of telling which source the file is."""
    good = b'{"timestamp": "t1", "type": "response_item", "payload": ' + CODEX_MSG + b"}"
    odd_line = orjson.dumps({"timestamp": "t0", "type": odd, "payload": {}, "sessionId": "s", "uuid": "u"})
    path = _jsonl(tmp_path / "rollout.jsonl", odd_line, good)
    assert detect_source(path) == "codex-rollout"


@pytest.mark.parametrize("samples", [b"[]", b"null"])
def test_inspect_log_without_samples_is_counted(tmp_path: Path, samples: bytes) -> None:
    """Found by benchmarks/fuzz_decoders.py: a JSON log whose ``samples`` is ``[]`` gave no row, no
    rejection and no count (an ``.eval`` archive without samples, or ``samples: null``, is counted
    as ``skipped:log_without_samples``)."""
    path = tmp_path / "log.json"
    path.write_bytes(b'{"version": 2, "status": "success", "eval": {}, "samples": ' + samples + b"}")
    rows, rejected, counts = _read(path, "inspect-log")
    assert (rows, rejected, counts.get("skipped:log_without_samples")) == (0, [], 1)
