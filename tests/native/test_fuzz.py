"""A bounded, seeded run of the mutation fuzzer against an AddressSanitizer + UBSan build.

The long runs (100,000+ lines) are done by hand with the command in fuzz_native.py; every failure
they found is pinned in test_differential.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.native.build_native import build, libasan

FUZZ = Path(__file__).with_name("fuzz_native.py")
LIBASAN = libasan()


@pytest.mark.skipif(LIBASAN is None, reason="gcc or its libasan is missing: cannot build the ASan extension")
def test_fuzzer_finds_no_crash_no_sanitizer_report_no_difference(tmp_path: Path) -> None:
    build(tmp_path, sanitize=True)
    env = {k: v for k, v in os.environ.items() if k != "CHATLAKE_NATIVE"}
    env |= {
        "LD_PRELOAD": str(LIBASAN),
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    }
    for fmt, lines in (("responses", 2000), ("chat", 1000), ("anthropic", 1000)):
        cmd = [sys.executable, str(FUZZ), "--ext-dir", str(tmp_path), "--fmt", fmt, "--lines", str(lines)]
        res = subprocess.run([*cmd, "--seed", "7"], env=env, capture_output=True, text=True, timeout=480)
        report = res.stdout[-4000:] + res.stderr[-4000:]
        assert res.returncode == 0, report
        assert "AddressSanitizer" not in res.stderr and "runtime error" not in res.stderr, report
        assert "no difference" in res.stdout, report
        if fmt in ("responses", "chat"):  # the compiled HF encoder took some of the fuzzed rows
            assert re.search(r"^hf encoding: [1-9]\d* of", res.stdout, re.M), report


def test_mutations_walk_records_past_the_recursion_limit() -> None:
    """Two ``deepen`` mutations nest a record ~500 levels and a third grafted a key holding it onto
    another message: ``copy.deepcopy`` (two frames a level) ended a run in RecursionError. Every
    structural mutation and the writer now walk explicit stacks, at any depth."""
    import json
    import random

    from tests.mutate import deep_copy
    from tests.native import fuzz_native

    deep: object = 1
    for i in range(2000):  # twice the recursion limit
        deep = [deep] if i % 2 else {"d": deep}
    rec = {"messages": [{"role": "user", "content": "x", "k": deep}, {"role": "assistant", "content": "y"}]}
    raw = fuzz_native._dumps(rec)
    assert raw.startswith(b'{"messages":[{"role":"user","content":"x","k":[{"d":[{"d":')
    assert raw.count(b'{"d":') == 1000
    assert fuzz_native._dumps(deep_copy(rec)) == raw
    grafted = 0
    for seed in range(40):
        mutated = deep_copy(rec)
        fuzz_native.moved_key(mutated, random.Random(seed))
        copied = mutated["messages"][1].get("k")
        if copied is not None:
            grafted += 1
            assert copied is not mutated["messages"][0]["k"]
            assert fuzz_native._dumps(copied) == fuzz_native._dumps(deep)
        for fn in fuzz_native.STRUCTURAL:
            fuzz_native._dumps(fn(deep_copy(rec), random.Random(seed)))
        fuzz_native.mutate(raw, random.Random(seed))
    assert grafted
    shallow = {"a": [1, {"b": "é\u2028", "c": [None, 1.5, -0.0]}]}
    want = json.dumps(shallow, ensure_ascii=False, separators=(",", ":")).encode()
    assert fuzz_native._dumps_deep(shallow) == want
