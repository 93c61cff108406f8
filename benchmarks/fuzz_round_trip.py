"""Long-running A -> B -> A fuzzer: the suite's round-trip fuzzer (``tests/encoders/test_fuzz_round_trip.py``)
unseeded, in chunks, with counts per direction and every failure saved.

    nice -n 10 python benchmarks/fuzz_round_trip.py --n 5000 --chunks 20
    python benchmarks/fuzz_round_trip.py --n 5000 --chunks 1 --seed 42      # replay one chunk

Each chunk mutates ``--n`` records per source format (responses, chat, anthropic) with a fresh random
seed (printed), and checks every decodable one in both directions with the suite's own checker: the
record is rejected at decode, or a hop refuses it with an error, or every change A -> B -> A makes
is covered by a loss reported on A -> B; a tenth as many are written with a duplicate key or a
number a double cannot keep, each of which must be rejected at decode as such (a record or text no
mutation could change, e.g. ``{}``, is counted as unmutatable, not checked). Each failure is
appended to ``--out`` as a line of ``tests/encoders/fuzz_fixed_failures.jsonl``'s shape
(direction, mutations, record) plus the problem and the chunk's seed, so it can be pinned. Exit
code 1 when anything was found.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline import synth
from pipeline.formats import decode_lines, decode_records
from tests.cases import CASES
from tests.encoders.test_fuzz_round_trip import (
    FORMATS,
    Mutator,
    _vocabulary,
    round_trips,
    text_unmutated,
    unmutated,
)


def chunk(n: int, seed: int, out: Path, tally: Counter[str]) -> int:
    """Mutate ``n`` records per source format from ``seed``, check both directions each, add the
    counts to ``tally`` and append each failure to ``out``; returns the number of failures."""
    rng = random.Random(seed)  # the suite's run(): one rng, seeds drawn from it in format order
    vocabulary = _vocabulary([rec for a in FORMATS for _, rec in CASES[a]])
    found = 0
    for a in FORMATS:
        seeds = [rec for _, rec in CASES[a]] + list(synth.generate(a, 60, seed=rng.randrange(2**32)))
        mutator = Mutator(seeds, rng, vocabulary)
        made = [mutator.record() for _ in range(n)]
        # a tenth as many written with a duplicate key or an out-of-range number: all rejected
        made_texts = [mutator.text() for _ in range(max(1, n // 10))]
        # a record no mutation changed is its (valid) seed, and a text with no key to write twice
        # or out of range ({}) reads back as it is: neither is checked nor counted as a failure
        batch = [(rec, done) for rec, done in made if not unmutated(done)]
        texts = [(raw, done) for raw, done in made_texts if not text_unmutated(done)]
        tally[f"{a} unmutatable records"] += len(made) - len(batch)
        tally[f"{a} unmutatable duplicate key / number"] += len(made_texts) - len(texts)
        read = decode_lines([raw for raw, _ in texts], a)
        tally[f"{a} duplicate key / number tried"] += len(texts)
        changed = read.table.column("source_line").to_pylist()
        changed += [
            r.line
            for r in read.rejected
            if not r.error.split(": ", 1)[-1].startswith(("duplicate key", "number too"))
        ]
        for line in changed:
            found += 1
            tally[f"{a} duplicate key / number not rejected as such"] += 1
            raw, done = texts[line - 1]
            with open(out, "ab") as f:
                f.write(
                    orjson.dumps(
                        {"direction": f"{a} decode", "mutations": done, "text": raw.decode(), "seed": seed}
                    )
                    + b"\n"
                )
        res = decode_records([rec for rec, _ in batch], a)
        tally[f"{a} tried"] += len(batch)
        tally[f"{a} rejected at decode"] += len(res.rejected)
        kept = [batch[line - 1] for line in res.table.column("source_line").to_pylist()]
        for b in FORMATS:
            if b == a:
                continue
            direction = f"{a} -> {b} -> {a}"
            problems, refused = round_trips([rec for rec, _ in kept], a, b)
            tally[f"{direction} checked"] += len(kept)
            tally[f"{direction} refused"] += sum(refused.values())
            for (rec, done), problem in zip(kept, problems, strict=True):
                if problem is None:
                    continue
                found += 1
                tally[f"{direction} failures"] += 1
                row = {"direction": direction, "mutations": done, "record": rec}
                out.parent.mkdir(parents=True, exist_ok=True)
                with open(out, "ab") as f:
                    f.write(orjson.dumps({**row, "problem": repr(problem), "seed": seed}) + b"\n")
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=5_000, help="mutated records per source format and chunk")
    ap.add_argument("--chunks", type=int, default=4, help="chunks, each with its own seed")
    ap.add_argument("--seed", type=int, default=None, help="the first chunk's seed (default: random)")
    ap.add_argument("--out", type=Path, default=Path("bench-out/fuzz-round-trip-failures.jsonl"))
    args = ap.parse_args()
    tally: Counter[str] = Counter()
    found = 0
    start = time.process_time()
    for k in range(args.chunks):
        seed = random.SystemRandom().randrange(2**32) if args.seed is None else args.seed + k
        found += chunk(args.n, seed, args.out, tally)
        print(f"chunk {k + 1}/{args.chunks} seed {seed}: {found} failures so far, "
              f"{time.process_time() - start:.0f} s CPU", flush=True)  # fmt: skip
    for key, value in tally.items():
        print(f"{key:48} {value:9d}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
