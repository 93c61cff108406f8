"""Audit queries vs plain DuckDB ``count(*)`` over the same files, side by side (issue 7).

    python benchmarks/bench_audit.py --base 1000000 --copies 10     # 10M records: the target size
    python benchmarks/bench_audit.py --base 20000 --copies 10       # 200k records: a quick look

How the big run is made (say so when quoting figures): ``chatlake synth`` writes ``--base``
synthetic Responses conversations; the batch engine (``pipeline.engine.run_job``, target ``chat``)
turns them into a real run directory (conversations, items, losses, rejected) -- or ``--base-run``
names an existing one; every shard is then copied ``--copies`` times with new conversation ids
(``conversation_id || '-r<k>'``), so the run holds ``base x copies`` records whose items and losses
join exactly. Copies are written by pyarrow (zstd), not by the engine.

Per query: the median of ``--repeat`` runs, and right before each, two baselines over the same
files, in plain DuckDB without the views: (1) ``count(*)`` of every file set the query reads, as
the issue states it -- for Parquet that is answered from the footers without reading any data, so
no query that reads a column can be within 3x of it; (2) the *scan* baseline:
``sum(strlen(conversation_id))`` over the same file sets, which must read one column of
data. Both ratios are printed; the <= 3x check is against (2).
Everything runs in this one process (DuckDB uses all cores); peak RSS is the process's.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.audit import load_queries, open_run

VIEWS = ("conversations", "items", "losses", "rejected")


def build_base(out: Path, n: int, workers: int) -> Path:
    """A real engine run over ``n`` synthetic Responses conversations."""
    from pipeline.engine import run_job
    from pipeline.jobs.resolve import load_job

    out = out.resolve()  # the job file resolves relative paths against its own folder
    src = out / "synth.jsonl"
    run = out / "base-run"
    if (run / "summary.json").is_file():
        return run
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pipeline", "synth", "--format", "responses", "--n", str(n), "--seed", "7"]
    subprocess.run([*cmd, "-o", str(src), "--workers", str(workers)], check=True)
    job = out / "base.toml"
    job.write_text(
        'name = "bench-audit"\n[[inputs]]\n'
        f'path = {json.dumps(str(src))}\nformat = "responses"\n'
        f'[output]\npath = {json.dumps(str(run))}\ntarget = "chat"\n[engine]\nworkers = {workers}\n'
    )
    run_job(load_job(job))
    return run


def replicate(base: Path, big: Path, copies: int) -> None:
    """``copies`` copies of every shard, conversation ids suffixed with the copy number.

    Each shard is read once (pyarrow) and written ``copies`` times with new ids, so losses and items
    still join their conversations exactly.
    """
    if (big / "summary.json").is_file():
        return
    shutil.rmtree(big, ignore_errors=True)
    for folder in ("conversations", "items", "losses", "rejected"):
        if not (base / folder).is_dir():
            continue
        (big / folder).mkdir(parents=True)
        for shard in sorted((base / folder).glob("*.parquet")):
            table = pq.read_table(shard)
            i = table.schema.get_field_index("conversation_id")
            for k in range(copies):
                ids = pc.binary_join_element_wise(table.column(i), pa.scalar(f"-r{k}"), "")
                copy = table.set_column(i, table.schema.field(i), ids)
                pq.write_table(copy, big / folder / f"{shard.stem}-r{k:03d}.parquet", compression="zstd")
    summary = json.loads((base / "summary.json").read_text())
    for key in ("read", "written", "rejected", "records_with_losses"):
        summary[key] *= copies
    (big / "summary.json").write_text(json.dumps(summary))


def baseline_sql(scan: bool) -> str:
    """Plain DuckDB over the files (``?`` = the file list, bound): a footer count, or a data scan."""
    what = "sum(strlen(conversation_id))" if scan else "count(*)"  # strlen forces reading the column
    return f"SELECT {what} FROM read_parquet(?, union_by_name = true)"


def views_read(sql: str) -> list[str]:
    """The file sets a query reads, as named in FROM/JOIN."""
    return [v for v in VIEWS if re.search(rf"\b(FROM|JOIN)\s+{v}\b", sql)]


def timed(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=int, default=20_000, help="synthetic conversations through the engine")
    ap.add_argument("--copies", type=int, default=10, help="copies of the base run (records = base x copies)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("bench-out/audit"))
    ap.add_argument("--base-run", type=Path, help="an existing run directory to copy instead of --base")
    args = ap.parse_args()
    if args.base_run is not None:
        base = args.base_run
        args.base = json.loads((base / "summary.json").read_text())["read"]
    else:
        base = build_base(args.out / f"base-{args.base}", args.base, args.workers)
    big = args.out / f"run-{args.base}x{args.copies}"
    replicate(base, big, args.copies)

    con = open_run(big)
    [(records,)] = con.sql("SELECT count(*) FROM conversations").fetchall()
    [(items,)] = con.sql("SELECT sum(n_items) FROM conversations").fetchall()
    files = {v: sorted(str(p) for p in (big / v).glob("*.parquet")) for v in VIEWS}
    gb = sum(p.stat().st_size for p in big.rglob("*.parquet")) / 1e9
    footer_sql = baseline_sql(False)
    meta = timed(lambda: con.execute(footer_sql, [files["conversations"]]).fetchall(), 3)

    print(f"Audit benchmark: {records:,} records, {items:,} items, {gb:.2f} GB Parquet "
          f"({args.base:,} engine-written x {args.copies} DuckDB copies); median of {args.repeat}; "
          f"`python benchmarks/bench_audit.py --base {args.base} --copies {args.copies}`, "
          f"Python {sys.version.split()[0]}, DuckDB {duckdb.__version__}.\n")  # fmt: skip
    print(f"Parquet metadata count(*) of conversations: {meta * 1000:.1f} ms\n")
    print("| query | files read | query (s) | count(*) (s) | ratio | scan (s) | ratio | <= 3x scan |")
    print("|---|---|---:|---:|---:|---:|---:|:---:|")
    for q in load_queries():
        named = views_read(q.sql)

        def run_all(views: list[str], scan: bool) -> None:
            for v in views:
                con.execute(baseline_sql(scan), [files[v]]).fetchall()

        t_count = timed(lambda named=named: run_all(named, False), args.repeat)
        t_scan = timed(lambda named=named: run_all(named, True), args.repeat)
        t_query = timed(lambda q=q: q.run(con), args.repeat)
        r_count, r_scan = t_query / t_count, t_query / t_scan
        print(f"| {q.name} | {', '.join(named)} | {t_query:.3f} | {t_count:.3f} | {r_count:.1f}x | "
              f"{t_scan:.3f} | {r_scan:.2f}x | {'yes' if r_scan <= 3 else 'no'} |")  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nPeak RSS of the benchmark process: {peak:,.0f} MB")


if __name__ == "__main__":
    main()
