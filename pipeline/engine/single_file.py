"""The single-file layout of ``chatlake convert -o FILE`` and ``chatlake transform -o FILE``.

The engine runs the job into a staging run directory that chatlake owns beside the output,
``FILE.partial/`` (its ``manifest.json`` marks it as chatlake's and names the job). When every shard
is finished, their files are joined in shard order into temp files inside the staging directory and
renamed into place: the side files first, ``FILE`` last, so ``FILE`` appearing is the commit point.
Then the staging directory is removed. An interrupted command leaves its finished shards in the
staging directory and no new file under a final name; the same command run again resumes there.

Final names (docs/run-layout.md, one rule): ``FILE`` (the encoded JSONL for a wire target, canonical
Parquet for ``--to parquet`` and ``transform``), ``FILE.rejected.jsonl`` beside JSONL output or
``FILE.rejected.parquet`` beside Parquet output, and ``FILE.losses.jsonl`` for a wire target.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.errors import ConfigError
from pipeline.io.parquet import table_writer
from pipeline.io.parquet import writer as canonical_writer
from pipeline.io.run_tables import LOSSES_SCHEMA, REJECTED_SCHEMA
from pipeline.jobs.resolve import PARQUET, Job
from pipeline.storage import open_input

from . import join_log
from .atomic import created, open_new, open_ours
from .dropped import DROPPED
from .manifest import MANIFEST, Manifest
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


def _shard_files(staging: Path, folder: str) -> list[Path]:
    """The finished shards' files of one folder, in shard order (as the manifest lists them)."""
    doc = orjson.loads((staging / MANIFEST).read_bytes())
    return [staging / s["files"][folder]["path"] for s in sorted(doc["shards"], key=lambda s: s["id"])]


def _append(part: Path, out: BinaryIO) -> None:
    """Append one file's bytes to ``out`` by ``copy_file_range`` (kernel to kernel), else by reads."""
    out.flush()
    with open(part, "rb") as f:
        n = os.fstat(f.fileno()).st_size
        try:
            while n > 0:
                copied = os.copy_file_range(f.fileno(), out.fileno(), n)
                if copied == 0:
                    break
                n -= copied
        except OSError:  # e.g. a filesystem without it: copy the rest the plain way
            shutil.copyfileobj(f, out, 1 << 20)
        if n:
            shutil.copyfileobj(f, out, 1 << 20)


def _parquet(
    parts: Iterable[Path], dst: Path, schema: pa.Schema | None = None,
    open_writer: Callable[[str, pa.Schema], pq.ParquetWriter] = canonical_writer,
) -> None:
    """Stream the parts' tables (Arrow IPC or Parquet) into one Parquet file, batch by batch.

    The schema is ``schema`` or that of the first part that has rows (a shard that read nothing
    has only the canonical columns, not the ones the steps add); parts without rows add nothing.
    """
    w: pq.ParquetWriter | None = None
    first: pa.Schema | None = None
    with created(dst) as where:  # a temp file of the staging directory: never written through a link
        try:
            for part in parts:
                part_schema, rows, tables = _open_part(part)
                first = first or part_schema
                if not rows:
                    continue
                if w is None:
                    w = open_writer(where, schema or part_schema)
                for t in tables():
                    w.write_table(t.cast(w.schema))
            if w is None:  # no rows at all: still one (empty) file with the right columns
                schema = schema or first
                w = open_writer(where, schema) if schema is not None else canonical_writer(where)
        finally:
            if w is not None:
                w.close()


def _open_part(path: Path) -> tuple[pa.Schema, int, Callable[[], Iterator[pa.Table]]]:
    """``(schema, rows, tables)`` of one shard file: tables() yields its batches or row groups."""
    if path.suffix == ".arrow":
        reader = pa.ipc.open_file(pa.memory_map(str(path)))
        rows = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
        return reader.schema, rows, lambda: (
            pa.Table.from_batches([reader.get_batch(i)]) for i in range(reader.num_record_batches)
        )
    f = pq.ParquetFile(path)
    return f.schema_arrow, f.metadata.num_rows, lambda: (f.read_row_group(i) for i in range(f.num_row_groups))


class _Joiner(threading.Thread):
    """Appends the shards' files to the temp final files while the engine is still running.

    A shard's files appear under their final names only once all are complete, and shards are
    numbered from ``part-00000`` up, so the joiner takes part 0, 1, ... as each appears (the rest
    once the run is over). Writing the final files then overlaps the workers' work instead of
    following it: for a JSONL output, the output, losses and rejected files (the losses file is
    the largest of a convert with losses: 847 MB beside 672 MB of Chat for 200,000 records); for
    Parquet, the output (the rejected rows are joined by :func:`finish`).
    """

    def __init__(self, job: Job, dsts: dict[str, Path]) -> None:
        super().__init__(name="chatlake-join", daemon=True)
        self.parquet = job.target == PARQUET
        if self.parquet:
            self.roles = {"output": (job.run_dir / "conversations", "arrow")}
        else:
            roles = ["output", "losses", "rejected"]
            if job.losses_format == "parquet":  # finish writes them from their Arrow shards
                roles.remove("losses")
            self.roles = {role: (job.run_dir / role, "jsonl") for role in roles}
        self.dsts = {role: dsts[role] for role in self.roles}
        self.run_dir = job.run_dir
        self.finished = threading.Event()  # the run is over: every shard is on disk
        self.stopped = threading.Event()  # the run failed: stop
        self.error: BaseException | None = None

    def _shards(self, k: int = 0) -> Iterator[dict[str, Path]]:
        while not self.stopped.is_set():
            done = self.finished.is_set()  # read before looking: a shard listed before the end is there
            files = {role: folder / f"{shard_id(k)}.{ext}" for role, (folder, ext) in self.roles.items()}
            # a shard's files are renamed into place one after another: take it when all are there
            if all(p.is_file() for p in files.values()):
                k += 1
                yield files
            elif done:
                return
            else:
                time.sleep(0.05)

    def run(self) -> None:
        try:
            if self.parquet:
                _parquet((files["output"] for files in self._shards()), self.dsts["output"])
            else:
                self._concat()
        except BaseException as e:  # handed to the main thread, which raises it
            self.error = e

    def _concat(self) -> None:
        """Append each shard's JSON Lines files to the temp files, then delete them, logging each
        step in ``join.json`` (engine/join_log.py): a resumed run goes on where this one stopped."""
        # the same rule as the resume check's (manifest.check_files): trusted, or started over
        log = join_log.load(self.run_dir) or join_log.JoinLog()
        outs: dict[str, BinaryIO] = {}
        try:
            for role, dst in self.dsts.items():
                if log.next:  # cut a half-appended shard off; append after the logged bytes
                    outs[role] = open_ours(dst)
                    outs[role].truncate(log.bytes[role])
                    outs[role].seek(log.bytes[role])
                else:
                    outs[role] = open_new(dst)
            for files in self._shards(log.next):
                for role, path in files.items():
                    _append(path, outs[role])
                for out in outs.values():
                    out.flush()
                log.next += 1
                log.bytes = {role: out.tell() for role, out in outs.items()}
                log.files += [str(p.relative_to(self.run_dir)) for p in files.values()]
                log.save(self.run_dir)
                for path in files.values():  # their pages go back to the page cache's free pool
                    path.unlink()
        finally:
            for out in outs.values():
                out.close()
        listed = len(orjson.loads((self.run_dir / MANIFEST).read_bytes())["shards"])
        if not self.stopped.is_set() and log.next != listed:  # never a short file under a final name
            raise RuntimeError(f"the join stopped at {shard_id(log.next)}: {listed} shards are finished")

    def wait(self) -> None:
        """After the run: join the remaining shards; raise what went wrong in the thread."""
        self.finished.set()
        self.join()
        if self.error is not None:
            raise self.error
        if self.stopped.is_set():
            raise RuntimeError("the join was stopped")


def finish(job: Job, output: Path) -> dict[str, Path]:
    """Join the side files, rename everything into place (FILE last), remove the staging directory.

    The output (and, beside a JSONL output, the losses and rejected files) was joined by
    :class:`_Joiner` into its temp file while the run went on.
    """
    staging = job.run_dir
    finals = final_paths(output, job.target, job.grouping, job.losses_format)
    tmp = _temp_paths(job, finals)
    if job.grouping:
        _parquet(_shard_files(staging, DROPPED), tmp[DROPPED])
    if "losses" in finals and job.losses_format == "parquet":
        _parquet(_shard_files(staging, "losses"), tmp["losses"], LOSSES_SCHEMA, table_writer)
    if job.target == PARQUET:
        _parquet(_shard_files(staging, "rejected"), tmp["rejected"], REJECTED_SCHEMA)
    for role, path in finals.items():  # FILE last: it appears only when everything else is in place
        os.replace(tmp[role], path)
    remove_staging(job)
    return finals


def _temp_paths(job: Job, finals: dict[str, Path]) -> dict[str, Path]:
    return {role: join_log.temp_path(job.run_dir, role) for role in finals}


def remove_staging(job: Job) -> None:
    """Delete the staging directory, only after checking it is the one chatlake made for this job."""
    manifest = job.run_dir / MANIFEST
    if not manifest.is_file() or orjson.loads(manifest.read_bytes()).get("fingerprint") != job.fingerprint():
        raise RuntimeError(f"{job.run_dir} is not this job's staging directory any more; left in place")
    shutil.rmtree(job.run_dir)


def run_single_file(job: Job, output: Path, *, progress: bool = False) -> dict[str, Any]:
    """Run ``job`` (layout SINGLE_FILE, run_dir = :func:`staging_dir`) into ``output``; its summary.

    The summary is the engine's (docs/run-layout.md) without ``run_dir``, plus ``output``,
    ``rejected_file`` and ``losses_file`` (null for Parquet output).

    A run that rejected too many records (:class:`~pipeline.engine.run.TooManyRejected`) still puts
    its files in place, like any finished run, and then raises with the summary completed.
    """
    from .run import TooManyRejected, run_job

    prepare(job)
    joiner = _Joiner(job, _temp_paths(job, final_paths(output, job.target, job.grouping, job.losses_format)))
    # a grouping job's last pass may rewrite finished shards (engine/partition.link_threads): join
    # them once the run is over
    if not job.grouping:
        joiner.start()
    verdict: TooManyRejected | None = None
    try:
        summary = run_job(job, progress=progress)
    except TooManyRejected as e:  # finished: its files go in place like any other run's
        verdict, summary = e, e.summary
    except BaseException:
        joiner.stopped.set()
        if joiner.is_alive():
            joiner.join()
        raise
    if job.grouping:
        joiner.start()
    joiner.wait()
    finals = finish(job, output)
    summary.pop("run_dir", None)
    summary["output"] = str(finals["output"])
    summary["rejected_file"] = str(finals["rejected"])
    summary["losses_file"] = str(finals["losses"]) if "losses" in finals else None
    if DROPPED in finals:
        summary["dropped_file"] = str(finals[DROPPED])
    if verdict is not None:
        raise verdict
    return summary


def first_rejected(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The first rejected record of a finished single-file command (for ``transform --strict``)."""
    path = str(summary["rejected_file"])  # a URL once uploaded (engine/remote.py)
    with open_input(path) as f:
        if path.endswith(".parquet"):
            t = pq.read_table(f)
            return t.slice(0, 1).to_pylist()[0] if t.num_rows else None
        line = f.readline()
    return orjson.loads(line) if line.strip() else None
