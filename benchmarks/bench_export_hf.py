"""export-hf benchmark: `chatlake export-hf` of a run beside the job that wrote it, in one run.

    python benchmarks/bench_export_hf.py --n 100000

Contenders, each in its own process (peak RSS of the whole process tree, CPU of every process):

* the job: `chatlake run` over N synthetic Responses records (the job benchmark's steps, 2 workers)
  into a Chat run directory: the baseline the export is compared with;
* `chatlake export-hf` of that run with 1 and with 2 worker processes;
* `chatlake export-hf` over the run's first N/10 records (one conversations shard per 10,000
  records), 2 workers: memory should be flat in the run's size.

After the timed runs (not timed): how many of the run's rows the compiled HF encoder took
(``EncodedRows.native``), the rest having gone to the per-record encoder.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_codec import ensure_input
from benchmarks.bench_job import STEPS, write_job
from benchmarks.measure import Measured, measure

PY = sys.executable


def native_share(run_dir: Path, batch_rows: int = 5_000) -> tuple[int, int]:
    """(rows the compiled HF encoder took, rows) over a run's conversations, batch by batch as
    export-hf reads them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.encoders.encode_rows import encode_rows
    from pipeline.sinks.hf_dataset import conversation_files

    took = rows = 0
    for path in conversation_files(run_dir):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
            enc = encode_rows(pa.Table.from_batches([batch]), "hf")
            took += sum(enc.native.to_pylist())
            rows += batch.num_rows
    return took, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=Path("bench-out"))
    ap.add_argument("--shard-records", type=int, default=10_000)
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    small_n = max(args.n // 10, 1)

    def job(n: int) -> tuple[Measured, Path]:
        src = ensure_input(args.workdir, n, args.seed)
        run_dir = args.workdir / f"export-run-{n}"
        shutil.rmtree(run_dir, ignore_errors=True)
        job_file = args.workdir / f"export-job-{n}.toml"
        write_job(job_file, src, run_dir, STEPS, args.shard_records, 2)
        cmd = [PY, "-m", "pipeline", "run", str(job_file), "--quiet", "--no-catalog"]
        return measure(f"chatlake run, {n:,} records (2 workers): the job", cmd, n), run_dir

    def export(run_dir: Path, n: int, workers: int) -> Measured:
        out = args.workdir / f"export-hf-{n}-w{workers}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = [PY, "-m", "pipeline", "export-hf", str(run_dir), str(out), "--workers", str(workers), "-q"]
        return measure(f"chatlake export-hf, {n:,} records ({workers} workers)", cmd, n)

    job_full, run_full = job(args.n)
    _, run_small = job(small_n)
    one = export(run_full, args.n, 1)
    two = export(run_full, args.n, 2)
    small = export(run_small, small_n, 2)

    def row(m: Measured) -> str:
        per = args.n / m.records  # per record, so the N/10 export lines up with the job over N
        return (
            f"| {m.label} | {m.records:,} | {m.seconds:,.1f} | {m.seconds / job_full.seconds * per:.2f}x "
            f"| {m.cpu_seconds:,.1f} | {m.cpu_seconds / job_full.cpu_seconds * per:.2f}x "
            f"| {m.peak_rss_mb:,.0f} |"
        )

    lines = [
        f"export-hf benchmark: {args.n:,} synthetic Responses conversations, job steps {' + '.join(STEPS)} "
        f"-> Chat run directory, then export-hf (`python benchmarks/bench_export_hf.py --n {args.n}`), "
        f"Python {platform.python_version()}, {platform.machine()}.",
        "",
        "| contender | records | seconds | time per record vs the job | CPU s | CPU per record vs the job "
        "| peak RSS (MB) |",
        "|---|---:|---:|---:|---:|---:|---:|",
        row(job_full),
        row(one),
        row(two),
        row(small),
        "",
        f"Peak RSS at N / at N/10 (2 workers): {two.peak_rss_mb / small.peak_rss_mb:.2f} "
        f"({two.peak_rss_mb:,.0f} MB vs {small.peak_rss_mb:,.0f} MB).",
    ]
    took, rows = native_share(run_full)
    lines.append(f"Rows the compiled HF encoder took: {took:,} of {rows:,} ({took / max(rows, 1):.1%}).")
    text = "\n".join(lines)
    (args.workdir / f"export-hf-{args.n}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
