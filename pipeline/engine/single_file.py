"""The single-file layout of ``chatlake convert -o FILE`` and ``chatlake transform -o FILE``.

The engine runs the job in a staging run directory that chatlake owns beside the output,
``FILE.partial/`` (its manifest marks it as chatlake's and names the job). Each byte of the
output is written once: a worker keeps its shard in memory (the JSON lines, and its tables as a
whole Parquet file; engine/writers.MemoryShardWriter), and the parent (:class:`Appender`)
appends the shards in shard order to temp files in the staging directory, then lists the shard in
the manifest with each temp file's length after it (``end``) and the sha256 of the bytes it
added. Parquet files take the shards' column chunks; their footer is written once at the end from
the shards' footers (io/parquet_concat.py). When every shard is in, the temp files are renamed
into place: the side files first, ``FILE`` last, so ``FILE`` appearing is the commit point; then
the staging directory is removed.

An interrupted command leaves the temp files and the manifest in the staging directory and no new
file under a final name. The same command run again resumes: it keeps the listed shards whose
bytes are in the temp files as listed (length and sha256), cuts the temp files back to the last
one (dropping a half-appended shard) and redoes the rest, to the same bytes. A job with a grouping
step (threads) links threads across shards once all are written (engine/partition.py), so its
shards are staged as files and appended after the run.

Final names (docs/run-layout.md, one rule): ``FILE`` (the encoded JSONL for a wire target, canonical
Parquet for ``--to parquet`` and ``transform``), ``FILE.rejected.jsonl`` beside JSONL output or
``FILE.rejected.parquet`` beside Parquet output, and ``FILE.losses.parquet`` (``--losses jsonl``:
``FILE.losses.jsonl``) for a wire target.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.errors import ConfigError
from pipeline.io.parquet import table_writer
from pipeline.io.parquet import writer as canonical_writer
from pipeline.io.parquet_concat import MAGIC, Struct, merged_footer, row_groups, split
from pipeline.io.run_tables import LOSSES_SCHEMA, REJECTED_SCHEMA
from pipeline.jobs.resolve import PARQUET, Job
from pipeline.schema import CONVERSATION_SCHEMA
from pipeline.storage import is_url, local_path, open_input

from .atomic import open_new, open_ours
from .dropped import DROPPED
from .manifest import MANIFEST, Manifest
from .output_file import LAYOUT, manifest_path
from .shards import shard_id

STAGING_SUFFIX = ".partial"


def staging_dir(output: Path) -> Path:
    """The run directory a single-file command stages its shards in."""
    return output.with_name(output.name + STAGING_SUFFIX)


def final_paths(
    output: Path, target: str, grouping: bool = False, losses_format: str = "parquet"
) -> dict[str, Path]:
    """Every file a single-file command puts in place, by role, in the order they are renamed
    (``grouping``: a threads job, which also writes ``FILE.dropped.parquet``, engine/dropped.py;
    ``losses_format``: ``FILE.losses.jsonl`` or ``FILE.losses.parquet`` beside a wire target)."""
    dropped = {DROPPED: output.with_name(output.name + ".dropped.parquet")} if grouping else {}
    if target == PARQUET:
        return {"rejected": output.with_name(output.name + ".rejected.parquet"), **dropped, "output": output}
    return {
        "rejected": output.with_name(output.name + ".rejected.jsonl"),
        "losses": output.with_name(output.name + f".losses.{losses_format}"),
        **dropped,
        "output": output,
    }


def check_paths(
    output: Path, target: str, inputs: Iterable[str], report: Path | None, grouping: bool = False,
    losses_format: str = "parquet",
) -> None:
    """Refuse (ConfigError, before any work) a path that collides with another or with an input."""
    finals = final_paths(output, target, grouping, losses_format)
    named = {("--output" if role == "output" else f"the {role} file"): p for role, p in finals.items()}
    if report is not None:
        named["--report"] = report
    named["the manifest file"] = manifest_path(output)
    named["staging directory"] = staging_dir(output)
    seen: dict[Path, str] = {}
    for what, p in named.items():
        r = p.resolve()
        if r in seen and seen[r] != what:
            raise ConfigError(f"{what} {str(p)!r} is the same path as {seen[r]}; choose another path")
        seen[r] = what
    for inp in inputs:
        ip = Path(inp).resolve()
        for what, p in named.items():
            r = p.resolve()
            if ip == r or r in ip.parents:
                raise ConfigError(f"{what} {str(p)!r} would overwrite the input {inp!r}; choose another path")
    staging = staging_dir(output).resolve()
    for what, p in named.items():  # the staging directory is deleted at the end: nothing may live in it
        if staging in p.resolve().parents:
            raise ConfigError(f"{what} {str(p)!r} is inside the staging directory {staging}; choose another")
    if output.resolve().is_dir():
        raise ConfigError(f"--output {str(output)!r} is a directory; give a file path")
    for what, p in named.items():
        if p != staging_dir(output) and p.resolve().is_dir():
            raise ConfigError(f"{what} {str(p)!r} is a directory; choose another --output")


def _check_staging(job: Job) -> None:
    """The staging directory must be absent, empty, or this job's (chatlake's manifest, same fingerprint)."""
    staging = job.run_dir
    if not staging.exists():
        return
    if not staging.is_dir():
        raise ConfigError(f"{staging} exists and is not a directory; move it away")
    manifest = staging / MANIFEST
    if not manifest.is_file():
        if any(staging.iterdir()):
            raise ConfigError(
                f"{staging} exists and is not chatlake's staging directory (no {MANIFEST}); "
                "move it away or choose another --output"
            )
        return
    try:
        fingerprint = orjson.loads(manifest.read_bytes()).get("fingerprint")
    except orjson.JSONDecodeError:
        fingerprint = None
    if fingerprint != job.fingerprint():
        raise ConfigError(
            f"{staging} holds the unfinished run of a different command (other inputs, steps, target "
            f"or settings); run that command again to finish it, or delete {staging} to start this one"
        )


def prepare(job: Job) -> None:
    """Check the staging directory and claim it (a manifest before any shard), all before any work."""
    _check_staging(job)
    job.run_dir.mkdir(parents=True, exist_ok=True)
    if not (job.run_dir / MANIFEST).is_file():
        Manifest(job.run_dir, job.name, job.fingerprint()).save()


def temp_path(run_dir: Path, role: str) -> Path:
    """The temp file a role's final file is appended into (renamed into place at the end)."""
    return run_dir / f".final-{role}.tmp"


OpenWriter = Callable[[Any, pa.Schema], pq.ParquetWriter]


def _parquet_file(table: pa.Table | None, schema: pa.Schema, open_writer: OpenWriter) -> bytes:
    """``table`` (or no rows) as a whole Parquet file in memory."""
    sink = io.BytesIO()
    w = open_writer(sink, schema)
    if table is not None and table.num_rows:
        w.write_table(table.cast(schema))
    w.close()
    return sink.getvalue()


def _footer_schema(footer: bytes) -> pa.Schema:
    """The Arrow schema a Parquet footer describes."""
    whole = MAGIC + footer + len(footer).to_bytes(4, "little") + MAGIC
    return pq.read_schema(pa.BufferReader(whole))


def _sha(chunks: Iterable[bytes | memoryview | pa.Buffer]) -> tuple[int, str]:
    h, n = hashlib.sha256(), 0
    for c in chunks:
        h.update(c)
        n += len(memoryview(c))
    return n, h.hexdigest()


class _Parquet:
    """What the footer of one Parquet temp file is built from: its shards' row groups, where they
    sit, and the footer whose schema the file has (the first shard with rows, else the first)."""

    def __init__(self, open_writer: OpenWriter, schema: pa.Schema | None) -> None:
        self.open_writer, self.default = open_writer, schema
        self.first: bytes | None = None  # the first shard's footer
        self.footer: bytes | None = None  # the first footer with rows
        self.schema: pa.Schema | None = None
        self.groups: list[Struct] = []

    def take(self, footer: bytes, rows: int, at: int) -> None:
        self.first = self.first or footer
        if rows:
            if self.footer is None:
                self.footer, self.schema = footer, _footer_schema(footer)
            self.groups += row_groups(footer, at)

    def fit(self, data: bytes, rows: int) -> bytes:
        """A shard's Parquet file, rewritten with the file's schema if its own differs (a step's
        added column typed otherwise in another shard); most shards pass through untouched."""
        if not rows or self.schema is None:
            return data
        if pq.read_schema(pa.BufferReader(data)).equals(self.schema, check_metadata=True):
            return data
        return _parquet_file(pq.read_table(pa.BufferReader(data)), self.schema, self.open_writer)

    def tail(self) -> bytes:
        """The footer to end the file with."""
        if self.footer is not None:
            return merged_footer(self.footer, self.groups)
        if self.first is None:  # no shard at all
            _, self.first = split(_parquet_file(None, self.default or CONVERSATION_SCHEMA, self.open_writer))
        return merged_footer(self.first, [])


class Appender:
    """Appends finished shards, in shard order, to the temp files of a single-file command.

    The engine calls :meth:`resume` under the run's lock before any shard, then :meth:`add` for
    each finished shard before listing it in the manifest (engine/run.py, ``Sink``); :func:`finish`
    ends the Parquet files with their footers and renames everything into place.
    """

    def __init__(self, job: Job, finals: dict[str, Path]) -> None:
        self.run_dir = job.run_dir
        # role (final file) -> the shard part that goes into it
        self.part = {role: ("conversations" if role == "output" and job.target == PARQUET else role)
                     for role in finals}  # fmt: skip
        self.tmp = {role: temp_path(job.run_dir, role) for role in finals}
        self.parquet: dict[str, _Parquet] = {}
        for role, path in finals.items():
            # FILE is Parquet for a Parquet target, whatever its name; the side files by their names
            if (job.target == PARQUET) if role == "output" else path.suffix == ".parquet":
                opener, schema = {
                    "losses": (table_writer, LOSSES_SCHEMA),
                    "rejected": (canonical_writer, REJECTED_SCHEMA),
                }.get(role, (canonical_writer, None))
                self.parquet[role] = _Parquet(opener, schema)
        self.files: dict[str, BinaryIO] = {}
        # each temp file's sha256, bytes and rows so far: FILE.manifest.json records them without
        # reading the finished files back
        self.hash = {role: hashlib.sha256() for role in finals}
        self.size = dict.fromkeys(finals, 0)
        self.rows = dict.fromkeys(finals, 0)

    def _write(self, role: str, data: bytes | memoryview | pa.Buffer) -> None:
        self.files[role].write(data)
        self.hash[role].update(data)
        self.size[role] += len(memoryview(data))

    def _start(self, role: str) -> int:
        return len(MAGIC) if role in self.parquet else 0

    def _open(self, ends: dict[str, int]) -> None:
        """Open the temp files cut back to ``ends`` (a new file: only a Parquet file's magic)."""
        for role, path in self.tmp.items():
            self.hash[role], self.size[role] = hashlib.sha256(), 0
            if ends[role] > self._start(role):  # listed shards are kept: append after the last one
                f = open_ours(path)
                f.truncate(ends[role])
                self.hash[role] = _prefix_hash(f, ends[role])
                self.size[role] = ends[role]
                f.seek(ends[role])
                self.files[role] = f
            else:  # created anew, never through a link (a stale temp file of ours replaced)
                self.files[role] = open_new(path)
                self.rows[role] = 0
                if role in self.parquet:
                    self._write(role, MAGIC)

    def _problem(self, entry: dict[str, Any], ends: dict[str, int]) -> str | None:
        """Why a listed shard's bytes are not in the temp files as listed (None when they are)."""
        for role, part in self.part.items():
            f = entry["files"].get(part)
            if f is None or "end" not in f:
                return f"{part}: not appended to the single file"
            start, end = ends[role], f["end"]
            try:
                size = self.tmp[role].stat().st_size
            except FileNotFoundError:
                return f"{part}: {self.tmp[role].name} is missing"
            if end - start != f["bytes"] or size < end:
                return f"{part}: {self.tmp[role].name} holds {size} bytes, the manifest says {end}"
            if _region_sha(self.tmp[role], start, f["bytes"]) != f["sha256"]:
                return f"{part}: its bytes in {self.tmp[role].name} differ from the manifest (changed)"
        return None

    def resume(self, manifest: Manifest) -> dict[str, str]:
        """Keep the listed shards whose bytes are in the temp files as listed, in order from the
        first; drop the others from the manifest (they are redone) and cut the files back."""
        ends = {role: self._start(role) for role in self.tmp}
        redone: dict[str, str] = {}
        for k, sid in enumerate(sorted(manifest.shards)):
            entry = manifest.shards[sid]
            if redone:
                problem: str | None = "a shard before it is redone"
            elif sid != shard_id(k):
                problem = f"listed out of order (expected {shard_id(k)})"
            else:
                problem = self._problem(entry, ends)
            if problem is not None:
                redone[sid] = problem
                continue
            for role, part in self.part.items():
                f = entry["files"][part]
                if role in self.parquet:
                    self.parquet[role].take(base64.b64decode(f["footer"]), f["rows"], ends[role])
                ends[role] = f["end"]
                self.rows[role] += f["rows"]
        for sid in redone:
            del manifest.shards[sid]
        if redone:
            manifest.save()
        self._open(ends)
        return redone

    def add(self, entry: dict[str, Any]) -> None:
        """Append a finished shard's parts (taken out of ``entry``); record where each ends."""
        parts = entry.pop("parts")
        for role, part in self.part.items():
            p, f, out = parts[part], entry["files"][part], self.files[role]
            if p["kind"] == "jsonl":
                for chunk in p["data"]:
                    self._write(role, chunk)
            else:
                pq_ = self.parquet[role]
                data = pq_.fit(p["data"], p["rows"])
                body, footer = split(data)
                if data is not p["data"]:
                    f["bytes"], f["sha256"] = _sha([body])
                pq_.take(footer, p["rows"], out.tell())
                self._write(role, body)
                f["footer"] = base64.b64encode(footer).decode()
            self.rows[role] += p["rows"]
            out.flush()  # the bytes are in the file before the manifest lists the shard
            f["end"] = out.tell()

    def add_staged(self, manifest: Manifest) -> None:
        """Append every listed shard from its staged files (a job with a grouping step), from the
        start: a rerun after an interruption here appends them all again."""
        self._open({role: self._start(role) for role in self.tmp})
        for sid in sorted(manifest.shards):
            entry = manifest.shards[sid]
            parts: dict[str, dict[str, Any]] = {}
            files: dict[str, dict[str, Any]] = {}
            for role, part in self.part.items():
                path = self.run_dir / entry["files"][part]["path"]
                rows = entry["files"][part]["rows"]
                if path.suffix == ".jsonl":
                    parts[part] = {"kind": "jsonl", "data": [path.read_bytes()], "rows": rows}
                else:
                    table = _read_table(path)
                    pq_ = self.parquet[role]
                    schema = pq_.default or table.schema.with_metadata(CONVERSATION_SCHEMA.metadata)
                    data = _parquet_file(table, schema, pq_.open_writer)
                    parts[part] = {"kind": "parquet", "data": data, "rows": rows}
                files[part] = {}
            self.add({"files": files, "parts": parts})

    def close(self) -> None:
        """End each Parquet file with its footer; close the files."""
        for role, f in self.files.items():
            if role in self.parquet:
                self._write(role, self.parquet[role].tail())
            f.close()
        self.files.clear()

    def described(self, finals: dict[str, Path]) -> dict[str, dict[str, Any]]:
        """Each closed file as FILE.manifest.json lists it: name, format, rows, bytes, sha256."""
        return {
            role: {"name": path.name, "format": "parquet" if role in self.parquet else "jsonl",
                   "rows": self.rows[role], "bytes": self.size[role], "sha256": self.hash[role].hexdigest()}
            for role, path in finals.items()
        }  # fmt: skip


def _prefix_hash(f: BinaryIO, n: int) -> Any:
    """A sha256 fed with the first ``n`` bytes of ``f`` (the kept shards of a resumed run)."""
    h = hashlib.sha256()
    f.seek(0)
    while n > 0 and (block := f.read(min(n, 1 << 20))):
        h.update(block)
        n -= len(block)
    return h


def _region_sha(path: Path, start: int, n: int) -> str:
    """The sha256 of ``n`` bytes of ``path`` from ``start`` (read back only when a run resumes)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(start)
        while n > 0 and (block := f.read(min(n, 1 << 20))):
            h.update(block)
            n -= len(block)
    return h.hexdigest()


def _read_table(path: Path) -> pa.Table:
    """A staged shard file (Arrow IPC or Parquet) as one table."""
    if path.suffix == ".arrow":
        return pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    return pq.read_table(path)


# summary keys that name where this machine put the files: FILE.manifest.json names them by role
LOCAL_KEYS = ("run_dir", "output", "rejected_file", "losses_file", "dropped_file", "manifest_file")


def finish(job: Job, output: Path, appender: Appender, summary: dict[str, Any]) -> dict[str, Path]:
    """End the temp files, write FILE.manifest.json, rename everything into place (the side files,
    then the manifest, FILE last), remove the staging directory; the final paths by role."""
    finals = final_paths(output, job.target, job.grouping, job.losses_format)
    appender.close()
    doc = {
        "layout": LAYOUT, "job": job.name, "fingerprint": job.fingerprint(), "target": job.target,
        "files": appender.described(finals),
        "summary": {k: v for k, v in summary.items() if k not in LOCAL_KEYS},
    }  # fmt: skip
    tmp = temp_path(job.run_dir, "manifest")
    with open_new(tmp) as f:
        f.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        f.flush()
        os.fsync(f.fileno())
    placed = {role: path for role, path in finals.items() if role != "output"}
    for role, path in placed.items():
        os.replace(appender.tmp[role], path)
    placed["manifest"] = manifest_path(output)
    os.replace(tmp, placed["manifest"])
    os.replace(appender.tmp["output"], output)  # FILE last: it appears only when everything else is in place
    placed["output"] = output
    remove_staging(job)
    return placed


def remove_staging(job: Job) -> None:
    """Delete the staging directory, only after checking it is the one chatlake made for this job."""
    manifest = job.run_dir / MANIFEST
    if not manifest.is_file() or orjson.loads(manifest.read_bytes()).get("fingerprint") != job.fingerprint():
        raise RuntimeError(f"{job.run_dir} is not this job's staging directory any more; left in place")
    shutil.rmtree(job.run_dir)


def run_single_file(job: Job, output: Path, *, progress: bool = False) -> dict[str, Any]:
    """Run ``job`` (layout SINGLE_FILE, run_dir = :func:`staging_dir`) into ``output``; its summary.

    The summary is the engine's (docs/run-layout.md) without ``run_dir``, plus ``output``,
    ``rejected_file``, ``losses_file`` (null for Parquet output) and ``manifest_file``.

    A run that rejected too many records (:class:`~pipeline.engine.run.TooManyRejected`) still puts
    its files in place, like any finished run, and then raises with the summary completed.
    """
    from .run import TooManyRejected, run_job

    prepare(job)
    appender = Appender(job, final_paths(output, job.target, job.grouping, job.losses_format))
    verdict: TooManyRejected | None = None
    try:
        # a grouping job's last pass may rewrite finished shards (engine/partition.link_threads):
        # they are staged, and appended once the run is over
        summary = run_job(job, progress=progress, sink=None if job.grouping else appender)
    except TooManyRejected as e:  # finished: its files go in place like any other run's
        verdict, summary = e, e.summary
    except BaseException:
        for f in appender.files.values():
            f.close()
        raise
    if job.grouping:
        appender.add_staged(Manifest.open(job.run_dir, job.name, job.fingerprint()))
    summary.pop("run_dir", None)
    finals = finish(job, output, appender, summary)
    summary["output"] = str(finals["output"])
    summary["rejected_file"] = str(finals["rejected"])
    summary["losses_file"] = str(finals["losses"]) if "losses" in finals else None
    if DROPPED in finals:
        summary["dropped_file"] = str(finals[DROPPED])
    summary["manifest_file"] = str(finals["manifest"])
    if verdict is not None:
        raise verdict
    return summary


def first_rejected(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The first rejected record of a finished single-file command (for ``transform --strict``)."""
    path = str(summary["rejected_file"])  # a URL once uploaded (engine/remote.py)
    with open_input(path) as f:
        if path.endswith(".parquet"):
            # The synchronous reader (ParquetFile), never pq.read_table: its dataset scan hands the
            # Python file object to Arrow's I/O threads, and the last of them to let go of it took
            # the GIL while the interpreter was exiting and aborted the process ("terminate called
            # without an active exception", rc 134, about 1 run in 15).
            pf = pq.ParquetFile(f if is_url(path) else local_path(path))
            for batch in pf.iter_batches(batch_size=1, use_threads=False):
                if batch.num_rows:
                    return batch.to_pylist()[0]
            return None
        line = f.readline()
    return orjson.loads(line) if line.strip() else None
