"""Local engine pools side by side: spawned worker processes vs threads of one process.

    python benchmarks/bench_pool.py --input /tmp/s50k.jsonl --runs 3

The input is ``chatlake synth --format responses --n 50000 --seed 7 -o /tmp/s50k.jsonl``. Each
contender is ``chatlake run`` (target chat, 2 workers) under ``/usr/bin/time -v``, without steps and
with ``role_swap:on_unsupported=drop`` + ``turns``; runs alternate processes, threads, processes, ...
so a noisy neighbour hits both alike, and the table gives medians. Wall and CPU (user + sys) come
from ``/usr/bin/time``; peak RSS is the whole process tree's, sampled (``measure.py``; time's own
"maximum resident set size" is one process's, which flatters the process pool). The sha256 of every
file under ``output/`` and ``conversations/`` must be the same for both pools, or the script fails.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.measure import measure

PY = sys.executable
POOLS = ("processes", "threads")
STEPS = {"no steps": [], "role_swap + turns": ["role_swap:on_unsupported=drop", "turns"]}


def write_job(
    path: Path, src: Path, run_dir: Path, steps: list[str], pool: str, workers: int, shard: int
) -> Path:
    steps_line = "steps = [" + ", ".join(f'"{s}"' for s in steps) + "]\n" if steps else ""
    path.write_text(
        f'name = "bench-pool"\n{steps_line}'
        f'[[inputs]]\npath = "{src.resolve()}"\nformat = "responses"\n'
        f'[output]\npath = "{run_dir}"\ntarget = "chat"\nshard_records = {shard}\n'
        f'[engine]\nworkers = {workers}\npool = "{pool}"\n'
    )
    return path


def tree_hash(run_dir: Path) -> str:
    """One sha256 over the names and bytes of every file in output/ and conversations/."""
    h = hashlib.sha256()
    for folder in ("output", "conversations"):
        for p in sorted((run_dir / folder).glob("*")):
            h.update(p.name.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def time_v(path: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) from a ``/usr/bin/time -v`` report."""
    text = path.read_text()
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", text).group(1))  # type: ignore[union-attr]
    system = float(re.search(r"System time \(seconds\): ([\d.]+)", text).group(1))  # type: ignore[union-attr]
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text).group(1)  # type: ignore[union-attr]
    secs = 0.0
    for part in wall.split(":"):
        secs = secs * 60 + float(part)
    return secs, user + system


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-records", type=int, default=5000)
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temp dir)")
    args = ap.parse_args()
    records = sum(1 for _ in args.input.open("rb"))
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-pool-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for label, steps in STEPS.items():
        results: dict[str, list[tuple[float, float, float]]] = {p: [] for p in POOLS}
        hashes: dict[str, str] = {}
        for i in range(args.runs):
            for pool in POOLS:
                run_dir = work / f"{pool}-{len(steps)}"
                job = write_job(work / f"{pool}-{len(steps)}.toml", args.input, run_dir, steps, pool,
                                args.workers, args.shard_records)  # fmt: skip
                tv = work / f"time-{pool}-{len(steps)}-{i}.txt"
                cmd = ["/usr/bin/time", "-v", "-o", str(tv), PY, "-m", "pipeline", "run", str(job),
                       "--quiet", "--no-catalog", "--fresh"]  # fmt: skip
                m = measure(f"{label}, {pool}, run {i + 1}", cmd, records)
                wall, cpu = time_v(tv)
                results[pool].append((wall, cpu, m.peak_rss_mb))
                digest = tree_hash(run_dir)
                if hashes.setdefault(pool, digest) != digest:
                    raise SystemExit(f"{label}, {pool}: output bytes changed between runs")
        if hashes["processes"] != hashes["threads"]:
            raise SystemExit(f"{label}: threads and processes wrote different bytes")
        for pool in POOLS:
            walls, cpus, rss = zip(*results[pool], strict=True)
            rows.append((label, pool, walls, statistics.median(cpus), statistics.median(rss), hashes[pool]))
    print(f"\n{records:,} records, {args.workers} workers, shard_records {args.shard_records}; medians of "
          f"{args.runs} alternating runs\n")  # fmt: skip
    print("| job | pool | wall s (median) | runs | rec/s | CPU s (user+sys) | peak RSS MB (tree) | sha256 |")
    print("|---|---|---:|---|---:|---:|---:|---|")
    for label, pool, walls, cpu, rss, digest in rows:
        med = statistics.median(walls)
        runs = " / ".join(f"{w:.1f}" for w in walls)
        print(f"| {label} | {pool} | {med:.1f} | {runs} | {records / med:,.0f} | {cpu:.1f} | {rss:,.0f} | "
              f"{digest[:12]} |")  # fmt: skip


if __name__ == "__main__":
    main()
