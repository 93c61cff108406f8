"""Running a job: prepare the run directory, plan shards, skip finished ones, execute, summarize.

Example (with a job file, so not run as a doctest)::

    from pipeline.jobs import load_job

    summary = run_job(load_job("job.toml"))
    assert summary["read"] == summary["written"] + summary["rejected"] + summary.get("dropped", 0)
"""

from __future__ import annotations

import contextlib
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import orjson

from pipeline.catalog import Catalog
from pipeline.errors import ConfigError
from pipeline.jobs.resolve import PARQUET, Job
from pipeline.oserrors import describe

from . import local, partition, remote, rundir
from .atomic import write_atomic
from .lock import run_lock
from .manifest import Manifest
from .process import Work
from .progress import JobProgress
from .rundir import SUMMARY
from .shards import Shard, plan
from .summary import summarize
from .verdict import judge
from .writers import folders


class JobFailed(RuntimeError):
    """A job that failed while running (exit code 1); finished shards stay listed for a resume.

    ``transient``: whether running it again can get past the failure (the machine's: a full disk,
    a lost connection, a worker killed for memory). Any other failure comes from the input or the
    code and repeats on every run, so it is not offered as "run again to resume".
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class TooManyRejected(JobFailed):
    """A job that ran to the end but rejected too many records (:mod:`.verdict`; exit code 1).

    Its outputs and ``summary.json`` are written as usual; ``summary`` is that summary, and the
    message is the verdict's one line (how many, where, why, and what to try).
    """

    def __init__(self, summary: dict[str, Any]) -> None:
        super().__init__(summary["verdict"]["message"])
        self.summary = summary


class Sink(Protocol):
    """Takes each finished shard in shard order (``convert``/``transform -o FILE``: the appender of
    engine/single_file.py, which writes the shard's bytes into the single file)."""

    def resume(self, manifest: Manifest) -> dict[str, str]:
        """Check what an earlier run appended; drop from ``manifest`` the shards to redo (-> why)."""
        ...

    def add(self, entry: dict[str, Any]) -> None:
        """Append a finished shard (its ``parts``, taken out of the entry) before it is listed."""
        ...


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def transient(e: BaseException) -> bool:
    """Whether a failure comes from the machine and may pass (``JobFailed.transient``): an operating
    system error (disk, permissions, network), memory, or a worker pool that lost a worker."""
    from concurrent.futures import BrokenExecutor

    return isinstance(e, OSError | MemoryError | BrokenExecutor)


def _failure(e: Exception, run_dir: Path) -> str:
    """One line for an error that failed a job; an OSError says where (Arrow's name no file)."""
    if not isinstance(e, OSError):
        return f"{type(e).__name__}: {e}"
    return describe(e) if e.filename else f"writing into {run_dir}: {describe(e)}"


def _stage1(manifest: Manifest) -> list[dict[str, Any]] | None:
    """The stage-1 entries of a two-stage job (None for any other job)."""
    return list(manifest.partitions.values()) if manifest.partitions else None


def prepare_run_dir(job: Job, fresh: bool) -> Manifest:
    """Create (or, with ``fresh``, empty of chatlake's files) the run directory, claimed at once by
    its manifest; drop temp files of a killed run. The caller holds the directory's lock
    (:func:`run_job`).

    Raises ConfigError when the directory holds another job's run (checked before any work).
    """
    run_dir = job.run_dir
    if fresh:
        kept = rundir.clear(run_dir)
        if kept:
            more = f" and {len(kept) - 3} more" if len(kept) > 3 else ""
            print(f"--fresh left in {run_dir} what chatlake did not write: {', '.join(kept[:3])}{more}",
                  file=sys.stderr)  # fmt: skip
    manifest = Manifest.open(run_dir, job.name, job.fingerprint())
    if not manifest.path.exists():  # the directory is this run's from now on (rundir.check_run_dir)
        manifest.save()
    # run-layout.md: no output/ when the target is parquet; the single-file layout writes fewer folders
    for name in folders(job.layout, job.target != PARQUET):
        (run_dir / name).mkdir(parents=True, exist_ok=True)
    if job.grouping:  # the stage-1 files of the two-stage job, and the records it drops
        (run_dir / rundir.PARTITIONS).mkdir(exist_ok=True)
        (run_dir / rundir.DROPPED).mkdir(exist_ok=True)
    rundir.clean_temp_files(run_dir)
    return manifest


def run_job(
    job: Job,
    *,
    catalog: str | Path | None = None,
    progress: bool = False,
    fresh: bool = False,
    sink: Sink | None = None,
) -> dict[str, Any]:
    """Run ``job`` into ``job.run_dir``, resuming a killed run of the same job; returns the summary.

    Raises :class:`TooManyRejected` (a :class:`JobFailed`) after writing the run when its records
    were all rejected, or more than ``job.max_rejected_share`` of them (:mod:`.verdict`).
    Raises :class:`JobFailed` (the run is recorded as failed) when something breaks while running,
    ConfigError before any work: a run directory that cannot be written, that another run holds
    (:mod:`.lock`), or that ``fresh`` may not empty.
    """
    rundir.check_run_dir(job.run_dir, fresh)
    with contextlib.ExitStack() as stack:
        try:
            job.run_dir.mkdir(parents=True, exist_ok=True)
            stack.enter_context(run_lock(job.run_dir))
            if job.run_url is not None:  # a run directory at a URL: a local working copy, mirrored
                stack.enter_context(remote.mirrored(job, fresh))
            manifest = prepare_run_dir(job, fresh)
        except OSError as e:  # nothing was done yet: a bad output.path (exit 2), not a failed job
            raise ConfigError(f"cannot write the run directory {str(job.run_dir)!r}: {describe(e)}") from None
        summary = _run(job, manifest, catalog=catalog, progress=progress, sink=sink)
    if job.run_url is not None:  # all of it is on the store now
        remote.remove_work_dir(job)
    return summary


def _run(
    job: Job, manifest: Manifest, *, catalog: str | Path | None, progress: bool, sink: Sink | None = None
) -> dict[str, Any]:
    """:func:`run_job` once the run directory is locked and prepared."""
    started_at = _now()
    run_id = f"{job.name}-{started_at.replace(':', '').replace('-', '')[:15]}-{uuid.uuid4().hex[:6]}"
    cat = Catalog(catalog) if catalog is not None else None
    if cat is not None:
        cat.start(run_id, job.name, job.run_url or str(job.run_dir), job.engine, started_at, job.source_text)
    t0 = time.perf_counter()
    work = Work.of(job)
    skipped = 0  # listed shards kept (of the job's shards; a two-stage job's stage 2)
    skipped_stage1 = 0  # a two-stage job's stage-1 shards kept
    total_bytes = sum(f.size for f in job.files)
    bar = JobProgress(f"{job.name}", total_bytes, progress)

    redone: dict[str, str] = {}  # listed shards whose files did not match the manifest -> why
    if sink is not None:
        redone.update(sink.resume(manifest))

    def pending(
        shards: Iterator[Shard], listed: dict[str, dict[str, Any]], input_bytes: bool = True
    ) -> Iterator[Shard]:
        nonlocal skipped
        for s in shards:
            if s.id in listed:
                problem = manifest.problem_of(listed[s.id])
                if problem is None:
                    skipped += 1
                    if input_bytes:
                        bar.skipped(s.weight)
                    continue
                redone[s.id] = problem
                bar.note(f"redoing {s.id}: {problem}")
            yield s

    def on_done(entry: dict[str, Any]) -> None:
        entry.pop("seconds", None)  # the manifest holds no timings: resumed == uninterrupted
        if sink is not None:
            sink.add(entry)
        manifest.add(entry)

    def on_partitioned(entry: dict[str, Any]) -> None:
        entry.pop("seconds", None)
        manifest.add_partition(entry)

    def execute(shards: Iterator[Shard], w: Work, task: local.Task | None, done: Any, advance: Any) -> None:
        if job.engine == "ray":
            from . import ray as ray_engine

            ray_engine.execute(shards, w, job.workers, done, advance, job.ray_address, task=task)
        else:
            ordered = sink is not None  # the sink appends shards in order
            local.execute(shards, w, job.workers, done, advance, job.pool, task=task, ordered=ordered)

    two_stage = job.grouping
    timings: dict[str, float] = {}  # a two-stage job's phases: this run's seconds
    marks = [t0]

    def lap() -> float:
        """Seconds since the previous lap (or the start)."""
        marks.append(time.perf_counter())
        return marks[-1] - marks[-2]

    try:
        with bar:
            if two_stage:
                # docs/transforms.md, "Threads at scale": partition every input shard, then thread
                # each partition (stage 2 reads no input bytes: the bar counts stage 1's)
                stage1, stage2, parts = partition.stages(job, work)
                first = plan(job, partition.stage1_records(job))  # larger shards: fewer stage-1 files
                execute(pending(first, manifest.partitions), stage1, partition.partition_shard,
                        on_partitioned, bar.advance)  # fmt: skip
                skipped_stage1, skipped = skipped, 0  # what stage 1 kept; stage 2 counts its own
                timings["partition"] = lap()
                shards = iter(partition.partition_shards(manifest.partitions, parts))
                execute(pending(shards, manifest.shards, input_bytes=False), stage2,
                        partition.thread_partition, on_done, lambda records, nbytes: None)  # fmt: skip
                timings["thread"] = lap()
                partition.link_threads(job.run_dir, manifest, stage1.grouping)
                timings["link"] = lap()
            else:
                execute(pending(plan(job), manifest.shards), work, None, on_done, bar.advance)  # run_shard
    except BaseException as e:
        if cat is not None:
            failed = summarize(
                job, list(manifest.shards.values()), _stage1(manifest), run_id=run_id,
                started_at=started_at, finished_at=_now(), status="failed",
            )  # fmt: skip
            cat.finish(run_id, failed, "failed", f"{type(e).__name__}: {e}")
        if isinstance(e, Exception):
            raise JobFailed(_failure(e, job.run_dir), transient=transient(e)) from e
        raise
    # a threads job: its threads, requests per thread and what dedupe saves, per dataset
    threads = {"threads": partition.thread_figures(job.run_dir, manifest)} if job.grouping else {}
    if two_stage:  # its stage-1 shards beside the shards of stage 2 (the partitions)
        threads.update(stage1_shards=len(manifest.partitions), stage1_resumed=skipped_stage1)
    summary = summarize(
        job,
        list(manifest.shards.values()),
        _stage1(manifest),
        **threads,
        run_id=run_id,
        started_at=started_at,
        finished_at=_now(),
        status="ok",
        shards_resumed=skipped,
        shards_redone=redone,
        timings_s={k: round(v, 3) for k, v in {"total": time.perf_counter() - t0, **timings}.items()},
    )
    summary["verdict"] = judge(summary, job)
    if not summary["verdict"]["ok"]:
        summary["status"] = "rejected"
    manifest.save()
    write_atomic(job.run_dir / SUMMARY, orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
    if summary["read"] != summary["written"] + summary["rejected"] + summary.get("dropped", 0):
        counts = {k: summary[k] for k in ("read", "written", "rejected", "dropped") if k in summary}
        raise JobFailed(f"counts do not add up: {counts}")
    if cat is not None:
        cat.finish(run_id, summary, summary["status"], summary["verdict"]["message"])
    if not summary["verdict"]["ok"]:
        raise TooManyRejected(summary)
    return summary
