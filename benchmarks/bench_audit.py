"""Audit queries vs plain DuckDB ``count(*)`` over the same files, side by side (issue 7).

    python benchmarks/bench_audit.py --base 1000000 --copies 10     # 10M records: the target size
    python benchmarks/bench_audit.py --base 20000 --copies 10       # 200k records: a quick look
    # with the queries of an older commit timed beside the current ones, on the same run:
    mkdir -p bench-out/sql-old && git archive b53edf7 sql | tar -x -C bench-out/sql-old
    python benchmarks/bench_audit.py --base 100000 --copies 10 --baseline-sql bench-out/sql-old/sql

How the big run is made (say so when quoting figures): ``chatlake synth`` writes ``--base``
synthetic Responses conversations; the batch engine (``pipeline.engine.run_job``, target ``chat``)
turns them into a real run directory -- or ``--base-run`` names an existing one; every shard's
files are then copied ``--copies`` times with new conversation ids (``conversation_id ||
'-r<kkk>'``, the record index's ``shard`` likewise), so the run holds ``base x copies`` records
whose items and losses join exactly. Copies are written by pyarrow (zstd), not by the engine.

The queries read the audit facts the engine writes with each shard (``records/``, ``top_losses/``
and the per-shard ``*_counts/``, docs/run-layout.md), so the copies include them; a base run written
before them has none, and the audit then falls back to views computed from the old tables.

Per query: the median of ``--repeat`` runs, and right before it the baseline the issue names:
plain DuckDB ``count(*)`` over every file set (folder) the query reads, without the views. For
Parquet, ``count(*)`` is answered from the file footers, so it is the cost of opening the same
files. ``--baseline-sql DIR`` also times the queries of ``DIR`` (e.g. an older ``sql/``) on the
same run, for an old-vs-new column. Everything runs in this one process (DuckDB uses all cores);
peak RSS is the process's.
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
from pipeline.audit.derived import DERIVED
from pipeline.audit.views import written_facts

VIEWS = ("conversations", "items", "losses", "rejected", *DERIVED)


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
    if (big / "summary.json").is_file() and written_facts(big) == written_facts(base):
        return
    shutil.rmtree(big, ignore_errors=True)
    for folder in VIEWS:
        if not (base / folder).is_dir():
            continue
        (big / folder).mkdir(parents=True)
        for shard in sorted((base / folder).glob("*.parquet")):
            table = pq.read_table(shard)
            for k in range(copies):
                copy = table
                # counts tables have no ids: copied as they are (their sums scale with the copies)
                for column in ("conversation_id", "shard"):
                    if column in table.column_names:
                        i = table.schema.get_field_index(column)
                        values = pc.binary_join_element_wise(table.column(i), pa.scalar(f"-r{k:03d}"), "")
                        copy = copy.set_column(i, table.schema.field(i), values)
                pq.write_table(copy, big / folder / f"{shard.stem}-r{k:03d}.parquet", compression="zstd")
    summary = json.loads((base / "summary.json").read_text())
    for key in ("read", "written", "rejected", "records_with_losses"):
        summary[key] *= copies
    (big / "summary.json").write_text(json.dumps(summary))


def baseline_sql() -> str:
    """Plain DuckDB ``count(*)`` over the files (``?`` = the file list, bound), as the issue states it."""
    return "SELECT count(*) FROM read_parquet(?, union_by_name = true)"


# What a query reads when its FROM/JOIN names more: worst_records at its default n (<= 100) reads
# top_losses only; its records branch has a false guard and DuckDB skips it.
READS = {"worst_records": ["top_losses"]}


def views_read(sql: str, name: str | None = None) -> list[str]:
    """The file sets a query reads, as named in FROM/JOIN (or as listed in ``READS``)."""
    if name in READS:
        return READS[name]
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
    ap.add_argument("--baseline-sql", type=Path, help="also time the queries in this dir")
    args = ap.parse_args()
    if args.base_run is not None:
        base = args.base_run
        args.base = json.loads((base / "summary.json").read_text())["read"]
    else:
        base = build_base(args.out / f"base-{args.base}", args.base, args.workers)
    big = args.out / f"run-{args.base}x{args.copies}"
    replicate(base, big, args.copies)

    facts = written_facts(big)
    if facts != list(DERIVED):
        print(f"note: {big} lacks audit facts {sorted(set(DERIVED) - set(facts))} (a base run written "
              "before them): those views are derived from the old tables, as slowly as before; rerun "
              "the base with this version to time the facts", file=sys.stderr)  # fmt: skip

    con = open_run(big)
    [(records,)] = con.sql("SELECT count(*) FROM conversations").fetchall()
    [(items,)] = con.sql("SELECT sum(n_items) FROM conversations").fetchall()
    files = {v: sorted(str(p) for p in (big / v).glob("*.parquet")) for v in VIEWS}
    gb = sum(p.stat().st_size for p in big.rglob("*.parquet")) / 1e9
    old = {q.name: q for q in load_queries(sql_dir=args.baseline_sql)} if args.baseline_sql else {}

    command = " ".join(["python", "benchmarks/bench_audit.py", *sys.argv[1:]])
    print(f"Audit benchmark: {records:,} records, {items:,} items, {gb:.2f} GB Parquet "
          f"({args.base:,} engine-written x {args.copies} pyarrow copies); median of {args.repeat}; "
          f"`{command}`, Python {sys.version.split()[0]}, DuckDB {duckdb.__version__}; "
          f"audit facts on disk: {', '.join(facts) or 'none'}.\n")  # fmt: skip
    head = "| query | files read | files | query (s) | count(*) same files (s) | ratio | <= 3x |"
    rule = "|---|---|---:|---:|---:|---:|:---:|"
    if old:
        head += f" {args.baseline_sql} query (s) | files read | new / old |"
        rule += "---:|---|---:|"
    print(head)
    print(rule)
    for q in load_queries():
        named = views_read(q.sql, q.name)
        n_files = sum(len(files[v]) for v in named)

        def count_all(views: list[str]) -> None:
            for v in views:
                con.execute(baseline_sql(), [files[v]]).fetchall()

        t_count = timed(lambda named=named: count_all(named), args.repeat)
        t_query = timed(lambda q=q: q.run(con), args.repeat)
        ratio = t_query / t_count if t_count else float("inf")
        row = (f"| {q.name} | {', '.join(named)} | {n_files} | {t_query:.3f} | {t_count:.3f} | "
               f"{ratio:.2f}x | {'yes' if ratio <= 3 else 'no'} |")  # fmt: skip
        if q.name in old:
            t_old = timed(lambda o=old[q.name]: o.run(con), args.repeat)
            row += f" {t_old:.3f} | {', '.join(views_read(old[q.name].sql))} | {t_query / t_old:.3f}x |"
        print(row, flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nPeak RSS of the benchmark process: {peak:,.0f} MB")


if __name__ == "__main__":
    main()
