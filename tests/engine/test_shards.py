"""Small JSONL files share shards (engine/shards.py) and are read each as itself (engine/read.py):
every record keeps its own file and line, the rejected ones their input, and the batches after
decoding are per shard, not per file."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import orjson

from pipeline import synth
from pipeline.engine.read import read_shard
from pipeline.engine.shards import SMALL_FILE_BYTES, Shard, plan
from pipeline.jobs.resolve import InputFile


def _file(path: Path, lines: list[bytes], fmt: str = "responses") -> InputFile:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return InputFile(str(path), "jsonl", fmt, {}, path.stat().st_size)


def test_consecutive_small_files_of_one_format_share_a_shard_within_its_records(tmp_path: Path) -> None:
    recs = [orjson.dumps(r) for r in synth.generate("responses", 8, seed=4)]
    big = [orjson.dumps({"input": "x" * (SMALL_FILE_BYTES // 2)})] * 3  # over the size: alone
    files = [
        _file(tmp_path / "a.jsonl", recs[:2]), _file(tmp_path / "b.jsonl", recs[2:3]),
        _file(tmp_path / "c.jsonl", recs[3:5]),  # 5 lines so far: the shard is full
        _file(tmp_path / "d.jsonl", recs[5:6]),
        _file(tmp_path / "e.jsonl", [b'{"messages": []}'], fmt="chat"),  # another format: a new shard
        _file(tmp_path / "big.jsonl", big),  # not small: on its own
        _file(tmp_path / "f.jsonl", recs[6:8]),
    ]  # fmt: skip
    shards = list(plan(SimpleNamespace(files=files, shard_records=5)))  # type: ignore[arg-type]
    groups = [[Path(m[0]).name for m in s.members] or [Path(s.url).name] for s in shards]
    assert groups == [["a.jsonl", "b.jsonl", "c.jsonl"], ["d.jsonl"], ["e.jsonl"], ["big.jsonl"], ["f.jsonl"]]
    assert [s.id for s in shards] == [f"part-{k:05d}" for k in range(5)]
    assert shards[0].weight == sum(f.size for f in files[:3])
    assert Shard.from_json(orjson.loads(orjson.dumps(shards[0].to_json()))) == shards[0]
    assert "members" not in shards[1].to_json()  # a file alone: the shard as it always was


def test_a_shard_of_small_files_keeps_each_records_file_and_line(tmp_path: Path) -> None:
    recs = [orjson.dumps(r) for r in synth.generate("responses", 30, seed=6)]
    files = [_file(tmp_path / f"r{k:02d}.jsonl", [recs[k]]) for k in range(30)]
    files[7] = _file(tmp_path / "r07.jsonl", [b"", b'{"input": 7}'])  # its record on line 2, rejected
    (shard,) = plan(SimpleNamespace(files=files, shard_records=100))  # type: ignore[arg-type]
    batches = list(read_shard(shard, 1 << 20, 1000))
    assert len(batches) == 1  # thirty files, one batch to encode and write
    (b,) = batches
    got = list(zip(b.table.column("source_file").to_pylist(), b.table.column("source_line").to_pylist(),
                   strict=True))  # fmt: skip
    assert got == [(f.url, 1) for k, f in enumerate(files) if k != 7]
    assert b.read == 30 and b.blank == 1
    (rej,) = b.rejected
    assert (rej["source_file"], rej["source_line"], rej["input"]) == (files[7].url, 2, '{"input": 7}')
    assert b.raw[(files[3].url, 1)] == recs[3]
