"""Responses -> Chat on records already in memory, side by side in one run (issue 3, benchmark (a)):

    python benchmarks/bench_convert_vectorized.py --n 1000000 --batch 100000

* openai-agents ``Converter.items_to_messages`` over the records' ``input`` lists parsed into dicts
  (records it raises on are skipped, as in ``convert_baseline.py``);
* chatlake per-record ``convert_table(table, "chat")`` on the canonical table, 5,000 rows a batch;
* chatlake ``encode_rows(table, "chat")`` on the canonical table, ``--batch`` rows a batch: the
  compiled encoder (``pipeline/_native/encode.c``), Chat JSON text and losses included (it replaced
  the vectorized table-to-table encoder; the file keeps its name for the README's command).

Each contender runs in its own process (peak RSS of the process tree via ``benchmarks/measure.py``)
and times the conversion only: reading and parsing the input happen before the clock starts. Wall
seconds and the process' CPU seconds are both reported (on a shared machine the CPU seconds are the
steadier figure). The input comes from
``pipeline.synth`` (generated once into ``--workdir``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_codec import ensure_input
from benchmarks.measure import measure

HERE = Path(__file__).resolve()


def _lines(src: str, n: int) -> list[bytes]:
    with open(src, "rb") as f:
        return list(itertools.islice(f, n))


def child(kind: str, src: str, n: int, batch: int, out: str) -> None:
    """One contender: load ``n`` records, time the conversion, write ``{"seconds", ...}`` to ``out``."""
    import orjson

    result: dict[str, float | int] = {}
    if kind == "agents":
        from agents.models.chatcmpl_converter import Converter

        records = [orjson.loads(line)["input"] for line in _lines(src, n)]
        failed = 0
        start, cpu = time.perf_counter(), time.process_time()
        for items in records:
            try:
                Converter.items_to_messages(items)
            except Exception:
                failed += 1
        result = {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu, "failed": failed}
    else:
        from pipeline.formats import decode_lines

        table = decode_lines(_lines(src, n), "responses").table
        if kind == "per-record":
            from pipeline.encoders import convert_table

            start, cpu = time.perf_counter(), time.process_time()
            for offset in range(0, table.num_rows, 5000):
                convert_table(table.slice(offset, 5000), "chat", as_bytes=True)
            result = {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu}
        else:
            from pipeline.encoders.encode_rows import encode_rows

            fallback = losses = 0
            start, cpu = time.perf_counter(), time.process_time()
            for offset in range(0, table.num_rows, batch):
                enc = encode_rows(table.slice(offset, batch), "chat")
                fallback += len(enc.native) - sum(enc.native.to_pylist())
                losses += enc.losses.num_rows
            result = {
                "seconds": time.perf_counter() - start,
                "cpu": time.process_time() - cpu,
                "fallback": fallback,
                "losses": losses,
            }
    Path(out).write_text(json.dumps(result))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000, help="rows per encode_rows call")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=Path("bench-out"))
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    src = ensure_input(args.workdir, args.n, args.seed)

    results = {}
    for kind, label in (
        ("agents", "openai-agents `Converter.items_to_messages`, dicts in memory"),
        ("per-record", "chatlake per-record `convert_table`, canonical table in memory"),
        (
            "native",
            f"chatlake compiled `encode_rows` (JSON text), canonical table, {args.batch:,}-row batches",
        ),
    ):
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            out = tmp.name
        cmd = [sys.executable, str(HERE), "child", kind, str(src), str(args.n), str(args.batch), out]
        m = measure(label, cmd, args.n)
        results[kind] = (label, m.peak_rss_mb, json.loads(Path(out).read_text()))
        Path(out).unlink()

    def rate(kind: str) -> float:
        return args.n / results[kind][2]["seconds"]

    lines = [
        f"Responses -> Chat, {args.n:,} synthetic conversations in memory "
        f"(`python benchmarks/bench_convert_vectorized.py --n {args.n} --batch {args.batch}`), "
        f"Python {platform.python_version()}; conversion time only, peak RSS of the whole process.",
        "",
        "| contender | seconds | CPU seconds | conversations/s | vs openai-agents | peak RSS (MB) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, (label, peak, r) in results.items():
        lines.append(
            f"| {label} | {r['seconds']:.1f} | {r['cpu']:.1f} | {rate(kind):,.0f} | "
            f"{rate(kind) / rate('agents'):.2f}x | {peak:,.0f} |"
        )
    vec = results["native"][2]
    lines += [
        "",
        f"native / per-record: {rate('native') / rate('per-record'):.2f}x; "
        f"native / openai-agents: {rate('native') / rate('agents'):.2f}x (target 30x). "
        f"Fallback to the per-record encoder: {vec['fallback']:,} rows "
        f"({vec['fallback'] / args.n:.2%}); {vec['losses']:,} losses reported. "
        f"openai-agents raised on {results['agents'][2]['failed']:,} records (skipped, time still counted).",
    ]
    text = "\n".join(lines)
    (args.workdir / f"convert-vectorized-{args.n}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    else:
        main()
