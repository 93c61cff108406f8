"""``chatlake check`` beside ``chatlake convert`` on the convert benchmark's input, in one run.

    python benchmarks/bench_check.py --n 200000

The input is bench_convert.py's (synthetic Responses conversations, ``ensure_input``). Three
commands, each in a fresh process (:func:`benchmarks.measure.measure`: wall and CPU seconds, peak
RSS of the process tree): ``chatlake check INPUT --as responses`` (lint the input against the
Responses rules), ``chatlake convert INPUT --from responses --to chat`` (the convert benchmark's
compiled-codec row, with the target rules' repairs) and ``chatlake check OUTPUT --as chat`` (lint
what the convert wrote: it must pass, or the command fails).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_codec import ensure_input
from benchmarks.measure import Measured, measure

PY = sys.executable


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=Path("bench-out"))
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    src = ensure_input(args.workdir, args.n, args.seed)
    out = args.workdir / f"check-chat-{args.n}.jsonl"
    chatlake = [PY, "-m", "pipeline"]
    check = [*chatlake, "check", str(src), "--as", "responses"]
    check_in = measure("`chatlake check INPUT --as responses`", check, args.n)
    convert = measure(
        "`chatlake convert INPUT --from responses --to chat` (compiled codec)",
        [*chatlake, "convert", "--quiet", str(src), "--from", "responses", "--to", "chat", "-o", str(out)],
        args.n,
    )
    check_out = measure(
        "`chatlake check OUTPUT --as chat`", [*chatlake, "check", str(out), "--as", "chat"], args.n
    )
    # the converted output breaks no Chat rule (check exits 1 otherwise, and measure stops there)
    summary = subprocess.run([*chatlake, "check", str(out), "--as", "chat", "--json"], capture_output=True,
                             text=True, check=True)  # fmt: skip
    failing = json.loads(summary.stdout)["failing"]

    def row(m: Measured) -> str:
        cells = (
            m.label,
            f"{m.records:,}",
            f"{m.seconds:.1f}",
            f"{m.cpu_seconds:.1f}",
            f"{m.per_second:,.0f}",
        )
        return "| " + " | ".join(cells) + f" | {m.peak_rss_mb:,.0f} |"

    lines = [
        f"`python benchmarks/bench_check.py --n {args.n}`, Python {platform.python_version()}.",
        "",
        "| command | records | seconds | CPU s | records/s | peak RSS (MB) |",
        "|---|---:|---:|---:|---:|---:|",
        row(check_in),
        row(convert),
        row(check_out),
        "",
        f"check the input / convert: {check_in.per_second / convert.per_second:.2f}x the records/s; "
        f"the converted output: {failing} records break a Chat rule.",
    ]
    text = "\n".join(lines)
    (args.workdir / f"check-{args.n}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
