"""``convert``/``transform -o FILE`` interrupted (SIGINT, SIGKILL) at seeded random moments.

Each interruption must leave no file under a final name (and a previous run's finals untouched),
and running the same command again must resume and write files byte-identical to an uninterrupted
run's. The commands run as subprocesses with small shards (several per input), so an interruption
can fall before, between or after finished shards and during the final join.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.engine.output_file import manifest_path, open_output, verify
from pipeline.engine.single_file import final_paths, staging_dir
from pipeline.synth import write_jsonl

# The CLI with small shards: several shards per input, so a resume really skips finished ones.
RUNNER = (
    "import sys, pipeline.cli as c; c.SINGLE_FILE_SHARD_RECORDS = 400; "
    "sys.argv = ['chatlake', *sys.argv[1:]]; c.main()"
)
TRIALS = 5  # SIGINT, SIGKILL alternately; the last two over the finals of a completed run
# A trial whose command finished before its signal (the machine was less busy than during the
# reference run) is tried again, signalled twice as early: the last attempt comes within the
# interpreter's start-up, so every trial is an interruption however the machine's load varies.
ATTEMPTS = 6
STEPS = ["--step", "role_swap", "--step", "turns", "--step", "compaction"]


def _cmd(kind: str, src: Path, out: Path) -> list[str]:
    if kind == "convert":
        args = ["convert", str(src), "--from", "responses", "--to", "chat", "-o", str(out), "--workers", "2"]
    else:
        args = ["transform", str(src), *STEPS, "-o", str(out)]
    return [sys.executable, "-c", RUNNER, *args, "-q"]


def _run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def _group_alive(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid`` (from /proc)."""
    alive = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                alive.append(int(d.name))
    return alive


def _wait_group_gone(pgid: int, what: str, timeout: float = 60.0) -> None:
    """Wait until every process the command started has exited (its pool workers die with it), so
    that nothing of it still runs when the command is started again; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while alive := _group_alive(pgid):
        assert time.monotonic() < deadline, f"{what}: processes {alive} outlived the command"
        time.sleep(0.02)


def _finals(out: Path, kind: str) -> dict[str, Path]:
    return final_paths(out, "parquet" if kind == "transform" else "chat")  # default loss report: Parquet


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("interrupt")
    src = d / "in.jsonl"
    write_jsonl(src, "responses", 1600, seed=7)
    lines = src.read_bytes().splitlines(keepends=True)
    lines.insert(100, b'{"input": 7}\n')  # rejected records too, so every side file has content
    lines.insert(1000, b"not json \xff\n")
    src.write_bytes(b"".join(lines))
    parquet = d / "in.parquet"
    subprocess.run(
        [sys.executable, "-m", "pipeline", "convert", str(src), "--from", "responses", "--to", "parquet",
         "-o", str(parquet), "-q"], check=True, capture_output=True,
    )  # fmt: skip
    return {"convert": src, "transform": parquet}


@pytest.mark.parametrize("kind", ["convert", "transform"])
def test_interrupted_runs_leave_no_final_file_and_resume_to_the_same_bytes(
    kind: str, inputs: dict[str, Path], tmp_path: Path
) -> None:
    ref = tmp_path / "ref" / ("out.jsonl" if kind == "convert" else "out.parquet")
    ref.parent.mkdir()
    duration = _run(_cmd(kind, inputs[kind], ref))
    want = {role: p.read_bytes() for role, p in _finals(ref, kind).items()}
    assert not staging_dir(ref).exists()
    rng = random.Random(f"{kind}-6")
    for trial in range(TRIALS):
        sig = (signal.SIGINT, signal.SIGKILL)[trial % 2]
        out = tmp_path / f"t{trial}" / ref.name
        previous = trial >= TRIALS - 2  # finals of a completed earlier run are there: they must stay whole
        at = rng.uniform(0.05, 0.55)  # of the reference run's time
        for _ in range(ATTEMPTS):
            if not out.parent.exists():
                out.parent.mkdir()
                if previous:
                    _run(_cmd(kind, inputs[kind], out))
            # its own process group: whatever the command starts is found and waited for below
            cmd = _cmd(kind, inputs[kind], out)
            proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL, start_new_session=True)
            time.sleep(at * duration)
            proc.send_signal(sig)  # a no-op once it has exited (Popen polls first)
            proc.wait()
            _wait_group_gone(proc.pid, f"trial {trial} ({sig.name})")
            if proc.returncode != 0:
                break
            at /= 2  # it finished first: try again, earlier (from no output, or the previous run's)
            if not previous:
                shutil.rmtree(out.parent)
        assert proc.returncode != 0, f"trial {trial}: the command finished before its signal {ATTEMPTS} times"
        finals = _finals(out, kind)
        if all(p.exists() for p in finals.values()) and not previous:
            # FILE is renamed last: all finals in place means the run had finished and the signal hit
            # its last ~0.2 s (staging removal, interpreter exit); then they must be the whole output
            got = {r: p.read_bytes() for r, p in finals.items()}
            assert got == want, f"trial {trial} ({sig.name}): finals in place but not complete"
        elif previous:
            assert {r: p.read_bytes() for r, p in finals.items()} == want, f"trial {trial}: finals changed"
        else:
            present = [str(p) for p in finals.values() if p.exists()]
            assert not present, f"trial {trial} ({sig.name}): {present} exist after the interruption"
        _run(_cmd(kind, inputs[kind], out))  # the same command again: resumes, then finishes
        got = {role: p.read_bytes() for role, p in finals.items()}
        assert got == want, f"trial {trial} ({sig.name}): the resumed run's files differ"
        assert not staging_dir(out).exists()
        names = [*(p.name for p in finals.values()), manifest_path(out).name]
        assert sorted(os.listdir(out.parent)) == sorted(names)
        # the manifest's sha256 of each file covers the kept shards' bytes as well as the redone ones'
        assert verify(open_output(out)) == [], f"trial {trial} ({sig.name})"
