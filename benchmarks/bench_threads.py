"""Threads benchmark: a request log into threads + dedupe to leaves, side by side with baselines.

    python benchmarks/bench_threads.py --threads 50000 --mean-requests 20 --seed 7 --ref-n 5000

The input is ``chatlake synth --format responses --request-log`` (``--threads`` conversations cut
into about ``--mean-requests`` requests each: ~1M requests for the defaults), converted once to
canonical Parquet in ``--workdir``.

(a) end to end, canonical Parquet in -> Parquet out, each in a fresh process, peak RSS of the
    process tree: the plain Parquet read + write of the same table (the floor,
    ``bench_transforms.floor``, on chatlake's Arrow pool, and again on pyarrow's default pool),
    the two-stage job's I/O alone (``two_stage_io``: every request read and written twice, no
    threading work) vs ``chatlake transform --step threads`` and ``--step
    threads:keep=leaves``: the two-stage job (docs/transforms.md, "Threads at scale": partition by
    thread root, thread each partition, link compactions across partitions; the dropped records go
    to ``FILE.dropped.parquet``);
(b) the step alone in memory (``apply_steps``) on the first ``--ref-n`` requests vs the
    per-record Python reference (``tests/transforms/reference.py``, ``threads_reference``) on the
    same requests.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.measure import Measured, measure

PY = sys.executable
FLOOR = str(Path(__file__).resolve().parent / "bench_transforms.py")
POOL = "ARROW_DEFAULT_MEMORY_POOL"


def ensure_parquet(workdir: Path, threads: int, mean: int, seed: int) -> tuple[Path, int]:
    """The canonical Parquet of the request log (generated once), and its row count."""
    import pyarrow.parquet as pq

    from pipeline import synth

    path = workdir / f"threads-{threads}-m{mean}-s{seed}.parquet"
    if not path.exists():
        src = workdir / f"threads-{threads}-m{mean}-s{seed}.jsonl"
        print(f"generating a request log of {threads:,} conversations -> {path}", file=sys.stderr)
        synth.write_request_log(src, "responses", threads, seed, mean_requests=mean, workers=2)
        cmd = [PY, "-m", "pipeline", "convert", "--quiet", str(src), "--from", "responses", "--to", "parquet"]
        subprocess.run([*cmd, "-o", str(path)], check=True)
        src.unlink()
    return path, pq.ParquetFile(path).metadata.num_rows


def in_memory(src: str, ref_n: int) -> None:
    """(b): prints ``IN_MEMORY ref_n step_seconds ref_seconds`` (CPU seconds of this process)."""
    import polars as pl
    import pyarrow.parquet as pq

    from pipeline.transforms import apply_steps, parse_step
    from tests.transforms.reference import threads_reference

    table = pq.ParquetFile(src).iter_batches(batch_size=ref_n)
    head = pa_table(next(table))
    df = pl.from_arrow(head)
    assert isinstance(df, pl.DataFrame)
    step = [parse_step("threads")]
    t = time.process_time()
    apply_steps(df, step)
    head_s = time.process_time() - t
    rows = head.to_pylist()  # not timed
    params = step[0].params
    t = time.process_time()
    threads_reference(rows, "all", params.markers, params.item_types)  # type: ignore[attr-defined]
    ref_s = time.process_time() - t
    print(f"IN_MEMORY {head.num_rows} {head_s:.3f} {ref_s:.3f}")


def two_stage_io(src: str, mid: str, dst: str) -> None:
    """The I/O of the two-stage job alone, no threading work: read the input batch by batch, write
    every batch to one zstd Arrow IPC file (stage 1's partition files), read that back and write the
    zstd Parquet output (stage 2). Arrow on chatlake's pool, as the floor."""
    # isort: off
    import pipeline.io.parquet  # first: it chooses Arrow's memory pool before pyarrow loads
    import pyarrow as pa
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    # isort: on
    pf = pq.ParquetFile(src)
    options = ipc.IpcWriteOptions(compression="zstd")
    with pa.OSFile(mid, "wb") as f, ipc.new_file(f, pf.schema_arrow, options=options) as w:
        for batch in pf.iter_batches(batch_size=32_768):
            w.write_batch(batch)
    with pa.memory_map(mid) as f, pipeline.io.parquet.writer(dst, pf.schema_arrow) as out:
        reader = ipc.open_file(f)
        for i in range(reader.num_record_batches):
            out.write_batch(reader.get_batch(i))
    Path(mid).unlink()


@contextlib.contextmanager
def arrow_pool(name: str) -> Iterator[None]:
    """Child processes started inside get Arrow's ``name`` pool (``ARROW_DEFAULT_MEMORY_POOL``)."""
    old = os.environ.get(POOL)
    os.environ[POOL] = name
    try:
        yield
    finally:
        if old is None:
            del os.environ[POOL]
        else:
            os.environ[POOL] = old


def pa_table(batch: object) -> object:
    import pyarrow as pa

    return pa.Table.from_batches([batch])  # type: ignore[list-item]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=50_000, help="conversations in the request log")
    ap.add_argument("--mean-requests", type=int, default=20, help="mean requests per conversation")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=Path("bench-out"))
    ap.add_argument("--ref-n", type=int, default=5_000, help="requests the per-record reference runs on")
    roles = ("main", "memory", "two-stage-io")
    ap.add_argument("--role", choices=roles, default="main", help=argparse.SUPPRESS)
    ap.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "memory":
        in_memory(args.paths[0], args.ref_n)
        return
    if args.role == "two-stage-io":
        two_stage_io(*args.paths)
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    src, n = ensure_parquet(args.workdir, args.threads, args.mean_requests, args.seed)
    print("running contenders (each in a fresh process)", file=sys.stderr)
    floor_cmd = [PY, FLOOR, "--role", "floor", str(src), str(args.workdir / "threads-floor.parquet")]
    # the floor on chatlake's Arrow pool (pipeline/__init__.py): the ratios compare work, not allocators
    fl = measure("plain Parquet read + write (pyarrow, same batches), chatlake's Arrow pool", floor_cmd, n)
    with arrow_pool("mimalloc"):
        default_pool = measure("the same on pyarrow's default pool (mimalloc)", floor_cmd, n)
    me = [PY, str(Path(__file__).resolve()), "--role", "two-stage-io", str(src)]
    io = measure(
        "two-stage I/O alone: read, write zstd Arrow IPC, read it, write Parquet",
        [*me, str(args.workdir / "threads-io.arrow"), str(args.workdir / "threads-io.parquet")],
        n,
    )
    runs = []
    for spec in ("threads", "threads:keep=leaves"):
        out = args.workdir / f"threads-out-{spec.replace(':', '-').replace('=', '-')}.parquet"
        cmd = [PY, "-m", "pipeline", "transform", "--quiet", str(src), "--step", spec, "-o", str(out)]
        runs.append(measure(f"chatlake transform --step {spec}", cmd, n))
    mem = subprocess.run(
        [PY, str(Path(__file__).resolve()), "--role", "memory", "--ref-n", str(args.ref_n), str(src)],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(x for x in mem.stdout.splitlines() if x.startswith("IN_MEMORY"))
    _, rn, hs, rs = line.split()

    def row(m: Measured) -> str:
        ratio, cpu_ratio = m.seconds / fl.seconds, m.cpu_seconds / fl.cpu_seconds
        cells = (
            f"{m.seconds:,.1f} | {m.cpu_seconds:,.1f} | {m.per_second:,.0f} | {ratio:.2f}x | {cpu_ratio:.2f}x"
            f" | {m.peak_rss_mb:,.0f}"
        )
        return f"| {m.label} | {cells} |"

    def rate(label: str, records: str, seconds: str) -> str:
        return f"| {label} | {int(records):,} | {float(seconds):.2f} | {int(records) / float(seconds):,.0f} |"

    cmd = (
        f"python benchmarks/bench_threads.py --threads {args.threads} --mean-requests {args.mean_requests} "
        f"--seed {args.seed} --ref-n {args.ref_n}"
    )
    text = "\n".join(
        [
            f"Threads benchmark: a request log of {n:,} requests from {args.threads:,} synthetic Responses "
            f"conversations (`{cmd}`), Python {platform.python_version()}, {platform.machine()}.",
            "",
            "(a) end to end, canonical Parquet in -> Parquet out",
            "",
            "| contender | seconds | CPU seconds | requests/s | time vs floor | CPU vs floor "
            "| peak RSS (MB) |",
            "|---|---:|---:|---:|---:|---:|---:|",
            row(fl),
            row(default_pool),
            row(io),
            *(row(m) for m in runs),
            "",
            "(b) the step alone, tables in memory (one process, CPU seconds)",
            "",
            "| contender | requests | seconds | requests/s |",
            "|---|---:|---:|---:|",
            rate("apply_steps threads, first --ref-n", rn, hs),
            rate("per-record Python reference, first --ref-n", rn, rs),
            "",
            f"(a) threads:keep=leaves / floor: {runs[1].seconds / fl.seconds:.2f}x wall, "
            f"{runs[1].cpu_seconds / fl.cpu_seconds:.2f}x CPU (target <= 2x, peak < 2 GB).",
        ]
    )
    (args.workdir / f"threads-{n}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
