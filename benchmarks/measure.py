"""Run a command and report its wall time and the peak RSS of its whole process tree.

Benchmarks run every contender in a fresh process through :func:`measure`, so peak memory is
comparable and one contender's heap does not inflate the next.
"""

from __future__ import annotations

import contextlib
import resource
import subprocess
import sys
import time
from dataclasses import dataclass

import psutil


@dataclass
class Measured:
    label: str
    seconds: float
    peak_rss_mb: float
    records: int
    cpu_seconds: float = 0.0  # user + system CPU of the tree (on a shared machine: the figure to compare)

    @property
    def per_second(self) -> float:
        return self.records / self.seconds if self.seconds else float("inf")


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            total += p.memory_info().rss
    return total


def measure(label: str, cmd: list[str], records: int, interval: float = 0.25) -> Measured:
    """Run ``cmd`` to completion, sampling the tree's RSS every ``interval`` seconds."""
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    popen = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    proc = psutil.Process(popen.pid)
    peak = 0
    while popen.poll() is None:
        try:
            peak = max(peak, _tree_rss(proc))
        except psutil.NoSuchProcess:
            break
        time.sleep(interval)
    seconds = time.perf_counter() - start
    popen.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # every reaped descendant (workers too)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if popen.returncode != 0:
        raise SystemExit(f"{label}: {' '.join(cmd)} exited {popen.returncode}")
    m = Measured(label, seconds, peak / 2**20, records, cpu)
    print(
        f"  {label}: {seconds:.1f} s, {cpu:.1f} s CPU, {m.per_second:,.0f} rec/s, "
        f"peak {m.peak_rss_mb:,.0f} MB",
        file=sys.stderr,
    )
    return m
