"""convert / transform on every input a user has (issue 18, item 2): --from auto on wire records and
agent logs, JSON arrays and documents, compressed files, directories, stdin; exit codes and no
traceback on bad input; and every conversation file of the shared corpus with --from auto."""

from __future__ import annotations

import bz2
import gzip
import lzma
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.sources.wire_kind import classify_fits, follow_the_file
from tests.cases import CASES
from tests.corpus import CORPUS_DIR, corpus_available
from tests.sources.test_detect import _corpus_files

RECORDS = [r for fmt in sorted(CASES) for _, r in CASES[fmt]]
JSONL = b"".join(orjson.dumps(r) + b"\n" for r in RECORDS)


def _zstd(data: bytes) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        out.write(data)
    return sink.getvalue().to_pybytes()


SHAPES = {
    "mixed.jsonl": JSONL,
    "array.json": orjson.dumps(RECORDS, option=orjson.OPT_INDENT_2),
    "doc.json": orjson.dumps(RECORDS[0], option=orjson.OPT_INDENT_2),
    "f.jsonl.gz": gzip.compress(JSONL),
    "f.jsonl.bz2": bz2.compress(JSONL),
    "f.jsonl.xz": lzma.compress(JSONL),
    "f.jsonl.zst": _zstd(JSONL),
}


def _invoke(*args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of a command; no user error may end in a traceback."""
    res = CliRunner().invoke(cli, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output, res.output
    return res.exit_code, res.stdout, res.stderr


def _convert(src: Path, fmt: str, out: Path, *more: str) -> tuple[int, str]:
    """``convert SRC --from FMT --to parquet -o OUT``: exit code and everything printed."""
    code, stdout, stderr = _invoke("convert", str(src), "--from", fmt, "--to", "parquet", "-o", str(out), *more)  # noqa: E501
    return code, stdout + stderr


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_convert_and_transform_read_every_shape(tmp_path: Path, name: str) -> None:
    src = tmp_path / name
    src.write_bytes(SHAPES[name])
    n = 1 if name == "doc.json" else len(RECORDS)
    code, out, err = _invoke("convert", str(src), "--from", "auto", "--to", "parquet", "-o",
                             str(tmp_path / "c.parquet"), "--report", str(tmp_path / "r.json"))  # fmt: skip
    assert code == 0, out + err
    report = orjson.loads((tmp_path / "r.json").read_bytes())
    assert (report["read"], report["written"], report["rejected"]) == (n, n, 0)
    assert err.startswith("auto: ") and f"(file {name}" in err and len(err.strip().splitlines()) == 1
    code, out, err = _invoke("transform", str(src), "--from", "auto", "--step", "turns", "-o",
                             str(tmp_path / "t.parquet"))  # fmt: skip
    assert code == 0, out + err
    assert f"read {n} written {n} rejected 0" in out and err.startswith("auto: ")
    assert pq.read_table(tmp_path / "t.parquet").num_rows == n


def test_auto_says_what_it_chose(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(JSONL)
    (tmp_path / "s.json").write_bytes(orjson.dumps([{"conversations": [{"from": "human", "value": "q"}]}]))
    code, out, err = _invoke("convert", str(tmp_path / "a.jsonl"), str(tmp_path / "s.json"), "--from", "auto",
                             "--to", "parquet", "-o", str(tmp_path / "o.parquet"))  # fmt: skip
    assert code == 0, out + err
    kinds = follow_the_file(*classify_fits(JSONL.splitlines()))
    want = sorted(Counter(k for k in kinds if k).items(), key=lambda kv: (-kv[1], kv[0]))
    said = ", ".join(f"{n} {'records ' * (i == 0)}as {fmt}" for i, (fmt, n) in enumerate(want))
    assert len(want) > 1  # the cases of every format: a truly mixed file
    assert err.strip() == f"auto: {said} (file a.jsonl: mixed, per record), file s.json as sharegpt"


def test_a_file_of_one_format_is_read_as_it(tmp_path: Path) -> None:
    """A file of Chat bodies, a few without a request key (alone, HF rows by the rule): all Chat,
    and the summary says the file was one format."""
    chat = [{"model": "gpt-4o", "messages": [{"role": "user", "content": f"q{k}"}]} for k in range(46)]
    bare = [{"messages": [{"role": "user", "content": f"b{k}"}]} for k in range(4)]
    (tmp_path / "c.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in chat + bare))
    code, out, err = _invoke("convert", str(tmp_path / "c.jsonl"), "--from", "auto", "--to", "parquet", "-o",
                             str(tmp_path / "o.parquet"))  # fmt: skip
    assert code == 0, out + err
    assert err.strip() == "auto: 50 records as chat (file c.jsonl: one format)"
    assert pq.read_table(tmp_path / "o.parquet").column("source_format").to_pylist() == ["chat"] * 50


def test_a_directory_through_convert_and_a_run_directory(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    (d / "nested").mkdir(parents=True)
    for name, data in SHAPES.items():
        (d / "nested" / name if name.endswith(".gz") else d / name).write_bytes(data)
    (d / ".cache.jsonl").write_bytes(b"garbage\n")
    code, out, err = _invoke("convert", str(d), "--from", "auto", "--to", "chat", "--run-dir",
                             str(tmp_path / "run"), "--report", str(tmp_path / "r.json"))  # fmt: skip
    assert code == 0, out + err
    report = orjson.loads((tmp_path / "r.json").read_bytes())
    assert len(report["inputs"]) == len(SHAPES) and report["read"] == 1 + (len(SHAPES) - 1) * len(RECORDS)
    assert "file nested/" not in err and "(file f.jsonl.gz:" in err  # the file's name, not its path
    # a second convert over the same directory leaves out the first one's run directory, and
    # rejects its single-file outputs whole (stage detect), saying what they are
    (tmp_path / "run").rename(d / "run")
    code, out, err = _invoke("convert", str(d), "--from", "auto", "--to", "chat", "-o", str(d / "out.jsonl"))
    assert code == 0, out + err
    code, said = _convert(d, "auto", tmp_path / "x.parquet", "--report", str(tmp_path / "r2.json"))
    assert code == 0, said
    inputs = orjson.loads((tmp_path / "r2.json").read_bytes())["inputs"]
    assert len([i for i in inputs if "skipped" not in i]) == len(SHAPES)
    skipped = {Path(i["path"]).name: i["skipped"] for i in inputs if "skipped" in i}
    assert skipped == {
        "out.jsonl": "chatlake's own output: an output of chatlake convert -o (its side files are beside it)",
        "out.jsonl.losses.parquet": "chatlake's own output: the loss report of chatlake's output out.jsonl",
        "out.jsonl.rejected.jsonl":
            "chatlake's own output: the rejected records of chatlake's output out.jsonl",
        "out.jsonl.manifest.json": "chatlake's own output: the manifest of chatlake's output out.jsonl",
    }


def test_stdin(tmp_path: Path) -> None:
    for data in (JSONL, gzip.compress(JSONL), SHAPES["array.json"]):
        res = subprocess.run(
            [sys.executable, "-m", "pipeline", "convert", "-", "--from", "auto", "--to", "parquet",
             "-o", str(tmp_path / "o.parquet")],
            input=data, capture_output=True, cwd=tmp_path, check=False,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr.decode()
        assert b"(file <stdin>:" in res.stderr and b"Traceback" not in res.stderr
        table = pq.read_table(tmp_path / "o.parquet")
        assert set(table.column("source_file").to_pylist()) == {"<stdin>"}
        assert sorted(table.column("source_line").to_pylist()) == list(range(1, len(RECORDS) + 1))
        for p in tmp_path.iterdir():
            p.unlink()
    code, out, err = _invoke("convert", "-", "-", "--from", "chat", "--to", "chat", "-o", str(tmp_path / "o"))
    assert code == 2 and "given twice" in out + err


def test_bad_inputs_exit_with_a_line_not_a_traceback(tmp_path: Path) -> None:
    data = gzip.compress(JSONL * 500)  # big enough that the part before the cut holds whole batches
    (tmp_path / "cut.jsonl.gz").write_bytes(data[: len(data) // 2])
    (tmp_path / "junk.gz").write_bytes(b"\x1f\x8b" + b"\x00" * 40)
    (tmp_path / "objects.json").write_bytes(b'[{"input": "hi"}, 7, "x", [1]]')
    (tmp_path / "empty.jsonl").write_bytes(b"")
    out = tmp_path / "o.parquet"
    report = tmp_path / "r.json"
    # a stream cut off: what was read is kept, the rest is one rejected record, exit 0
    code, said = _convert(tmp_path / "cut.jsonl.gz", "auto", out, "--report", str(report))
    assert code == 0, said
    summary = orjson.loads(report.read_bytes())
    assert summary["rejected"] == 1 and summary["written"] == summary["read"] - 1 > 0
    (reason,) = summary["rejected_by_reason"]
    assert reason.startswith(f"cannot read the rest of the input from line {summary['read']} on: EOFError")
    # nothing readable at all: every record rejected, exit 1 with the reason
    code, said = _convert(tmp_path / "junk.gz", "chat", out)
    assert code == 1 and "cannot read the rest of the input" in said
    code, said = _convert(tmp_path / "junk.gz", "auto", out)
    assert code == 2 and "could not tell" in said
    # an array holding non-objects: each rejected by its element number, the object converts
    code, said = _convert(tmp_path / "objects.json", "auto", out, "--report", str(report))
    assert code == 0, said
    summary = orjson.loads(report.read_bytes())
    assert (summary["read"], summary["written"], summary["rejected"]) == (4, 1, 3)
    rejected = pq.read_table(str(out) + ".rejected.parquet").to_pylist()
    assert [(r["source_line"], r["stage"]) for r in rejected] == [(2, "read"), (3, "read"), (4, "read")]
    # an empty file: nothing to convert with a format, nothing to detect with auto
    code, said = _convert(tmp_path / "empty.jsonl", "chat", out)
    assert code == 0, said
    code, said = _convert(tmp_path / "empty.jsonl", "auto", out)
    assert code == 2 and "no input can be read: " in said and "empty.jsonl: the file is empty" in said


@pytest.mark.skipif(not corpus_available(), reason=f"the shared corpus is absent ({CORPUS_DIR}); CI has it")
def test_every_corpus_file_converts_with_auto(tmp_path: Path) -> None:
    """One command over every conversation file of the corpus: nothing undetected, counts add up."""
    files = [str(CORPUS_DIR / f) for f in _corpus_files()]
    code, out, err = _invoke("convert", *files, "--from", "auto", "--to", "parquet", "-o",
                             str(tmp_path / "all.parquet"), "--report", str(tmp_path / "r.json"))  # fmt: skip
    assert code == 0, out + err
    report = orjson.loads((tmp_path / "r.json").read_bytes())
    assert len(report["inputs"]) == len(files)
    assert all(i["read"] > 0 for i in report["inputs"]), report["inputs"]
    assert all("undetected" not in i.get("detected", {}) for i in report["inputs"])
    assert report["read"] == report["written"] + report["rejected"] and report["written"] > 250
    # the only rejections: the cassettes' Gemini-native exchanges, which no codec reads
    assert all("generateContent" in r for r in report["rejected_by_reason"]), report["rejected_by_reason"]
    assert err.count(" as ") >= len(files)


def test_a_messy_directory_converts_the_rest_and_names_each_skipped_file(tmp_path: Path) -> None:
    """A dataset's manifest, an empty file and a compressed agent log beside good files: the good
    files and the log are converted, each skipped file is named with why (whole, on one line though
    the path is longer than a terminal: the output is piped), and --strict-inputs refuses instead."""
    d = tmp_path / ("a-folder-with-a-long-name-" * 3) / "logs"
    d.mkdir(parents=True)
    (d / "good.jsonl").write_bytes(JSONL)
    (d / "dataset-manifest.json").write_bytes(orjson.dumps({"name": "evals", "files": ["good.jsonl"]}))
    (d / "empty.jsonl").write_bytes(b"")
    tau = [{"task_id": 0, "traj": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}]
    (d / "tau.json.gz").write_bytes(gzip.compress(orjson.dumps(tau)))
    out = tmp_path / "out" / "chat.jsonl"
    cmd = [sys.executable, "-m", "pipeline", "convert", str(d), "--from", "auto", "--to", "chat",
           "-o", str(out)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert f"  {d / 'empty.jsonl'}: the file is empty" in lines
    assert any(line.startswith(f"  {d / 'dataset-manifest.json'}: format 'auto' could not tell what it is")
               for line in lines), res.stdout  # fmt: skip
    assert "files rejected whole (not read): 2" in lines
    assert "file tau.json.gz as tau-bench" in res.stderr
    rejected = [orjson.loads(x) for x in Path(f"{out}.rejected.jsonl").read_bytes().splitlines()]
    assert sorted((Path(r["source_file"]).name, r["stage"]) for r in rejected if r["stage"] == "detect") == [
        ("dataset-manifest.json", "detect"), ("empty.jsonl", "detect")
    ]
    written = out.read_bytes().count(b"\n")
    assert written >= 1 + len(CASES["chat"])  # the log's conversation and at least the chat records
    res = subprocess.run([*cmd[:-1], str(tmp_path / "strict.jsonl"), "--strict-inputs"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 2 and "Traceback" not in res.stderr
    said = res.stderr.replace("\n", "")  # click's error, wrapped or not
    assert f"input '{d / 'dataset-manifest.json'}': format 'auto' could not tell" in said
    assert not list(tmp_path.glob("strict*"))
