"""Conversion benchmark: Responses -> Chat, chatlake vs openai-agents' Converter, in one run.

    python benchmarks/bench_convert.py --n 1000000 --memory-n 100000

(a) conversion only, on records already in memory: our canonical table -> Chat JSON vs
    Converter.items_to_messages over the same records parsed into dicts (on --memory-n records:
    a million parsed records do not fit in memory as Python dicts);
(b) end to end, JSONL -> JSONL: `chatlake convert --to chat` (2 workers, with loss records) vs an
    orjson loop around the Converter (1 core), on the full file; chatlake with the compiled codec
    (the default) and the loss report as Parquet (the default), with the pure-Python codec
    (``CHATLAKE_NATIVE=0``: Python decoder and per-record encoders, the code path before it), and
    with the loss report as JSON lines (``--losses jsonl``). The compiled and pure-Python runs'
    output and loss files must be byte-identical, and the output of the JSON-lines run the same
    bytes as the default's (checked, sha256).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_codec import ensure_input
from benchmarks.measure import Measured, measure
from pipeline.engine.single_file import final_paths

PY = sys.executable
HERE = Path(__file__).resolve().parent


def _seconds(args: list[str]) -> float:
    out = subprocess.run(
        [PY, str(HERE / "convert_baseline.py"), *args], capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _mb(paths: list[Path]) -> float:
    return sum(p.stat().st_size for p in paths) / 1e6


def _io_alone(workdir: Path, src: Path, files: list[Path], n: int, whose: str = "chatlake's") -> Measured:
    """Read the input and write copies of ``files`` (new files, removed after): what the machine's
    I/O alone costs for a converter that writes those bytes into fresh pages."""
    dst = workdir / "io-alone"
    dst.mkdir(exist_ok=True)
    try:
        return measure(
            f"I/O alone: read the input, write {whose} {_mb(files):,.0f} MB into new files (1 core)",
            [PY, str(HERE / "convert_baseline.py"), "io-alone", str(src), str(dst), *map(str, files)], n,
        )  # fmt: skip
    finally:
        for p in dst.iterdir():
            p.unlink()
        dst.rmdir()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--memory-n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=Path("bench-out"))
    ap.add_argument(
        "--skip-pure-python", action="store_true",
        help="leave out the pure-Python codec's run (ten times slower; its row reads 'not run')",
    )  # fmt: skip
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    src = ensure_input(args.workdir, args.n, args.seed)
    m = min(args.memory_n, args.n)

    print("(a) conversion only, in memory", file=sys.stderr)
    theirs_a = _seconds(["memory-agents", str(src), str(m)])
    ours_a = _seconds(["memory-chatlake", str(src), str(m)])
    print("(b) end to end", file=sys.stderr)
    theirs_b = measure(
        "openai-agents Converter in an orjson loop (1 core)",
        [
            PY,
            str(HERE / "convert_baseline.py"),
            "agents-jsonl",
            str(src),
            str(args.workdir / "agents-chat.jsonl"),
        ],
        args.n,
    )

    def chatlake(label: str, out: Path, native: int, *more: str) -> Measured:
        cmd = [PY, "-m", "pipeline", "convert", "--quiet", str(src), "--from", "responses", "--to", "chat",
               "-o", str(out), *more]  # fmt: skip
        os.environ["CHATLAKE_NATIVE"] = "1" if native else "0"  # inherited by the workers
        try:
            return measure(label, cmd, args.n)
        finally:
            os.environ.pop("CHATLAKE_NATIVE")

    python_out = args.workdir / "chatlake-chat-per-record.jsonl"
    native_out = args.workdir / "chatlake-chat.jsonl"
    ours_b = chatlake("chatlake convert --to chat, compiled codec, loss report as Parquet (default) "
                      "(2 workers)", native_out, 1)  # fmt: skip
    theirs = final_paths(native_out, "chat")
    if args.skip_pure_python:
        ours_before = None
    else:
        ours_before = chatlake("chatlake convert --to chat, pure-Python codec (2 workers)", python_out, 0)
        ours = final_paths(python_out, "chat")
        same = all(_sha256(ours[role]) == _sha256(theirs[role]) for role in ours)
        if not same:
            raise SystemExit("the compiled and the pure-Python codec wrote different bytes")
    jsonl_out = args.workdir / "chatlake-chat-jsonl-losses.jsonl"
    ours_j = chatlake("chatlake convert --to chat, compiled codec, loss report as JSON lines "
                      "(--losses jsonl) (2 workers)", jsonl_out, 1, "--losses", "jsonl")  # fmt: skip
    if _sha256(jsonl_out) != _sha256(native_out):
        raise SystemExit("--losses jsonl changed the output")
    written = [theirs[role] for role in sorted(theirs) if theirs[role].exists()]
    io = _io_alone(args.workdir, src, written, args.n)
    agents = args.workdir / "agents-chat.jsonl"
    agents_io = _io_alone(args.workdir, src, [agents], args.n, "openai-agents'")

    def row(label: str, n: int, seconds: float, peak: str, cpu: str = "-") -> str:
        return f"| {label} | {n:,} | {seconds:.1f} | {cpu} | {n / seconds:,.0f} | {peak} |"

    def measured(m: Measured | None) -> str:
        if m is None:
            return "| (b) chatlake convert --to chat, pure-Python codec (2 workers) | not run | | | | |"
        return row(f"(b) {m.label}", args.n, m.seconds, f"{m.peak_rss_mb:,.0f}", f"{m.cpu_seconds:.1f}")

    per_record = (f"{theirs_b.seconds / ours_before.seconds:.2f}x; chatlake convert, 2 workers / per-record "
                  f"loop, 1 core: {ours_before.seconds / ours_b.seconds:.2f}x, byte-identical output"
                  if ours_before is not None else "not run")  # fmt: skip

    lines = [
        f"Responses -> Chat, synthetic conversations (`python benchmarks/bench_convert.py --n {args.n} "
        f"--memory-n {args.memory_n}`), Python {platform.python_version()}.",
        "",
        "| contender | records | seconds | CPU s | conversations/s | peak RSS (MB) |",
        "|---|---:|---:|---:|---:|---:|",
        row("(a) openai-agents `items_to_messages`, records in memory", m, theirs_a, "-"),
        row("(a) chatlake `convert_table`, canonical table in memory", m, ours_a, "-"),
        measured(theirs_b),
        measured(ours_before),
        measured(ours_b),
        measured(ours_j),
        measured(io),
        measured(agents_io),
        "",
        f"(a) chatlake / openai-agents speed: {theirs_a / ours_a:.2f}x; (b) end to end: "
        f"{theirs_b.seconds / ours_b.seconds:.2f}x wall, "
        f"{theirs_b.cpu_seconds / max(ours_b.cpu_seconds, 1e-9):.2f}x CPU (per-record encoders: "
        f"{per_record}). "
        "openai-agents raises on records with custom tool "
        "calls, compaction, hosted tools or item references; chatlake converts them and reports losses.",
        "",
        f"I/O alone (no conversion: read the input, write the same bytes into new files, 1 core; not a "
        f"floor on a VM where fresh pages cost more than recycled ones): chatlake's "
        f"{_mb(written):,.0f} MB of output and losses {io.seconds:.1f} s / {io.cpu_seconds:.1f} CPU s; "
        f"openai-agents' {_mb([args.workdir / 'agents-chat.jsonl']):,.0f} MB {agents_io.seconds:.1f} s / "
        f"{agents_io.cpu_seconds:.1f} CPU s. A convert at 2x openai-agents' speed (the target) finishes in "
        f"{theirs_b.seconds / 2:.1f} s. The loss report as Parquet (the default) is "
        f"{_mb([theirs['losses']]):,.1f} MB; as JSON lines (`--losses jsonl`) "
        f"{_mb([final_paths(jsonl_out, 'chat', losses_format='jsonl')['losses']]):,.0f} MB, and that "
        f"convert ran at {theirs_b.seconds / ours_j.seconds:.2f}x openai-agents' wall time, "
        f"{theirs_b.cpu_seconds / max(ours_j.cpu_seconds, 1e-9):.2f}x by CPU.",
    ]
    text = "\n".join(lines)
    (args.workdir / f"convert-{args.n}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
