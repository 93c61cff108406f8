"""Long-running crash fuzzer: N mutated inputs per wire format and per source adapter, unseeded by
default, with counts per target (tried, written, rejected, crashes).

    nice -n 10 python benchmarks/fuzz_decoders.py --n 100000 --files 2000
    python benchmarks/fuzz_decoders.py --n 5000 --seed 42          # replay one run

The mutator and the checks are the test suite's (``tests/mutate.py``, ``tests/fuzzing.py``): no
exception escapes, read == written + rejected, every rejection has a reason, every written row
encodes back. Each finding is printed with its seed and input and appended (input base64) to
``--out`` so it can be pinned as an explicit test. Exit code 1 when anything was found.
"""

from __future__ import annotations

import argparse
import base64
import random
import sys
import time
import warnings
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.formats import WIRE_FORMATS
from tests.fuzzing import Finding, Stats, fuzz_source, fuzz_wire, source_seeds, wire_seeds

# inputs per fuzz_wire call: progress is printed and findings saved after each
_CHUNK = 5000


def _save(out: Path, findings: list[Finding]) -> None:
    if not findings:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "ab") as f:
        for x in findings:
            row = {"target": x.target, "seed": x.seed, "index": x.index, "problem": x.problem}
            f.write(orjson.dumps({**row, "input_b64": base64.b64encode(x.data).decode()}) + b"\n")
            print(f"FINDING {x}", flush=True)


def _line(name: str, s: Stats, seconds: float) -> str:
    return (
        f"{name:16} tried {s.tried:8d}  written {s.written:8d}  rejected {s.rejected:8d}  "
        f"crashes {len(s.findings):4d}  {seconds:7.1f}s"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="mutated records per wire format")
    ap.add_argument("--files", type=int, default=1_000, help="mutated files per source seed file")
    ap.add_argument("--formats", default=",".join(WIRE_FORMATS), help="wire formats ('' for none)")
    ap.add_argument("--no-sources", action="store_true", help="wire formats only")
    ap.add_argument("--seed", type=int, default=None, help="base seed (default: a fresh random one)")
    ap.add_argument("--corpus-cap", type=int, default=60, help="lines (JSONL) per corpus seed file")
    ap.add_argument("--out", type=Path, default=Path("bench-out/fuzz-findings.jsonl"))
    args = ap.parse_args()
    base = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    print(f"seed {base}  n {args.n} per format  files {args.files} per source seed", flush=True)
    warnings.filterwarnings("ignore", "Duplicate name", UserWarning)
    totals: dict[str, tuple[Stats, float]] = {}
    for k, fmt in enumerate(f for f in args.formats.split(",") if f):
        seeds = wire_seeds(fmt)
        stats, t0 = Stats(), time.perf_counter()
        for c, start in enumerate(range(0, args.n, _CHUNK)):
            part = fuzz_wire(fmt, seeds, min(_CHUNK, args.n - start), base + 1_000_003 * k + c)
            _save(args.out, part.findings)
            stats.add(part)
            print(_line(fmt, stats, time.perf_counter() - t0), flush=True)
        totals[fmt] = (stats, time.perf_counter() - t0)
    if not args.no_sources:
        seeds = source_seeds(corpus=True, corpus_cap=args.corpus_cap)
        for k, s in enumerate(seeds):
            t0 = time.perf_counter()
            per = fuzz_source([s], args.files, base + 7 * k)
            for adapter, stats in per.items():
                _save(args.out, stats.findings)
                prev, secs = totals.get(adapter, (Stats(), 0.0))
                prev.add(stats)
                totals[adapter] = (prev, secs + time.perf_counter() - t0)
                print(_line(f"{adapter}:{s.name[-20:]}", stats, time.perf_counter() - t0), flush=True)
    print("\ntotals")
    for name, (stats, secs) in totals.items():
        print(_line(name, stats, secs))
    return 1 if any(s.findings for s, _ in totals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
