"""URLs wherever a path goes (pipeline/storage.py, docs/storage.md): inputs read from a real S3 server
(SeaweedFS on loopback, tests/s3_server.py) give the bytes the same local files give; a URL that cannot
be used is one line naming it and what to install or set, exit 2, no traceback."""

from __future__ import annotations

import re
from pathlib import Path

import fsspec
import orjson
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.errors import ConfigError
from pipeline.jobs import convert_job, parse_job
from pipeline.storage import StorageError, as_path, describe, filesystem, is_url
from tests.test_cli_inputs import JSONL, RECORDS, SHAPES


def _invoke(*args: str) -> tuple[int, str]:
    """Exit code and everything printed; no user error may end in a traceback."""
    res = CliRunner().invoke(cli, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output, res.output
    return res.exit_code, res.output


def _ids_out(data: bytes) -> bytes:
    """``data`` with the ids chatlake generates (``call_`` + 24 hex digits) replaced by one string."""
    return re.sub(rb"\b(call|toolu|fc|msg)_[0-9a-f]{24}\b", b"GENERATED_ID", data)


def _upload(url: str, files: dict[str, bytes]) -> None:
    fs, root = filesystem(url)
    for name, data in files.items():
        fs.pipe(f"{root}/{name}", data)


def test_is_url_and_as_path() -> None:
    assert is_url("s3://b/k") and is_url("hf://datasets/o/n") and not is_url("file:///tmp/x")
    assert not is_url("data/x.jsonl")
    assert as_path("s3://b/k/x.jsonl") == "s3://b/k/x.jsonl"  # a Path would fold s3:// into s3:/
    assert as_path("data/x.jsonl") == Path("data/x.jsonl")


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (FileNotFoundError("b/k"), "no such bucket, repository or object"),
        (PermissionError("Access Denied"), "access denied (Access Denied); set AWS_ACCESS_KEY_ID"),
        (ConnectionRefusedError(111, "refused"), "cannot reach the store"),
    ],
)
def test_describe_says_what_to_do(error: Exception, says: str) -> None:
    e = describe("s3://b/k", error)
    assert isinstance(e, StorageError) and isinstance(e, ConfigError)
    assert str(e).startswith("s3://b/k: ") and says in str(e) and "\n" not in str(e)


def test_a_missing_driver_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_driver(url: str, **kw: object) -> None:
        raise ImportError("Install gcsfs to access Google Storage")

    monkeypatch.setattr(fsspec.core, "url_to_fs", no_driver)
    said = "gs://b/x.jsonl: reading gs:// needs gcsfs: pip install 'chatlake[gcs]'"
    with pytest.raises(StorageError) as e:
        filesystem("gs://b/x.jsonl")
    assert str(e.value) == said
    code, out = _invoke("convert", "gs://b/x.jsonl", "--from", "chat", "--to", "chat", "-o", "o.jsonl")
    assert code == 2 and out.strip() == f"Error: {said}"


def test_an_unknown_scheme_is_one_line() -> None:
    code, out = _invoke("convert", "nope://b/x.jsonl", "--from", "chat", "--to", "chat", "-o", "o.jsonl")
    assert code == 2
    assert out.strip() == "Error: nope://b/x.jsonl: unknown URL scheme nope:// (docs/storage.md lists them)"


def test_an_unreachable_store_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, closed_port: int
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{closed_port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    fsspec.get_filesystem_class("s3").clear_instance_cache()
    code, out = _invoke("convert", "s3://bucket/logs/", "--from", "auto", "--to", "chat",
                        "-o", str(tmp_path / "o"))  # fmt: skip
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert out.startswith("Error: s3://bucket/logs/: cannot reach the store (") and "AWS_ENDPOINT_URL" in out
    job = tmp_path / "job.toml"  # the same in a job file: one line, exit 2, before any work
    job.write_text('name = "j"\n[[inputs]]\npath = "s3://bucket/x.jsonl"\nformat = "chat"\n'
                   '[output]\npath = "run"\ntarget = "chat"\n')  # fmt: skip
    code, out = _invoke("run", str(job))
    assert code == 2 and out.startswith("Error: s3://bucket/x.jsonl: cannot reach the store (")
    assert not (tmp_path / "run").exists()
    fsspec.get_filesystem_class("s3").clear_instance_cache()


def test_an_unreachable_hub_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, closed_port: int
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port}")
    monkeypatch.setattr(fsspec.get_filesystem_class("hf"), "_cache", {}, raising=False)
    url = "hf://datasets/org/name/train.jsonl"
    code, out = _invoke("convert", url, "--from", "chat", "--to", "chat", "-o", str(tmp_path / "o.jsonl"))
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert out.startswith(f"Error: {url}: cannot reach the store (") and "HF_ENDPOINT" in out


def test_hub_dataset_files_read_like_local_ones(hub: Path, tmp_path: Path) -> None:
    (hub / "data" / "train.jsonl").write_bytes(JSONL)
    (hub / "data" / "test.jsonl.gz").write_bytes(SHAPES["f.jsonl.gz"])
    local = tmp_path / "local"
    local.mkdir()
    (local / "train.jsonl").write_bytes(JSONL)
    (local / "test.jsonl.gz").write_bytes(SHAPES["f.jsonl.gz"])
    code, out = _invoke("convert", "hf://datasets/org/chats/data", "--from", "auto", "--to", "parquet",
                        "-o", str(tmp_path / "hub.parquet"))  # fmt: skip
    assert code == 0, out
    code, out = _invoke("convert", str(local), "--from", "auto", "--to", "parquet",
                        "-o", str(tmp_path / "l.parquet"))  # fmt: skip
    assert code == 0, out
    hub_t, local_t = pq.read_table(tmp_path / "hub.parquet"), pq.read_table(tmp_path / "l.parquet")
    assert hub_t.num_rows == local_t.num_rows == 2 * len(RECORDS)
    drop = ["source_file", "provenance", "conversation_id"]  # they name the file (the id hashes it)
    assert hub_t.drop_columns(drop).equals(local_t.drop_columns(drop))
    files = sorted(set(hub_t.column("source_file").to_pylist()))
    assert files == ["hf://datasets/org/chats/data/test.jsonl.gz", "hf://datasets/org/chats/data/train.jsonl"]


# --- a real S3 server ---------------------------------------------------------------------------


def test_convert_reads_a_directory_from_s3_like_local_files(s3: str, tmp_path: Path) -> None:
    _upload(f"{s3}/logs", {**SHAPES, "nested/more.jsonl": JSONL, ".hidden.jsonl": b"garbage\n"})
    local = tmp_path / "logs"
    (local / "nested").mkdir(parents=True)
    for name, data in {**SHAPES, "nested/more.jsonl": JSONL}.items():
        (local / name).write_bytes(data)
    code, out = _invoke("convert", f"{s3}/logs/", "--from", "auto", "--to", "chat",
                        "-o", str(tmp_path / "s3.jsonl"), "--report", str(tmp_path / "s3.json"))  # fmt: skip
    assert code == 0, out
    code, out = _invoke("convert", str(local), "--from", "auto", "--to", "chat",
                        "-o", str(tmp_path / "l.jsonl"))  # fmt: skip
    assert code == 0, out
    # byte for byte, but for the ids chatlake generates (a tool call without an id): they hash the
    # record's file name and line, so that the same record in two files gets two ids
    assert _ids_out((tmp_path / "s3.jsonl").read_bytes()) == _ids_out((tmp_path / "l.jsonl").read_bytes())
    report = orjson.loads((tmp_path / "s3.json").read_bytes())
    assert [i["path"] for i in report["inputs"]][:2] == [f"{s3}/logs/array.json", f"{s3}/logs/doc.json"]
    assert report["read"] == 1 + (len(SHAPES) - 1 + 1) * len(RECORDS)


def test_a_job_shards_a_remote_file_by_byte_ranges(s3: str, tmp_path: Path) -> None:
    """shard_records cuts a JSONL object into byte ranges read by ranged GETs: the same shards and
    output bytes as the local file; Parquet is read by row groups the same way."""
    big = JSONL * 20
    _upload(s3, {"big.jsonl": big})
    (tmp_path / "big.jsonl").write_bytes(big)
    for name, path in (("remote", f"{s3}/big.jsonl"), ("local", str(tmp_path / "big.jsonl"))):
        text = (f'name = "j"\n[[inputs]]\npath = "{path}"\nformat = "auto"\n'
                f'[output]\npath = "{name}"\ntarget = "chat"\nshard_records = 7\n')  # fmt: skip
        (tmp_path / f"{name}.toml").write_text(text)
        code, out = _invoke("run", str(tmp_path / f"{name}.toml"), "-q")
        assert code == 0, out
    remote = sorted((tmp_path / "remote" / "output").iterdir())
    local = sorted((tmp_path / "local" / "output").iterdir())
    assert len(remote) == len(local) > 2
    assert [_ids_out(p.read_bytes()) for p in remote] == [_ids_out(p.read_bytes()) for p in local]
    # the canonical Parquet written above, read back from S3 by row ranges
    _upload(s3, {"c.parquet": (tmp_path / "local" / "conversations" / "part-00000.parquet").read_bytes()})
    job = convert_job([f"{s3}/c.parquet"], "auto", "parquet", str(tmp_path / "p"))
    assert [(f.container, f.format) for f in job.files] == [("parquet", "canonical")]


def test_s3_errors_name_the_url(s3: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code, out = _invoke("convert", f"{s3}/none.jsonl", "--from", "chat", "--to", "chat",
                        "-o", str(tmp_path / "o"))  # fmt: skip
    assert code == 2 and f"{s3}/none.jsonl" in out and "matches no file" in out
    code, out = _invoke("convert", "s3://no-such-bucket-x/a.jsonl", "--from", "chat", "--to", "chat",
                        "-o", str(tmp_path / "o"))  # fmt: skip
    assert code == 2 and "s3://no-such-bucket-x/a.jsonl" in out
    _upload(s3, {"a.jsonl": JSONL})
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    fsspec.get_filesystem_class("s3").clear_instance_cache()
    code, out = _invoke("convert", f"{s3}/a.jsonl", "--from", "auto", "--to", "chat",
                        "-o", str(tmp_path / "o"))  # fmt: skip
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert out.startswith(f"Error: {s3}/a.jsonl: access denied (") and "AWS_SECRET_ACCESS_KEY" in out
    assert "wrong" not in out  # the secret is never printed


def test_a_job_file_reads_s3_globs(s3: str, tmp_path: Path) -> None:
    _upload(s3, {"a/1.jsonl": JSONL, "a/2.jsonl": JSONL, "b/3.jsonl": JSONL})
    job = parse_job(f'name = "j"\n[[inputs]]\npath = "{s3}/a/*.jsonl"\nformat = "auto"\n'
                    '[output]\npath = "run"\ntarget = "chat"\n', tmp_path)  # fmt: skip
    assert [f.url for f in job.files] == [f"{s3}/a/1.jsonl", f"{s3}/a/2.jsonl"]
