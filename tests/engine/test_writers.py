"""pipeline/engine/writers.py: the staged Arrow shards of a Parquet output."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from pipeline.engine.writers import ArrowTable


def test_staged_arrow_shards_are_compressed_and_read_back_equal(tmp_path: Path) -> None:
    """A request log repeats its history in every request: staged plainly, a large input needed ten
    times the disk of its Parquet output. The staged file must be compressed and read back equal."""
    history = ["the same long history of a conversation, " * 20] * 5_000
    table = pa.table({"conversation_id": [f"c{i}" for i in range(5_000)], "text": history})
    path = tmp_path / "part-00000.arrow"
    w = ArrowTable(path, table.schema)
    w.write_table(table.slice(0, 2_500))
    w.write_table(table.slice(2_500))
    w.close()
    plain = table.nbytes
    assert path.stat().st_size < plain / 10, (path.stat().st_size, plain)
    back = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    assert back.equals(table)
