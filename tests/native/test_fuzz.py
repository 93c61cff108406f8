"""A bounded, seeded run of the mutation fuzzer against an AddressSanitizer + UBSan build.

The long runs (100,000+ lines) are done by hand with the command in fuzz_native.py; every failure
they found is pinned in test_differential.py.
"""

from __future__ import annotations

import os
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
