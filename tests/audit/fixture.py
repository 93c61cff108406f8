"""A small run directory for the audit and export tests, per docs/run-layout.md.

:func:`build_run` runs the real batch engine (``pipeline.engine.run_job``, target ``chat``) over
the bundled ``data/`` samples, every ``tests/cases.py`` record, the cases' bad lines and a few
audit-specific records (one input file per format of the cases). Shards of 8 records give several
shards per folder, and the bad lines make ``rejected/`` non-empty (stages ``read``, ``decode`` and
``convert``).

:func:`write_test_run` is the test-only writer that came first: the same layout written in-process
from ``decode_lines`` and ``convert_table`` (with the target rules' repairs). The tests run every
query on both, so the audit is checked against the layout contract, not one writer.

Both return what was written as plain rows (:class:`FixtureRun`), read back with pyarrow, so tests
compute their expected values with plain Python, independently of the SQL under test.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.formats import decode_lines
from pipeline.io.parquet import writer as parquet_writer
from pipeline.io.run_tables import LOSSES_SCHEMA, REJECTED_SCHEMA
from pipeline.losses import ADDITIONS
from tests.cases import BAD_LINES, CASES
from tests.helpers import repaired_convert_table

REPO = Path(__file__).resolve().parents[2]
TARGET = "chat"

# Records the audit queries need and the shared cases do not all have: compaction, assistant
# phases, tool pairing problems, a record the target rules repair and ones they reject. Converted
# like every other record (Responses -> Chat): the pairing problems break Chat's rules, so those
# records are rejected there, and their Chat twins (AUDIT_CHAT_RECORDS, written as they are) carry
# the problems into the written conversations.
AUDIT_RECORDS: list[dict[str, Any]] = [
    {  # duplicate call id, an output without a call, a call without an output
        "input": [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "call_dup", "name": "a", "arguments": "{}"},
            {"type": "function_call", "call_id": "call_dup", "name": "b", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_dup", "output": "x"},
            {"type": "function_call_output", "call_id": "call_orphan", "output": "y"},
            {"type": "function_call", "call_id": "call_open", "name": "c", "arguments": "{}"},
        ]
    },
    {  # compaction, then commentary and final answer phases
        "input": [
            {"role": "user", "content": "long task"},
            {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAcompacted"},
            {"role": "user", "content": "continue"},
            {
                "type": "message",
                "role": "assistant",
                "phase": "commentary",
                "content": [{"type": "output_text", "text": "working", "annotations": []}],
            },
            {"type": "function_call", "call_id": "call_ok", "name": "ls", "arguments": '{"d": "."}'},
            {"type": "function_call_output", "call_id": "call_ok", "output": "a b"},
            {
                "type": "message",
                "role": "assistant",
                "phase": "final_answer",
                "content": [{"type": "output_text", "text": "done", "annotations": []}],
            },
        ]
    },
    {  # calls and outputs without call ids pair by position: an output before any call finds none,
        # the call after it is answered, the last call is not (the healthy id-less case is in CASES)
        "input": [
            {"role": "user", "content": "go"},
            {"type": "function_call_output", "output": "too early"},
            {"type": "function_call", "name": "sh", "arguments": "{}"},
            {"type": "function_call_output", "output": "ok"},
            {"type": "function_call", "name": "sh", "arguments": "{}"},
        ]
    },
    {  # a developer note between a call and its result (Codex): moved after the result for Chat
        "input": [
            {"role": "user", "content": "run it"},
            {"type": "function_call", "call_id": "call_dev", "name": "shell", "arguments": "{}"},
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox"}]},
            {"type": "function_call_output", "call_id": "call_dev", "output": "ran"},
        ],
        "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}, "strict": False}],
    },
]


def _chat_call(call_id: str | None, name: str) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": "{}"}}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, **call} if call_id else call],
    }


def _tool(call_id: str | None, content: str) -> dict[str, Any]:
    return {"role": "tool", **({"tool_call_id": call_id} if call_id else {}), "content": content}


AUDIT_CHAT_RECORDS: list[dict[str, Any]] = [
    {  # duplicate call id, an output without a call, a call without an output
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_dup", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                    {"id": "call_dup", "type": "function", "function": {"name": "b", "arguments": "{}"}},
                ],
            },
            _tool("call_dup", "x"),
            _tool("call_orphan", "y"),
            _chat_call("call_open", "c"),
        ]
    },
    {  # id-less calls and outputs pair by position: an output before any call finds none, the call
        # after it is answered, the last call is not
        "messages": [
            {"role": "user", "content": "go"},
            _tool(None, "too early"),
            _chat_call(None, "sh"),
            _tool(None, "ok"),
            _chat_call(None, "sh"),
        ]
    },
]


@dataclass
class FixtureRun:
    """The run directory and what was written to it, for computing expected values in tests."""

    path: Path
    target: str
    conversations: pa.Table  # every written row, shards concatenated in shard order
    losses: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    read: int = 0


def _inputs(tmp: Path) -> list[tuple[Path, str]]:
    """The bundled samples, then one file per format of the shared cases plus that format's bad lines."""
    inputs = [(REPO / "data" / f"sample-{fmt}.jsonl", fmt) for fmt in ("responses", "chat", "anthropic")]
    tmp.mkdir(parents=True, exist_ok=True)
    for fmt, cases in CASES.items():
        lines = [orjson.dumps(rec) for _, rec in cases]
        if fmt == "responses":
            lines += [orjson.dumps(rec) for rec in AUDIT_RECORDS]
        if fmt == "chat":
            lines += [orjson.dumps(rec) for rec in AUDIT_CHAT_RECORDS]
        lines += [line for f, line, _ in BAD_LINES if f == fmt]
        path = tmp / f"cases-{fmt}.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        inputs.append((path, fmt))
    return inputs


def _stage(error: str) -> str:
    """``read`` for text that is no JSON object, ``decode`` for a record that breaks its format."""
    return "read" if error.startswith(("$: invalid JSON", "$: expected object")) else "decode"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _atomic_parquet(table: pa.Table, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)


def build_run(run: Path, inputs_dir: Path, target: str = TARGET) -> FixtureRun:
    """A real engine run (``pipeline.engine.run_job``) over the fixture inputs, read back with pyarrow.

    The expected values of the tests come from these files read as plain rows, never through the
    SQL under test.
    """
    from pipeline.engine import run_job
    from pipeline.jobs.resolve import load_job

    inputs = _inputs(inputs_dir)
    job = inputs_dir / "job.toml"
    lines = ['name = "audit-fixture"']
    for path, fmt in inputs:
        lines += ["[[inputs]]", f"path = {json.dumps(str(path))}", f"format = {json.dumps(fmt)}"]
    lines += [
        "[output]",
        f"path = {json.dumps(str(run))}",
        f"target = {json.dumps(target)}",
        "shard_records = 8",
    ]
    lines += ["[engine]", "workers = 1"]
    job.write_text("\n".join(lines) + "\n")
    summary = run_job(load_job(job))

    def folder(name: str) -> pa.Table:
        return pa.concat_tables(pq.read_table(p) for p in sorted((run / name).glob("*.parquet")))

    return FixtureRun(
        run,
        target,
        folder("conversations"),
        folder("losses").to_pylist(),
        folder("rejected").to_pylist(),
        summary["read"],
    )


def write_test_run(run: Path, inputs_dir: Path, target: str = TARGET) -> FixtureRun:
    """The test-only writer used before the engine existed: the same layout, written in-process.

    Kept to check that the audit reads any writer's run per docs/run-layout.md, not the engine's
    quirks (tests/audit/test_fixture_writers.py runs every query on both).
    """
    for sub in ("conversations", "output", "losses", "rejected"):
        (run / sub).mkdir(parents=True, exist_ok=True)
    written_tables: list[pa.Table] = []
    all_losses: list[dict[str, Any]] = []
    all_rejected: list[dict[str, Any]] = []
    shards: list[dict[str, Any]] = []
    summary_inputs: list[dict[str, Any]] = []
    read = 0
    for k, (path, fmt) in enumerate(_inputs(inputs_dir)):
        shard = f"part-{k:05d}"
        source_file = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name
        raw_lines = path.read_bytes().splitlines()
        n_read = sum(1 for line in raw_lines if line.strip())
        read += n_read
        summary_inputs.append({"path": source_file, "format": fmt, "read": n_read})
        res = decode_lines(raw_lines, fmt, source_file=source_file)
        rejected = [
            {
                "source_file": source_file,
                "source_line": r.line,
                "conversation_id": None,
                "stage": _stage(r.error),
                "step": None,
                "reason": r.error,
                "input": r.input,
            }
            for r in res.rejected
        ]
        table = res.table
        ids = table.column("conversation_id").to_pylist()
        lines = table.column("source_line").to_pylist()
        keep: list[bool] = []
        out: list[bytes] = []
        losses: list[dict[str, Any]] = []
        for r, c in enumerate(repaired_convert_table(table, target)):
            if c.error is not None:
                keep.append(False)
                rejected.append(
                    {
                        "source_file": source_file,
                        "source_line": lines[r],
                        "conversation_id": ids[r],
                        "stage": "convert",
                        "step": None,
                        "reason": c.error,
                        "input": None,
                    }
                )
                continue
            keep.append(True)
            out.append(c.record)
            for loss in c.losses:
                losses.append(
                    {
                        "conversation_id": ids[r],
                        "source_file": source_file,
                        "source_line": lines[r],
                        "source_format": fmt,
                        "target_format": target,
                        **loss.to_json(),
                    }
                )
        written = table.filter(pa.array(keep, pa.bool_()))
        conv_path = run / "conversations" / f"{shard}.parquet"
        with parquet_writer(conv_path.with_suffix(".tmp")) as w:
            w.write_table(written)
        os.replace(conv_path.with_suffix(".tmp"), conv_path)
        out_path = run / "output" / f"{shard}.jsonl"
        out_path.write_bytes(b"".join(line + b"\n" for line in out))
        loss_path = run / "losses" / f"{shard}.parquet"
        _atomic_parquet(pa.Table.from_pylist(losses, LOSSES_SCHEMA), loss_path)
        rej_path = run / "rejected" / f"{shard}.parquet"
        _atomic_parquet(pa.Table.from_pylist(rejected, REJECTED_SCHEMA), rej_path)
        files = [conv_path, out_path, loss_path, rej_path]
        shards.append(
            {
                "id": shard,
                "rows": written.num_rows,
                "files": [
                    {"path": str(p.relative_to(run)), "bytes": p.stat().st_size, "sha256": _sha256(p)}
                    for p in files
                ],
            }
        )
        written_tables.append(written)
        all_losses += losses
        all_rejected += rejected
    conversations = pa.concat_tables(written_tables)
    _write_json(run / "manifest.json", {"job": "audit-fixture", "fingerprint": "test", "shards": shards})
    _write_json(
        run / "summary.json", _summary(summary_inputs, read, conversations, all_losses, all_rejected, target)
    )
    return FixtureRun(run, target, conversations, all_losses, all_rejected, read)


def _count(values: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def _summary(
    inputs: list[dict[str, Any]],
    read: int,
    conversations: pa.Table,
    losses: list[dict[str, Any]],
    rejected: list[dict[str, Any]],
    target: str,
) -> dict[str, Any]:
    assert read == conversations.num_rows + len(rejected), "fixture lost a record"
    lost = [loss for loss in losses if loss["kind"] not in ADDITIONS]  # additions are not losses
    return {
        "job": "audit-fixture",
        "run_id": "fixture",
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:00:01Z",
        "inputs": inputs,
        "read": read,
        "written": conversations.num_rows,
        "rejected": len(rejected),
        "rejected_by_stage": _count([r["stage"] for r in rejected]),
        "rejected_by_reason": _count([r["reason"] for r in rejected]),
        "losses_by_kind": _count([loss["kind"] for loss in lost]),
        "records_with_losses": len({loss["conversation_id"] for loss in lost}),
        "additions_by_kind": {
            k: len({x["conversation_id"] for x in losses if x["kind"] == k})
            for k in sorted({x["kind"] for x in losses} & ADDITIONS)
        },
        "steps": [],
        "target": target,
        "timings_s": {"total": 0.0},
        "versions": {"chatlake": "test"},
    }


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n")
