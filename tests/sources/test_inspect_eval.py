"""inspect_ai ``.eval`` archives: the same rows as the JSON log, and broken archives reported by member.

Archives are built here in inspect's layout (``inspect_ai/log/_recorders/eval.py``: ``header.json``,
``_journal/start.json``, ``_journal/summaries/1.json``, ``summaries.json``, ``reductions.json``,
``samples/<id>_epoch_<epoch>.json``) from the corpus JSON logs, DEFLATE-compressed as older inspect
releases wrote them and Zstandard-compressed (zip method 93) as 0.3.285 writes them by default;
plus one pair of files written by inspect_ai 0.3.285 itself (``data/inspect_handwritten.*``, see the
script there).
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.errors import ConfigError
from pipeline.formats import MAX_DEPTH
from pipeline.sources import detect_source, read_source
from pipeline.sources.inspect_eval import DEFAULT_MAX_MEMBER_BYTES, read_member, sample_order
from tests.corpus import CORPUS_DIR, corpus_available

DATA = Path(__file__).parent / "data"
LOGS = (
    "inspect-ai-logs/2025-05-12T20-27-36-04-00_browser.json",
    "inspect-ai-logs/2025-05-12T20-28-26-04-00_security-guide.json",
)
needs_corpus = pytest.mark.skipif(
    not corpus_available(), reason=f"conversation corpus not found at {CORPUS_DIR}"
)
# Columns that name the file (conversation_id hashes the file name in); everything else must match.
FILE_COLUMNS = ("conversation_id", "source_file")


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2)


def _patch_zstd(path: Path, raw: dict[str, bytes]) -> None:
    """Turn the STORED members of ``path`` (whose stored bytes are zstd frames) into method-93 members.

    Python's zipfile (before 3.14) cannot write Zstandard members, so the archive is written with the
    zstd bytes stored and then each member's method, CRC-32 and uncompressed size are set in its local
    header and central directory entry, as a Zstandard-writing zip library leaves them.
    """
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
    cd_start = data.rfind(b"PK\x05\x06")
    (cd_offset,) = struct.unpack_from("<I", data, cd_start + 16)
    pos = cd_offset
    for info in infos:
        body = raw[info.filename]
        crc, size = zlib.crc32(body), len(body)
        struct.pack_into("<H", data, info.header_offset + 8, 93)
        struct.pack_into("<I", data, info.header_offset + 14, crc)
        struct.pack_into("<I", data, info.header_offset + 22, size)
        assert data[pos : pos + 4] == b"PK\x01\x02"
        struct.pack_into("<H", data, pos + 10, 93)
        struct.pack_into("<I", data, pos + 16, crc)
        struct.pack_into("<I", data, pos + 24, size)
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, pos + 28)
        pos += 46 + name_len + extra_len + comment_len
    path.write_bytes(bytes(data))


def write_eval(
    path: Path,
    log: dict[str, Any],
    compression: str = "deflate",
    *,
    header: bool = True,
    journal: bool = True,
    replace: dict[str, bytes] | None = None,
) -> Path:
    """``log`` (a JSON log object) as an ``.eval`` archive in inspect's member layout."""
    start = {"version": log["version"], "eval": log["eval"], "plan": log.get("plan")}
    samples = log.get("samples") or []
    members: dict[str, bytes] = {}
    if journal:
        members["_journal/start.json"] = _dumps(start)
    for s in samples:
        members[f"samples/{s['id']}_epoch_{s['epoch']}.json"] = _dumps(s)
    summaries = [{k: s.get(k) for k in ("id", "epoch", "input", "target", "scores")} for s in samples]
    members["_journal/summaries/1.json"] = _dumps(summaries)
    members["summaries.json"] = _dumps(summaries)
    if "reductions" in log:
        members["reductions.json"] = _dumps(log["reductions"])
    if header:
        members["header.json"] = _dumps({k: v for k, v in log.items() if k not in ("samples", "reductions")})
    members.update(replace or {})
    if compression == "deflate":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=5) as z:
            for name, body in members.items():
                z.writestr(name, body)
        return path
    codec = pa.Codec("zstd")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, body in members.items():
            z.writestr(name, codec.compress(body, asbytes=True))
    _patch_zstd(path, members)
    return path


def _read(path: Path, source: str = "inspect-log", **options: Any) -> tuple[pa.Table, list, dict]:
    results = list(read_source(path, source, **options))
    table = pa.concat_tables([r.table for r in results])
    return table, [x for r in results for x in r.rejected], results[-1].counts


def _assert_same_rows(a: pa.Table, b: pa.Table) -> None:
    assert a.num_rows == b.num_rows
    for name in a.column_names:
        if name in FILE_COLUMNS:
            continue
        assert a.column(name).to_pylist() == b.column(name).to_pylist(), name


@needs_corpus
@pytest.mark.parametrize("compression", ["deflate", "zstd"])
@pytest.mark.parametrize("model_calls", [False, True])
@pytest.mark.parametrize("rel", LOGS)
def test_eval_archive_reads_like_the_json_log(
    rel: str, compression: str, model_calls: bool, tmp_path: Path
) -> None:
    log = orjson.loads((CORPUS_DIR / rel).read_bytes())
    archive = write_eval(tmp_path / "log.eval", log, compression)
    assert detect_source(archive) == "inspect-log"
    got, rejected, counts = _read(archive, model_calls=model_calls)
    want, want_rejected, want_counts = _read(CORPUS_DIR / rel, model_calls=model_calls)
    assert rejected == want_rejected == []
    assert counts == want_counts
    _assert_same_rows(got, want)
    assert set(got.column("source_file").to_pylist()) == {str(archive)}


def test_files_written_by_inspect_itself_read_the_same() -> None:
    """inspect_ai 0.3.285 wrote both: zstd members, attachments and pooled call messages in the .eval."""
    archive = DATA / "inspect_handwritten.eval"
    with open(archive, "rb") as f, zipfile.ZipFile(f) as z:
        assert {i.compress_type for i in z.infolist()} == {93}
        sample = orjson.loads(read_member(z, f, z.getinfo("samples/2_epoch_1.json")))
    assert sample["attachments"] and "call_refs" in sample["events"][0]["call"]  # what the test exercises
    assert detect_source(archive) == "inspect-log"
    for model_calls in (False, True):
        got, rejected, counts = _read(archive, model_calls=model_calls)
        want, _, want_counts = _read(DATA / "inspect_handwritten.json", model_calls=model_calls)
        assert rejected == [] and counts == want_counts
        _assert_same_rows(got, want)
    # inspect's sample order: epoch, then id as a number (2 before 10)
    prov = got.column("provenance").combine_chunks()
    assert [p for p in prov.field("sample_id").to_pylist()][::5] == ["2", "10", "2"]
    assert prov.field("score").to_pylist()[::5] == [0.0, 1.0, 1.0]
    assert got.column("source_line").to_pylist()[::5] == [1, 2, 3]
    # the pooled request messages are back: 2 then 4 messages in the two requests of a sample
    from pipeline.formats import encode_table

    requests = [r for r in encode_table(got.slice(1, 4), "chat") if "messages" in r]
    assert [len(r["messages"]) for r in requests] == [2, 4]
    assert requests[1]["messages"][3]["content"].startswith("Tool output that is long")  # attachment resolved


def _log(n: int = 3) -> dict[str, Any]:
    return {
        "version": 2,
        "status": "success",
        "eval": {"eval_id": "E1", "task": "t", "model": "openai/gpt-4o-mini"},
        "plan": {"steps": []},
        "samples": [
            {"id": i, "epoch": 1, "messages": [{"role": "user", "content": f"q{i}"}], "scores": {}}
            for i in range(1, n + 1)
        ],
    }


@pytest.mark.parametrize("compression", ["deflate", "zstd"])
def test_journal_only_archive_of_an_unfinished_run(compression: str, tmp_path: Path) -> None:
    archive = write_eval(tmp_path / "run.eval", _log(), compression, header=False)
    table, rejected, counts = _read(archive, "auto")
    assert rejected == [] and table.num_rows == 3 and counts["samples_read"] == 3
    prov = table.column("provenance").combine_chunks()
    assert prov.field("session_id").to_pylist() == ["E1"] * 3
    assert table.column("model").to_pylist() == ["openai/gpt-4o-mini"] * 3
    assert orjson.loads(prov.field("meta_json")[0].as_py())["eval"]["status"] is None  # no header yet


def test_not_a_zip_is_one_rejected_record(tmp_path: Path) -> None:
    path = tmp_path / "log.eval"
    path.write_bytes(b"PK\x03\x04 this is not really a zip")
    table, rejected, _ = _read(path)
    assert table.num_rows == 0 and len(rejected) == 1
    assert (rejected[0].file, rejected[0].line) == (str(path), 1) and "not a zip archive" in rejected[0].error
    assert detect_source(path) is None  # --from auto: fails before work instead of guessing


def test_cut_off_archive_is_one_rejected_record(tmp_path: Path) -> None:
    archive = write_eval(tmp_path / "log.eval", _log())
    archive.write_bytes(archive.read_bytes()[:-40])  # a copy interrupted: no central directory
    table, rejected, _ = _read(archive)
    assert table.num_rows == 0 and [r.line for r in rejected] == [1]
    assert "not a zip archive" in rejected[0].error


@pytest.mark.parametrize("compression", ["deflate", "zstd"])
def test_missing_header_is_reported_and_samples_still_read(compression: str, tmp_path: Path) -> None:
    archive = write_eval(tmp_path / "log.eval", _log(), compression, header=False, journal=False)
    table, rejected, counts = _read(archive)
    assert table.num_rows == 3  # nothing else lost
    [r] = rejected
    assert r.file == str(archive) and "header.json" in r.error and "_journal/start.json" in r.error
    assert table.column("provenance").combine_chunks().field("session_id").to_pylist() == [None] * 3
    assert counts["conversations"] + counts["rejected"] == 4  # read == written + rejected


@pytest.mark.parametrize("compression", ["deflate", "zstd"])
def test_bad_sample_members_are_rejected_by_name(compression: str, tmp_path: Path) -> None:
    log = _log(4)
    good = _dumps(log["samples"][1])
    archive = write_eval(
        tmp_path / "log.eval",
        log,
        compression,
        replace={
            "samples/2_epoch_1.json": good[: len(good) // 2],  # truncated JSON
            "samples/3_epoch_1.json": b"[1, 2]",  # not a sample object
            "header.json": b'{"version": 2, "eval": ',  # truncated header: reported, samples go on
        },
    )
    table, rejected, counts = _read(archive)
    errors = {r.line: r.error for r in rejected}
    assert sorted(errors) == [1, 2, 3]  # header at line 1, then samples 2 and 3 (1-based, inspect order)
    assert errors[1].startswith("header.json: ") and "invalid JSON" in errors[1]
    assert errors[2].startswith("samples/2_epoch_1.json: ") and "invalid JSON" in errors[2]
    assert "samples/3_epoch_1.json has no 'messages' list" in errors[3]
    assert all(r.file == str(archive) for r in rejected)
    assert table.column("source_line").to_pylist() == [1, 4] and counts["samples_read"] == 4
    # the broken header.json is reported and the journal's start.json gives the eval spec instead
    assert table.column("provenance").combine_chunks().field("session_id").to_pylist() == ["E1", "E1"]
    assert counts["conversations"] + counts["rejected"] == 4 + 1


@pytest.mark.parametrize("compression", ["deflate", "zstd"])
def test_corrupt_compressed_member_is_rejected_by_name(compression: str, tmp_path: Path) -> None:
    archive = write_eval(tmp_path / "log.eval", _log(), compression)
    with zipfile.ZipFile(archive) as z:
        info = z.getinfo("samples/2_epoch_1.json")
    data = bytearray(archive.read_bytes())
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len
    for k in range(start + info.compress_size // 2, start + info.compress_size):
        data[k] ^= 0x5A  # damage the second half of the compressed bytes
    archive.write_bytes(bytes(data))
    table, rejected, _ = _read(archive)
    [r] = rejected
    assert r.line == 2 and r.error.startswith("samples/2_epoch_1.json: corrupt member")
    assert table.column("source_line").to_pylist() == [1, 3]


def test_bad_call_refs_reject_that_call_only(tmp_path: Path) -> None:
    log = _log(1)
    log["samples"][0]["events"] = [
        {"event": "model", "model": "openai/m", "call": {"request": {"model": "m"}, "call_refs": [[0, 9]]}},
        {
            "event": "model",
            "model": "openai/m",
            "call": {"request": {"model": "m"}, "call_refs": [[1, 2], [0, 1]], "call_key": "messages"},
        },
    ]
    log["samples"][0]["events_data"] = {
        "calls": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    }
    table, rejected, _ = _read(write_eval(tmp_path / "log.eval", log), model_calls=True)
    [r] = rejected
    assert "events[0].call.call_refs: range [0, 9] outside the pool of 2 messages" in r.error
    from pipeline.formats import encode_table

    assert encode_table(table.slice(1), "chat")[0]["messages"] == [
        {"role": "user", "content": "u"},
        {"role": "system", "content": "s"},
    ]


def test_sample_order_is_inspects() -> None:
    names = [
        "samples/b_epoch_1.json",
        "samples/10_epoch_1.json",
        "samples/2_epoch_2.json",
        "samples/2_epoch_1.json",
    ]
    assert sorted(names, key=sample_order) == [
        "samples/2_epoch_1.json",
        "samples/10_epoch_1.json",
        "samples/b_epoch_1.json",
        "samples/2_epoch_2.json",
    ]


def test_convert_auto_reads_an_eval_archive(tmp_path: Path) -> None:
    archive = write_eval(tmp_path / "run.eval", _log(2), "zstd")
    out = tmp_path / "out.jsonl"
    res = CliRunner().invoke(
        cli, ["convert", str(archive), "--from", "auto", "--to", "chat", "-o", str(out), "-q"]
    )
    assert res.exit_code == 0, res.output
    assert [orjson.loads(x) for x in out.read_bytes().splitlines()] == [
        {"messages": [{"role": "user", "content": "q1"}], "model": "openai/gpt-4o-mini"},
        {"messages": [{"role": "user", "content": "q2"}], "model": "openai/gpt-4o-mini"},
    ]


@pytest.mark.parametrize("compression", ["deflate", "zstd"])
def test_member_over_the_size_cap_is_rejected_by_name(compression: str, tmp_path: Path) -> None:
    """Members were inflated in memory up to 4 GiB each (a 1 MB zip cost 3.2 GB RSS): the cap is
    now a source option, checked on the size the member declares before anything is inflated."""
    log = _log()
    log["samples"][1]["metadata"] = {"pad": "x" * 300_000}  # compresses to almost nothing
    archive = write_eval(tmp_path / "log.eval", log, compression)
    table, rejected, counts = _read(archive, max_member_bytes=100_000)
    [r] = rejected
    assert (r.line, r.file) == (2, str(archive))
    assert r.error.startswith("samples/2_epoch_1.json: member inflates to ")
    assert "bytes, more than max_member_bytes = 100000" in r.error
    assert table.column("source_line").to_pylist() == [1, 3] and counts["samples_read"] == 3
    table, rejected, _ = _read(archive)  # the default cap reads it
    assert rejected == [] and table.num_rows == 3


def test_member_declaring_a_huge_size_is_refused_before_inflating(tmp_path: Path) -> None:
    """A zstd member is inflated into a buffer of the size it declares: 2 GiB declared was allocated."""
    archive = write_eval(tmp_path / "log.eval", _log(), "zstd")
    with zipfile.ZipFile(archive) as z:
        info = z.getinfo("samples/2_epoch_1.json")
        cd = z.start_dir
    data = bytearray(archive.read_bytes())
    struct.pack_into("<I", data, info.header_offset + 22, 2 << 30)  # local header: uncompressed size
    pos = data.index(b"PK\x01\x02" + data[cd + 4 : cd + 6], cd)
    while True:  # the central directory entry of that member
        name_len = struct.unpack_from("<H", data, pos + 28)[0]
        if data[pos + 46 : pos + 46 + name_len] == info.filename.encode():
            struct.pack_into("<I", data, pos + 24, 2 << 30)
            break
        extra_len, comment_len = struct.unpack_from("<HH", data, pos + 30)
        pos += 46 + name_len + extra_len + comment_len
    archive.write_bytes(bytes(data))
    table, rejected, _ = _read(archive)
    [r] = rejected
    assert r.error == (
        "samples/2_epoch_1.json: member inflates to 2147483648 bytes, more than max_member_bytes = "
        f"{DEFAULT_MAX_MEMBER_BYTES} (a source option)"
    )
    assert table.num_rows == 2


def _bomb(path: Path, members: int, member_bytes: int) -> Path:
    """An .eval of ``members`` samples of ``member_bytes`` each (repeated text: ~1,000:1 in DEFLATE),
    every one under the member cap; together far more than the archive budget."""
    log = _log(members)
    for sample in log["samples"]:
        sample["metadata"] = {"pad": "a" * member_bytes}
    return write_eval(path, log, "deflate")


@pytest.mark.parametrize("compression", ["deflate", "zstd"])
def test_archive_over_its_inflate_budget_is_rejected_whole_before_inflating(
    compression: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every member under the member cap, 6.9 GB in all from 3 MB: read until Arrow's offsets
    overflowed, then "run again to resume". The sum the members declare is the budget's measure,
    known from the zip's directory, so the file is rejected, the limit named, with nothing inflated."""
    log = _log(20)
    for sample in log["samples"]:
        sample["metadata"] = {"pad": "a" * 50_000}
    archive = write_eval(tmp_path / "bomb.eval", log, compression)
    with zipfile.ZipFile(archive) as z:
        read = [i for i in z.infolist() if i.filename.startswith(("samples/", "header.", "_journal/start"))]
        declared = sum(i.file_size for i in read)
    import pipeline.sources.inspect_eval as inspect_eval

    def no_inflating(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("a member was inflated")

    monkeypatch.setattr(inspect_eval, "read_member", no_inflating)
    table, rejected, _ = _read(archive, max_archive_bytes=500_000)
    [r] = rejected
    assert (r.line, r.file, table.num_rows) == (1, str(archive), 0)
    assert r.error == (
        f"archive inflates to {declared} bytes (22 members), more than max_archive_bytes = 500000 "
        "(a source option); not read"
    )
    assert orjson.loads(r.input)["compressed_bytes"] == archive.stat().st_size
    monkeypatch.undo()
    table, rejected, _ = _read(archive, max_archive_bytes=declared)  # at the budget: read
    assert rejected == [] and table.num_rows == 20


def test_archive_budget_counts_only_members_read(tmp_path: Path) -> None:
    """A member over the member cap is rejected on its own and not inflated: it is not counted."""
    log = _log(3)
    log["samples"][1]["metadata"] = {"pad": "a" * 300_000}
    archive = write_eval(tmp_path / "log.eval", log)
    table, rejected, _ = _read(archive, max_member_bytes=100_000, max_archive_bytes=200_000)
    assert [r.error.split(":")[0] for r in rejected] == ["samples/2_epoch_1.json"]
    assert table.num_rows == 2


def test_archive_budget_is_a_job_option(tmp_path: Path) -> None:
    from pipeline.engine import TooManyRejected, run_job
    from pipeline.jobs import load_job
    from tests.engine.helpers import folder, write_job

    _bomb(tmp_path / "bomb.eval", 4, 100_000)
    inp = {"path": "bomb.eval", "format": "inspect-log", "options": {"max_archive_bytes": 200_000}}
    job = write_job(tmp_path / "job.toml", [inp], {"path": "run", "target": "parquet"}, engine={"workers": 1})
    with pytest.raises(TooManyRejected) as failed:  # all that was read is rejected: exit 1 in the CLI
        run_job(load_job(job))
    assert (failed.value.summary["read"], failed.value.summary["rejected"]) == (1, 1)
    [row] = folder(tmp_path / "run", "rejected").to_pylist()
    assert "more than max_archive_bytes = 200000 (a source option)" in row["reason"]
    bad = [{**inp, "options": {"max_archive_bytes": 0}}]
    job = write_job(tmp_path / "bad.toml", bad, {"path": "run2", "target": "parquet"})
    with pytest.raises(ConfigError, match="option 'max_archive_bytes' must be a positive integer"):
        run_job(load_job(job))


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "1"])
def test_member_cap_option_is_checked_before_work(bad: object, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="max_member_bytes"):
        read_source(tmp_path / "missing.eval", "inspect-log", max_member_bytes=bad)


@pytest.mark.parametrize("compression", ["deflate", "zstd"])
def test_duplicate_member_names_are_reported_not_dropped(compression: str, tmp_path: Path) -> None:
    """A zip may hold two members of one name; a name -> member dict kept only the last, silently."""
    archive = write_eval(tmp_path / "log.eval", _log(), compression)
    other = {"id": 2, "epoch": 1, "messages": [{"role": "user", "content": "the other copy"}]}
    header = {"version": 2, "eval": {"eval_id": "E2", "model": "m"}}
    with zipfile.ZipFile(archive, "a") as z, pytest.warns(UserWarning, match="Duplicate name"):
        z.writestr("samples/2_epoch_1.json", _dumps(other))
        z.writestr("header.json", _dumps(header))
    table, rejected, counts = _read(archive)
    errors = sorted((r.line, r.error) for r in rejected)
    assert errors == [
        (1, "header.json: duplicate member name (2 members of this name); the last one is read"),
        (2, "samples/2_epoch_1.json: duplicate member name (2 members of this name); the last one is read"),
    ]
    assert rejected[0].input  # the copy not read is in the rejected file
    assert counts["samples_read"] == 4 and table.num_rows == 3
    assert counts["conversations"] + counts["rejected"] == 4 + 1
    assert table.column("provenance").combine_chunks().field("session_id").to_pylist() == ["E2"] * 3
    assert table.column("source_line").to_pylist() == [1, 3, 4]  # 2 is the copy not read
    assert "the other copy" in str(table.column("items")[1].as_py())  # sample 2: its last copy


@pytest.mark.parametrize("compression", ["deflate", "zstd"])
def test_deep_sample_member_is_rejected_by_name(compression: str, tmp_path: Path) -> None:
    """A member nested ~500 levels deep around a 20-digit integer killed the job (RecursionError)."""
    deep = b"[" * 500 + b"123456789012345678901234" + b"]" * 500
    sample = b'{"id": 2, "epoch": 1, "messages": [], "metadata": {"x": ' + deep + b"}}"
    replace = {"samples/2_epoch_1.json": sample}
    archive = write_eval(tmp_path / "log.eval", _log(), compression, replace=replace)
    table, rejected, _ = _read(archive)
    [r] = rejected
    assert r.line == 2 and r.error.startswith("samples/2_epoch_1.json: $.metadata.x[0][0]")
    assert r.error.endswith(f"...: nested deeper than {MAX_DEPTH} levels")
    assert table.column("source_line").to_pylist() == [1, 3]
