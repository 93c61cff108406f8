"""What --from auto reads a file as (pipeline/sources/detect.py: detect_input)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import pytest

from pipeline.sources.detect import WIRE, detect_input
from tests.cases import CASES
from tests.corpus import CORPUS_DIR, corpus_available, skipped_corpus_parts
from tests.sources.test_inputs import COMPRESSORS

SHAREGPT = {"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}
HF = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}


def _jsonl(path: Path, records: list) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_wire_files_of_each_format(tmp_path: Path, fmt: str) -> None:
    records = [r for _, r in CASES[fmt]]
    assert detect_input(_jsonl(tmp_path / "f.jsonl", records)) == WIRE
    (tmp_path / "a.json").write_bytes(orjson.dumps(records, option=orjson.OPT_INDENT_2))
    assert detect_input(tmp_path / "a.json") == WIRE
    (tmp_path / "d.json").write_bytes(orjson.dumps(records[-1], option=orjson.OPT_INDENT_2))
    assert detect_input(tmp_path / "d.json") == WIRE
    (tmp_path / "f.jsonl.gz").write_bytes(gzip.compress((tmp_path / "f.jsonl").read_bytes()))
    assert detect_input(tmp_path / "f.jsonl.gz") == WIRE


def test_dataset_rows_stay_with_their_adapter_unless_mixed(tmp_path: Path) -> None:
    assert detect_input(_jsonl(tmp_path / "s.jsonl", [SHAREGPT] * 3)) == "sharegpt"
    # plain messages rows are HF rows, read as wire records; LLaMA-Factory's have a sign of their own
    assert detect_input(_jsonl(tmp_path / "h.jsonl", [HF] * 3)) == WIRE
    assert detect_input(_jsonl(tmp_path / "l.jsonl", [{**HF, "images": ["a.png"]}] * 3)) == "llamafactory"
    assert detect_input(_jsonl(tmp_path / "t.jsonl", [{**HF, "tools": "[]"}] * 3)) == "llamafactory"
    chat = CASES["chat"][1][1]
    assert detect_input(_jsonl(tmp_path / "m.jsonl", [HF, chat, SHAREGPT])) == WIRE
    assert detect_input(_jsonl(tmp_path / "m2.jsonl", [SHAREGPT, HF])) == WIRE


def test_nothing_fits(tmp_path: Path) -> None:
    assert detect_input(_jsonl(tmp_path / "x.jsonl", [{"a": 1}, {"b": 2}])) is None
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert detect_input(tmp_path / "empty.jsonl") is None
    (tmp_path / "text.txt").write_bytes(b"hello\n")
    assert detect_input(tmp_path / "text.txt") is None


TAU = [{"task_id": 1, "traj": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}]
CODEX_LINE = {"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_a_compressed_agent_log_is_told_by_its_content(tmp_path: Path, kind: str) -> None:
    """A JSON agent log (tau-bench) and a JSON Lines one (codex rollout), compressed, are detected as
    their plain files are: by the decompressed content, whatever the file is named."""
    pack = COMPRESSORS[kind]
    (tmp_path / "tau.json.gz").write_bytes(pack(orjson.dumps(TAU, option=orjson.OPT_INDENT_2)))
    assert detect_input(tmp_path / "tau.json.gz") == "tau-bench"
    (tmp_path / "rollout.jsonl.gz").write_bytes(pack(orjson.dumps(CODEX_LINE) + b"\n"))
    assert detect_input(tmp_path / "rollout.jsonl.gz") == "codex-rollout"
    (tmp_path / "noise.gz").write_bytes(pack(b'{"a": 1}\n'))
    assert detect_input(tmp_path / "noise.gz") is None


def _corpus_files() -> list[str]:
    """Every data file of the corpus (MANIFEST.jsonl), but the ones tests/corpus.py lists as holding
    no conversation."""
    no_conversation = {part for part, _ in skipped_corpus_parts() if "#" not in part}
    with open(CORPUS_DIR / "MANIFEST.jsonl", encoding="utf-8") as f:
        files = [json.loads(line)["dest"] for line in f if line.strip()]
    return [f for f in files if f not in no_conversation]


@pytest.mark.skipif(not corpus_available(), reason="the shared corpus (../shared/corpus) is not here")
def test_every_corpus_file_is_detected() -> None:
    files = _corpus_files()
    assert len(files) >= 25
    undetected = [f for f in files if detect_input(CORPUS_DIR / f) is None]
    assert undetected == []


def test_dataset_to_json_rows_are_hf_rows(tmp_path: Path) -> None:
    """``datasets.Dataset.to_json`` writes every column of the dataset on every row, null where a
    row has none (``images: null``, ``tool_calls: null``): not LLaMA-Factory's media lists."""
    row = {"messages": [{"role": "user", "content": "q", "tool_calls": None},
                        {"role": "assistant", "content": "a", "tool_calls": None}],
           "images": None, "tools": None}  # fmt: skip
    assert detect_input(_jsonl(tmp_path / "d.jsonl", [row] * 3)) == WIRE
