"""Every kind of input a job reads: canonical Parquet, saved datasets, datasets' Parquet, fsspec URLs,
source adapters; and the JSONL shard planner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline.engine import TooManyRejected, run_job
from pipeline.engine.shards import jsonl_ranges
from pipeline.errors import ConfigError
from pipeline.formats import decode_records
from pipeline.jobs import load_job
from tests.cases import CASES
from tests.corpus import CORPUS_DIR
from tests.engine.helpers import folder, output_lines, write_job
from tests.helpers import assert_identical

HF_RECORDS: list[dict[str, Any]] = [
    {"messages": [{"role": "user", "content": f"question {i}"},
                  {"role": "assistant", "content": f"answer {i}"}]}
    for i in range(7)
]


def _run(tmp_path: Path, inputs: list[dict[str, Any]], target: str, **output: Any) -> dict[str, Any]:
    job = write_job(tmp_path / "job.toml", inputs, {"path": "run", "target": target, **output},
                    engine={"workers": 1})  # fmt: skip
    return run_job(load_job(job))


def test_jsonl_ranges_cover_the_file_in_whole_lines(tmp_path: Path) -> None:
    data = b"".join(b"x" * (i % 13) + b"\n" for i in range(1000)) + b"tail without newline"
    (tmp_path / "f.jsonl").write_bytes(data)
    for records, scan in ((1, 7), (3, 64), (250, 100), (10_000, 1 << 20)):
        ranges = list(jsonl_ranges(str(tmp_path / "f.jsonl"), records, scan))
        assert b"".join(data[a:b] for a, b, _ in ranges) == data
        firsts = [first for _, _, first in ranges]
        assert firsts == list(range(1, 1002, records))
        for a, b, _ in ranges[:-1]:
            assert data[a:b].count(b"\n") == records and data[b - 1 : b] == b"\n"


def test_canonical_parquet_in_row_range_shards(tmp_path: Path) -> None:
    records = [r for _, r in CASES["anthropic"]] * 3
    table = decode_records(records, "anthropic").table
    pq.write_table(table, tmp_path / "lake.parquet", row_group_size=4)
    summary = _run(tmp_path, [{"path": "lake.parquet", "format": "canonical"}], "anthropic", shard_records=6)
    n = len(records)
    assert (summary["read"], summary["written"], summary["shards"]) == (n, n, -(-n // 6))
    assert folder(tmp_path / "run", "conversations").equals(table)
    for a, b in zip(records, output_lines(tmp_path / "run"), strict=True):
        assert_identical(a, orjson.loads(b))


def test_hf_dataset_saved_with_save_to_disk(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="datasets is a declared dependency")
    ds = datasets.Dataset.from_list(HF_RECORDS)
    ds.save_to_disk(str(tmp_path / "saved"), max_shard_size="1KB")
    summary = _run(tmp_path, [{"path": "saved", "format": "hf"}], "hf", shard_records=3)
    assert summary["read"] == summary["written"] == 7 and summary["rejected"] == 0
    out = [orjson.loads(line) for line in output_lines(tmp_path / "run")]
    for a, b in zip(HF_RECORDS, out, strict=True):
        assert_identical(a, b)
    lines = folder(tmp_path / "run", "conversations").column("source_line").to_pylist()
    assert all(line >= 1 for line in lines)


def test_canonical_table_saved_as_a_dataset_dict(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="datasets is a declared dependency")
    table = decode_records([r for _, r in CASES["chat"]], "chat").table
    dd = datasets.DatasetDict({"train": datasets.Dataset(table), "test": datasets.Dataset(table.slice(0, 2))})
    dd.save_to_disk(str(tmp_path / "dd"))
    summary = _run(tmp_path, [{"path": "dd", "format": "canonical"}], "chat")
    assert summary["read"] == summary["written"] == table.num_rows + 2
    assert [i["path"].rsplit("/", 2)[-2] for i in summary["inputs"]] == ["train", "test"]


def test_parquet_written_by_datasets_with_wire_records(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="datasets is a declared dependency")
    datasets.Dataset.from_list(HF_RECORDS).to_parquet(str(tmp_path / "hf.parquet"))
    summary = _run(tmp_path, [{"path": "hf.parquet", "format": "hf"}], "chat")
    assert summary["read"] == summary["written"] == 7
    out = [orjson.loads(line) for line in output_lines(tmp_path / "run")]
    assert out[3] == {"messages": [{"role": "user", "content": "question 3"},
                                   {"role": "assistant", "content": "answer 3"}]}  # fmt: skip


def test_fsspec_url_with_a_glob(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec", reason="fsspec comes with datasets")
    fs = fsspec.filesystem("memory")
    lines = [orjson.dumps(r) for _, r in CASES["responses"]]
    for name in ("b.jsonl", "a.jsonl"):
        fs.pipe(f"/bucket/{name}", b"".join(line + b"\n" for line in lines))
    try:
        summary = _run(tmp_path, [{"path": "memory://bucket/*.jsonl", "format": "responses"}], "responses",
                       shard_records=4)  # fmt: skip
    finally:
        fs.rm("/bucket", recursive=True)
    assert [i["path"] for i in summary["inputs"]] == ["memory:///bucket/a.jsonl", "memory:///bucket/b.jsonl"]
    assert summary["read"] == summary["written"] == 2 * len(lines)
    for a, b in zip(lines * 2, output_lines(tmp_path / "run"), strict=True):
        assert_identical(orjson.loads(a), orjson.loads(b))


def test_an_fsspec_url_whose_filesystem_is_not_installed_fails_fast(tmp_path: Path) -> None:
    from pipeline.errors import ConfigError

    job = write_job(tmp_path / "job.toml", [{"path": "nosuchproto://x/*.jsonl", "format": "chat"}],
                    {"path": "run"})  # fmt: skip
    with pytest.raises(ConfigError, match="nosuchproto"):
        load_job(job)


def _rollout() -> Path:
    files = sorted((CORPUS_DIR / "codex-rollouts-agentcmd").glob("*.jsonl"))
    if not files:
        pytest.skip(f"the shared corpus is absent ({CORPUS_DIR}); CI has it")
    return files[0]


@pytest.mark.corpus
@pytest.mark.parametrize("fmt", ["codex-rollout", "auto"])
def test_source_adapter_input(fmt: str, tmp_path: Path) -> None:
    from pipeline.sources import read_source

    path = _rollout()
    summary = _run(tmp_path, [{"path": str(path), "format": fmt}], "responses")
    tables = [r.table for r in read_source(path, "codex-rollout") if r.table is not None]
    expected = pa.concat_tables(tables) if tables else None
    conv = folder(tmp_path / "run", "conversations")
    assert summary["inputs"][0]["format"] == "codex-rollout"
    assert summary["read"] == summary["written"] + summary["rejected"]
    assert expected is not None and conv.num_rows == summary["written"] <= expected.num_rows
    assert conv.column("provenance").to_pylist()[0]["source"] == "codex-rollout"


@pytest.mark.parametrize("row_group_size", [1, 3, 7, 1000])
def test_parquet_shards_read_their_rows_whatever_the_row_groups(tmp_path: Path, row_group_size: int) -> None:
    """A shard reads only the row groups that hold its range (not the file from the start); its
    rows are exactly rows [start, end), whatever the row-group boundaries."""
    from pipeline.engine.read import read_shard
    from pipeline.engine.shards import Shard

    table = decode_records([rec for _, rec in CASES["responses"]] * 2, "responses").table
    path = tmp_path / "c.parquet"
    pq.write_table(table, path, row_group_size=row_group_size)
    n = table.num_rows
    for start, end in [(0, n), (0, 5), (4, 9), (5, n), (n - 1, n)]:
        shard = Shard("part-00000", str(path), "parquet", "canonical", {}, start, end, start + 1, 1)
        got = pa.concat_tables([b.table for b in read_shard(shard, 1 << 20, 4)])
        want = table.column("conversation_id")[start:end].to_pylist()
        assert got.column("conversation_id").to_pylist() == want


# --- format auto (wire records by record) and inputs of every shape -------------------------------

WIRE_RECORDS = [(fmt, r) for fmt in sorted(CASES) for _, r in CASES[fmt]]


def _rejected(run: Path) -> list[dict[str, Any]]:
    return folder(run, "rejected").to_pylist()


def test_auto_decodes_a_mixed_file_per_record(tmp_path: Path) -> None:
    """Each record goes to its own format's decoder; the rejected file and the summary say which."""
    lines = [orjson.dumps(r) for _, r in WIRE_RECORDS] + [b'{"neither": 1}', b"not json", b""]
    (tmp_path / "mixed.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    summary = _run(tmp_path, [{"path": "mixed.jsonl", "format": "auto"}], "parquet", shard_records=7)
    n = len(WIRE_RECORDS)
    counts = (summary["read"], summary["written"], summary["rejected"], summary["blank_lines"])
    assert counts == (n + 2, n, 2, 1)
    conv = folder(tmp_path / "run", "conversations")
    line, fmt_of = conv.column("source_line").to_pylist(), conv.column("source_format").to_pylist()
    got = dict(zip(line, fmt_of, strict=True))
    want = {i: ("hf" if r == CASES["chat"][0][1] else fmt) for i, (fmt, r) in enumerate(WIRE_RECORDS, 1)}
    assert got == want
    for fmt in CASES:  # the same rows as the format's own decoder gives
        mine = [r for f, r in WIRE_RECORDS if f == fmt and r != CASES["chat"][0][1]]
        alone = decode_records(mine, fmt).table
        items = conv.filter(pc.equal(conv.column("source_format"), fmt)).column("items").to_pylist()
        assert sorted(items, key=repr) == sorted(alone.column("items").to_pylist(), key=repr)
    rejected = {r["source_line"]: r for r in _rejected(tmp_path / "run")}
    assert "fits no wire format" in rejected[n + 1]["reason"] and rejected[n + 1]["input_format"] == "auto"
    assert "invalid JSON" in rejected[n + 2]["reason"] and rejected[n + 2]["input"] == "not json"
    detected = summary["inputs"][0]["detected"]
    assert sum(detected.values()) == summary["read"] and detected["undetected"] == 2  # no format, not JSON
    assert detected["responses"] == len(CASES["responses"]) and detected["hf"] == 1


def _shapes(tmp_path: Path) -> dict[str, Path]:
    import bz2
    import gzip
    import lzma

    records = [r for _, r in WIRE_RECORDS]
    jsonl = b"".join(orjson.dumps(r) + b"\n" for r in records)
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        out.write(jsonl)
    files = {
        "array.json": orjson.dumps(records, option=orjson.OPT_INDENT_2),
        "doc.json": orjson.dumps(records[0], option=orjson.OPT_INDENT_2),
        "f.jsonl.gz": gzip.compress(jsonl),
        "f.jsonl.bz2": bz2.compress(jsonl),
        "f.jsonl.xz": lzma.compress(jsonl),
        "f.jsonl.zst": sink.getvalue().to_pybytes(),
    }
    for name, data in files.items():
        (tmp_path / "in" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "in" / name).write_bytes(data)
    return {name: tmp_path / "in" / name for name in files}


@pytest.mark.parametrize("fmt", ["auto", "chat"])
def test_every_input_shape_through_a_job(tmp_path: Path, fmt: str) -> None:
    shapes = _shapes(tmp_path)
    summary = _run(tmp_path, [{"path": str(p), "format": fmt} for p in shapes.values()], "parquet")
    n = len(WIRE_RECORDS)
    per_file = {Path(i["path"]).name: i["read"] for i in summary["inputs"]}
    assert per_file == {name: (1 if name == "doc.json" else n) for name in shapes}
    assert summary["read"] == summary["written"] + summary["rejected"]
    conv = folder(tmp_path / "run", "conversations")
    files, numbers = conv.column("source_file").to_pylist(), conv.column("source_line").to_pylist()
    lines = {(Path(f).name, line) for f, line in zip(files, numbers, strict=True)}
    if fmt == "auto":
        assert summary["rejected"] == 0 and all(i["format"] == "auto" for i in summary["inputs"])
        assert ("array.json", n) in lines and ("doc.json", 1) in lines and ("f.jsonl.zst", n) in lines
    else:  # records chat refuses are rejected: by element number in the array, line in the others
        rejected = [(Path(r["source_file"]).name, r["source_line"]) for r in _rejected(tmp_path / "run")]
        by_file = {name: sorted(line for f, line in rejected if f == name) for name in shapes}
        assert by_file["array.json"] and all(by_file[name] == by_file["array.json"] for name in shapes
                                             if name != "doc.json")  # fmt: skip


def test_a_directory_contributes_its_input_files(tmp_path: Path) -> None:
    shapes = _shapes(tmp_path)
    d = tmp_path / "in"
    (d / "sub").mkdir()
    shapes["doc.json"].rename(d / "sub" / "doc.json")
    (d / ".hidden.jsonl").write_bytes(b"not json\n")
    (d / "notes.txt").write_text("not an input")
    (d / "old.jsonl.rejected.jsonl").write_bytes(b"{}\n")
    (d / "run-a").mkdir()
    (d / "run-a" / "manifest.json").write_text("{}")
    (d / "run-a" / "x.jsonl").write_bytes(b"{}\n")
    summary = _run(tmp_path, [{"path": "in", "format": "auto"}], "parquet")
    names = [str(Path(i["path"]).relative_to(d.resolve())) for i in summary["inputs"]]
    want = ["array.json", "f.jsonl.bz2", "f.jsonl.gz", "f.jsonl.xz", "f.jsonl.zst", "sub/doc.json"]
    assert names == sorted([*want, "old.jsonl.rejected.jsonl"])
    # chatlake's own file is not read: it is rejected whole, saying what it is
    [ours] = [i for i in summary["inputs"] if "skipped" in i]
    assert ours["skipped"] == "chatlake's own output: the rejected records of chatlake's output old.jsonl"
    assert summary["rejected"] == 1 and summary["rejected_by_stage"] == {"detect": 1}


TAU_LOG = [
    {"task_id": i, "reward": 1.0,
     "traj": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]}
    for i in range(3)
]  # fmt: skip


def _messy_directory(tmp_path: Path) -> Path:
    """A folder as users have them: good logs beside a dataset's manifest, an empty file, a
    compressed agent log and chatlake's own outputs."""
    import gzip

    d = tmp_path / "logs"
    d.mkdir()
    (d / "good.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for _, r in CASES["chat"]))
    (d / "manifest.json").write_bytes(orjson.dumps({"name": "a dataset", "files": ["good.jsonl"]}))
    (d / "empty.jsonl").write_bytes(b"")
    (d / "tau.json.gz").write_bytes(gzip.compress(orjson.dumps(TAU_LOG, option=orjson.OPT_INDENT_2)))
    (d / "export_report.json").write_bytes(b'{"exported": 3}\n')
    (d / "chat.jsonl.losses.parquet").write_bytes(b"PAR1")
    return d


def test_files_no_reader_recognises_are_rejected_whole_and_the_rest_is_read(tmp_path: Path) -> None:
    _messy_directory(tmp_path)
    summary = _run(tmp_path, [{"path": "logs", "format": "auto"}], "chat")
    skipped = {Path(i["path"]).name: i["skipped"] for i in summary["inputs"] if "skipped" in i}
    assert skipped == {
        "chat.jsonl.losses.parquet": "chatlake's own output: the loss report of chatlake's output chat.jsonl",
        "empty.jsonl": "the file is empty",
        "export_report.json": "chatlake's own output: the report of chatlake export-hf",
        "manifest.json": "format 'auto' could not tell what it is (no source's log, and no record is a "
        "Responses, Chat, Anthropic, HF or ShareGPT record: docs/sources.md#auto)",
    }
    formats = {Path(i["path"]).name: i["format"] for i in summary["inputs"] if "skipped" not in i}
    assert formats == {"good.jsonl": "auto", "tau.json.gz": "tau-bench"}
    # one rejected row per skipped file, in the same table as every other rejection
    rows = [r for r in _rejected(tmp_path / "run") if r["stage"] == "detect"]
    assert {(Path(r["source_file"]).name, r["reason"], r["source_line"], r["input"]) for r in rows} == {
        (name, why, None, None) for name, why in skipped.items()
    }
    assert summary["rejected_by_stage"]["detect"] == 4
    assert summary["read"] == summary["written"] + summary["rejected"]
    conv = folder(tmp_path / "run", "conversations")
    sources = [p and p["source"] for p in conv.column("provenance").to_pylist()]
    assert sources.count("tau-bench") == 3 and conv.num_rows == summary["written"] > 3
    assert summary["verdict"]["ok"]


def test_the_verdict_rules_count_a_skipped_file(tmp_path: Path) -> None:
    """A skipped file is one rejected record: max_rejected_share decides, as for any rejection."""
    _messy_directory(tmp_path)
    job = write_job(tmp_path / "job.toml", [{"path": "logs", "format": "auto"}],
                    {"path": "run", "target": "chat"}, loss={"max_rejected_share": 0.0})  # fmt: skip
    with pytest.raises(TooManyRejected, match="at detect"):
        run_job(load_job(job))


def test_strict_inputs_refuse_a_file_no_reader_recognises(tmp_path: Path) -> None:
    _messy_directory(tmp_path)
    for name in ("chat.jsonl.losses.parquet", "empty.jsonl", "export_report.json"):
        job = write_job(tmp_path / "job.toml", [{"path": "logs", "format": "auto"}],
                        {"path": "run", "target": "chat"}, loss={"strict_inputs": True})  # fmt: skip
        with pytest.raises(ConfigError, match=rf"{name}.*strict inputs"):
            load_job(job)
        (tmp_path / "logs" / name).unlink()
    with pytest.raises(ConfigError, match=r"manifest.json': format 'auto' could not tell what it is"):
        load_job(job)
    (tmp_path / "logs" / "manifest.json").unlink()
    assert [f.format for f in load_job(job).files] == ["auto", "tau-bench"]
    assert not (tmp_path / "run").exists()


def test_a_job_whose_every_file_is_unreadable_fails_before_work(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "x.json").write_bytes(b'{"hello": 1}')
    job = write_job(tmp_path / "job.toml", [{"path": ["empty.jsonl", "x.json"], "format": "auto"}],
                    {"path": "run", "target": "chat"})  # fmt: skip
    with pytest.raises(ConfigError, match=r"no input can be read: .*empty.jsonl: the file is empty; "
                       r".*x.json: format 'auto' could not tell"):
        load_job(job)


@pytest.mark.parametrize("kind", ["gzip", "zstd", "bz2", "xz"])
def test_a_compressed_agent_log_reads_as_the_plain_one(tmp_path: Path, kind: str) -> None:
    from tests.sources.test_inputs import COMPRESSORS

    plain = orjson.dumps(TAU_LOG, option=orjson.OPT_INDENT_2)
    (tmp_path / "tau.json").write_bytes(plain)
    (tmp_path / "packed").mkdir()
    (tmp_path / "packed" / "tau.json.gz").write_bytes(COMPRESSORS[kind](plain))
    for fmt in ("tau-bench", "auto"):
        a = _run(tmp_path, [{"path": "tau.json", "format": fmt}], "chat")
        first = folder(tmp_path / "run", "conversations")
        b = _run(tmp_path / "packed", [{"path": "tau.json.gz", "format": fmt}], "chat")
        second = folder(tmp_path / "packed" / "run", "conversations")
        assert a["written"] == b["written"] == 3 and b["inputs"][0]["format"] == "tau-bench"
        drop = ["conversation_id", "source_file", "provenance"]  # ids are made from the file name
        assert second.drop_columns(drop).equals(first.drop_columns(drop))
        assert output_lines(tmp_path / "packed" / "run") == output_lines(tmp_path / "run")
        for run in (tmp_path / "run", tmp_path / "packed" / "run"):
            import shutil

            shutil.rmtree(run)


def test_auto_reads_parquet_of_wire_rows_and_canonical_parquet(tmp_path: Path) -> None:
    pq.write_table(pa.Table.from_pylist(HF_RECORDS), tmp_path / "rows.parquet")
    pq.write_table(decode_records([r for _, r in CASES["chat"]], "chat").table, tmp_path / "lake.parquet")
    summary = _run(tmp_path, [{"path": ["rows.parquet", "lake.parquet"], "format": "auto"}], "parquet")
    assert [i["format"] for i in summary["inputs"]] == ["auto", "canonical"]
    assert summary["inputs"][0]["detected"] == {"hf": len(HF_RECORDS)}
    assert summary["written"] == len(HF_RECORDS) + len(CASES["chat"]) and summary["rejected"] == 0


def test_a_document_over_its_cap_is_rejected_and_the_cap_is_an_option(tmp_path: Path) -> None:
    _shapes(tmp_path)
    inp = {"path": "in/array.json", "format": "auto", "options": {"max_document_bytes": 100}}
    with pytest.raises(ConfigError, match="could not tell"):  # detection reads the document too
        _run(tmp_path, [inp], "parquet")
    inp["format"] = "chat"
    with pytest.raises(TooManyRejected) as failed:  # everything read was rejected: exit 1 in the CLI
        _run(tmp_path, [inp], "parquet")
    summary = failed.value.summary
    assert (summary["read"], summary["rejected"]) == (1, 1)
    assert "max_document_bytes = 100" in _rejected(tmp_path / "run")[0]["reason"]
    with pytest.raises(ConfigError, match="option 'max_document_bytes' must be a positive integer"):
        (tmp_path / "x").mkdir()
        _run(tmp_path / "x", [{**inp, "options": {"max_document_bytes": 0}}], "parquet")


def test_mutated_mixed_files_are_read_or_rejected_under_auto(tmp_path: Path) -> None:
    """Hostile records of every format in one file, read with format auto in every shape: no
    exception, every record written or rejected with a reason, each written row encodes back."""
    import gzip
    import random

    from pipeline.engine.read import read_shard
    from pipeline.engine.shards import Shard
    from pipeline.formats import encode_table
    from tests.mutate import fuzz_n, fuzz_seed, mutate

    rng = random.Random(fuzz_seed())
    records = [r for _, r in WIRE_RECORDS]
    for k in range(fuzz_n(6)):
        lines = [mutate(r, rng) if rng.random() < 0.5 else orjson.dumps(r) for r in records]
        rng.shuffle(lines)
        lines = [line.replace(b"\n", b" ") for line in lines]  # one record a line
        plain = b"\n".join(lines) + b"\n"
        shapes = [("f.jsonl", plain, "jsonl"), ("f.jsonl.gz", gzip.compress(plain), "stream"),
                  ("a.json", b"[" + b",".join(lines) + b"]", "stream")]  # fmt: skip
        for name, data, container in shapes:
            path = tmp_path / f"{k}-{name}"
            path.write_bytes(data)
            end = len(data) if container == "jsonl" else -1
            shard = Shard("part-00000", str(path), container, "auto", {}, 0, end, 1, len(data))
            batches = list(read_shard(shard, 4096, 100))
            read = sum(b.read for b in batches)
            written = sum(b.table.num_rows for b in batches)
            rejected = [r for b in batches for r in b.rejected]
            assert read == written + len(rejected)
            assert all(r["reason"] and r["source_line"] >= 1 for r in rejected)
            if container != "stream" or name.endswith(".gz"):  # one record a line
                assert read + sum(b.blank for b in batches) == len(lines)
            for b in batches:
                for fmt in {b.format} - {None, "undetected"}:
                    encode_table(b.table, fmt)


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_a_record_over_its_budget_is_rejected_alone_and_the_budget_is_an_option(
    tmp_path: Path, compressed: bool
) -> None:
    import gzip

    good = [orjson.dumps(r) for _, r in CASES["chat"][:3]]
    huge = b'{"messages": [{"role": "user", "content": "' + b"a" * 300_000 + b'"}]}'
    data = b"\n".join([good[0], huge, *good[1:]]) + b"\n"
    name = "in.jsonl.gz" if compressed else "in.jsonl"
    (tmp_path / name).write_bytes(gzip.compress(data) if compressed else data)
    inp = {"path": name, "format": "chat", "options": {"max_record_bytes": 100_000}}
    # batches of 64 KiB: the line spans blocks, skipped as it is read
    job = write_job(tmp_path / "job.toml", [inp], {"path": "run", "target": "parquet"},
                    engine={"workers": 1, "chunk_bytes": 64 << 10})  # fmt: skip
    summary = run_job(load_job(job))
    assert (summary["read"], summary["written"], summary["rejected"]) == (4, 3, 1)
    [row] = _rejected(tmp_path / "run")
    assert row["source_line"] == 2
    assert row["input"].startswith('{"messages": [{"role": "user", "content": "aaa')
    assert row["reason"].startswith(f"$: a line of {len(huge)} bytes, more than max_record_bytes = 100000")
    with pytest.raises(ConfigError, match="option 'max_record_bytes' must be a positive integer"):
        (tmp_path / "x").mkdir()
        _run(tmp_path / "x", [{**inp, "options": {"max_record_bytes": 0}}], "parquet")


def test_auto_a_shard_of_only_bad_lines_says_invalid_json(tmp_path: Path) -> None:
    """A line that is not JSON is rejected as invalid JSON (by the file's format's decoder) even in a
    shard or batch where no record fits a format; only a JSON object that fits none says so."""
    good = [orjson.dumps(r) for _, r in CASES["responses"][:7]]
    (tmp_path / "f.jsonl").write_bytes(b"\n".join([*good, b"not json", b'{"neither": 1}']) + b"\n")
    summary = _run(tmp_path, [{"path": "f.jsonl", "format": "auto"}], "parquet", shard_records=len(good))
    assert (summary["read"], summary["written"], summary["rejected"]) == (len(good) + 2, len(good), 2)
    rejected = {r["source_line"]: r for r in _rejected(tmp_path / "run")}
    assert "invalid JSON" in rejected[len(good) + 1]["reason"], rejected
    assert "fits no wire format" in rejected[len(good) + 2]["reason"], rejected
