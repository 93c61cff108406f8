"""Floors under the open speed targets of issues 3 and 7, timed beside the baselines they name.

    python benchmarks/floor_targets.py convert --n 200000
    python benchmarks/floor_targets.py audit --run bench-out/audit/run-1000000x10

A floor is work that any implementation on our stack (Python hosting Arrow, Polars, DuckDB) has to
do, measured alone. When a floor already costs more than the time a target allows, no rewrite of our
code on that stack meets the target; this script is the evidence for saying so.

``convert`` (issue 3: Responses -> Chat, baseline openai-agents' ``Converter.items_to_messages``):

- (a) table to table, target 30x the Converter over records parsed in memory. Floors on the
  canonical table of the same records: ``pl.from_arrow`` (the entry cost of any Polars encoder:
  Arrow strings are copied into Polars' string views), and the least an Arrow-compute encoder has
  to do to make Chat message contents (join each item's text blocks with ``binary_join``, keep the
  message items with one ``filter``).
- (b) JSONL -> JSONL, target 3x the Converter in a plain orjson loop (1 core). Floor: streaming
  ``orjson.loads`` of every line (the fastest JSON parser Python has; an exact decoder must at
  least parse each line) and ``orjson.dumps`` of it, halved for chatlake's 2 worker processes.

``audit`` (issue 7: ``losses_without_written_record``, target 3x a ``count(*)`` of the files it
reads). Floors: reading the written record ids, and DuckDB's anti-join of 10M integer keys against
10M integer keys held in memory (the cheapest exact membership test: no strings, no files).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PY = sys.executable
HERE = Path(__file__).resolve().parent


def _cpu(fn: Callable[[], object], repeat: int = 1) -> float:
    """Median CPU seconds of ``fn()`` over ``repeat`` runs (this process only)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def _wall(fn: Callable[[], object], repeat: int = 1) -> float:
    """Median wall seconds of ``fn()`` over ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _baseline(kind: str, *args: str) -> float:
    """Seconds of one convert_baseline.py contender, run in its own process."""
    cmd = [PY, str(HERE / "convert_baseline.py"), kind, *args]
    if kind == "agents-jsonl":
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        return time.perf_counter() - start
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def _row(what: str, seconds: float, budget: float) -> str:
    return f"| {what} | {seconds:,.2f} | {budget:,.2f} | {seconds / budget:.2f}x |"


def convert(n: int, workdir: Path, seed: int, source: Path | None) -> None:
    import orjson
    import polars as pl
    import pyarrow as pa
    import pyarrow.compute as pc

    from benchmarks.bench_codec import ensure_input
    from pipeline.formats import decode_lines

    src = source or ensure_input(workdir, n, seed)
    with open(src, "rb") as f:
        lines = list(itertools.islice(f, n))
    size_mb = sum(map(len, lines)) / 1e6

    # (b) end to end: the baseline on exactly these lines, in its own process
    part = workdir / f"floor-{n}.jsonl"
    part.write_bytes(b"".join(lines))
    agents_b = _baseline("agents-jsonl", str(part), str(workdir / f"floor-{n}-agents.jsonl"))

    def loads() -> None:
        for line in lines:
            orjson.loads(line)

    def loads_dumps() -> None:
        for line in lines:
            orjson.dumps(orjson.loads(line))

    parse = _cpu(loads)
    parse_write = _cpu(loads_dumps)

    # (a) in memory: the baseline over dicts, then floors on the canonical table of the same lines
    agents_a = _baseline("memory-agents", str(part), str(n))
    table = decode_lines(lines, "responses").table.combine_chunks()
    lines.clear()  # the parsed table replaces them
    gc.collect()
    from_arrow = _wall(lambda: pl.from_arrow(table), repeat=3)
    items = table.column("items").chunk(0)

    def arrow_minimum() -> None:
        flat = pc.list_flatten(items)
        texts = pa.ListArray.from_arrays(
            flat.field("content").offsets, flat.field("content").values.field("text")
        )
        joined = pc.binary_join(texts, "")
        keep = pc.equal(flat.field("type"), "message")
        pc.filter(joined, keep)

    arrow_min = _wall(arrow_minimum, repeat=3)

    budget_a = agents_a / 30
    budget_b = agents_b / 3
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"Floors under issue 3's targets, Responses -> Chat, {n:,} synthetic conversations "
        f"({size_mb:,.0f} MB JSONL, {len(items.values):,} items; "
        f"`python benchmarks/floor_targets.py convert --n {n}"
        f"{f' --input {source}' if source else ''}`). Budget = the baseline's time / the "
        "target ratio; a floor above its budget means the target is out of reach on this stack.\n"
    )
    print("| work | seconds | budget (s) | floor / budget |\n|---|---:|---:|---:|")
    print(f"| (a) baseline: openai-agents over parsed records in memory | {agents_a:,.2f} | | |")
    print(_row("(a) floor: `pl.from_arrow` of the canonical table (median of 3)", from_arrow, budget_a))
    print(_row("(a) floor: Arrow only, join item texts + keep messages (median of 3)", arrow_min, budget_a))
    print(f"| (b) baseline: openai-agents in an orjson loop, JSONL -> JSONL (1 core) | {agents_b:,.2f} | | |")
    print(_row("(b) floor: `orjson.loads` per line, CPU / 2 workers", parse / 2, budget_b))
    print(_row("(b) floor: `orjson.loads` + `dumps` per line, CPU / 2 workers", parse_write / 2, budget_b))
    print(f"\nPeak RSS of this process: {peak:,.0f} MB.")


def audit(run: Path, repeat: int) -> None:
    import duckdb

    from pipeline.audit.views import shard_files

    con = duckdb.connect()
    conv = shard_files(run, "conversations")
    losses = shard_files(run, "losses")

    def q(sql: str, *files: list[str]) -> float:
        rels = [con.read_parquet(f) for f in files]
        for name, rel in zip(("a", "b"), rels, strict=False):
            rel.create_view(name, replace=True)
        return _wall(lambda: con.sql(sql).fetchall(), repeat=repeat)

    count = q("SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b)", conv, losses)
    read_ids = q("SELECT count(conversation_id) FROM a", conv)
    n = con.sql("SELECT count(*) FROM a").fetchall()[0][0]
    con.execute(f"CREATE OR REPLACE TABLE k AS SELECT range AS k FROM range({n})")
    con.execute(f"CREATE OR REPLACE TABLE l AS SELECT range AS k FROM range({n})")
    anti = _wall(lambda: con.sql("SELECT count(*) FROM l ANTI JOIN k USING (k)").fetchall(), repeat=repeat)
    budget = 3 * count
    print(
        f"Floors under `losses_without_written_record` ({n:,} written records; median of {repeat}; "
        f"`python benchmarks/floor_targets.py audit --run {run}`). Budget = 3x the footer-only "
        "`count(*)` of conversations/ and losses/.\n"
    )
    print("| work | seconds | budget (s) | floor / budget |\n|---|---:|---:|---:|")
    print(f"| baseline: `count(*)` of conversations/ + losses/ | {count:,.3f} | | |")
    print(_row(f"floor: read the {n:,} written record ids", read_ids, budget))
    print(_row(f"floor: anti-join of {n:,} int64 keys vs {n:,}, in memory", anti, budget))
    print(_row("floor: both (ids read + integer anti-join)", read_ids + anti, budget))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--n", type=int, default=200_000)
    c.add_argument("--seed", type=int, default=7)
    c.add_argument("--workdir", type=Path, default=Path("bench-out"))
    c.add_argument("--input", type=Path, help="Responses JSONL to take the first --n lines of")
    a = sub.add_parser("audit")
    a.add_argument("--run", type=Path, required=True)
    a.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if args.what == "convert":
        args.workdir.mkdir(parents=True, exist_ok=True)
        convert(args.n, args.workdir, args.seed, args.input)
    else:
        audit(args.run, args.repeat)


if __name__ == "__main__":
    main()
