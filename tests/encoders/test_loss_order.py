"""Loss reports list losses in source order, the same in every run.

Python randomises string hashes per process (``PYTHONHASHSEED``), so an encoder that iterates a set
of keys reports its losses in a different order from run to run. The engine sorts losses before
writing them, which hides this; here the encoders' own order is compared across processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[2]
FORMATS = ("responses", "chat", "anthropic", "hf", "sharegpt")

# Runs in a fresh interpreter: every cross-format conversion of the cases, the dataset formats'
# hand-written rows and synthetic records; prints the losses of each, in the order reported.
SCRIPT = """
import sys
import orjson
from pipeline import synth
from pipeline.encoders import convert_table
from pipeline.formats import decode_records
from tests.cases import CASES
from tests.formats.test_hf import HF_CASES
from tests.formats.test_sharegpt import SHAREGPT_CASES

FORMATS = ("responses", "chat", "anthropic", "hf", "sharegpt")
records = {a: [rec for _, rec in CASES.get(a, [])] for a in FORMATS}
records["hf"] += [rec for _, rec in HF_CASES]
records["sharegpt"] += [rec for _, rec in SHAREGPT_CASES]
for a in ("responses", "chat", "anthropic"):
    records[a] += list(synth.generate(a, 120, seed=3))
out = []
for a in FORMATS:
    table = decode_records(records[a], a).table
    for b in FORMATS:
        if a != b:
            for n, c in enumerate(convert_table(table, b)):
                out.append([a, b, n, c.error, [loss.to_json() for loss in c.losses]])
sys.stdout.buffer.write(orjson.dumps(out))
"""


def _run(seed: str) -> list:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=REPO, env=env, capture_output=True, check=False, timeout=600
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return orjson.loads(proc.stdout)


def test_loss_order_does_not_depend_on_the_hash_seed() -> None:
    first, second = _run("1"), _run("2")
    assert len(first) == len(second)
    differ = [(a[:3], a[4], b[4]) for a, b in zip(first, second, strict=True) if a != b]
    assert differ[:2] == [], f"{len(differ)} of {len(first)} conversions report losses in another order"
    # the comparison is not vacuous: records with several losses were converted
    assert sum(len(x[4]) > 1 for x in first) > 1000
