"""A run's written records as a Hugging Face dataset in Hub layout (``chatlake export-hf``).

::

    OUT_DIR/
      README.md                                dataset card: YAML (configs, features, splits, license
                                               placeholder) + the run's loss summary
      data/train-00000-of-00002.parquet        one or more shards per split (``--split-by COLUMN``
      data/train-00001-of-00002.parquet        names the splits after a conversations column)
      repairs.jsonl                            the rows repaired for the HF rules, with their losses
                                               (only when a row was repaired)
      export_report.json                       counts: exported, excluded (with reasons), repaired (by
                                               kind), per split; the sha256 of every other file (what
                                               --overwrite checks)

Rows: ``conversation_id`` (joins the audit views), ``messages`` (TRL conversational format, built
by :func:`pipeline.encoders.encode_rows.encode_rows` -- what ``convert --to hf`` runs: the HF
target's rules (:mod:`pipeline.encoders.rules`) repaired or refused, then
:mod:`pipeline.encoders.to_hf`; plus the optional ``reasoning_content`` / ``thinking`` strings chat
templates read) and ``tools`` (function schemas, null when none).

How tool-call arguments are stored. ``--style trl`` (default): ``function.arguments`` is an
*object* (what ``apply_chat_template`` and TRL take), stored with the ``datasets`` ``Json`` feature
(Arrow ``arrow.json`` extension type over JSON text), so ``load_dataset`` gives back each object as
it was, whatever its keys -- no struct of the union of all keys, no ``None``-filled fields. ``tools``
is a ``Json`` column too. ``--style openai``: ``function.arguments`` is a JSON *string* (the OpenAI
fine-tuning format); ``tools`` stays ``Json``.

A record the HF encoder cannot convert, one that breaks a rule of the HF target no repair fits
(counted under the rule's id), or whose messages carry keys the typed ``messages`` feature has no
field for (carried verbatim from an HF/ShareGPT source), is excluded and counted with its reason in
``export_report.json`` and the card; a record repaired for a rule is exported, its repairs' losses
in ``repairs.jsonl`` and counted by kind: nothing is dropped or changed silently.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline import codec
from pipeline.encoders.encode_rows import encode_rows
from pipeline.encoders.rules import RULE
from pipeline.engine.atomic import NewFile, PathError, write_atomic
from pipeline.engine.output_file import OutputFileError, open_output
from pipeline.errors import ConfigError
from pipeline.formats.hf import REASONING_KEYS
from pipeline.oserrors import describe
from pipeline.storage import join, listing, read_bytes, remove, sha256_of

STYLES = ("trl", "openai")
SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")  # what the Hub accepts as a split name
# Message keys current chat templates read besides the TRL five, stored as optional strings: the
# reasoning keys (hf.REASONING_KEYS).
MESSAGE_KEYS = frozenset(("role", "content", "name", "tool_call_id", "tool_calls", *REASONING_KEYS))
REPORT = "export_report.json"
CARD = "README.md"
REPAIRS = "repairs.jsonl"
CALL_KEYS = frozenset(("id", "type", "function"))
FUNCTION_KEYS = frozenset(("name", "arguments"))


def features(style: str, extra: dict[str, pa.DataType] | None = None) -> Any:
    """The ``datasets.Features`` of an export (``datasets`` is imported only when exporting);
    ``extra``: the carried metadata columns and their Arrow types (:func:`carried_columns`)."""
    from datasets import Features, Json, List, Value

    arguments = Json() if style == "trl" else Value("string")
    call = {"id": Value("string"), "type": Value("string"),
            "function": {"name": Value("string"), "arguments": arguments}}  # fmt: skip
    message = {
        "role": Value("string"),
        "content": Value("string"),
        "name": Value("string"),
        "tool_call_id": Value("string"),
        "tool_calls": List(call),
        **{k: Value("string") for k in REASONING_KEYS},
    }
    carried = {name: Value(_VALUE_TYPES[t]) for name, t in (extra or {}).items()}
    rows = {"conversation_id": Value("string"), "messages": List(message), "tools": Json()}
    return Features({**rows, **carried})


# The Arrow types a carried column may have, and the ``datasets`` Value dtype of each.
_VALUE_TYPES = {
    pa.string(): "string", pa.large_string(): "string", pa.int64(): "int64", pa.int32(): "int32",
    pa.float64(): "float64", pa.float32(): "float32", pa.bool_(): "bool",
}  # fmt: skip
# Short names of provenance fields (docs/export.md, "Metadata columns"): ``reward`` is the score
# a source such as tau-bench records.
COLUMN_ALIASES = {
    "source": "provenance.source", "session_id": "provenance.session_id",
    "sample_id": "provenance.sample_id", "score": "provenance.score", "reward": "provenance.score",
    "started_at": "provenance.started_at", "ended_at": "provenance.ended_at",
}  # fmt: skip
_ROW_COLUMNS = ("conversation_id", "messages", "tools")


def carried_columns(run: Path, names: tuple[str, ...]) -> dict[str, tuple[str, pa.DataType]]:
    """``--columns``: each dataset column name -> (the conversations column or ``provenance.FIELD``
    it comes from, its Arrow type). ConfigError (before any work) for a name that is not a scalar
    column of the run's conversations, or that the dataset already has."""
    if not names:
        return {}
    schema = pq.read_schema(conversation_files(run)[0])
    out: dict[str, tuple[str, pa.DataType]] = {}
    for name in names:
        path = COLUMN_ALIASES.get(name, name) if name not in schema.names else name
        head, _, field_name = path.partition(".")
        t = schema.field(head).type if head in schema.names else None
        if t is not None and field_name:
            inner = pa.types.is_struct(t) and t.get_field_index(field_name) >= 0
            t = t.field(field_name).type if inner else None
        if t is None or t not in _VALUE_TYPES:
            scalars = [f.name for f in schema if f.type in _VALUE_TYPES and f.name not in _ROW_COLUMNS]
            raise ConfigError(
                f"--columns {name!r} is not a text or number column of the run's conversations; use "
                f"{', '.join(scalars)} or {', '.join(COLUMN_ALIASES)}"
            )
        if name in _ROW_COLUMNS or name in out:
            raise ConfigError(f"--columns {name!r}: the dataset has that column already")
        out[name] = (path, t)
    return out


def _carried(table: pa.Table, columns: dict[str, tuple[str, pa.DataType]]) -> dict[str, pa.Array]:
    """The carried columns' values of a batch (a provenance field out of its struct)."""
    out = {}
    for name, (path, t) in columns.items():
        head, _, field_name = path.partition(".")
        col = table.column(head).combine_chunks()
        if field_name:
            col = pc.struct_field(col, field_name)
        out[name] = col.cast(_VALUE_TYPES_PLAIN.get(t, t))
    return out


_VALUE_TYPES_PLAIN = {pa.large_string(): pa.string()}


def conversation_files(run: Path) -> list[Path]:
    """The canonical Parquet files export-hf reads: a run directory's ``conversations/`` shards, or
    the FILE of ``convert --to parquet -o FILE`` / ``transform -o FILE``. ConfigError (before any
    work) for a directory without shards, or a FILE in a wire format (no canonical table)."""
    if run.is_file():
        out = open_output(run)
        if not out.canonical:
            raise OutputFileError(
                f"export-hf reads chatlake's canonical table, and {run.name} holds encoded {out.target} "
                "records; write the canonical table with `--to parquet -o FILE` (or `--run-dir`) and "
                "export that"
            )
        return [run]
    files = sorted((run / "conversations").glob("*.parquet"))
    if not files:
        raise ConfigError(f"{run}/conversations/ has no Parquet shards: is it a chatlake run directory?")
    return files


@dataclass
class ExportConfig:
    run: Path
    out_dir: Path
    style: str = "trl"
    split_by: str | None = None
    shard_rows: int = 100_000
    push: str | None = None
    overwrite: bool = False
    columns: tuple[str, ...] = ()  # metadata columns carried into the dataset (see carried_columns)
    workers: int = 1  # processes converting batches: this one and workers - 1 more
    progress: bool = False  # a progress bar on stderr (when it is a terminal)
    batch_rows: int = 5_000  # conversations converted at a time (a worker's unit of work)

    def validate(self) -> None:
        """Fail before any work, saying what to fix."""
        if self.style not in STYLES:
            raise ConfigError(f"--style {self.style!r}: use one of {', '.join(STYLES)}")
        try:  # a loop of links: one line before any work
            os.stat(self.out_dir)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise PathError(f"output directory {describe(e)}") from None
        conversation_files(self.run)  # a run directory with shards, or a canonical FILE
        if self.out_dir.exists() and any(self.out_dir.iterdir()):
            if (why := not_our_export(self.out_dir)) is not None:
                raise ConfigError(
                    f"output directory {str(self.out_dir)!r} is not empty and not an unchanged export "
                    f"of chatlake ({why}); choose a new directory"
                )
            if not self.overwrite:
                raise ConfigError(
                    f"output directory {str(self.out_dir)!r} holds an earlier chatlake export; pass "
                    "--overwrite to replace it, or choose a new directory"
                )
        if self.shard_rows < 1:
            raise ConfigError("--shard-rows must be at least 1")
        if self.workers < 1:
            raise ConfigError("--workers must be at least 1")
        carried_columns(self.run, self.columns)
        if self.split_by is not None:
            names = pq.read_schema(conversation_files(self.run)[0]).names
            if self.split_by not in names:
                raise ConfigError(
                    f"--split-by {self.split_by!r} is not a conversations column; columns: {names}"
                )


@dataclass
class ExportReport:
    splits: dict[str, int] = field(default_factory=dict)
    split_bytes: Counter[str] = field(default_factory=Counter)  # Arrow bytes, the card's num_bytes
    excluded: Counter[str] = field(default_factory=Counter)
    repaired: int = 0  # exported rows a rule's repair changed (their losses: repairs.jsonl)
    repairs: Counter[str] = field(default_factory=Counter)  # those repairs' losses by kind
    files: list[str] = field(default_factory=list)
    sha256: dict[str, str] = field(default_factory=dict)  # every file written but the report itself
    bytes: dict[str, int] = field(default_factory=dict)  # their sizes (what --overwrite checks first)
    left: list[str] = field(default_factory=list)  # listed files of an earlier export --overwrite kept

    def to_json(self) -> dict[str, Any]:
        return {
            "exported": sum(self.splits.values()),
            "splits": self.splits,
            "excluded": sum(self.excluded.values()),
            "excluded_by_reason": dict(self.excluded.most_common()),
            "repaired": self.repaired,
            "repairs_by_kind": dict(self.repairs.most_common()),
            "files": self.files,
            "sha256": self.sha256,
            "bytes": self.bytes,
        }


def _sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _report_files(out_dir: Path) -> dict[str, dict[str, Any]] | None:
    """The files ``export_report.json`` lists (name -> ``{sha256, bytes}``), None without a usable
    report. Sizes are listed since 0.2; an older report lists only hashes (its sizes are not checked)."""
    try:
        return listed_files((out_dir / REPORT).read_bytes())
    except OSError:
        return None


def listed_files(report: bytes | None) -> dict[str, dict[str, Any]] | None:
    """The files an ``export_report.json`` (its bytes) lists, as :func:`_report_files` gives them."""
    try:
        doc = json.loads(report) if report is not None else None
        hashes, sizes = doc["sha256"], doc.get("bytes", {})  # type: ignore[index]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if not isinstance(hashes, dict) or not isinstance(sizes, dict):
        return None
    return {str(k): {"sha256": v, "bytes": sizes.get(k)} for k, v in hashes.items()}


def _inside(out_dir: Path, name: str) -> Path | None:
    """``out_dir / name`` if ``name`` is a plain relative path (no ``..``, not absolute) whose
    every component is a real folder or, last, a regular file (no link); else None."""
    rel = PurePosixPath(name)
    if rel.is_absolute() or not rel.parts or ".." in rel.parts or "\\" in name:
        return None
    path = out_dir
    for k, part in enumerate(rel.parts):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return None
        last = k == len(rel.parts) - 1
        if not (stat.S_ISREG(mode) if last else stat.S_ISDIR(mode)):
            return None
    return path


def not_our_export(out_dir: Path) -> str | None:
    """Why ``out_dir`` is not an export chatlake wrote and nobody changed since (None when it is).

    Only such a directory may be replaced (``--overwrite``): every file in it is ``export_report.json``
    or listed in it with that size and sha256, so a hand-edited card (a license set) or a file of
    the user's is never deleted.
    """
    listed = _report_files(out_dir)
    if listed is None:
        return f"no {REPORT} with the sha256 of its files"
    for p in sorted(out_dir.rglob("*")):
        name = p.relative_to(out_dir).as_posix()
        if p.is_dir() and not p.is_symlink() and name == "data":
            continue
        if name == REPORT:
            continue
        if p.is_symlink() or not p.is_file() or name not in listed or _inside(out_dir, name) is None:
            return f"{name} was not written by export-hf"
        size = listed[name]["bytes"]
        if (size is not None and p.stat().st_size != size) or _sha256(p) != listed[name]["sha256"]:
            return f"{name} was changed after the export"
    return None


def _unchanged_object(url: str, size: int, listed: dict[str, Any]) -> bool:
    return (listed["bytes"] is None or size == listed["bytes"]) and sha256_of(url) == listed["sha256"]


def not_our_export_at(url: str) -> str | None:
    """:func:`not_our_export` for an export at a URL (an object store): every object under it is
    ``export_report.json`` or listed there with that size and sha256 (each re-read and hashed)."""
    objects = listing(url)
    listed = listed_files(read_bytes(join(url, REPORT))) if objects else {}
    if listed is None:
        return f"no {REPORT} with the sha256 of its files"
    for name, size in sorted(objects.items()):
        if name == REPORT:
            continue
        if name not in listed:
            return f"{name} was not written by export-hf"
        if not _unchanged_object(join(url, name), size, listed[name]):
            return f"{name} was changed after the export"
    return None


def clear_at(url: str, listed: dict[str, dict[str, Any]], kept: set[str]) -> list[str]:
    """After a new export was uploaded to ``url`` over an earlier one (``listed``: the files the
    earlier report listed, read before the upload; ``kept``: the names the new export wrote),
    delete what the earlier export left: only objects it listed whose size and sha256 still match
    (re-read now, as :func:`_clear` does locally). Returns the names it left alone."""
    objects = listing(url)
    left = []
    for name in sorted(set(objects) - kept):
        if name not in listed or not _unchanged_object(join(url, name), objects[name], listed[name]):
            left.append(name)
            continue
        remove(join(url, name))
    return left


def _clear(out_dir: Path) -> list[str]:
    """Delete an earlier export (checked by :func:`not_our_export` just before): only the files
    its report lists that are inside ``out_dir`` (no ``..``, no absolute path, no link) with their
    size and sha256 unchanged. Returns the listed names it left alone."""
    if not out_dir.exists() or not any(out_dir.iterdir()):
        return []
    if (why := not_our_export(out_dir)) is not None:  # checked again: never delete what we did not write
        raise ConfigError(f"output directory {str(out_dir)!r}: {why}; choose a new directory")
    listed = _report_files(out_dir) or {}
    left = []
    for name, f in listed.items():
        path = _inside(out_dir, name)
        size = f["bytes"]
        if path is None or (size is not None and path.stat().st_size != size) or _sha256(path) != f["sha256"]:
            left.append(name)
            continue
        path.unlink()
    (out_dir / REPORT).unlink()
    data = out_dir / "data"
    if data.is_dir() and not data.is_symlink() and not any(data.iterdir()):
        data.rmdir()
    return left


def _unknown_keys(messages: list[dict[str, Any]]) -> str | None:
    for m in messages:
        if extra := set(m) - MESSAGE_KEYS:
            return f"message key(s) {sorted(extra)} have no field in the dataset features"
        for k in REASONING_KEYS:
            if not isinstance(m.get(k, ""), str | None):
                return f"message key {k!r} is not a string (chat templates read it as text)"
        for c in m.get("tool_calls") or ():
            if (extra := set(c) - CALL_KEYS) or (extra := set(c["function"]) - FUNCTION_KEYS):
                return f"tool call key(s) {sorted(extra)} have no field in the dataset features"
    return None


def _rows(
    table: pa.Table, report: ExportReport, kept: list[int] | None = None, repairs: list[bytes] | None = None
) -> list[dict[str, Any]]:
    """HF rows of one batch of canonical rows; ``kept``: gets the index in ``table`` of each row
    returned; ``repairs``: gets one ``repairs.jsonl`` line per exported row a rule's repair changed.

    The records come from :func:`encode_rows` (the HF target's rules repaired or refused ahead of
    the HF encoder, as ``convert --to hf``); a refusal is counted under its rule's id. Arguments
    become JSON text here: the ``Json`` feature's storage (``trl``) or the string the OpenAI format
    wants (``openai``); orjson writes the object exactly as the encoder built it.
    """
    ids = table.column("conversation_id").to_pylist()
    enc = encode_rows(table, "hf")
    by_row = _repair_losses(enc.losses)
    rows = []
    for k, (cid, text, error) in enumerate(
        zip(ids, enc.records.to_pylist(), enc.errors.to_pylist(), strict=True)
    ):
        if error is not None:
            rule = error.partition(":")[0]
            report.excluded[rule if rule in RULE else f"encode: {error}"] += 1
            continue
        record = orjson.loads(text)
        messages = record["messages"]
        if (why := _unknown_keys(messages)) is not None:
            report.excluded[why] += 1
            continue
        for m in messages:
            for call in m.get("tool_calls") or ():
                call["function"]["arguments"] = orjson.dumps(call["function"]["arguments"]).decode()
        tools = record.get("tools")
        if kept is not None:
            kept.append(k)
        if k in by_row:
            report.repaired += 1
            report.repairs.update(loss["kind"] for loss in by_row[k])
            if repairs is not None:
                repairs.append(orjson.dumps({"conversation_id": cid, "losses": by_row[k]}) + b"\n")
        rows.append(
            {
                "conversation_id": cid,
                "messages": messages,
                "tools": None if tools is None else orjson.dumps(tools).decode(),
            }
        )
    return rows


def _repair_losses(losses: pa.Table) -> dict[int, list[dict[str, str]]]:
    """The losses of the HF rules' repairs (their detail starts with the rule's id), by row."""
    mine = losses.filter(pc.starts_with(losses.column("detail"), "hf."))
    out: dict[int, list[dict[str, str]]] = {}
    for loss in mine.to_pylist():  # a few rows: the repaired ones
        if loss["detail"].partition(":")[0] in RULE:
            out.setdefault(loss.pop("row"), []).append(loss)
    return out


def _storage_schema(style: str) -> pa.Schema:
    """The Arrow schema of the rows with JSON text as plain strings (cast to ``arrow.json`` after
    building)."""
    return pa.schema([(f.name, _json_as_string(f.type)) for f in features(style).arrow_schema])


def hf_batch(
    table: pa.Table, style: str, columns: dict[str, tuple[str, pa.DataType]], storage: pa.Schema | None = None
) -> tuple[pa.Table, ExportReport, bytes]:
    """One batch of conversations as dataset rows in their storage types (JSON as text), with the
    carried columns; the batch's counts (excluded by reason, repaired) and its ``repairs.jsonl``
    lines. What each worker process runs: plain Arrow in and out (the ``arrow.json`` extension type
    is applied by the writer). ``style`` is the writer's (the rows' storage is the same);
    ``storage``: :func:`_storage_schema` of it, given by the parent so that a worker never imports
    ``datasets`` (its features) for it."""
    report = ExportReport()
    kept: list[int] = []
    repairs: list[bytes] = []
    rows = _rows(table, report, kept, repairs)
    out = pa.Table.from_pylist(rows, storage or _storage_schema(style))
    if columns:
        picked = table.take(pa.array(kept, pa.int64()))
        for name, values in _carried(picked, columns).items():
            out = out.append_column(name, values)
    return out, report, b"".join(repairs)


def _json_as_string(t: pa.DataType) -> pa.DataType:
    if isinstance(t, pa.BaseExtensionType):
        return pa.string()
    if pa.types.is_list(t):
        return pa.list_(_json_as_string(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _json_as_string(f.type)) for f in t])
    return t


def _split_values(cfg: ExportConfig) -> list[str]:
    if cfg.split_by is None:
        return ["train"]
    import duckdb  # here, not at the top: a worker process imports this module for hf_batch alone

    con = duckdb.connect()
    rel = con.read_parquet([str(p) for p in conversation_files(cfg.run)])
    values = sorted(
        str(v) for (v,) in rel.select(duckdb.ColumnExpression(cfg.split_by)).distinct().fetchall()
    )
    bad = [v for v in values if not SPLIT_NAME.match(v)]
    if bad:
        raise ConfigError(
            f"--split-by {cfg.split_by}: value(s) {bad[:3]} are not valid split names (\\w+(\\.\\w+)*)"
        )
    return values


def export(cfg: ExportConfig) -> ExportReport:
    """Write the dataset; returns the counts (also written to ``export_report.json``)."""
    cfg.validate()
    splits = _split_values(cfg)
    left = _clear(cfg.out_dir) if cfg.overwrite else []
    made = [d for d in (cfg.out_dir, cfg.out_dir / "data") if not d.exists()]
    written: list[Path] = []
    try:
        report = _write(cfg, splits, written)
        report.left = left
        return report
    except BaseException:  # Ctrl-C, a full disk: no half export that --overwrite would then refuse
        for path in written:
            path.unlink(missing_ok=True)
        for d in reversed(made):
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
        raise


def _batches(cfg: ExportConfig, split: str) -> Any:
    """The run's conversations of one split, in batches of up to ``batch_rows`` rows, in order.

    File by file, one row group decoded at a time: a dataset scan, even with no read-ahead asked,
    decoded ahead of the export (Arrow held 425 MB at the first batch of a 100,000-record run, going
    down as the export caught up; 30 MB this way)."""
    for path in conversation_files(cfg.run):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=cfg.batch_rows):
            table = pa.Table.from_batches([batch])
            if cfg.split_by is not None:
                table = table.filter(pc.equal(table.column(cfg.split_by).cast(pa.string()), split))
            if table.num_rows:
                yield table


Carried = dict[str, tuple[str, pa.DataType]]  # carried_columns: dataset column -> (source, type)


def _converted(cfg: ExportConfig, batches: Any, columns: Carried, pool: Any, workers: int = 1) -> Any:
    """``hf_batch`` of each batch, in order: in this process, or shared between this process and the
    pool's ``workers - 1`` processes (this one is the last worker: it converts every ``workers``-th
    batch while the others convert theirs, so ``--workers 2`` costs one more process, not two).
    Memory: about two batches per worker, whatever the run's size."""
    storage = _storage_schema(cfg.style)
    if pool is None:
        for table in batches:
            yield table.num_rows, hf_batch(table, cfg.style, columns, storage)
        return
    from collections import deque
    from concurrent.futures import Future

    flight: deque[tuple[int, Any]] = deque()
    for k, table in enumerate(batches):
        if k % workers == workers - 1:  # this process's turn, while the pool works on the others
            done: Future[Any] = Future()
            done.set_result(hf_batch(table, cfg.style, columns, storage))
            flight.append((table.num_rows, done))
        else:
            flight.append((table.num_rows, pool.submit(hf_batch, table, cfg.style, columns, storage)))
        while len(flight) >= 2 * workers or (flight and flight[0][1].done()):
            n, fut = flight.popleft()
            yield n, fut.result()
    while flight:
        n, fut = flight.popleft()
        yield n, fut.result()


def default_workers() -> int:
    """``--workers``' default: this process alone when the compiled HF encoder is active (a batch then
    costs less to convert than to hand to another process: 100,000 records in half the job's time at
    438 MB, where 2 processes took longer at twice the memory; docs/benchmarks.md), else up to 2, as
    many as there are cores (the per-record encoder is Python and uses one core)."""
    if codec.native_encoder("hf") is not None:
        return 1
    return min(2, os.cpu_count() or 1)


def _pool(workers: int) -> Any:
    """Processes converting batches besides this one, which is one of the ``workers`` (the rows are
    built in Python, and without the compiled codec encoded in Python too: threads would share one
    core); None for one."""
    if workers <= 1:
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(workers - 1, mp_context=multiprocessing.get_context("spawn"))


def _write(cfg: ExportConfig, splits: list[str], written: list[Path]) -> ExportReport:
    """The export's files, each added to ``written`` before it is created (so it can be undone).

    Streams: each converted batch is appended to the open shard (a Parquet row group), so memory
    stays a few batches whatever the run's size; a shard is closed at ``shard_rows`` rows.
    """
    from pipeline.engine.progress import JobProgress

    columns = carried_columns(cfg.run, cfg.columns)
    feats = features(cfg.style, {name: t for name, (_, t) in columns.items()})
    schema = feats.arrow_schema
    data = cfg.out_dir / "data"
    data.mkdir(parents=True, exist_ok=True)
    report = ExportReport()
    repairs = _Repairs(cfg.out_dir, written)
    total = sum(pq.ParquetFile(p).metadata.num_rows for p in conversation_files(cfg.run))
    # a run of one batch gains nothing from workers (each costs a process start and its imports)
    workers = min(cfg.workers, -(-total // cfg.batch_rows))
    pool = _pool(workers)
    try:
        with JobProgress("export-hf", total, cfg.progress) as bar:
            for split in splits:
                parts: list[Path] = []
                shard = _Shard(data, split, schema, parts, written)
                n = 0
                batches = _converted(cfg, _batches(cfg, split), columns, pool, workers)
                for read, (table, counts, repaired) in batches:
                    report.excluded.update(counts.excluded)
                    report.repaired += counts.repaired
                    report.repairs.update(counts.repairs)
                    repairs.write(repaired)
                    table = table.cast(schema)
                    report.split_bytes[split] += table.nbytes
                    n += table.num_rows
                    while table.num_rows:
                        room = cfg.shard_rows - shard.rows
                        shard.write(table.slice(0, room))
                        table = table.slice(room)
                        if shard.rows == cfg.shard_rows:
                            shard.close()
                    bar.advance(read, read)
                if not parts:  # an empty split still has its (empty) shard
                    shard.write(schema.empty_table(), force=True)
                shard.close()
                for k, tmp in enumerate(parts):  # the shard count is known only now
                    final = data / f"{split}-{k:05d}-of-{len(parts):05d}.parquet"
                    written.append(final)
                    tmp.rename(final)
                    report.files.append(str(final.relative_to(cfg.out_dir)))
                    report.sha256[final.relative_to(cfg.out_dir).as_posix()] = _sha256(final)
                    report.bytes[final.relative_to(cfg.out_dir).as_posix()] = final.stat().st_size
                report.splits[split] = n
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        repairs.close()
    if repairs.commit():
        report.sha256[REPAIRS] = _sha256(cfg.out_dir / REPAIRS)
        report.bytes[REPAIRS] = (cfg.out_dir / REPAIRS).stat().st_size
    written += [cfg.out_dir / CARD, cfg.out_dir / REPORT]
    write_atomic(cfg.out_dir / CARD, dataset_card(cfg, feats, report).encode(), user=True)
    report.sha256[CARD] = _sha256(cfg.out_dir / CARD)
    report.bytes[CARD] = (cfg.out_dir / CARD).stat().st_size
    write_atomic(cfg.out_dir / REPORT, (json.dumps(report.to_json(), indent=2) + "\n").encode(), user=True)
    return report


class _Repairs:
    """``repairs.jsonl``, written as the batches come (created at the first repaired row, as a
    temp file chatlake creates itself, renamed into place when the export is complete)."""

    def __init__(self, out_dir: Path, written: list[Path]) -> None:
        self.out_dir, self.written = out_dir, written
        self.new: NewFile | None = None
        self.file: Any = None

    def write(self, lines: bytes) -> None:
        if not lines:
            return
        if self.new is None:
            tmp = self.out_dir / f"{REPAIRS}.tmp"
            self.written.append(tmp)
            self.new = NewFile(tmp)
            self.file = self.new.open()
        self.file.write(lines)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None

    def commit(self) -> bool:
        """Put the file in place; False when no row was repaired (no file)."""
        if self.new is None:
            return False
        self.written.append(self.out_dir / REPAIRS)
        self.new.commit(self.out_dir / REPAIRS)
        return True


class _Shard:
    """The Parquet shard being written for a split: opened at its first rows, a row group per batch."""

    def __init__(
        self, data: Path, split: str, schema: pa.Schema, parts: list[Path], written: list[Path]
    ) -> None:
        self.data, self.split, self.schema, self.parts, self.written = data, split, schema, parts, written
        self.writer: pq.ParquetWriter | None = None
        self.new: NewFile | None = None
        self.rows = 0

    def write(self, table: pa.Table, force: bool = False) -> None:
        if not table.num_rows and not force:
            return
        if self.writer is None:
            path = self.data / f"{self.split}-{len(self.parts):05d}.tmp.parquet"
            self.written.append(path)
            self.parts.append(path)
            self.new = NewFile(path)  # created here: never written through a link planted at the name
            self.writer = pq.ParquetWriter(self.new.where, self.schema, compression="zstd")
        self.writer.write_table(table)
        self.rows += table.num_rows

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.new is not None:
            self.new.close()
        self.writer, self.new, self.rows = None, None, 0


def _loss_summary(run: Path) -> str:
    if run.is_file():  # a single-file output: its summary is in FILE.manifest.json
        s = open_output(run).summary
    elif (run / "summary.json").is_file():
        s = json.loads((run / "summary.json").read_text())
    else:
        return "No run summary (summary.json) was found.\n"
    lines = [
        f"Converted by chatlake to `{s.get('target')}`: read {s.get('read')}, written {s.get('written')}, "
        f"rejected {s.get('rejected')}; {s.get('records_with_losses')} written records lost something.",
        "",
        "| loss kind | losses |",
        "|---|---:|",
        *(f"| {k} | {v} |" for k, v in (s.get("losses_by_kind") or {}).items()),
    ]
    return "\n".join(lines) + "\n"


ARGUMENTS_NOTE = {
    "trl": "Tool-call `function.arguments` are objects stored with the `Json` feature.\n\n",
    "openai": "Tool-call `function.arguments` are JSON strings (OpenAI fine-tuning format).\n\n",
}


def dataset_card(cfg: ExportConfig, feats: Any, report: ExportReport) -> str:
    """README.md: YAML metadata the Hub and ``load_dataset`` read, then the human part."""
    import yaml  # comes with datasets

    meta = {
        "license": "other",  # placeholder: set the dataset's real license before publishing
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": s, "path": f"data/{s}-*"} for s in report.splits],
            }
        ],
        "dataset_info": {
            "features": feats._to_yaml_list(),
            "splits": [
                {"name": s, "num_bytes": report.split_bytes[s], "num_examples": n}
                for s, n in report.splits.items()
            ],
        },
        "tags": ["conversational", "chatlake"],
    }
    excluded = "".join(f"- {n} x {why}\n" for why, n in report.excluded.most_common()) or "- none\n"
    repaired = (
        f"{report.repaired} rows were repaired to follow the HF target's rules (docs/target-rules.md); "
        f"their losses are in `{REPAIRS}`:\n\n"
        + "".join(f"- {n} x {k}\n" for k, n in report.repairs.most_common())
        if report.repaired
        else "- none\n"
    )
    return (
        "---\n"
        + yaml.safe_dump(meta, sort_keys=False)
        + "---\n\n"
        + "# Dataset card\n\n"
        + "**License: placeholder (`other`)** -- set the real license before publishing.\n\n"
        + f"Exported by `chatlake export-hf` (style `{cfg.style}`) from a chatlake run. Rows: "
        + "`conversation_id`, `messages` (TRL conversational format), `tools` (JSON). "
        + ARGUMENTS_NOTE[cfg.style]
        + "## Splits\n\n"
        + "".join(f"- `{s}`: {n} rows\n" for s, n in report.splits.items())
        + "\n## Excluded from the export\n\n" + excluded
        + "\n## Repaired for the target's rules\n\n" + repaired
        + "\n## Conversion losses (the run)\n\n" + _loss_summary(cfg.run)
    )  # fmt: skip


def check_token(repo_id: str) -> str:
    """Check the configured Hugging Face token with the Hub (``whoami``) before anything is written.

    Returns the account name. ConfigError when there is no token or the Hub refuses it (fix the
    login), RuntimeError when the Hub cannot be reached; neither message shows the token.
    """
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError

    if get_token() is None:
        raise ConfigError("--push needs a Hugging Face token: run `hf auth login` or set HF_TOKEN")
    try:
        who = HfApi().whoami()
    except HfHubHTTPError as e:
        status = getattr(e.response, "status_code", None)
        if status in (401, 403):
            raise ConfigError(
                f"the Hugging Face Hub refused the token (HTTP {status}); run `hf auth login` again "
                f"or set HF_TOKEN to a token that can write to datasets/{repo_id}"
            ) from None
        raise RuntimeError(f"could not check the token with the Hugging Face Hub (HTTP {status})") from None
    except Exception as e:  # no network, DNS, proxy, offline mode: many types; the message says which
        raise RuntimeError(
            f"could not reach the Hugging Face Hub to check the token ({type(e).__name__}); nothing "
            "was written: check the network, or export without --push and upload later"
        ) from None
    return str(who.get("name", "?"))


def push(out_dir: Path, repo_id: str, *, dry_run: bool = False) -> str:
    """Upload ``out_dir`` to the Hub dataset ``repo_id``; the token comes from huggingface_hub's config.

    ``dry_run`` checks everything but the upload and returns what would be done. Fails with a
    ConfigError (never printing the token) when no token is configured or the Hub cannot be reached.
    """
    from huggingface_hub import HfApi, get_token

    files = sorted(str(p.relative_to(out_dir)) for p in out_dir.rglob("*") if p.is_file())
    if get_token() is None:
        raise ConfigError("--push needs a Hugging Face token: run `hf auth login` or set HF_TOKEN")
    plan = f"would upload {len(files)} files to datasets/{repo_id}"
    if dry_run:
        return plan
    api = HfApi()
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
        api.upload_folder(folder_path=str(out_dir), repo_id=repo_id, repo_type="dataset")
    except Exception as e:  # network errors come in many types; the message says which
        raise RuntimeError(
            f"upload to datasets/{repo_id} failed ({type(e).__name__}); is the Hub reachable?"
        ) from None
    return f"uploaded {len(files)} files to datasets/{repo_id}"
