"""decode_lines of N synthetic lines: the compiled decoder vs the Python one, in one run.

    python benchmarks/bench_native_decode.py --n 20000 [--fmt responses|chat|anthropic]

Each contender decodes the same file in a fresh process (so peak RSS is its own); the time is the
CPU seconds of the ``decode_lines`` call alone (one core: neither decoder uses threads), after a
10-line warm-up that pays the one-time imports both pay. The orjson loads+dumps loop over the same
lines is printed beside them as the floor the README's other tables use. The native run's fallback
counts say how many lines it handed to the Python decoder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_codec import ensure_input
from pipeline import synth


def input_file(workdir: Path, fmt: str, n: int, seed: int) -> Path:
    """The synthetic input (bench_codec's Responses file, so both benchmarks share it)."""
    if fmt == "responses":
        return ensure_input(workdir, n, seed)
    path = workdir / f"{fmt}-{n}-s{seed}.jsonl"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        synth.write_jsonl(tmp, fmt, n, seed, workers=2)
        tmp.rename(path)
    return path


def child(variant: str, fmt: str, path: Path) -> None:
    """Decode ``path`` one way and print the figures as JSON (runs in its own process)."""
    import orjson

    from pipeline.formats import decode_lines

    with open(path, "rb") as f:
        lines = f.read().splitlines()
    decode_lines(lines[:10], fmt)  # one-time imports (pandas via pyarrow, DuckDB)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cpu, wall = time.process_time(), time.perf_counter()
    if variant == "orjson floor":
        for line in lines:
            orjson.dumps(orjson.loads(line))
        rows, fallback = len(lines), {}
    else:
        res = decode_lines(lines, fmt)
        rows, fallback = res.table.num_rows, res.native_fallback
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"cpu": cpu, "wall": wall, "peak_mb": peak, "before_mb": rss_before, "rows": rows,
                      "fallback": fallback}))  # fmt: skip


def run(variant: str, fmt: str, path: Path) -> dict:
    env = dict(os.environ)
    if variant == "python":
        env["CHATLAKE_NATIVE"] = "0"
    else:
        env.pop("CHATLAKE_NATIVE", None)
    out = subprocess.run(
        [sys.executable, __file__, "--child", variant, "--fmt", fmt, "--input", str(path)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--fmt", default="responses", choices=["responses", "chat", "anthropic"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, default=Path("bench-out"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--input", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.fmt, args.input)
        return
    from pipeline import codec

    status = codec.status()
    if not status.native:
        raise SystemExit(f"the native decoder is not active: {status.reason}")
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = input_file(args.workdir, args.fmt, args.n, args.seed)
    size_mb = path.stat().st_size / 2**20
    results = {v: run(v, args.fmt, path) for v in ("python", "native", "orjson floor")}
    print(f"decode_lines, {args.n:,} synthetic {args.fmt} lines ({size_mb:,.0f} MB), seed {args.seed}; "
          f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}; "
          f"{status.describe()}")  # fmt: skip
    print()
    print("| contender | CPU s | lines/s | CPU vs python | peak RSS (MB) | RSS before decode (MB) |")
    print("|---|---:|---:|---:|---:|---:|")
    base = results["python"]["cpu"]
    for name, r in results.items():
        print(
            f"| {name} | {r['cpu']:.2f} | {args.n / r['cpu']:,.0f} | {r['cpu'] / base:.2f}x "
            f"| {r['peak_mb']:,.0f} | {r['before_mb']:,.0f} |"
        )
    print()
    print(f"native/python CPU ratio: {results['native']['cpu'] / base:.3f} "
          f"(python is {base / results['native']['cpu']:.1f}x the native CPU time); "
          f"native fallbacks: {results['native']['fallback'] or 'none'}")  # fmt: skip


if __name__ == "__main__":
    main()
