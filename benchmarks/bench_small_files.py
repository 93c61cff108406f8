"""Many small files vs one file: ``chatlake convert`` of N one-record files against one file of
the same N records, in one run (the cost per file, not per record: the manifest, shards, reads).

    python benchmarks/bench_small_files.py --n 10000

Both convert Responses -> Chat JSONL with ``-o`` (the single-file layout) and, with ``--run-dir``,
into a run directory (every table and audit fact per shard). The outputs of the directory and of
the one file hold the same records in the same order (checked: each output line, the records'
JSON, compared). Prints a Markdown table: wall time, CPU time and peak memory, and each many-file
row's ratio to its one-file row.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson

from benchmarks.bench_codec import ensure_input
from benchmarks.measure import Measured, measure

PY = sys.executable


def split_into_files(src: Path, out: Path) -> int:
    """One file per line of ``src`` under ``out`` (``r00000.jsonl``, ...), made once."""
    lines = src.read_bytes().splitlines(keepends=True)
    if out.is_dir() and sum(1 for _ in out.iterdir()) == len(lines):
        return len(lines)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    width = len(str(len(lines)))
    for k, line in enumerate(lines):
        (out / f"r{k:0{width}d}.jsonl").write_bytes(line)
    return len(lines)


def _same_records(a: Path, b: Path) -> None:
    with open(a, "rb") as x, open(b, "rb") as y:
        for n, (p, q) in enumerate(zip(x, y, strict=True), 1):
            if orjson.loads(p) != orjson.loads(q):
                raise SystemExit(f"{a} and {b} differ at line {n}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=Path(__file__).parent / "bench-out")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    one = ensure_input(args.workdir, args.n, args.seed)
    many = args.workdir / f"small-files-{args.n}-s{args.seed}"
    split_into_files(one, many)
    out = args.workdir / "small-files-out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    convert = [PY, "-m", "pipeline", "convert", "--from", "responses", "--to", "chat", "-q"]
    rows: list[tuple[Measured, Measured]] = []
    for how in ("-o", "--run-dir"):
        got = {}
        for label, src in (("one file", one), (f"{args.n:,} files", many)):
            dst = out / f"{'o' if how == '-o' else 'run'}-{'one' if src == one else 'many'}"
            got[label] = measure(f"{label}, {how}", [*convert, str(src), how, str(dst)], args.n)
        rows.append((got["one file"], got[f"{args.n:,} files"]))
    _same_records(out / "o-one", out / "o-many")
    print(f"\n{args.n:,} Responses records, -> Chat, 2 workers; {platform.machine()}, "
          f"{subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores\n")  # fmt: skip
    print("| layout | one file: wall s | CPU s | peak MB | many files: wall s | CPU s | peak MB "
          "| wall ratio | CPU ratio |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (a, b), how in zip(rows, ("-o FILE", "--run-dir"), strict=True):
        print(f"| {how} | {a.seconds:.1f} | {a.cpu_seconds:.1f} | {a.peak_rss_mb:,.0f} | {b.seconds:.1f} "
              f"| {b.cpu_seconds:.1f} | {b.peak_rss_mb:,.0f} | {b.seconds / a.seconds:.2f}x "
              f"| {b.cpu_seconds / a.cpu_seconds:.2f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
