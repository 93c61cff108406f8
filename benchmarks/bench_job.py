"""Job benchmark: `chatlake run` end to end (JSONL -> steps -> Chat JSONL run directory) at N and N/10,
side by side with the floors over the same data, in one run.

    python benchmarks/bench_job.py --n 1000000

Contenders, each in its own process (peak RSS of the whole process tree):

* floor: orjson loads + dumps per line over the N-record JSONL (1 core);
* floor: pyarrow read + zstd write of the job's own canonical Parquet output (conversations/);
* `chatlake run` over N/10 and N records: ingest -> role_swap + turns -> Chat JSONL, 2 workers,
  sharded output with losses and rejected files.

Memory should be flat in the input size: the peak at N about equals the peak at N/10.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_codec import ensure_input
from benchmarks.measure import Measured, measure

PY = sys.executable
HERE = Path(__file__).resolve().parent
# on_unsupported=drop: records with tool calls or reasoning go through (those items are dropped)
# instead of being rejected, so the whole input reaches the Chat encoder.
STEPS = ["role_swap:on_unsupported=drop", "turns"]


def write_job(
    path: Path, src: Path, run_dir: Path, steps: list[str], shard_records: int, workers: int
) -> Path:
    steps_line = f"steps = {steps!r}\n".replace("'", '"') if steps else ""
    path.write_text(
        f'name = "bench-{path.stem}"\n{steps_line}'
        f'[[inputs]]\npath = "{src.resolve()}"\nformat = "responses"\n'
        f'[output]\npath = "{run_dir.resolve()}"\ntarget = "chat"\nshard_records = {shard_records}\n'
        f"[engine]\nworkers = {workers}\n"
    )
    return path


def parquet_floor(run_dir: str, out: str) -> None:
    """Read every conversations/ shard and write it back, zstd, one file: the Parquet floor."""
    import pyarrow.parquet as pq

    from pipeline.io.parquet import writer

    parts = sorted(Path(run_dir, "conversations").glob("part-*.parquet"))
    w = None
    for p in parts:
        pf = pq.ParquetFile(p)
        for i in range(pf.num_row_groups):
            t = pf.read_row_group(i)
            if w is None:
                w = writer(out, t.schema)
            w.write_table(t)
    if w is not None:
        w.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=Path("bench-out"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-records", type=int, default=10_000)
    ap.add_argument("--parquet-floor", nargs=2, metavar=("RUN_DIR", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.parquet_floor:
        parquet_floor(*args.parquet_floor)
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    small_n = max(args.n // 10, 1)
    src = ensure_input(args.workdir, args.n, args.seed)
    small = ensure_input(args.workdir, small_n, args.seed)  # the first N/10 records of the same stream
    gb = src.stat().st_size / 1e9

    def job(label: str, path: Path, n: int) -> Measured:
        run_dir = args.workdir / f"job-{label}"
        shutil.rmtree(run_dir, ignore_errors=True)
        job_file = write_job(args.workdir / f"job-{label}.toml", path, run_dir, STEPS, args.shard_records,
                             args.workers)  # fmt: skip
        cmd = [PY, "-m", "pipeline", "run", str(job_file), "--quiet", "--no-catalog"]
        return measure(f"chatlake run, {n:,} records ({args.workers} workers)", cmd, n)

    print(f"input: {args.n:,} Responses records, {gb:.2f} GB; steps: {STEPS}", file=sys.stderr)
    floor_cmd = [PY, str(HERE / "floor.py"), "orjson", str(src)]
    floor = measure("orjson loads+dumps floor (1 core)", floor_cmd, args.n)
    job_small = job("small", small, small_n)
    job_full = job("full", src, args.n)
    pq_floor = measure(
        "Parquet read + zstd write of the job's conversations/ (1 core)",
        [PY, str(Path(__file__).resolve()), "--parquet-floor", str(args.workdir / "job-full"),
         str(args.workdir / "floor.parquet")],
        args.n,
    )  # fmt: skip

    def row(m: Measured) -> str:
        # Compared by rate, so the N/10 run lines up with the floor over N.
        return (
            f"| {m.label} | {m.records:,} | {m.seconds:,.1f} | {m.per_second:,.0f} "
            f"| {floor.per_second / m.per_second:.2f}x | {m.peak_rss_mb:,.0f} |"
        )

    lines = [
        f"Job benchmark: {args.n:,} synthetic Responses conversations, {gb:.2f} GB JSONL, steps "
        f"{' + '.join(STEPS)} -> Chat JSONL "
        f"(`python benchmarks/bench_job.py --n {args.n} --shard-records {args.shard_records} "
        f"--workers {args.workers}`), Python {platform.python_version()}, "
        f"{platform.machine()}.",
        "",
        "| contender | records | seconds | records/s | time per record vs orjson floor | peak RSS (MB) |",
        "|---|---:|---:|---:|---:|---:|",
        row(floor),
        row(pq_floor),
        row(job_small),
        row(job_full),
        "",
        f"Peak RSS at N / at N/10: {job_full.peak_rss_mb / job_small.peak_rss_mb:.2f} "
        f"({job_full.peak_rss_mb:,.0f} MB vs {job_small.peak_rss_mb:,.0f} MB). "
        f"Job time vs orjson floor: {job_full.seconds / floor.seconds:.2f}x; "
        f"vs Parquet floor: {job_full.seconds / pq_floor.seconds:.2f}x.",
    ]
    text = "\n".join(lines)
    (args.workdir / f"job-{args.n}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
