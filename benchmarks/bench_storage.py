"""Object storage benchmark: `chatlake convert` reading from and writing to S3 beside the same command
on local files, in one run, against a SeaweedFS server on loopback (tests/s3_server.py).

    python benchmarks/bench_storage.py --n 100000

Contenders, each in a fresh process (benchmarks/measure.py): local -> local, S3 -> local, local ->
S3, S3 -> S3 (Responses -> Chat JSONL, the default Parquet loss report), and the upload alone (the
local output files put on the store by s3fs, what writing to S3 adds at least). The outputs are
checked: each command's Chat file is byte-identical to the one of the same input on local disk.
The server runs on the same machine, so its CPU is taken from the contenders' (not counted in
their CPU s or peak RSS).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_codec import ensure_input
from benchmarks.measure import Measured, measure
from tests.s3_server import running

PY = sys.executable


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="Responses conversations")
    ap.add_argument("--workdir", type=Path, default=Path("bench-out"))
    args = ap.parse_args()
    args.workdir.mkdir(exist_ok=True)
    src = ensure_input(args.workdir, args.n, 0)
    work = Path(tempfile.mkdtemp(dir=args.workdir, prefix="storage-")).resolve()
    (work / "seaweedfs").mkdir()
    with running(work / "seaweedfs") as server:
        os.environ.update(server.env)  # the contenders inherit it, as a user's shell would
        os.environ["CHATLAKE_CACHE"] = str(work / "cache")
        import s3fs

        fs = s3fs.S3FileSystem(skip_instance_cache=True)
        s3 = f"s3://{server.bucket}/bench"
        fs.put_file(str(src), f"{server.bucket}/bench/in.jsonl")
        convert = [PY, "-m", "pipeline", "convert", "--from", "responses", "--to", "chat", "-q"]
        rows: list[Measured] = []
        cases = {
            "local -> local": (str(src), str(work / "local" / "chat.jsonl")),
            "S3 -> local": (f"{s3}/in.jsonl", str(work / "from-s3" / "chat.jsonl")),
            "local -> S3": (str(src), f"{s3}/to-s3/chat.jsonl"),
            "S3 -> S3": (f"{s3}/in.jsonl", f"{s3}/s3-s3/chat.jsonl"),
        }
        for label, (inp, out) in cases.items():
            if not out.startswith("s3://"):
                Path(out).parent.mkdir(parents=True, exist_ok=True)
            rows.append(measure(f"`chatlake convert`, {label}", [*convert, inp, "-o", out], args.n))
        local = work / "local"
        put = "; ".join(
            f"fs.put_file({str(p)!r}, {f'{server.bucket}/bench/upload/{p.name}'!r})"
            for p in sorted(local.iterdir())
            if p.is_file()
        )
        rows.append(measure("upload alone: s3fs `put_file` of the local -> local outputs", [
            PY, "-c", f"import s3fs; fs = s3fs.S3FileSystem(skip_instance_cache=True); {put}",
        ], args.n))  # fmt: skip

        def chat(out: str) -> str:
            return _sha256(fs.cat_file(out[5:]) if out.startswith("s3://") else Path(out).read_bytes())

        sums = {label: chat(out) for label, (_, out) in cases.items()}
        # the same input (the same path or URL, which generated ids hash) gives the same bytes
        if sums["local -> local"] != sums["local -> S3"] or sums["S3 -> local"] != sums["S3 -> S3"]:
            raise SystemExit(f"outputs differ: {sums}")
        out_mb = sum(p.stat().st_size for p in local.iterdir() if p.is_file()) / 1e6
    shutil.rmtree(work, ignore_errors=True)
    base = rows[0]
    print(f"\n{args.n:,} conversations ({src.stat().st_size / 1e6:,.0f} MB in, {out_mb:,.0f} MB out); "
          f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}\n")  # fmt: skip
    print("| contender | seconds | × local | CPU s | peak RSS (MB) |")
    print("|---|---:|---:|---:|---:|")
    for m in rows:
        print(f"| {m.label} | {m.seconds:,.1f} | {m.seconds / base.seconds:.2f} | {m.cpu_seconds:,.1f} "
              f"| {m.peak_rss_mb:,.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
