"""Transform benchmark: role_swap (drop mode) + turns + compaction, side by side with baselines.

    python benchmarks/bench_transforms.py --n 1000000 --seed 7 --ref-n 50000 --memory-n 200000

(a) end to end, canonical Parquet in -> Parquet out (``chatlake transform``), vs the plain Parquet
    read + write of the same table (the floor), each in a fresh process, peak RSS of the tree;
(b) the steps alone on tables in memory (``apply_steps``) vs the per-record Python reference
    (``tests/transforms/reference.py``) on the same records as Python dicts, in one process. The
    whole ``--n`` rows are covered in consecutive slices of ``--memory-n`` rows (1M rows at once
    do not fit in Polars here): each slice is read into one table untimed, ``apply_steps`` is timed
    on it, and times and rows are summed; peak RSS is the process's. The reference runs on the
    first ``--ref-n`` records (conversion to dicts not timed) and rates are compared.
    ``--memory-slices K`` times only the first K slices (``1``: one table of ``--memory-n`` rows).

(b) alone on an existing file:

    python benchmarks/bench_transforms.py --role memory --ref-n 50000 --memory-n 200000 FILE.parquet

role_swap runs with ``on_unsupported=drop`` so every synthetic record flows through all three steps.
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.measure import Measured, measure

PY = sys.executable
STEPS = ["role_swap:on_unsupported=drop", "turns", "compaction"]


def ensure_parquet(workdir: Path, n: int, seed: int) -> Path:
    from pipeline import synth

    path = workdir / f"transforms-{n}-s{seed}.parquet"
    if not path.exists():
        src = workdir / f"transforms-{n}-s{seed}.jsonl"
        print(f"generating {n:,} synthetic Responses conversations -> {path}", file=sys.stderr)
        synth.write_jsonl(src, "responses", n, seed, workers=2)
        import subprocess

        subprocess.run(
            [
                PY,
                "-m",
                "pipeline",
                "convert",
                "--quiet",
                str(src),
                "--from",
                "responses",
                "--to",
                "parquet",
                "-o",
                str(path),
            ],
            check=True,
        )
        src.unlink()
    return path


def floor(src: str, dst: str) -> None:
    """Plain Parquet read + write of the same table, batch by batch like the transform job.

    Arrow allocates from the same pool as in chatlake (``import pipeline`` chooses it before
    pyarrow loads), so the ratio compares the work, not the allocators.
    """
    # isort: off
    import pipeline.io.parquet  # first: it chooses Arrow's memory pool before pyarrow loads
    import pyarrow.parquet as pq

    # isort: on

    pf = pq.ParquetFile(src)
    with pipeline.io.parquet.writer(dst, pf.schema_arrow) as w:
        for batch in pf.iter_batches(batch_size=32_768):
            w.write_batch(batch)


def in_memory(src: str, ref_n: int, memory_n: int, slices: int | None) -> None:
    """(b): apply_steps on tables in memory vs the reference on the first ref_n records.

    The Parquet file is read in consecutive slices of ``memory_n`` rows (``slices`` of them, or
    all with None): each slice is read into one Arrow table (not timed), handed to Polars, and
    apply_steps is timed on it twice -- as the job runs it (runs of rows on one thread per core,
    ``chunks=None``) and on the calling thread alone (``chunks=1``, Polars' own threads only) --
    then dropped before the next slice is read. Times and rows are summed over the slices, so
    1M rows are covered while only one slice's copies are in memory at a time. The reference is
    one Python thread on the first ``ref_n`` records of the first slice, as Python dicts.
    """
    import resource

    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.transforms import apply_steps, parse_step
    from tests.transforms.reference import run_reference

    steps = [parse_step(s) for s in STEPS]
    rows: list[dict] = []
    vec_s = one_s = 0.0
    n = done = 0
    for batch in pq.ParquetFile(src).iter_batches(batch_size=memory_n):
        if slices is not None and done >= slices:
            break
        if not rows:
            rows = batch.slice(0, ref_n).to_pylist()
        df = pl.from_arrow(pa.Table.from_batches([batch]))
        assert isinstance(df, pl.DataFrame)
        del batch
        gc.collect()
        t0 = time.perf_counter()
        kept, rejected = apply_steps(df, steps)
        vec_s += time.perf_counter() - t0
        assert len(kept) + len(rejected) == len(df)
        del kept, rejected
        gc.collect()
        t0 = time.perf_counter()
        kept, rejected = apply_steps(df, steps, chunks=1)
        one_s += time.perf_counter() - t0
        assert len(kept) + len(rejected) == len(df)
        n += len(df)
        done += 1
        del kept, rejected, df
        gc.collect()
        print(f"slice {done}: {n:,} rows so far, {vec_s:.2f} s (runs on threads)", file=sys.stderr)
    params = [(s.name, dict(s.params)) for s in steps]
    gc.collect()
    t0 = time.perf_counter()
    for row in rows:
        for name, p in params:
            row, _err = run_reference(name, row, p)
            if row is None:
                break
    ref_s = time.perf_counter() - t0
    vec_rate, ref_rate, one_rate = n / vec_s, len(rows) / ref_s, n / one_s
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"IN_MEMORY {n} {vec_s:.3f} {len(rows)} {ref_s:.3f} {vec_rate:.0f} {ref_rate:.0f} "
        f"{one_s:.3f} {one_rate:.0f} {pl.thread_pool_size()} {peak_mb:.0f} {done}"
    )
    print(
        f"apply_steps: {n:,} rows in {done} slice(s) of <= {memory_n:,} in {vec_s:.3f} s = {vec_rate:,.0f} "
        f"conv/s ({pl.thread_pool_size()} threads); calling thread only: {one_s:.3f} s = "
        f"{one_rate:,.0f} conv/s; reference: {len(rows):,} rows in {ref_s:.3f} s = {ref_rate:,.0f} conv/s; "
        f"ratio {vec_rate / ref_rate:.1f}x (calling thread only {one_rate / ref_rate:.1f}x); "
        f"peak RSS {peak_mb:,.0f} MB",
        file=sys.stderr,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--workdir", type=Path, default=Path("bench-out"))
    ap.add_argument("--ref-n", type=int, default=50_000, help="records the per-record reference runs on")
    ap.add_argument(
        "--memory-n",
        type=int,
        default=200_000,
        help="(b): rows held in memory at a time (1M rows need > 24 GB in Polars); the file is timed "
        "slice by slice",
    )
    ap.add_argument(
        "--memory-slices",
        type=int,
        default=None,
        help="(b): time only the first K slices of --memory-n rows (default: all, i.e. all --n rows)",
    )
    ap.add_argument("--role", choices=("main", "floor", "memory"), default="main", help=argparse.SUPPRESS)
    ap.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "floor":
        floor(*args.paths)
        return
    if args.role == "memory":
        in_memory(args.paths[0], args.ref_n, args.memory_n, args.memory_slices)
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    src = ensure_parquet(args.workdir, args.n, args.seed)
    n = args.n
    out_floor = args.workdir / "transforms-floor.parquet"
    out_tx = args.workdir / "transforms-out.parquet"
    me = [PY, str(Path(__file__).resolve())]
    print("running contenders (each in a fresh process)", file=sys.stderr)
    fl = measure(
        "plain Parquet read + write (pyarrow, same batches)",
        [*me, "--role", "floor", str(src), str(out_floor)],
        n,
    )
    step_args = [a for s in STEPS for a in ("--step", s)]
    tx = measure(
        "chatlake transform role_swap + turns + compaction",
        [PY, "-m", "pipeline", "transform", "--quiet", str(src), *step_args, "-o", str(out_tx)],
        n,
    )
    import subprocess

    slice_args = [] if args.memory_slices is None else ["--memory-slices", str(args.memory_slices)]
    mem_args = ["--ref-n", str(args.ref_n), "--memory-n", str(args.memory_n), *slice_args]
    mem = subprocess.run(
        [*me, "--role", "memory", *mem_args, str(src)],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(x for x in mem.stdout.splitlines() if x.startswith("IN_MEMORY"))
    _, vn, vs, rn, rs, vrate, rrate, one_s, one_rate, threads, mem_peak, n_slices = line.split()

    def row(m: Measured) -> str:
        ratio = m.seconds / fl.seconds
        cells = f"{m.seconds:,.1f} | {m.per_second:,.0f} | {ratio:.2f}x | {m.peak_rss_mb:,.0f}"
        return f"| {m.label} | {cells} |"

    text = "\n".join(
        [
            f"Transforms benchmark: {n:,} synthetic Responses conversations "
            f"(`python benchmarks/bench_transforms.py --n {n} --seed {args.seed} {' '.join(mem_args)}`), "
            f"Python {platform.python_version()}, "
            f"{platform.machine()}.",
            "",
            "(a) end to end, canonical Parquet in -> Parquet out",
            "",
            "| contender | seconds | conversations/s | time vs floor | peak RSS (MB) |",
            "|---|---:|---:|---:|---:|",
            row(fl),
            row(tx),
            "",
            f"(b) the steps alone, tables in memory: {int(n_slices)} consecutive slice(s) of <= "
            f"{args.memory_n:,} rows, each read untimed, times summed (one process, peak RSS "
            f"{int(mem_peak):,} MB)",
            "",
            "| contender | records | seconds | conversations/s |",
            "|---|---:|---:|---:|",
            f"| apply_steps (runs of rows on {threads} threads) | {int(vn):,} | {float(vs):.2f} "
            f"| {int(vrate):,} |",
            f"| apply_steps (calling thread only) | {int(vn):,} | {float(one_s):.2f} | {int(one_rate):,} |",
            f"| per-record Python reference | {int(rn):,} | {float(rs):.2f} | {int(rrate):,} |",
            "",
            f"(a) transform / floor: {tx.seconds / fl.seconds:.2f}x (target <= 1.5x); "
            f"(b) Polars / reference rate: {int(vrate) / int(rrate):.1f}x (target >= 30x; "
            f"calling thread only {int(one_rate) / int(rrate):.1f}x).",
        ]
    )
    (args.workdir / f"transforms-{n}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
