"""Codec benchmark: JSONL -> canonical Parquet ingest and canonical Parquet -> Chat JSONL encode
(issue 16's two targets), plus canonical -> Responses JSONL (the round trip back to the input
format), side by side with the orjson loads+dumps floor and a per-record pydantic decode, in one run.

    python benchmarks/bench_codec.py --n 1000000

Every contender runs in a fresh process on the same file; peak RSS is the whole process tree's,
CPU seconds are the process's and its workers' (user + system). The script also checks that the
Responses output equals the input (exact round trip) on a sample.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import sys
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.measure import Measured, measure
from pipeline import synth

PY = sys.executable
HERE = Path(__file__).resolve().parent


def ensure_input(workdir: Path, n: int, seed: int, fmt: str = "responses") -> Path:
    """``n`` synthetic ``fmt`` records (seed ``seed``) as JSON Lines in ``workdir``, generated once."""
    path = workdir / f"{fmt}-{n}-s{seed}.jsonl"
    if not path.exists():
        print(f"generating {n:,} synthetic {fmt} conversations -> {path}", file=sys.stderr)
        tmp = path.with_suffix(".tmp")
        synth.write_jsonl(tmp, fmt, n, seed, workers=2)
        tmp.rename(path)
    return path


def check_exact(src: Path, out: Path, sample: int = 20_000) -> int:
    with open(src, "rb") as a, open(out, "rb") as b:
        for n, (x, y) in enumerate(itertools.islice(zip(a, b, strict=True), sample), 1):
            if orjson.loads(x) != orjson.loads(y):
                raise SystemExit(f"round trip differs at line {n}")
    return n


def row(m: Measured, floor: Measured) -> str:
    return (
        f"| {m.label} | {m.seconds:,.1f} | {m.per_second:,.0f} | {m.seconds / floor.seconds:.2f}x "
        f"| {m.cpu_seconds:,.1f} | {m.cpu_seconds / floor.cpu_seconds:.2f}x | {m.peak_rss_mb:,.0f} |"
    )


def row_rate(m: Measured, floor: Measured) -> str:
    """A contender measured on a prefix: compare rates, not seconds."""
    ratio = floor.per_second / m.per_second
    cpu_ratio = (m.cpu_seconds / m.records) / (floor.cpu_seconds / floor.records)
    cells = (
        f"{m.seconds:,.1f} | {m.per_second:,.0f} | {ratio:.2f}x (by rate) | {m.cpu_seconds:,.1f} "
        f"| {cpu_ratio:.2f}x (per record) | {m.peak_rss_mb:,.0f}"
    )
    return f"| {m.label} | {cells} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=Path("bench-out"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-pydantic", action="store_true")
    ap.add_argument(
        "--pydantic-sample",
        type=int,
        default=100_000,
        help="run the (slow) pydantic baseline on the first N records; its rate is what is compared",
    )
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    src = ensure_input(args.workdir, args.n, args.seed)
    size_gb = src.stat().st_size / 1e9
    n = args.n
    parquet = args.workdir / "bench.parquet"
    out = args.workdir / "bench-encoded.jsonl"
    out_chat = args.workdir / "bench-encoded-chat.jsonl"
    chatlake = [PY, "-m", "pipeline", "convert", "--quiet", "--workers", str(args.workers)]

    print("running contenders (each in a fresh process)", file=sys.stderr)
    floor = measure("orjson loads+dumps floor (1 core)", [PY, str(HERE / "floor.py"), "orjson", str(src)], n)
    ingest = measure(
        f"chatlake ingest JSONL -> Parquet ({args.workers} workers)",
        [*chatlake, str(src), "--from", "responses", "--to", "parquet", "-o", str(parquet)],
        n,
    )
    duck = measure(
        "DuckDB read_json -> Parquet (lossy: keys unified, missing = null)",
        [PY, str(HERE / "floor.py"), "duckdb", str(src), str(args.workdir / "duckdb.parquet")],
        n,
    )
    try:
        polars: Measured | str = measure(
            "Polars scan_ndjson -> sink_parquet",
            [PY, str(HERE / "floor.py"), "polars", str(src), str(args.workdir / "polars.parquet")],
            n,
        )
    except SystemExit as e:  # measure() exits when the command fails: Polars could not read them
        polars = f"| Polars scan_ndjson -> sink_parquet | failed: {e} | | | | | |"
    encode_chat = measure(
        f"chatlake encode Parquet -> Chat JSONL ({args.workers} workers)",
        [*chatlake, str(parquet), "--from", "parquet", "--to", "chat", "-o", str(out_chat)],
        n,
    )
    encode = measure(
        f"chatlake encode Parquet -> Responses JSONL, the input format ({args.workers} workers)",
        [*chatlake, str(parquet), "--from", "parquet", "--to", "responses", "-o", str(out)],
        n,
    )
    checked = check_exact(src, out)
    rows = [row(floor, floor), row(ingest, floor), row(duck, floor),
            polars if isinstance(polars, str) else row(polars, floor), row(encode_chat, floor),
            row(encode, floor)]  # fmt: skip
    pyd = None
    if not args.skip_pydantic:
        k = min(n, args.pydantic_sample)
        pyd = measure(
            f"pydantic per-record decode, openai SDK models (1 core; first {k:,} records)",
            [PY, str(HERE / "floor.py"), "pydantic", str(src), str(k)],
            k,
        )
        rows.append(row_rate(pyd, floor))

    lines = [
        f"Codec benchmark: {n:,} synthetic Responses conversations, {size_gb:.2f} GB JSONL "
        f"(`python benchmarks/bench_codec.py --n {n}`), Python {platform.python_version()}, "
        f"{platform.machine()}.",
        "",
        "| contender | seconds | conversations/s | time vs orjson floor | CPU s | CPU vs floor "
        "| peak RSS (MB) |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"Exact round trip checked on the first {checked:,} records (Responses output == input).",
        f"chatlake ingest / DuckDB: {ingest.seconds / duck.seconds:.2f}x wall, "
        f"{ingest.cpu_seconds / duck.cpu_seconds:.2f}x CPU, "
        f"{ingest.peak_rss_mb / duck.peak_rss_mb:.2f}x peak memory.",
    ]
    if pyd is not None:
        lines.append(
            f"Ingest runs {ingest.per_second / pyd.per_second:.1f}x the pydantic decode's rate "
            f"(which builds objects only and writes nothing)."
        )
    text = "\n".join(lines)
    (args.workdir / f"codec-{n}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
