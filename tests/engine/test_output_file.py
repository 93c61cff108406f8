"""A single-file output (``convert -o FILE``, ``transform -o FILE``) read back by ``verify``, ``sql``,
``audit`` and ``export-hf`` (pipeline/engine/output_file.py): FILE.manifest.json lists what the command
put in place, the commands find the side files through it, a Parquet FILE answers every audit as the
same job's run directory does, a wire FILE answers what it can and says in one line what it cannot, and
a FILE chatlake did not write (or without its side files) is one line, exit 2, saying what was expected."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline import synth
from pipeline.cli import cli
from pipeline.engine.output_file import manifest_path, open_output, verify

NOT_CHATLAKE = ".manifest.json is not beside it"


def _invoke(*args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr; no user error may end in a traceback."""
    res = CliRunner().invoke(cli, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output, res.output
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same input written four ways: a run directory (Parquet target), ``convert --to parquet -o``,
    ``convert --to chat -o`` (JSON lines) and ``transform -o`` (Parquet)."""
    base = tmp_path_factory.mktemp("outputs")
    src = base / "in.jsonl"
    synth.write_jsonl(src, "responses", 300, seed=3)
    with open(src, "ab") as f:
        f.write(b'{"input": 7}\nnot json\n')  # two rejected records: every side file has rows
    out = {"run": base / "run", "parquet": base / "c.parquet", "jsonl": base / "c.jsonl",
           "transform": base / "t.parquet", "chat_run": base / "chat_run"}  # fmt: skip
    for args in (
        ["convert", str(src), "--from", "responses", "--to", "parquet", "--run-dir", str(out["run"])],
        ["convert", str(src), "--from", "responses", "--to", "chat", "--run-dir", str(out["chat_run"])],
        ["convert", str(src), "--from", "responses", "--to", "parquet", "-o", str(out["parquet"])],
        ["convert", str(src), "--from", "responses", "--to", "chat", "-o", str(out["jsonl"])],
        ["transform", str(out["parquet"]), "--step", "turns", "-o", str(out["transform"])],
    ):
        code, stdout, stderr = _invoke(*args, "-q")
        assert code == 0, stdout + stderr
    return out


@pytest.fixture
def copy(made: dict[str, Path], tmp_path: Path):  # type: ignore[no-untyped-def]
    """A copy of one single-file output with its side files, to damage."""

    def _copy(kind: str) -> Path:
        src = made[kind]
        for p in src.parent.glob(src.name + "*"):
            shutil.copy(p, tmp_path / p.name)
        return tmp_path / src.name

    return _copy


@pytest.mark.parametrize("kind", ["parquet", "jsonl", "transform"])
def test_the_manifest_lists_every_file_with_its_sha256_and_rows_and_verify_checks_them(
    made: dict[str, Path],
    kind: str,
    copy,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    file = made[kind]
    doc = orjson.loads(manifest_path(file).read_bytes())
    present = sorted(p.name for p in file.parent.glob(file.name + "*") if p != manifest_path(file))
    assert sorted(f["name"] for f in doc["files"].values()) == present
    for f in doc["files"].values():
        data = (file.parent / f["name"]).read_bytes()
        assert f["bytes"] == len(data) and f["sha256"] == hashlib.sha256(data).hexdigest()
        rows = (
            data.count(b"\n")
            if f["format"] == "jsonl"
            else pq.ParquetFile(file.parent / f["name"]).metadata.num_rows
        )
        assert f["rows"] == rows
    s = doc["summary"]
    assert (
        doc["files"]["output"]["rows"] == s["written"] and doc["files"]["rejected"]["rows"] == s["rejected"]
    )
    assert (s["read"], s["rejected"]) == ((302, 2) if kind != "transform" else (300, 0))
    code, stdout, _ = _invoke("verify", str(file))
    assert code == 0 and stdout.startswith(f"OK {file}: ") and f"written {s['written']}" in stdout, stdout

    damaged = copy(kind)  # a flipped byte: same size, other sha256
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 1
    damaged.write_bytes(bytes(data))
    rejected = damaged.with_name(doc["files"]["rejected"]["name"])
    rejected.unlink()
    code, stdout, _ = _invoke("verify", str(damaged))
    assert code == 1, stdout
    assert (
        f"{damaged.name} (output): its sha256 differs" in stdout
        and f"{rejected.name} (rejected) is missing" in stdout
    )
    assert len(verify(open_output(damaged))) == 2


def _audit_json(target: Path, *args: str) -> tuple[dict[str, object], str]:
    code, stdout, stderr = _invoke("audit", str(target), "--format", "json", *args)
    assert code == 0, stdout + stderr
    return orjson.loads(stdout), stderr


@pytest.mark.parametrize("kind", ["parquet", "transform"])
def test_a_parquet_file_answers_every_audit_query_as_its_run_directory_does(
    made: dict[str, Path], kind: str
) -> None:
    got, stderr = _audit_json(made[kind])
    assert stderr == ""
    want, _ = _audit_json(made["run"])
    if kind == "parquet":
        assert got == want
    else:  # the turns step adds columns, not records
        assert got["run_counts_mismatch"] == [] and got["rejected_records_by_reason"] == []
    code, stdout, _ = _invoke(
        "sql", str(made[kind]), "SELECT count(*) AS n FROM conversations", "--format", "csv"
    )
    assert code == 0 and stdout.splitlines() == ["n", "300"], stdout


def test_a_wire_file_audits_its_losses_and_rejections_and_says_what_it_cannot(
    made: dict[str, Path], tmp_path: Path
) -> None:
    got, stderr = _audit_json(made["jsonl"])
    want, _ = _audit_json(made["chat_run"])
    assert got["rejected_records_by_reason"] == want["rejected_records_by_reason"]
    assert got["target_rule_repairs_and_rejections"] == want["target_rule_repairs_and_rejections"]
    missing = sorted(set(want) - set(got))
    assert "worst_records" in missing and "run_counts_mismatch" in missing
    lines = stderr.splitlines()
    assert sorted(line.split(":", 1)[0] for line in lines) == missing
    assert all("not available for a single-file output in a wire format" in line for line in lines)

    code, stdout, stderr = _invoke("audit", str(made["jsonl"]), "-Q", "worst_records")
    assert code == 2 and stdout == "" and len(stderr.splitlines()) == 1 and "not available" in stderr, stderr
    code, stdout, stderr = _invoke("sql", str(made["jsonl"]), "SELECT * FROM records")
    assert code == 2 and len(stderr.splitlines()) == 1 and "`records`" in stderr, stderr
    code, stdout, _ = _invoke(
        "sql", str(made["jsonl"]), "SELECT count(*) AS n FROM losses", "--format", "csv"
    )
    losses = pq.ParquetFile(made["jsonl"].with_name("c.jsonl.losses.parquet")).metadata.num_rows
    assert code == 0 and stdout.splitlines() == ["n", str(losses)] and losses > 0

    html = tmp_path / "r.html"
    code, stdout, stderr = _invoke("audit", str(made["jsonl"]), "--html", str(html))
    assert code == 0, stderr
    page = html.read_text()
    assert "not available for a single-file output" in page and "loss_totals_by_direction" in page
    code, _, stderr = _invoke(
        "audit", str(made["jsonl"]), "--html", str(made["jsonl"].with_name("c.jsonl.rejected.jsonl"))
    )
    assert code == 2 and "would overwrite a file of" in stderr, stderr


def test_export_hf_of_a_parquet_file_is_the_export_of_its_run_directory(
    made: dict[str, Path], tmp_path: Path
) -> None:
    for name, source in (("from_file", made["parquet"]), ("from_run", made["run"])):
        code, stdout, stderr = _invoke("export-hf", str(source), str(tmp_path / name), "-q")
        assert code == 0 and "exported 300 rows" in stdout, stdout + stderr
    tables = [pq.read_table(tmp_path / name / "data").to_pylist() for name in ("from_file", "from_run")]
    assert tables[0] == tables[1] and len(tables[0]) == 300
    card = (tmp_path / "from_file" / "README.md").read_text()
    assert "read 302, written 300, rejected 2" in card  # the loss summary comes from FILE.manifest.json
    code, _, stderr = _invoke("export-hf", str(made["jsonl"]), str(tmp_path / "wire"))
    assert code == 2 and len(stderr.splitlines()) == 1 and "canonical table" in stderr, stderr
    assert not (tmp_path / "wire").exists()


COMMANDS = [("verify",), ("sql", "SELECT 1"), ("audit",), ("audit", "--html", "r.html"), ("export-hf", "hf")]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_a_file_chatlake_did_not_write_or_without_its_side_files_is_one_line_exit_2(
    made: dict[str, Path], command: tuple[str, ...], tmp_path: Path
) -> None:
    mine = tmp_path / "mine.jsonl"
    mine.write_text('{"messages": []}\n')
    bare = tmp_path / "c.parquet"  # chatlake's FILE, copied without its side files
    shutil.copy(made["parquet"], bare)
    renamed = tmp_path / "d.parquet"  # a FILE whose manifest names another file
    shutil.copy(made["parquet"], renamed)
    shutil.copy(manifest_path(made["parquet"]), manifest_path(renamed))
    for file, said in ((mine, NOT_CHATLAKE), (bare, NOT_CHATLAKE), (renamed, "describes 'c.parquet'")):
        name, *rest = command
        rest = [str(tmp_path / r) if r in ("r.html", "hf") else r for r in rest]
        code, stdout, stderr = _invoke(name, str(file), *rest)
        assert code == 2 and stdout == "" and len(stderr.splitlines()) == 1, stdout + stderr
        assert said in stderr and "`convert -o FILE`" in stderr, stderr
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "hf").exists()


def test_a_side_file_gone_is_named_by_the_readers_and_verify(made: dict[str, Path], copy) -> None:  # type: ignore[no-untyped-def]
    file = copy("jsonl")
    file.with_name("c.jsonl.losses.parquet").unlink()
    for args in (("sql", str(file), "SELECT 1"), ("audit", str(file))):
        code, stdout, stderr = _invoke(*args)
        assert code == 2 and "c.jsonl.losses.parquet (losses) is missing" in stderr, stderr
    code, stdout, _ = _invoke("verify", str(file))
    assert code == 1 and "c.jsonl.losses.parquet (losses) is missing" in stdout, stdout
