"""The run summary and manifest say which exact codec decoded a run and which lines fell back to Python."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest
from rich.console import Console

from pipeline import codec
from pipeline.engine import run_job
from pipeline.engine.report import print_summary
from pipeline.jobs import load_job
from tests.cases import CASES
from tests.engine.helpers import file_hashes, write_job, write_jsonl

pytestmark = pytest.mark.skipif(not codec.status().native, reason="needs the compiled extension built")

# Lines the compiled decoder hands to the Python one (tests/native/test_differential.py), by reason;
# the Python decoder accepts them all.
FALLBACK = {
    "duplicate_key": [
        b'{"input": [], "a": 1, "a": 2}',
        b'{"input": [{"role": "user", "content": "x", "role": "user"}]}',
    ],
    "depth": [b'{"input": [], "x": ' + b"[" * 200 + b"]" * 200 + b"}"],
    "number": [b'{"input": [], "n": 123456789012345678901234}'],
}


def _job(tmp_path: Path, engine: dict[str, Any], out: str = "run") -> Path:
    good = [orjson.dumps(r) for _, r in CASES["responses"]]
    bad = [line for lines in FALLBACK.values() for line in lines]
    lines = [x for pair in zip(good, bad + [b""] * len(good), strict=False) for x in pair if x]
    write_jsonl(tmp_path / "in.jsonl", lines)
    return write_job(
        tmp_path / f"{out}.toml",
        [{"path": "in.jsonl", "format": "responses"}],
        {"path": out, "target": "chat", "shard_records": 3},
        engine=engine,
    )


def _manifest(run: Path) -> list[dict[str, Any]]:
    return orjson.loads((run / "manifest.json").read_bytes())["shards"]


@pytest.mark.parametrize("workers", [1, 2])
def test_fallback_lines_are_counted_per_shard_and_in_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    monkeypatch.delenv(codec.ENV, raising=False)
    summary = run_job(load_job(_job(tmp_path, {"workers": workers})))
    expected = {reason: len(lines) for reason, lines in FALLBACK.items()}
    assert summary["codec"] == "native"
    assert summary["fallback_by_reason"] == dict(sorted(expected.items(), key=lambda kv: -kv[1]))
    assert summary["native_fallback"] == sum(expected.values()) == 4
    shards = _manifest(tmp_path / "run")
    assert len(shards) > 2 and summary["codec_shards"] == {"native": len(shards)}
    assert all(s["codec"] == "native" for s in shards)  # what each worker process ran
    per_shard: dict[str, int] = {}
    for s in shards:
        for reason, n in s["native_fallback"].items():
            per_shard[reason] = per_shard.get(reason, 0) + n
    assert per_shard == expected
    assert summary["read"] == summary["written"] + summary["rejected"]

    out = io.StringIO()
    print_summary(summary, Console(file=out, width=200))
    printed = out.getvalue()
    assert (
        "4 lines read by the Python decoder instead of the compiled one (same result, slower): 2 with a "
        "repeated key, 1 nested deeper than 128, 1 with a number kept as written" in printed
    )
    assert "codec native" not in printed and "duplicate_key" not in printed


@pytest.mark.parametrize("workers", [1, 2])
def test_chatlake_native_0_reaches_every_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    monkeypatch.delenv(codec.ENV, raising=False)
    native = run_job(load_job(_job(tmp_path, {"workers": workers}, "native")))
    monkeypatch.setenv(codec.ENV, "0")
    python = run_job(load_job(_job(tmp_path, {"workers": workers}, "python")))
    assert python["codec"] == "python" and python["codec_detail"].startswith("python: CHATLAKE_NATIVE=0")
    assert python["native_fallback"] == 0 and python["fallback_by_reason"] == {}
    shards = _manifest(tmp_path / "python")
    assert {s["codec"] for s in shards} == {"python"}  # spawned workers inherited the parent's choice
    assert all(s["native_fallback"] == {} for s in shards)
    out = io.StringIO()
    print_summary(python, Console(file=out, width=200))
    assert "Python codec" not in out.getvalue()
    # the same bytes either way (the manifest differs: it names the codec)
    hashes = {k: v for k, v in file_hashes(tmp_path / "python").items() if k != "manifest.json"}
    assert hashes == {k: v for k, v in file_hashes(tmp_path / "native").items() if k != "manifest.json"}
    assert native["fallback_by_reason"] and native["written"] == python["written"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ray_workers_use_the_drivers_codec(
    local_ray: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the session's Ray started before the variable was set: its workers only see it through the engine
    monkeypatch.delenv(codec.ENV, raising=False)
    native = run_job(load_job(_job(tmp_path, {"kind": "ray", "workers": 2}, "native")))
    assert native["native_fallback"] == 4 and native["codec_shards"] == {"native": native["shards"]}
    monkeypatch.setenv(codec.ENV, "0")
    python = run_job(load_job(_job(tmp_path, {"kind": "ray", "workers": 2}, "python")))
    assert python["codec"] == "python" and python["native_fallback"] == 0
    assert python["codec_shards"] == {"python": python["shards"]}


def test_threads_lines_are_printed_once_for_a_single_file(tmp_path: Path) -> None:
    """The summary of ``transform -o FILE --step threads``: one threads line per dataset (the
    single-file layout printed them twice)."""
    from click.testing import CliRunner

    from pipeline.cli import _single_file, cli

    src = write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for _, r in CASES["responses"]])
    canonical = tmp_path / "c.parquet"
    res = CliRunner().invoke(cli, ["convert", str(src), "--from", "responses", "--to", "parquet", "-o",
                                   str(canonical), "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    summary, _ = _single_file([str(canonical)], "parquet", "parquet", tmp_path / "t.parquet", None,
                              steps=["threads"], quiet=True)  # fmt: skip
    assert summary["threads"] and "output" in summary
    text = io.StringIO()
    print_summary(summary, Console(file=text, width=200))
    lines = text.getvalue().splitlines()
    assert sum(line.startswith("threads (") for line in lines) == len(summary["threads"]), lines
