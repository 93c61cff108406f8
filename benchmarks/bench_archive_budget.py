"""Archive budget benchmark: an inspect ``.eval`` of a few MB that inflates to gigabytes, every member
under the member cap, read by ``chatlake run`` with the default ``max_archive_bytes``, side by side
with the same kind of archive at a twelfth of the size read whole (the budget raised), in one run.

    python benchmarks/bench_archive_budget.py --members 30 --member-mib 200

Contenders, each in its own process under ``/usr/bin/time -v`` (peak RSS, wall time, exit status):

* over budget: ``members`` samples of ``member_mib`` MiB each (repeated text, ~1,000:1 in DEFLATE),
  rejected whole before anything is inflated (exit 1: every record read was rejected);
* read whole: ``members / 12`` such samples with ``max_archive_bytes`` raised above their size:
  what reading costs, for scale (before the budget, the big one was read the same way until
  Arrow's offsets overflowed).

The archives are built by streaming DEFLATE (``zipfile`` writing a member in 16 MiB pieces) into
``bench-out/archive-budget/`` (gitignored).
"""

from __future__ import annotations

import argparse
import platform
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import orjson
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "bench-out" / "archive-budget"  # gitignored
CHATLAKE = str(Path(sys.executable).with_name("chatlake"))


def build(path: Path, members: int, member_bytes: int) -> int:
    """An ``.eval`` of ``members`` samples inflating to ``member_bytes`` each; returns its size."""
    header = {"version": 2, "status": "success", "eval": {"eval_id": "E", "task": "t", "model": "m"}}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("header.json", orjson.dumps(header))
        chunk = b"a" * (1 << 24)
        for i in range(1, members + 1):
            head = b'{"id":%d,"epoch":1,"messages":[{"role":"user","content":"' % i
            tail = b'"}],"scores":{}}'
            with z.open(f"samples/{i}_epoch_1.json", "w", force_zip64=True) as f:
                f.write(head)
                left = member_bytes - len(head) - len(tail)
                while left > 0:
                    f.write(chunk[: min(left, len(chunk))])
                    left -= len(chunk)
                f.write(tail)
    return path.stat().st_size


def run(label: str, archive: Path, options: dict[str, int]) -> dict[str, object]:
    """``chatlake run`` over ``archive`` under ``/usr/bin/time -v``: peak RSS, wall, exit, reasons."""
    work = OUT / label
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    opts = ", ".join(f"{k} = {v}" for k, v in options.items())
    (work / "job.toml").write_text(
        f'name = "archive-budget"\n[[inputs]]\npath = "{archive}"\nformat = "inspect-log"\n'
        f"options = {{{opts}}}\n[output]\npath = \"run\"\ntarget = \"parquet\"\n"
    )
    proc = subprocess.run(
        ["/usr/bin/time", "-v", CHATLAKE, "run", str(work / "job.toml"), "-q"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", proc.stderr).group(1)
    status = int(re.search(r"Exit status: (\d+)", proc.stderr).group(1))
    rejected = sorted((work / "run" / "rejected").glob("*.parquet"))
    reasons = [r for f in rejected for r in pq.read_table(f).column("reason").to_pylist()]
    return {"label": label, "peak_rss_mb": rss / 1024, "wall": wall, "exit": status, "reasons": reasons}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=30)
    ap.add_argument("--member-mib", type=int, default=200)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    member = args.member_mib << 20
    big, small = OUT / "bomb.eval", OUT / "small.eval"
    big_size = build(big, args.members, member)
    few = max(1, args.members // 12)
    small_size = build(small, few, member)
    over = run("over budget", big, {})
    whole = run("read whole", small, {"max_archive_bytes": (few + 1) * member})
    print(f"machine: {platform.platform()}, {platform.processor() or platform.machine()}")
    print("| archive | inflates to | run | peak RSS | wall | exit | rejected |")
    print("|---|---|---|---|---|---|---|")
    for size, n, r in ((big_size, args.members, over), (small_size, few, whole)):
        reason = r["reasons"][0] if r["reasons"] else "none"
        print(
            f"| {size / 1e6:.1f} MB, {n} members | {n * member / 2**30:.2f} GiB | {r['label']} | "
            f"{r['peak_rss_mb']:.0f} MB | {r['wall']} | {r['exit']} | {reason} |"
        )


if __name__ == "__main__":
    main()
