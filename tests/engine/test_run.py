"""The engine: every record accounted for, the run-layout contract, determinism and resume."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline.encoders import convert_table
from pipeline.engine import run_job
from pipeline.engine.manifest import Manifest
from pipeline.engine.writers import LOSSES_SCHEMA, REJECTED_SCHEMA
from pipeline.errors import ConfigError, reason_of
from pipeline.formats import decode_lines, decode_records
from pipeline.io import shard_counts
from pipeline.io.record_index import RECORD_INDEX_SCHEMA
from pipeline.jobs import load_job
from pipeline.losses import LOSS_KINDS
from pipeline.schema import CONVERSATION_SCHEMA
from tests.cases import BAD_LINES, CASES
from tests.engine.helpers import file_hashes, folder, output_lines, write_job, write_jsonl
from tests.helpers import assert_identical, repaired_convert_table

ALLOWED = ["content_form", "instruction_position", "empty_text"]


def _mixed(tmp_path: Path) -> tuple[Path, list[bytes], dict[int, str]]:
    """Good Responses cases interleaved with every bad Responses line; line -> expected error."""
    good = [orjson.dumps(r) for _, r in CASES["responses"]]
    bad = [(line, err) for fmt, line, err in BAD_LINES if fmt == "responses"]
    lines: list[bytes] = []
    errors: dict[int, str] = {}
    for i in range(max(len(good), len(bad))):
        if i < len(good):
            lines.append(good[i])
        if i < len(bad):
            lines.append(bad[i][0])
            errors[len(lines)] = bad[i][1]
    return write_jsonl(tmp_path / "in.jsonl", lines), lines, errors


def test_accounting_on_a_job_mixing_good_and_bad_records(tmp_path: Path) -> None:
    src, lines, errors = _mixed(tmp_path)
    job = write_job(
        tmp_path / "job.toml",
        [{"path": "in.jsonl", "format": "responses"}],
        {"path": "run", "target": "chat", "shard_records": 4},
        loss={"on_loss": "reject", "allow": ALLOWED},
        engine={"workers": 2},
    )
    summary = run_job(load_job(job))
    run = tmp_path / "run"

    # Reference, record by record through the public API: what each good record should become.
    table = decode_records([orjson.loads(line) for i, line in enumerate(lines, 1) if i not in errors],
                           "responses").table  # fmt: skip
    expected_stage: dict[int, str] = {}
    good_lines = [i for i in range(1, len(lines) + 1) if i not in errors]
    for line, conv in zip(good_lines, repaired_convert_table(table, "chat"), strict=True):
        if conv.error is not None:
            expected_stage[line] = "convert"
        elif {loss.kind for loss in conv.losses} - set(ALLOWED):
            expected_stage[line] = "loss_policy"
    for line, err in errors.items():
        not_a_record = err.startswith(("$: invalid JSON", "$: expected object"))
        expected_stage[line] = "read" if not_a_record else "decode"

    assert summary["read"] == len(lines) == summary["written"] + summary["rejected"]
    assert summary["rejected"] == len(expected_stage)
    assert summary["rejected_by_stage"] == dict(Counter(expected_stage.values()))
    assert set(summary["rejected_by_stage"]) == {"read", "decode", "convert", "loss_policy"}

    rejected = folder(run, "rejected")
    assert rejected.schema.equals(REJECTED_SCHEMA)
    rows = {r["source_line"]: r for r in rejected.to_pylist()}
    assert {line: r["stage"] for line, r in rows.items()} == expected_stage
    for line, err in errors.items():
        assert rows[line]["reason"].startswith(err), (rows[line]["reason"], err)
        assert rows[line]["input"] == lines[line - 1].decode()
        assert rows[line]["conversation_id"] is None and rows[line]["source_file"] == str(src)
    for line, stage in expected_stage.items():
        if stage in ("convert", "loss_policy"):
            assert rows[line]["conversation_id"] is not None
            assert rows[line]["input"] == lines[line - 1].decode()
    assert summary["rejected_by_reason"] == dict(
        Counter(reason_of(r["reason"]) for r in rows.values()).most_common()
    )

    conversations = folder(run, "conversations")
    written_lines = [i for i in good_lines if i not in expected_stage]
    assert conversations.column("source_line").to_pylist() == written_lines
    out = output_lines(run)
    assert len(out) == summary["written"] == conversations.num_rows
    # Written records are exactly the reference conversion, in input order.
    ref = {line: c.record for line, c in zip(good_lines, convert_table(table, "chat"), strict=True)}
    for line, data in zip(written_lines, out, strict=True):
        assert_identical(orjson.loads(data), ref[line])
    losses = folder(run, "losses")
    assert losses.schema.equals(LOSSES_SCHEMA)
    assert set(losses.column("kind").to_pylist()) <= set(ALLOWED)
    lost = [r for r in losses.to_pylist() if not LOSS_KINDS[r["kind"]].addition]
    added = [r for r in losses.to_pylist() if LOSS_KINDS[r["kind"]].addition]
    assert dict(Counter(r["kind"] for r in lost)) == summary["losses_by_kind"]
    assert summary["records_with_losses"] == len({r["conversation_id"] for r in lost})
    assert summary["additions_by_kind"] == {
        k: len({r["conversation_id"] for r in added if r["kind"] == k}) for k in {r["kind"] for r in added}
    }


def test_run_layout_contract(tmp_path: Path) -> None:
    _, lines, _ = _mixed(tmp_path)
    job = write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "responses"}],
                    {"path": "run", "target": "chat", "shard_records": 8}, engine={"workers": 1})  # fmt: skip
    summary = run_job(load_job(job))
    run = tmp_path / "run"
    ids = {p.stem for p in (run / "conversations").iterdir()}
    assert ids == {f"part-{k:05d}" for k in range(-(-len(lines) // 8))}
    folders = (("items", "parquet"), ("output", "jsonl"), ("losses", "parquet"), ("rejected", "parquet"),
               ("records", "parquet"), ("top_losses", "parquet"),
               *((n, "parquet") for n in shard_counts.FOLDERS))  # fmt: skip
    for name, ext in folders:
        assert {p.name for p in (run / name).iterdir()} == {f"{i}.{ext}" for i in ids}
    for i in sorted(ids):
        conv = pq.read_table(run / "conversations" / f"{i}.parquet")
        assert conv.schema.equals(CONVERSATION_SCHEMA, check_metadata=False)
        assert conv.schema.metadata == CONVERSATION_SCHEMA.metadata
        assert len((run / "output" / f"{i}.jsonl").read_bytes().splitlines()) == conv.num_rows
        index = pq.read_table(run / "items" / f"{i}.parquet")
        assert index.num_rows == sum(conv.column("n_items").to_pylist())
        records = pq.read_table(run / "records" / f"{i}.parquet")  # one row per written or rejected record
        rejected = pq.read_table(run / "rejected" / f"{i}.parquet")
        assert records.schema.equals(RECORD_INDEX_SCHEMA)
        assert records.num_rows == conv.num_rows + rejected.num_rows
        assert set(records.column("shard").to_pylist()) == {i}
        for name, schema in shard_counts.SCHEMAS.items():
            assert pq.read_table(run / name / f"{i}.parquet").schema.equals(schema), name
        meta = pq.ParquetFile(run / "conversations" / f"{i}.parquet").metadata
        assert meta.row_group(0).column(0).compression == "ZSTD"
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    assert [s["id"] for s in manifest["shards"]] == sorted(ids)
    for s in manifest["shards"]:
        for f in s["files"].values():
            assert (run / f["path"]).stat().st_size == f["bytes"]
            assert hashlib.sha256((run / f["path"]).read_bytes()).hexdigest() == f["sha256"]
    on_disk = orjson.loads((run / "summary.json").read_bytes())
    assert on_disk == summary
    for key in ("job", "run_id", "started_at", "finished_at", "inputs", "read", "written", "rejected",
                "rejected_by_stage", "rejected_by_reason", "losses_by_kind", "records_with_losses",
                "additions_by_kind", "steps", "target", "timings_s", "versions"):  # fmt: skip
        assert key in summary, key
    src = str(tmp_path / "in.jsonl")
    assert summary["inputs"] == [{"path": src, "format": "responses", "read": len(lines)}]
    assert not list(run.rglob("*.tmp"))


def test_parquet_target_writes_no_output_folder_files_and_empty_losses(tmp_path: Path) -> None:
    _mixed(tmp_path)
    job = write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "responses"}],
                    {"path": "run", "target": "parquet"}, engine={"workers": 1})  # fmt: skip
    summary = run_job(load_job(job))
    run = tmp_path / "run"
    assert not (run / "output").exists()
    assert pq.read_table(run / "losses" / "part-00000.parquet").num_rows == 0
    n_bad = sum(1 for f, _, _ in BAD_LINES if f == "responses")
    assert summary["written"] == len(CASES["responses"]) and summary["rejected"] == n_bad


def test_a_set_table_reaches_every_written_record_and_is_counted_as_an_addition(tmp_path: Path) -> None:
    """A job's [set] values are in every output record (over two shards, two workers), each record
    reports them as set additions in losses/, and the summary counts them apart from losses; the
    canonical table keeps the source's values."""
    _mixed(tmp_path)
    job = write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "responses"}],
                    {"path": "run", "target": "anthropic", "shard_records": 4}, engine={"workers": 2},
                    set_fields={"max_tokens": 777, "model": "claude-haiku-4-5"})  # fmt: skip
    summary = run_job(load_job(job))
    run = tmp_path / "run"
    bodies = [orjson.loads(line) for line in output_lines(run)]
    assert len(bodies) == summary["written"] > 0
    requests = [b for b in bodies if "messages" in b]  # response objects are left as they are
    assert 0 < len(requests) < len(bodies)
    assert all(b["max_tokens"] == 777 and b["model"] == "claude-haiku-4-5" for b in requests)
    losses = folder(run, "losses").to_pylist()
    set_rows = [x for x in losses if x["kind"] == "set"]
    assert len(set_rows) == 2 * len(requests)
    assert {x["path"] for x in set_rows} == {"/model", "/max_output_tokens"}
    assert summary["additions_by_kind"]["set"] == len(requests)
    assert "set" not in summary["losses_by_kind"] and "model_provider" not in summary["losses_by_kind"]
    models = set(folder(run, "conversations").column("model").to_pylist())
    assert "claude-haiku-4-5" not in models  # the canonical rows are the source's


def test_output_does_not_depend_on_workers(tmp_path: Path) -> None:
    _mixed(tmp_path)
    hashes = []
    for w in (1, 2):
        job = write_job(tmp_path / f"job{w}.toml", [{"path": "in.jsonl", "format": "responses"}],
                        {"path": f"run{w}-{len(hashes)}", "target": "anthropic", "shard_records": 3},
                        engine={"workers": w, "chunk_bytes": 1024})  # fmt: skip
        run_job(load_job(job))
        hashes.append(file_hashes(tmp_path / f"run{w}-{len(hashes)}"))
    assert hashes[0] == hashes[1]


def test_a_resumed_run_redoes_only_missing_shards_and_ends_identical(tmp_path: Path) -> None:
    _, lines, _ = _mixed(tmp_path)
    job_path = write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "responses"}],
                         {"path": "run", "target": "chat", "shard_records": 3},
                         engine={"workers": 1})  # fmt: skip
    job = load_job(job_path)
    first = run_job(job)
    before = file_hashes(tmp_path / "run")
    # Simulate a crash after shard 2 was renamed into place but before the manifest listed shards 2..:
    m = Manifest.open(job.run_dir, job.name, job.fingerprint())
    m.shards = {k: v for k, v in m.shards.items() if k < "part-00002"}
    m.save()
    (tmp_path / "run" / "output" / ".part-00003.jsonl.999.tmp").write_bytes(b"half a shard")
    second = run_job(job)
    assert second["shards_resumed"] == 2 and second["shards"] == first["shards"] == -(-len(lines) // 3)
    assert file_hashes(tmp_path / "run") == before
    for k in ("read", "written", "rejected", "rejected_by_stage", "losses_by_kind"):
        assert second[k] == first[k]


def test_a_run_directory_of_another_job_is_refused_before_work(tmp_path: Path) -> None:
    _mixed(tmp_path)
    a = write_job(tmp_path / "a.toml", [{"path": "in.jsonl", "format": "responses"}], {"path": "run"},
                  engine={"workers": 1})  # fmt: skip
    run_job(load_job(a))
    b = write_job(tmp_path / "b.toml", [{"path": "in.jsonl", "format": "responses"}],
                  {"path": "run", "target": "chat"}, engine={"workers": 1})  # fmt: skip
    with pytest.raises(ConfigError, match="holds a run of another job"):
        run_job(load_job(b))
    summary = run_job(load_job(b), fresh=True)
    assert summary["target"] == "chat" and len(list((tmp_path / "run" / "output").iterdir())) == 1


def test_blank_lines_are_not_records_and_a_last_line_without_newline_is_read(tmp_path: Path) -> None:
    recs = [orjson.dumps(r) for _, r in CASES["chat"]]
    (tmp_path / "in.jsonl").write_bytes(b"\n".join([recs[0], b"", b"  ", *recs[1:]]))  # no final newline
    job = write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "chat"}],
                    {"path": "run", "target": "chat", "shard_records": 2}, engine={"workers": 1})  # fmt: skip
    summary = run_job(load_job(job))
    assert (summary["read"], summary["written"], summary["blank_lines"]) == (len(recs), len(recs), 2)
    for a, b in zip(recs, output_lines(tmp_path / "run"), strict=True):
        assert_identical(orjson.loads(a), orjson.loads(b))


def test_accounting_with_transform_steps_over_two_inputs(tmp_path: Path) -> None:
    import polars as pl

    from pipeline.transforms import apply_steps, parse_step

    files = {"responses": _mixed(tmp_path)[0]}
    chat = [orjson.dumps(r) for _, r in CASES["chat"]] + [b'{"messages": 3}']
    files["chat"] = write_jsonl(tmp_path / "chat.jsonl", chat)
    job = write_job(
        tmp_path / "job.toml",
        [{"path": "in.jsonl", "format": "responses"}, {"path": "chat.jsonl", "format": "chat"}],
        {"path": "run", "target": "chat", "shard_records": 5},
        steps=["turns", "role_swap"],
        engine={"workers": 1},
    )
    summary = run_job(load_job(job))
    run = tmp_path / "run"

    # Reference: decode each file, run the same steps on the whole table, convert what is kept.
    expected: Counter[str] = Counter()
    kept_ids: list[str] = []
    for fmt, path in files.items():
        res = decode_lines(path.read_bytes().splitlines(), fmt, source_file=str(path))
        for r in res.rejected:
            not_a_record = r.error.startswith(("$: invalid JSON", "$: expected object"))
            expected["read" if not_a_record else "decode"] += 1
        kept, rejected = apply_steps(pl.from_arrow(res.table), [parse_step("turns"), parse_step("role_swap")])
        expected["transform"] += rejected.height
        converted = repaired_convert_table(kept.to_arrow(), "chat")
        for cid, conv in zip(kept["conversation_id"].to_list(), converted, strict=True):
            if conv.error is not None:
                expected["convert"] += 1
            else:
                kept_ids.append(cid)
    assert summary["rejected_by_stage"] == dict(expected.most_common())
    assert expected["transform"] > 0 and summary["read"] == summary["written"] + summary["rejected"]
    n_responses = len(files["responses"].read_bytes().splitlines())
    assert [i["read"] for i in summary["inputs"]] == [n_responses, len(chat)]
    conversations = folder(run, "conversations")
    assert conversations.column("conversation_id").to_pylist() == kept_ids
    # Columns the steps add come after the canonical ones, with plain (not large or view) types.
    assert conversations.schema.names[: len(CONVERSATION_SCHEMA)] == CONVERSATION_SCHEMA.names
    assert "human_turns" in conversations.schema.names
    assert not any(_large_or_view(f.type) for f in conversations.schema)
    transform = folder(run, "rejected").filter(pc.field("stage") == "transform")
    assert set(transform.column("step").to_pylist()) == {"role_swap"}
    assert all(r.startswith("role_swap: ") for r in transform.column("reason").to_pylist())
    assert all(t is not None for t in transform.column("input").to_pylist())


def _large_or_view(t: pa.DataType) -> bool:
    if pa.types.is_large_string(t) or pa.types.is_string_view(t) or pa.types.is_large_list(t):
        return True
    if pa.types.is_list(t):
        return _large_or_view(t.value_type)
    if pa.types.is_struct(t):
        return any(_large_or_view(f.type) for f in t)
    return False


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete"])
def test_a_resume_redoes_a_finished_shard_whose_file_is_damaged(tmp_path: Path, damage: str) -> None:
    _mixed(tmp_path)
    job = load_job(write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "responses"}],
                             {"path": "run", "target": "chat", "shard_records": 3},
                             engine={"workers": 1}))  # fmt: skip
    first = run_job(job)
    before = file_hashes(tmp_path / "run")
    victim = tmp_path / "run" / "conversations" / "part-00001.parquet"
    data = victim.read_bytes()
    if damage == "truncate":
        victim.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        victim.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    else:
        victim.unlink()
    second = run_job(job)
    assert file_hashes(tmp_path / "run") == before
    assert second["shards_resumed"] == first["shards"] - 1
    [(shard, why)] = second["shards_redone"].items()
    expected = {"truncate": "bytes, the manifest says", "flip": "sha256 differs", "delete": "missing"}
    assert shard == "part-00001" and why.startswith("conversations/part-00001.parquet: ")
    assert expected[damage] in why
    assert run_job(job)["shards_redone"] == {}


def test_edits_are_found_in_canonical_parquet_written_after_steps(tmp_path: Path) -> None:
    """The engine skips the edit check only for rows it decoded itself with no step run: Parquet
    written by a role_swap job keeps the original fingerprints, and converting it with no steps must
    still drop the swapped items' stale ids (``edited`` losses), exactly as convert_table does."""
    from pipeline.encoders.edits import drop_stale_state

    src = write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for _, r in CASES["responses"]])
    first = write_job(
        tmp_path / "swap.toml", [{"path": "in.jsonl", "format": "responses"}],
        {"path": "swapped", "target": "parquet"}, steps=["role_swap:on_unsupported=drop"],
        engine={"workers": 1},
    )  # fmt: skip
    run_job(load_job(first))
    swapped = folder(tmp_path / "swapped", "conversations")
    assert drop_stale_state(swapped)[1], "no item was edited by role_swap: the test would prove nothing"
    pq.write_table(swapped, tmp_path / "swapped.parquet")
    second = write_job(
        tmp_path / "chat.toml", [{"path": "swapped.parquet", "format": "canonical"}],
        {"path": "chat", "target": "chat"}, loss={"on_loss": "allow"}, engine={"workers": 1},
    )  # fmt: skip
    summary = run_job(load_job(second))
    expected = Counter(
        loss.kind for conv in convert_table(swapped, "chat") if conv.error is None for loss in conv.losses
    )
    assert summary["losses_by_kind"]["edited"] == expected["edited"] > 0
    # and the same input as wire JSONL with no steps has nothing edited: the check was skipped safely
    plain = write_job(
        tmp_path / "plain.toml", [{"path": str(src), "format": "responses"}],
        {"path": "plain", "target": "chat"}, loss={"on_loss": "allow"}, engine={"workers": 1},
    )  # fmt: skip
    assert "edited" not in run_job(load_job(plain))["losses_by_kind"]
