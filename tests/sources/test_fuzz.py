"""Seeded mutation fuzzing of every source adapter: mutated files (a few mutated lines of a JSONL
file, a mutated JSON document, a mutated ``.eval`` member or a duplicated member name) are read
with ``read_source``; no exception escapes, every record is a row or a rejection with file, line
and reason (the adapter's counts add up), and every row encodes back.

Seeds: hand-written files for every adapter, the inspect log pair in ``tests/sources/data`` and the
shared corpus' files (cut short) when present. ``CHATLAKE_FUZZ_N`` / ``CHATLAKE_FUZZ_SEED`` as in
``tests/formats/test_fuzz.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.sources import SOURCES
from tests.fuzzing import fuzz_source, iter_findings, source_seeds
from tests.mutate import fuzz_n, fuzz_seed

SEEDS = source_seeds(corpus=True, corpus_cap=25)
# files per seed in CI: the hand-written seeds are small, the corpus ones larger
CI_FILES = {True: 80, False: 20}


def test_every_adapter_has_a_seed() -> None:
    assert {s.adapter for s in SEEDS} == set(SOURCES)


@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")
@pytest.mark.parametrize("seed_file", SEEDS, ids=[s.name for s in SEEDS])
def test_mutated_files_never_escape_the_adapter(seed_file, tmp_path: Path) -> None:
    hand_written = "/" not in seed_file.name
    stats = fuzz_source([seed_file], fuzz_n(CI_FILES[hand_written]), fuzz_seed(), tmp_path)
    findings = list(iter_findings(stats))
    assert findings == [], "\n".join(str(f) for f in findings[:10])
    # the mutated files must reach the codecs, not only the JSON parser: both outcomes occur
    [s] = stats.values()
    assert s.written and s.rejected
