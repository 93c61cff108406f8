"""Responses -> Chat on records already in memory, side by side in one run (issue 3, benchmark (a)):

    python benchmarks/bench_convert_vectorized.py --n 1000000 --batch 100000

* openai-agents ``Converter.items_to_messages`` over the records' ``input`` lists parsed into dicts
  (records it raises on are skipped, as in ``convert_baseline.py``);
* chatlake per-record ``convert_table(table, "chat")`` on the canonical table, 5,000 rows a batch;
* chatlake vectorized ``responses_to_chat(table)`` on the canonical table, ``--batch`` rows a batch,
  plus ``convert_table`` on the rows it leaves to the per-record encoder (as ``encode_rows`` does).

Each contender runs in its own process (peak RSS of the process tree via ``benchmarks/measure.py``)
and times the conversion only: reading and parsing the input happen before the clock starts. Wall
seconds and the process' CPU seconds are both reported (on a shared machine the CPU seconds are the
steadier figure). The vectorized contender also prints where its time goes (wall seconds of
``responses_to_chat``, of the per-record fallback, and of writing its rows as Chat JSON text with
``chat_json``, what ``chatlake convert`` writes; the last is timed apart, not in its figures). The input
comes from ``pipeline.synth`` (generated once into ``--workdir``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_codec import ensure_input
from benchmarks.measure import measure

HERE = Path(__file__).resolve()
T = TypeVar("T")


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
            import numpy as np

            from pipeline.encoders import convert_table
            from pipeline.encoders.vectorized import chat_json, responses_to_chat

            fallback = losses = 0
            wall = dict.fromkeys(("responses_to_chat", "per-record fallback", "chat_json"), 0.0)
            cpu_of = dict(wall)

            def timed(phase: str, f: Callable[..., T], *args: Any, **kwargs: Any) -> T:
                t, c = time.perf_counter(), time.process_time()
                value = f(*args, **kwargs)
                wall[phase] += time.perf_counter() - t
                cpu_of[phase] += time.process_time() - c
                return value

            for offset in range(0, table.num_rows, batch):
                part = table.slice(offset, batch)
                res = timed("responses_to_chat", responses_to_chat, part)
                rows = np.flatnonzero(res.fallback.to_numpy(zero_copy_only=False))
                # what encode_rows does with the rows responses_to_chat leaves out
                fb = timed("per-record fallback", convert_table, part.take(rows), "chat", as_bytes=True)
                fallback += len(rows)
                losses += res.losses.num_rows + sum(len(c.losses) for c in fb if c.error is None)
                timed("chat_json", chat_json, res.table)  # reported apart: JSON writing
            table_phases = ("responses_to_chat", "per-record fallback")
            result = {
                "seconds": sum(wall[k] for k in table_phases),
                "cpu": sum(cpu_of[k] for k in table_phases),
                "fallback": fallback,
                "losses": losses,
                "json_seconds": wall["chat_json"],
                "phases": {k: round(v, 2) for k, v in wall.items()},
            }
    Path(out).write_text(json.dumps(result))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000, help="rows per responses_to_chat call")
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
            "vectorized",
            f"chatlake vectorized `responses_to_chat`, canonical table, {args.batch:,}-row batches",
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
    vec = results["vectorized"][2]
    lines += [
        "",
        f"vectorized / per-record: {rate('vectorized') / rate('per-record'):.2f}x; "
        f"vectorized / openai-agents: {rate('vectorized') / rate('agents'):.2f}x (target 30x). "
        f"Fallback to the per-record encoder: {vec['fallback']:,} rows "
        f"({vec['fallback'] / args.n:.2%}); {vec['losses']:,} losses reported. "
        f"openai-agents raised on {results['agents'][2]['failed']:,} records (skipped, time still counted).",
        f"Writing the vectorized rows as Chat JSON text (`chat_json`, not in the figures above): "
        f"{vec['json_seconds']:.1f} s.",
        "",
        "Vectorized, wall seconds per phase:",
        "",
        *(f"- {name}: {sec:.2f}" for name, sec in vec["phases"].items()),
    ]
    text = "\n".join(lines)
    (args.workdir / f"convert-vectorized-{args.n}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    else:
        main()
