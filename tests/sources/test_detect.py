"""What --from auto reads a file as (pipeline/sources/detect.py: detect_input)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import pytest

from pipeline.errors import ConfigError
from pipeline.sources.detect import WIRE, detect_input
from tests.cases import CASES
from tests.corpus import CORPUS_DIR, corpus_available, skipped_corpus_parts

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
    assert detect_input(_jsonl(tmp_path / "h.jsonl", [HF] * 3)) == "llamafactory"
    chat = CASES["chat"][1][1]
    assert detect_input(_jsonl(tmp_path / "m.jsonl", [HF, chat, SHAREGPT])) == WIRE
    assert detect_input(_jsonl(tmp_path / "m2.jsonl", [SHAREGPT, HF])) == WIRE


def test_nothing_fits(tmp_path: Path) -> None:
    assert detect_input(_jsonl(tmp_path / "x.jsonl", [{"a": 1}, {"b": 2}])) is None
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert detect_input(tmp_path / "empty.jsonl") is None
    (tmp_path / "text.txt").write_bytes(b"hello\n")
    assert detect_input(tmp_path / "text.txt") is None


def test_a_compressed_agent_log_says_to_decompress(tmp_path: Path) -> None:
    line = {"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}
    (tmp_path / "rollout.jsonl.gz").write_bytes(gzip.compress(orjson.dumps(line) + b"\n"))
    with pytest.raises(ConfigError, match=r"compressed codex-rollout log; .* decompress it first"):
        detect_input(tmp_path / "rollout.jsonl.gz")


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
