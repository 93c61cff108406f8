"""hand_off / take: a table written by one process comes back equal, and its file is removed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.formats import decode_records
from pipeline.io.table_handoff import hand_off, handoff_dir, take
from tests.cases import CASES


def test_round_trip_keeps_the_canonical_table_and_its_schema(tmp_path: Path) -> None:
    table = decode_records([r for _, r in CASES["responses"]], "responses").table
    handed = hand_off(table, str(tmp_path / "t.arrow"))
    assert handed is not None and handed.num_rows == table.num_rows
    back = take(handed)
    assert back.equals(table) and back.schema.equals(table.schema, check_metadata=True)
    assert not (tmp_path / "t.arrow").exists()
    assert back.column("items").to_pylist() == table.column("items").to_pylist()  # readable after unlink


def test_unwritable_path_gives_none_and_leaves_nothing(tmp_path: Path) -> None:
    assert hand_off(pa.table({"x": [1]}), str(tmp_path / "no" / "t.arrow")) is None
    assert list(tmp_path.iterdir()) == []


def test_truncated_file_is_an_error(tmp_path: Path) -> None:
    handed = hand_off(pa.table({"x": list(range(1000))}), str(tmp_path / "t.arrow"))
    assert handed is not None
    data = (tmp_path / "t.arrow").read_bytes()
    (tmp_path / "t.arrow").write_bytes(data[: len(data) // 2])
    with pytest.raises(pa.ArrowInvalid):
        take(handed)


def test_handoff_dir_is_writable() -> None:
    assert Path(handoff_dir()).is_dir()


def test_write_that_fails_half_way_gives_none_and_removes_the_part(tmp_path: Path) -> None:
    # a full /dev/shm fails the write after some bytes; a file-size limit fails it the same way
    # (EFBIG instead of ENOSPC), in a child process so the limit does not touch the test runner
    code = f"""
import resource, signal, pyarrow as pa
from pipeline.io.table_handoff import hand_off
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
print(hand_off(pa.table({{"x": list(range(100_000))}}), {str(tmp_path / "t.arrow")!r}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"
    assert list(tmp_path.iterdir()) == []
