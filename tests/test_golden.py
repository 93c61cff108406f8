"""Golden sha256 table of what ``convert``, ``transform`` and ``run`` write, recomputed and compared.

The table (``tests/golden.json``) pins every output byte; it changes only with a deliberate change
of what chatlake writes (CHANGELOG.md says which), whose entries are re-recorded with it. Parquet
files are hashed by content (schema + rows), not bytes, so the pyarrow version string in the file
does not matter. The loss report of ``convert -o`` is Parquet by default (``FILE.losses.parquet``;
docs/run-layout.md, "The loss report of ``convert -o``"): it is hashed as the JSON lines of its rows
(``writers.ndjson_polars``, what ``--losses jsonl`` writes), so its entries are those of the JSON
lines file it replaced: the same rows, in the same order, with the same values.

Regenerate (only for a deliberate change, and say so in the commit):
``.venv/bin/python -m tests.test_golden --write``.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import cli
from pipeline.engine.single_file import final_paths
from pipeline.engine.writers import ndjson_polars
from pipeline.synth import write_jsonl
from tests.cases import BAD_LINES, CASES
from tests.corpus import CORPUS_DIR, corpus_available, corpus_records

REPO = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).with_name("golden.json")
WIRE = ("responses", "chat", "anthropic")
# A line that is not UTF-8 at all (rejected: the rejected file must keep its bytes).
NOT_UTF8 = b'{"input": "caf\xe9 \xff"}'
ADAPTER_FILES = (
    "codex-rollouts-agentcmd/rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl",
    "claude-code-agentcmd/full-session-four.jsonl",
)
STEPS = ("--step", "role_swap", "--step", "turns", "--step", "compaction")


def _inputs(d: Path) -> dict[str, str]:
    """Write every input under ``d/in`` and return their paths relative to ``d``."""
    (d / "in").mkdir()
    out: dict[str, str] = {}
    for fmt in WIRE:
        lines = [orjson.dumps(rec) for _, rec in CASES[fmt]]
        lines += [line for f, line, _ in BAD_LINES if f == fmt]
        if fmt == "responses":
            lines.append(NOT_UTF8)
        (d / "in" / f"cases-{fmt}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
        out[f"cases-{fmt}"] = f"in/cases-{fmt}.jsonl"
    write_jsonl(d / "in" / "synth-responses.jsonl", "responses", 2000, seed=1)
    out["synth-responses"] = "in/synth-responses.jsonl"
    if corpus_available():
        recs = [r for r in corpus_records() if r.kind == "request"]
        for fmt in WIRE:
            picked = [orjson.dumps(r.record) for r in recs if r.format == fmt][:40]
            (d / "in" / f"corpus-{fmt}.jsonl").write_bytes(b"\n".join(picked) + b"\n")
            out[f"corpus-{fmt}"] = f"in/corpus-{fmt}.jsonl"
        for i, rel in enumerate(ADAPTER_FILES):
            dst = d / "in" / f"adapter-{i}{Path(rel).suffix}"
            dst.write_bytes((CORPUS_DIR / rel).read_bytes())
            out[f"adapter-{i}"] = str(dst.relative_to(d))
    return out


# Commands that must exit 0 (write something) under --on-loss reject.
MUST_WRITE = frozenset(("convert/cases-chat-anthropic-reject",))


def _commands(inp: dict[str, str]) -> Iterator[tuple[str, list[str]]]:
    """``(name, argv)`` in order; a later command may read an earlier one's output."""
    for src in ("cases", "synth", "corpus"):
        for fmt in WIRE:
            name = f"{src}-{fmt}"
            if name not in inp:
                continue
            for tgt in (*WIRE, "parquet"):
                ext = "parquet" if tgt == "parquet" else "jsonl"
                yield f"convert/{name}-{tgt}", ["convert", inp[name], "--from", fmt, "--to", tgt,
                                               "-o", f"out/{name}-{tgt}.{ext}"]  # fmt: skip
            other = "chat" if fmt != "chat" else "anthropic"
            out = f"out/{name}-{other}-reject.jsonl"
            yield f"convert/{name}-{other}-reject", ["convert", inp[name], "--from", fmt, "--to", other,
                                                     "--on-loss", "reject", "-o", out]  # fmt: skip
    for key in ("adapter-0", "adapter-1"):
        if key in inp:
            for tgt in ("chat", "parquet"):
                ext = "parquet" if tgt == "parquet" else "jsonl"
                yield f"convert/{key}-{tgt}", ["convert", inp[key], "--from", "auto", "--to", tgt,
                                              "-o", f"out/{key}-{tgt}.{ext}"]  # fmt: skip
    for fmt in WIRE:
        yield f"transform/cases-{fmt}-parquet", ["transform", f"out/cases-{fmt}-parquet.parquet", *STEPS,
                                                 "-o", f"out/t-cases-{fmt}.parquet"]  # fmt: skip
        yield f"transform/cases-{fmt}-jsonl", ["transform", inp[f"cases-{fmt}"], "--from", fmt, *STEPS,
                                               "-o", f"out/tj-cases-{fmt}.parquet"]  # fmt: skip
    yield "transform/synth", ["transform", "out/synth-responses-parquet.parquet", *STEPS,
                              "-o", "out/t-synth.parquet"]  # fmt: skip


def _files(argv: list[str]) -> dict[str, str]:
    """The files a command writes, by role (output, rejected, losses): docs/run-layout.md's naming rule.

    (0.1.0's convert --to parquet wrote ``OUT.rejected.jsonl``; CHANGELOG.md, 0.2.0.)
    """
    out = argv[argv.index("-o") + 1]
    target = "parquet" if argv[0] == "transform" else argv[argv.index("--to") + 1]
    # the default loss report (--losses parquet) beside a wire target
    return {role: str(p) for role, p in final_paths(Path(out), target, losses_format="parquet").items()}


def digest(path: Path, root: Path, drop_ids: bool = False) -> str:
    """sha256 of a file: by content for Parquet (schema and rows), else of its bytes.

    The absolute paths of ``root`` and of the repository are replaced by ``<ROOT>`` and ``<REPO>`` so
    that a run directory's absolute ``source_file`` values hash the same in every temp directory and
    every checkout. ``drop_ids`` leaves out ``conversation_id`` (a run resolves its inputs to absolute
    paths, and a record's id hashes its file's path; the JSONL output is hashed whole beside it).
    """
    if path.name.endswith(".losses.parquet"):  # as the JSON lines of --losses jsonl (module docstring)
        data = ndjson_polars(pq.read_table(path))
    elif path.suffix == ".parquet":
        t = pq.read_table(path)
        if drop_ids and "conversation_id" in t.column_names:
            t = t.drop_columns(["conversation_id"])
        data = str(t.schema.remove_metadata()).encode() + orjson.dumps(
            t.to_pylist(), default=lambda b: b.hex() if isinstance(b, bytes) else str(b)
        )
    else:
        data = path.read_bytes()
    data = data.replace(str(root.resolve()).encode(), b"<ROOT>").replace(str(REPO).encode(), b"<REPO>")
    return hashlib.sha256(data).hexdigest()


@contextmanager
def _cwd(d: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(d)
    try:
        yield
    finally:
        os.chdir(old)


def _sample_job(d: Path) -> Path:
    text = (REPO / "jobs" / "sample.toml").read_text()
    text = text.replace("../data/", str(REPO / "data") + "/").replace('"../runs/sample"', '"run"')
    job = d / "sample.toml"
    job.write_text(text)
    return job


def compute(d: Path) -> dict[str, str]:
    """Run every command in ``d`` and hash what it wrote."""
    table: dict[str, str] = {}
    with _cwd(d):
        inp = _inputs(d)
        runner = CliRunner()
        for name, argv in _commands(inp):
            res = runner.invoke(cli, [*argv, "--quiet"], catch_exceptions=False)
            # a command that rejected every record still writes its files, then exits 1 saying why
            # (engine/verdict.py), as the corpus' records under --on-loss reject do; the hand-written
            # Chat cases -> Anthropic must not: a filled max_tokens is an addition, not a loss
            assert res.exit_code == 0 or (
                res.exit_code == 1 and "records rejected" in res.output and name not in MUST_WRITE
            ), (name, res.output)  # fmt: skip
            for role, f in _files(argv).items():
                table[f"{name}/{role}"] = digest(d / f, d) if (d / f).exists() else "absent"
        argv = ["run", str(_sample_job(d)), "--no-catalog", "--quiet"]
        res = runner.invoke(cli, argv, catch_exceptions=False)
        assert res.exit_code == 0, res.output
        for folder in ("output", "conversations", "losses", "rejected"):
            for f in sorted((d / "run" / folder).glob("part-*")):
                table[f"run/sample/{folder}/{f.name}"] = digest(f, d, drop_ids=True)
    return table


def test_golden_hashes(tmp_path: Path) -> None:
    """Every output of the golden commands hashes as recorded (the corpus part needs the corpus)."""
    golden = orjson.loads(GOLDEN.read_bytes())
    got = compute(tmp_path)
    if not corpus_available():
        golden = {k: v for k, v in golden.items() if "corpus-" not in k and "adapter-" not in k}
        print("shared corpus absent: its golden entries were not checked")
    differ = sorted(k for k in golden.keys() | got.keys() if golden.get(k) != got.get(k))
    assert not differ, f"{len(differ)} golden entries differ: {differ}"


if __name__ == "__main__":
    if "--write" not in sys.argv:
        sys.exit("usage: python -m tests.test_golden --write")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        table = compute(Path(tmp))
    GOLDEN.write_bytes(orjson.dumps(table, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    print(f"wrote {len(table)} entries to {GOLDEN}")
    _ = pytest  # imported for the test above
