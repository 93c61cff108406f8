"""encode_rows(table, TARGET) of N synthetic SOURCE records: the compiled encoder vs the
per-record encoders, in one run.

    python benchmarks/bench_native_encode.py --n 20000                         # responses -> chat
    python benchmarks/bench_native_encode.py --n 20000 --source chat --target responses
    python benchmarks/bench_native_encode.py --n 20000 --target anthropic      # responses -> anthropic
    python benchmarks/bench_native_encode.py --n 20000 --source chat --target chat  # same format
    python benchmarks/bench_native_encode.py --n 20000 --source anthropic --target responses
    python benchmarks/bench_native_encode.py --n 20000 --source anthropic --target chat

Each contender runs in a fresh process. The records are decoded to the canonical table first (not
timed); the time is the CPU seconds of the ``encode_rows`` call alone (one core: no encoder uses
threads), after a 10-row warm-up that pays the one-time imports. The native run's count of rows
handed to the per-record encoder is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_codec import ensure_input

CONTENDERS = ("per-record", "native")


def child(variant: str, path: Path, source: str, target: str) -> None:
    """Encode ``path``'s table one way and print the figures as JSON (runs in its own process)."""
    from pipeline.formats import decode_lines

    with open(path, "rb") as f:
        lines = f.read().splitlines()
    table = decode_lines(lines, source).table
    from pipeline.encoders.encode_rows import encode_rows

    encode_rows(table.slice(0, 10), target)  # one-time imports and caches
    cpu, wall = time.process_time(), time.perf_counter()
    enc = encode_rows(table, target)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    fast = sum(enc.native.to_pylist())
    print(json.dumps({"cpu": cpu, "wall": wall, "rows": table.num_rows, "fast": fast,
                      "losses": enc.losses.num_rows}))  # fmt: skip


def run(variant: str, path: Path, source: str, target: str) -> dict:
    env = dict(os.environ)
    if variant == "per-record":
        env["CHATLAKE_NATIVE"] = "0"
    else:
        env.pop("CHATLAKE_NATIVE", None)
    out = subprocess.run(
        [
            *(sys.executable, __file__, "--child", variant, "--input", str(path)),
            *("--source", source, "--target", target),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--source", default="responses", choices=["responses", "chat", "anthropic"])
    ap.add_argument("--target", default="chat", choices=["responses", "chat", "anthropic"])
    ap.add_argument("--workdir", type=Path, default=Path("bench-out"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--input", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.input, args.source, args.target)
        return
    from pipeline import codec

    native = codec.native_encoder(args.target)
    if not any(args.source in sources for _, sources in native or ()):
        why = codec.status().reason
        raise SystemExit(f"no native encoder {args.source} -> {args.target} is active: {why}")
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = ensure_input(args.workdir, args.n, args.seed, args.source)
    results = {v: run(v, path, args.source, args.target) for v in CONTENDERS}
    py = f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}"
    print(
        f"encode_rows(table, {args.target!r}), {args.n:,} synthetic {args.source} records decoded to a "
        f"table, seed {args.seed}; {py}"
    )
    print()
    print("| contender | CPU s | rows/s | CPU vs per-record | rows on its fast path | losses |")
    print("|---|---:|---:|---:|---:|---:|")
    base = results["per-record"]["cpu"]
    for name, r in results.items():
        print(
            f"| {name} | {r['cpu']:.2f} | {args.n / r['cpu']:,.0f} | {r['cpu'] / base:.3f}x "
            f"| {r['fast']:,} | {r['losses']:,} |"
        )
    print()
    native = results["native"]["cpu"]
    line = f"native/per-record CPU ratio: {native / base:.4f} (per-record takes {base / native:.0f}x)"
    print(line)


if __name__ == "__main__":
    main()
