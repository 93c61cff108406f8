"""Outputs at URLs (pipeline/engine/remote.py, docs/storage.md) on a real S3 server (SeaweedFS on
loopback, tests/s3_server.py): the same bytes as the same command writing local files, nothing under a
final name until it is complete, a run killed mid-way resumes from the store's manifest, and an output
URL that cannot be used is one line, exit 2, before any work."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import fsspec
import orjson
import pytest
from click.testing import CliRunner

from pipeline import synth
from pipeline.cli import cli
from pipeline.engine import manifest
from pipeline.engine.writers import FOLDERS
from pipeline.storage import filesystem, listing, read_bytes, work_dir
from tests.engine.helpers import file_hashes, write_job
from tests.test_cli_inputs import JSONL, SHAPES
from tests.test_storage import _ids_out, _upload


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The local working copies of this test's outputs (subprocesses inherit it)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("CHATLAKE_CACHE", str(cache))
    return cache


def _invoke(*args: str) -> tuple[int, str]:
    """Exit code and everything printed; no user error may end in a traceback."""
    res = CliRunner().invoke(cli, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output, res.output
    return res.exit_code, res.output


def _get(url: str) -> bytes:
    data = read_bytes(url)
    assert data is not None, f"{url} is missing"
    return data


def _hashes(url: str) -> dict[str, str]:
    """relative path -> sha256 of every object under ``url`` (as file_hashes does for a directory)."""
    import hashlib

    return {name: hashlib.sha256(_get(f"{url}/{name}")).hexdigest() for name in listing(url)}


def test_convert_from_s3_to_s3_gives_the_bytes_of_local_files(s3: str, tmp_path: Path) -> None:
    """The acceptance command: a directory on the store, --from auto, a Chat file on the store."""
    files = {**SHAPES, "nested/more.jsonl": JSONL, "bad.jsonl": b'{"input": 7}\nnot json\n'}
    _upload(f"{s3}/logs", files)
    local = tmp_path / "logs"
    for name, data in files.items():
        (local / name).parent.mkdir(parents=True, exist_ok=True)
        (local / name).write_bytes(data)
    out = f"{s3}/out/chat.jsonl"
    code, said = _invoke("convert", f"{s3}/logs/", "--from", "auto", "--to", "chat", "-o", out)
    assert code == 0, said
    code, said = _invoke(
        "convert", str(local), "--from", "auto", "--to", "chat", "-o", str(tmp_path / "chat.jsonl")
    )
    assert code == 0, said
    sides = ("rejected.jsonl", "losses.parquet", "manifest.json")
    names = {"chat.jsonl", *(f"chat.jsonl.{side}" for side in sides)}
    assert set(listing(f"{s3}/out")) == names  # the files and nothing else (no staging on the store)
    got, want = _get(out), (tmp_path / "chat.jsonl").read_bytes()
    assert want.count(b"\n") > 10 and _ids_out(got) == _ids_out(want)  # ids hash the file's name
    rejected = _get(f"{out}.rejected.jsonl")
    local_rejected = (tmp_path / "chat.jsonl.rejected.jsonl").read_bytes()
    assert rejected.count(b"\n") == local_rejected.count(b"\n") >= 2

    def same(data: bytes, prefix: str) -> bytes:  # but for the file names and the ids that hash them
        return re.sub(rb'"conversation_id":"[0-9a-f]{32}"', b"ID", data.replace(prefix.encode(), b""))

    assert same(rejected, f"{s3}/logs/") == same(local_rejected, f"{local}/")
    assert f"{s3}/logs/bad.jsonl".encode() in rejected  # the rejected record names its URL
    assert not any((tmp_path / "cache").rglob("*.jsonl"))  # the local copies are gone once uploaded


def test_transform_writes_parquet_to_s3(s3: str, tmp_path: Path) -> None:
    _upload(s3, {"in.jsonl": JSONL})
    (tmp_path / "in.jsonl").write_bytes(JSONL)
    steps = ["--step", "turns", "--from", "auto"]
    code, said = _invoke("transform", f"{s3}/in.jsonl", *steps, "-o", f"{s3}/t.parquet", "--strict")
    assert code in (0, 1), said
    code2, _ = _invoke("transform", str(tmp_path / "in.jsonl"), *steps, "-o", str(tmp_path / "t.parquet"),
                           "--strict")  # fmt: skip
    assert code2 == code  # --strict reads the first rejected record back from the store
    import pyarrow.parquet as pq

    with fsspec.open(f"{s3}/t.parquet", "rb") as f:
        remote = pq.read_table(f)
    drop = ["source_file", "provenance", "conversation_id"]  # they name the file (the id hashes it)
    assert remote.drop_columns(drop).equals(pq.read_table(tmp_path / "t.parquet").drop_columns(drop))
    names = {"in.jsonl", "t.parquet", "t.parquet.rejected.parquet", "t.parquet.manifest.json"}
    assert set(listing(s3)) == names


# --- a run directory on the store -----------------------------------------------------------------

N, SHARD = 1_200, 50  # 24 shards: enough that a kill lands mid-way


def _job(tmp_path: Path, name: str, output: str) -> Path:
    return write_job(
        tmp_path / f"{name}.toml",
        [{"path": str(tmp_path / "in.jsonl"), "format": "responses"}],
        {"path": output, "target": "chat", "shard_records": SHARD},
        engine={"workers": 2, "chunk_bytes": 64 << 10},
    )


def _run(job: Path, **kw: object) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "pipeline", "run", str(job), "--quiet", "--no-catalog"]
    return subprocess.Popen(cmd, cwd=job.parent, **kw)  # type: ignore[call-overload]


def _listed(url: str) -> int:
    data = read_bytes(f"{url}/manifest.json")
    return len(orjson.loads(data)["shards"]) if data else 0


@pytest.mark.parametrize("where", ["elsewhere", "here"])
def test_a_run_to_s3_killed_and_resumed_gives_the_same_files(s3: str, tmp_path: Path, where: str) -> None:
    """Resumed on another machine (only the store is left) or on this one (its working copy holds
    shards finished after the last upload: the store is the truth, they are redone)."""
    synth.write_jsonl(tmp_path / "in.jsonl", "responses", N, 3)
    total = N // SHARD
    ref = _run(_job(tmp_path, "ref", "ref"))
    assert ref.wait(timeout=600) == 0
    want = file_hashes(tmp_path / "ref")
    assert len(want) == len(FOLDERS) * total + 1  # every folder x shards + manifest.json

    url = f"{s3}/runs/r1"
    job = _job(tmp_path, "ref", url)  # the same job name: the manifests are the same bytes
    proc = _run(job, start_new_session=True)
    deadline = time.monotonic() + 600
    while _listed(url) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the job finished before it could be killed; make it bigger"
    os.killpg(proc.pid, signal.SIGKILL)  # the whole process group, like a machine going down
    proc.wait()
    on_store = orjson.loads(read_bytes(f"{url}/manifest.json") or b"{}")
    done_at_kill = len(on_store["shards"])
    assert 0 < done_at_kill < total, done_at_kill
    names = set(listing(url))
    assert "summary.json" not in names
    for entry in on_store["shards"]:  # the store's manifest lists only files that are there, whole
        for f in entry["files"].values():
            assert listing(url)[f["path"]] == f["bytes"], f
    import shutil

    if where == "elsewhere":
        shutil.rmtree(work_dir(url, "runs"))

    resumed = _run(job)
    assert resumed.wait(timeout=600) == 0
    summary = orjson.loads(read_bytes(f"{url}/summary.json") or b"{}")
    assert summary["shards_resumed"] >= done_at_kill and summary["shards"] == total
    assert summary["read"] == N == summary["written"] + summary["rejected"]
    assert summary["run_dir"] == url
    got = _hashes(url)
    assert got.pop("summary.json") and got == want
    assert not work_dir(url, "runs").exists()  # the working copy is removed once all is on the store


def test_fresh_on_s3_deletes_only_chatlake_files(s3: str, tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_bytes(JSONL)
    url = f"{s3}/runs/fresh"
    job = _job(tmp_path, "j", url)
    code, said = _invoke("run", str(job), "-q", "--no-catalog")
    assert code == 0, said
    first = _hashes(url)
    _upload(url, {"notes.txt": b"mine"})
    code, said = _invoke("run", str(job), "-q", "--no-catalog", "--fresh")
    assert code == 0, said
    again = _hashes(url)
    assert again.pop("notes.txt") and set(again) == set(first)  # the user's file is kept
    _upload(f"{s3}/other", {"data.txt": b"x"})
    for fresh in ([], ["--fresh"]):  # a prefix that is not a run: not written into, not emptied
        code, said = _invoke("run", str(_job(tmp_path, "k", f"{s3}/other")), "-q", "--no-catalog", *fresh)
        assert code == 2 and "is not a chatlake run directory" in said, said
    assert listing(f"{s3}/other") == {"data.txt": 1}
    _upload(url, {"output/part-00009.jsonl": b"not listed\n"})  # at a name the run writes
    code, said = _invoke("run", str(job), "-q", "--no-catalog", "--fresh")
    assert (
        code == 2 and "move them away" in said and _get(f"{url}/output/part-00009.jsonl") == b"not listed\n"
    )


def test_another_jobs_run_on_s3_is_refused_naming_the_url(s3: str, tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_bytes(JSONL)
    url = f"{s3}/runs/taken"
    code, said = _invoke("run", str(_job(tmp_path, "a", url)), "-q", "--no-catalog")
    assert code == 0, said
    other = write_job(tmp_path / "b.toml", [{"path": str(tmp_path / "in.jsonl"), "format": "responses"}],
                      {"path": url, "target": "anthropic"}, name="a")  # fmt: skip
    code, said = _invoke("run", str(other), "-q", "--no-catalog")
    assert code == 2 and said.startswith(f"Error: {url} holds a run of another job"), said


# --- an output URL that cannot be used ------------------------------------------------------------


def _in(tmp_path: Path) -> str:
    (tmp_path / "in.jsonl").write_bytes(JSONL)
    return str(tmp_path / "in.jsonl")


def test_refused_credentials_on_output_are_one_line(
    s3: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _in(tmp_path)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
    fsspec.get_filesystem_class("s3").clear_instance_cache()
    convert = ["convert", src, "--from", "chat", "--to", "chat"]
    transform = ["transform", src, "--from", "chat", "--step", "turns"]
    for args in ([*convert, "-o", f"{s3}/o.jsonl"], [*convert, "--run-dir", f"{s3}/run"],
                 [*transform, "-o", f"{s3}/o.parquet"]):  # fmt: skip
        code, said = _invoke(*args)
        assert code == 2 and len(said.strip().splitlines()) == 1, said
        assert said.startswith(f"Error: {args[-1]}: access denied (") and "AWS_SECRET_ACCESS_KEY" in said
        assert "wrong-secret" not in said
    assert not any((tmp_path / "cache").rglob("manifest.json"))  # refused before any work


def test_a_missing_bucket_on_output_is_one_line(s3: str, tmp_path: Path) -> None:
    code, said = _invoke("convert", _in(tmp_path), "--from", "chat", "--to", "chat",
                         "-o", "s3://no-such-bucket-y/o.jsonl")  # fmt: skip
    assert code == 2 and said.startswith("Error: s3://no-such-bucket-y/o.jsonl: no such bucket"), said


def test_an_unreachable_store_on_output_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{closed_port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    fsspec.get_filesystem_class("s3").clear_instance_cache()
    src = _in(tmp_path)
    job = write_job(
        tmp_path / "j.toml", [{"path": src, "format": "chat"}], {"path": "s3://b/runs/r", "target": "chat"}
    )
    for args in (
        ["convert", src, "--from", "chat", "--to", "chat", "-o", "s3://b/o.jsonl"],
        ["run", str(job)],
    ):
        code, said = _invoke(*args)
        assert code == 2 and len(said.strip().splitlines()) == 1, said
        assert "cannot reach the store (" in said and "AWS_ENDPOINT_URL" in said
    fsspec.get_filesystem_class("s3").clear_instance_cache()


def test_a_missing_driver_on_output_names_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_driver(url: str, **kw: object) -> None:
        raise ImportError("Install gcsfs to access Google Storage")

    monkeypatch.setattr(fsspec.core, "url_to_fs", no_driver)
    code, said = _invoke("convert", _in(tmp_path), "--from", "chat", "--to", "chat", "-o", "gs://b/o.jsonl")
    assert (
        code == 2
        and said.strip() == "Error: gs://b/o.jsonl: writing gs:// needs gcsfs: pip install 'chatlake[gcs]'"
    )


def test_an_output_url_naming_no_object_or_an_input_is_refused(s3: str, tmp_path: Path) -> None:
    _upload(s3, {"in.jsonl": JSONL})
    code, said = _invoke(
        "convert", f"{s3}/in.jsonl", "--from", "chat", "--to", "chat", "-o", f"{s3}/in.jsonl"
    )
    assert code == 2 and "would overwrite an input" in said
    code, said = _invoke("convert", f"{s3}/in.jsonl", "--from", "chat", "--to", "chat", "-o", f"{s3}/dir/")
    assert code == 2 and "names no object" in said
    assert set(listing(s3)) == {"in.jsonl"}


# --- reading a run on the store: verify, export-hf ------------------------------------------------


def test_verify_and_export_hf_read_a_run_on_s3_and_write_to_it(s3: str, tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_bytes(JSONL)
    url = f"{s3}/runs/v"
    code, said = _invoke("run", str(_job(tmp_path, "v", url)), "-q")  # registered in the catalog
    assert code == 0, said
    code, said = _invoke("run", str(_job(tmp_path, "v", "local")), "-q", "--no-catalog")
    assert code == 0, said
    for run in (url, "latest"):  # the catalog holds the URL
        code, said = _invoke("verify", run)
        assert code == 0 and said.startswith(f"OK {url}: 1 shards complete and as listed"), said

    query = "SELECT count(*) AS n, sum(length(conversation_id)) AS c FROM conversations"
    code, said = _invoke("sql", url, query, "--format", "csv")
    assert code == 0 and said == _invoke("sql", str(tmp_path / "local"), query, "--format", "csv")[1], said
    code, said = _invoke("export-hf", url, f"{s3}/hf")
    assert code == 0 and re.search(rf"to {s3}/hf; excluded \d+$", said.strip()), said
    code, said = _invoke("export-hf", str(tmp_path / "local"), str(tmp_path / "hf"))
    assert code == 0, said
    local = orjson.loads((tmp_path / "hf" / "export_report.json").read_bytes())
    remote = orjson.loads(_get(f"{s3}/hf/export_report.json"))
    assert remote == local and set(listing(f"{s3}/hf")) == {*local["sha256"], "export_report.json"}
    for name in local["files"]:  # the same dataset files, byte for byte
        assert _get(f"{s3}/hf/{name}") == (tmp_path / "hf" / name).read_bytes()
    code, said = _invoke("export-hf", url, f"{s3}/hf")
    assert code == 2 and "holds an earlier chatlake export; pass --overwrite" in said
    code, said = _invoke("export-hf", url, f"{s3}/hf", "--overwrite")
    assert code == 0, said
    _upload(f"{s3}/mine", {"notes.txt": b"x"})
    code, said = _invoke("export-hf", url, f"{s3}/mine", "--overwrite")
    assert code == 2 and "is not empty and not an export of chatlake" in said and _get(f"{s3}/mine/notes.txt")
    assert not any((tmp_path / "cache").rglob("*.parquet"))  # read copies and exports are removed

    fs, path = filesystem(f"{url}/output/part-00000.jsonl")
    fs.pipe_file(path, b"{}\n")  # damaged on the store
    code, said = _invoke("verify", url)
    assert code == 1 and said.startswith(f"{url}: ") and "output/part-00000.jsonl" in said, said


def test_export_hf_overwrite_at_s3_deletes_only_listed_unchanged_objects(s3: str, tmp_path: Path) -> None:
    """--overwrite to a URL checks what a local OUT_DIR gets checked for: every object under it is
    the report's with its size and sha256 (re-read), else exit 2 before any work and nothing
    touched: a card edited after the export, or a planted report that lists a file of the user's
    (it used to be deleted: only names were compared). After the upload, what the old export left
    is deleted only if the old report listed it and it is unchanged (a race is left and named)."""
    import hashlib

    from pipeline.sinks.hf_dataset import clear_at
    from pipeline.storage import upload_bytes

    (tmp_path / "in.jsonl").write_bytes(JSONL)
    assert _invoke("run", str(_job(tmp_path, "v", "local")), "-q", "--no-catalog")[0] == 0
    run = str(tmp_path / "local")
    code, said = _invoke("export-hf", run, f"{s3}/hf")
    assert code == 0, said
    upload_bytes(b"# my card, edited\n", f"{s3}/hf/README.md")
    before = _hashes(f"{s3}/hf")
    code, said = _invoke("export-hf", run, f"{s3}/hf", "--overwrite")
    assert code == 2 and "README.md was changed after the export" in said, said
    assert _hashes(f"{s3}/hf") == before

    _upload(f"{s3}/planted", {"notes.txt": b"mine"})  # a report that claims the user's file
    forged = {"sha256": {"notes.txt": "0" * 64}, "bytes": {"notes.txt": 4}}
    upload_bytes(orjson.dumps(forged), f"{s3}/planted/export_report.json")
    code, said = _invoke("export-hf", run, f"{s3}/planted", "--overwrite")
    assert code == 2 and "notes.txt was changed after the export" in said, said
    assert _get(f"{s3}/planted/notes.txt") == b"mine"

    # an object changed between the check and the delete: left alone and named
    good = {"sha256": {"old.parquet": hashlib.sha256(b"old").hexdigest()}, "bytes": {"old.parquet": 3}}
    _upload(f"{s3}/race", {"old.parquet": b"new", "gone.parquet": b"old", "new.parquet": b"n"})
    good["sha256"]["gone.parquet"], good["bytes"]["gone.parquet"] = good["sha256"]["old.parquet"], 3
    listed = {k: {"sha256": v, "bytes": good["bytes"][k]} for k, v in good["sha256"].items()}
    assert clear_at(f"{s3}/race", listed, {"new.parquet"}) == ["old.parquet"]
    assert set(listing(f"{s3}/race")) == {"old.parquet", "new.parquet"}


def test_verify_sql_audit_and_export_hf_read_a_single_file_on_s3(s3: str, tmp_path: Path) -> None:
    """The FILE of ``convert -o URL`` is read back like a local one: its side files found through
    FILE.manifest.json on the store (uploaded before FILE), the answers those of the local FILE."""
    src = _in(tmp_path)
    for target, name in (("chat", "c.jsonl"), ("parquet", "c.parquet")):
        for where in (f"{s3}/out/{name}", str(tmp_path / name)):
            code, said = _invoke("convert", src, "--from", "chat", "--to", target, "-o", where, "-q")
            assert code == 0, said
        url = f"{s3}/out/{name}"
        assert _get(f"{url}.manifest.json")
        code, said = _invoke("verify", url)
        assert code == 0 and said.startswith(f"OK {url}: "), said
        query = "SELECT count(*) AS n, count(DISTINCT reason) AS r FROM rejected"
        local = _invoke("sql", str(tmp_path / name), query, "--format", "csv")
        assert _invoke("sql", url, query, "--format", "csv") == local and local[0] == 0
        audit = ("-Q", "rejected_records_by_reason", "--format", "json")
        assert _invoke("audit", url, *audit) == _invoke("audit", str(tmp_path / name), *audit)
    code, said = _invoke("export-hf", f"{s3}/out/c.parquet", str(tmp_path / "hf"), "-q")
    assert code == 0 and "exported" in said, said
    code, said = _invoke("export-hf", f"{s3}/out/c.jsonl", str(tmp_path / "hf2"))
    assert code == 2 and "canonical table" in said, said
    fs, path = filesystem(f"{s3}/out/c.jsonl.rejected.jsonl")
    fs.rm_file(path)  # a side file gone from the store
    code, said = _invoke("verify", f"{s3}/out/c.jsonl")
    assert code == 1 and said.startswith(f"{s3}/out/c.jsonl: 1 problem"), said
    assert "c.jsonl.rejected.jsonl (rejected) is missing" in said, said
    code, said = _invoke("verify", f"{s3}/out/nothing.jsonl")
    assert code == 2, said
    assert not any((tmp_path / "cache").rglob("*.jsonl"))  # read copies are removed


def test_a_file_written_to_a_hub_shaped_repository(hub: Path, tmp_path: Path) -> None:
    """hf:// outputs go through huggingface_hub's filesystem like any fsspec store: here a local
    folder shaped like the Hub stands for it (writing to the real Hub needs the network and a token)."""
    src = _in(tmp_path)
    code, said = _invoke(
        "convert", src, "--from", "chat", "--to", "parquet", "-o", "hf://datasets/org/chats/out/c.parquet"
    )
    assert code == 0, said
    code, said = _invoke(
        "convert", src, "--from", "chat", "--to", "parquet", "-o", str(tmp_path / "c.parquet")
    )
    assert code == 0, said
    assert (hub / "out" / "c.parquet").read_bytes() == (tmp_path / "c.parquet").read_bytes()
    names = ["c.parquet", "c.parquet.manifest.json", "c.parquet.rejected.parquet"]
    assert sorted(p.name for p in (hub / "out").iterdir()) == names


# The CLI with small shards: several shards per input, so a kill lands between finished ones.
RUNNER = (
    "import sys, pipeline.cli as c; c.SINGLE_FILE_SHARD_RECORDS = 100; "
    "sys.argv = ['chatlake', *sys.argv[1:]]; c.main()"
)


def test_convert_to_s3_killed_leaves_nothing_on_the_store_and_resumes(s3: str, tmp_path: Path) -> None:
    synth.write_jsonl(tmp_path / "in.jsonl", "responses", N, 5)
    out = f"{s3}/out/chat.jsonl"
    args = [
        "convert",
        str(tmp_path / "in.jsonl"),
        "--from",
        "responses",
        "--to",
        "chat",
        "--workers",
        "2",
        "-q",
    ]
    ref = subprocess.run([sys.executable, "-c", RUNNER, *args, "-o", str(tmp_path / "chat.jsonl")],
                         capture_output=True, timeout=600, check=False)  # fmt: skip
    assert ref.returncode == 0, ref.stderr.decode()
    cmd = [sys.executable, "-c", RUNNER, *args, "-o", out]
    proc = subprocess.Popen(cmd, start_new_session=True)
    staging = work_dir(out, "files") / "chat.jsonl.partial" / "manifest.json"
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        try:  # finished shards are in the journal until the end (manifest.read folds it in)
            if staging.is_file() and len(manifest.read(staging.parent).get("shards", [])) >= 2:
                break
        except (OSError, ValueError):  # caught between two writes: look again
            pass
        time.sleep(0.02)
    assert proc.poll() is None, "the command finished before it could be killed; make it bigger"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert listing(f"{s3}/out") == {}  # nothing under a final name, not even a side file
    resumed = subprocess.run(cmd, capture_output=True, timeout=600, check=False)
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert _get(out) == (tmp_path / "chat.jsonl").read_bytes()  # the same input path: the same bytes
    assert _get(f"{out}.rejected.jsonl") == (tmp_path / "chat.jsonl.rejected.jsonl").read_bytes()
    assert not work_dir(out, "files").exists()  # the staging is gone once the files are on the store


def test_commands_reading_parquet_at_a_url_exit_cleanly_every_time(s3: str, tmp_path: Path) -> None:
    """Arrow reading a Python file object (a URL's) on its own threads left them running at exit,
    which aborted the process ("terminate called without an active exception", rc 134) in some
    runs: each command that reads Parquet from a URL runs several times in a fresh process and
    must exit with its code every time."""
    src = _in(tmp_path)
    lake = f"{s3}/in.parquet"
    code, said = _invoke("convert", src, "--from", "chat", "--to", "parquet", "-o", lake, "-q")
    assert code == 0, said
    commands = [
        ["convert", lake, "--from", "parquet", "--to", "chat", "-o", str(tmp_path / "o.jsonl")],
        ["transform", lake, "--step", "turns", "-o", str(tmp_path / "t.parquet")],
        ["transform", f"{s3}/in.jsonl", "--from", "auto", "--step", "turns", "-o", f"{s3}/s.parquet",
         "--strict"],  # reads the first rejected record back from the store
    ]
    _upload(s3, {"in.jsonl": JSONL})
    for args in commands:
        codes = set()
        for _ in range(4):
            cmd = [sys.executable, "-m", "pipeline", *args, "-q"]
            proc = subprocess.run(cmd, capture_output=True, timeout=300, check=False)
            assert b"terminate called" not in proc.stderr and proc.returncode in (0, 1), proc.stderr.decode()
            codes.add(proc.returncode)
        assert len(codes) == 1, f"{args[0]}: exit codes {sorted(codes)} over the same runs"


def test_a_summary_the_run_wrote_is_uploaded_whatever_its_mtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``summary.json`` goes to the store when this run wrote it, and not when it is the one pulled
    from the store: told apart by the file itself, not by its mtime against the start time (a
    filesystem that keeps whole seconds, or a clock set back, made a new summary look old)."""
    from types import SimpleNamespace

    from pipeline.engine import remote
    from pipeline.engine.atomic import write_atomic
    from pipeline.engine.rundir import SUMMARY

    uploads: list[str] = []
    monkeypatch.setattr(remote.storage, "upload", lambda path, url: uploads.append(url))
    monkeypatch.setattr(remote.Mirror, "sync", lambda self: None)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    job = SimpleNamespace(run_url="s3://b/run", run_dir=run_dir, fingerprint=lambda: "f", name="j")
    summary = run_dir / SUMMARY
    summary.write_bytes(b'{"pulled": true}\n')  # as pull() leaves it
    mirror = remote.Mirror(job)  # type: ignore[arg-type]
    mirror.summary_pulled = mirror._summary_signature()
    mirror.finish()
    assert uploads == []  # the pulled summary is not sent back
    write_atomic(summary, b'{"pulled": false}\n')  # this run's, by temp file and rename
    os.utime(summary, (978307200, 978307200))  # an mtime long before the run started
    mirror.finish()
    assert uploads == ["s3://b/run/summary.json"]
