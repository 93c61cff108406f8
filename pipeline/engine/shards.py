"""Cutting a job's inputs into shards: deterministic units of work with stable ids.

A shard is a range of one input file: ``shard_records`` lines of a JSONL file (as a byte range, so
a worker seeks straight to it), ``shard_records`` rows of a Parquet or saved-dataset arrow file, or
one whole file read by a source adapter. The same job over the same files always gives the same
shards, numbered ``part-00000``, ``part-00001``, ... in input order: that is what makes a killed run
resumable and its output byte-identical to an uninterrupted one.

=========  =========================================================  ============
container  range                                                      first record
=========  =========================================================  ============
jsonl      bytes ``[start, end)``, whole lines                        line number
parquet    rows ``[start, end)`` of the file                          row index + 1
arrow      rows ``[start, end)`` of a ``save_to_disk`` arrow file     row index + 1
stream     the whole file (compressed, JSON array or document, stdin)  line / element
source     the whole file                                             -
=========  =========================================================  ============

Small JSONL files share a shard: consecutive files of at most ``SMALL_FILE_BYTES``, of the same
format and options, are one shard (``members``: each file's url, size and name) of up to
``shard_records`` lines and ``SMALL_FILES_BYTES`` bytes, read one after the other into batches of
``chunk_bytes`` (engine/read.py). Ten thousand one-record files are then a few shards, not ten
thousand: the cost per file is a read and a decode call, not a shard's files and manifest entry.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.jobs.files import is_url, open_arrow, open_input
from pipeline.jobs.resolve import InputFile, Job

SCAN_BYTES = 8 << 20
SMALL_FILE_BYTES = 1 << 20  # a JSONL file this small may share a shard with its neighbours
# at most this many bytes of small files in one shard (a single-file command holds a shard's
# output in memory until it is appended)
SMALL_FILES_BYTES = 16 << 20


@dataclass(frozen=True)
class Shard:
    id: str
    url: str
    container: str
    format: str
    options: dict[str, Any]
    start: int  # byte offset (jsonl) or row index (parquet, arrow); 0 for a source file
    end: int  # exclusive; -1 for a whole source file
    first: int  # 1-based line (jsonl) or row number of the first record
    weight: int  # input bytes, for progress
    name: str = ""  # what provenance calls the file when not its url (``<stdin>``)
    # small JSONL files sharing this shard, in order: (url, size, name); the fields above are the first's
    members: tuple[tuple[str, int, str], ...] = ()

    @property
    def label(self) -> str:
        """The file's name in provenance (``source_file``) and in the rejected file."""
        return self.name or self.url

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        if not self.name:
            del d["name"]  # manifests of ordinary files stay as they were
        if not self.members:
            del d["members"]
        else:
            d["members"] = [list(m) for m in self.members]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Shard:
        members = tuple(tuple(m) for m in d.get("members", ()))
        return cls(**{**d, "members": members})

    def files(self) -> list[Shard]:
        """Each member file as a shard of its own (the shard itself when it has no members)."""
        if not self.members:
            return [self]
        return [Shard(self.id, url, self.container, self.format, self.options, 0, size, 1, size, name)
                for url, size, name in self.members]  # fmt: skip


def shard_id(k: int) -> str:
    return f"part-{k:05d}"


def jsonl_ranges(url: str, records: int, scan_bytes: int = SCAN_BYTES) -> Iterator[tuple[int, int, int]]:
    """``(start, end, first_line)`` byte ranges of ``records`` lines each (the last may be shorter).

    Counting newlines runs at C speed; only the block holding a boundary is walked line by line.
    """
    start = pos = 0
    first = 1
    in_shard = 0  # newlines seen since ``start``
    with open_input(url) as f:
        while data := f.read(scan_bytes):
            i = 0
            while True:
                need = records - in_shard
                seen = data.count(b"\n", i)  # once: counting holds the GIL the workers' threads want
                if seen < need:
                    in_shard += seen
                    break
                j = i - 1
                for _ in range(need):
                    j = data.find(b"\n", j + 1)
                end = pos + j + 1
                yield start, end, first
                first += records
                start, in_shard, i = end, 0, j + 1
            pos += len(data)
    if pos > start:
        yield start, pos, first


def _row_ranges(total: int, records: int) -> Iterator[tuple[int, int, int]]:
    for a in range(0, total, records):
        yield a, min(a + records, total), a + 1


def arrow_rows(url: str) -> int:
    """Rows of an arrow stream file (a ``save_to_disk`` shard), read without copying the data."""
    src = open_arrow(url)
    try:
        return sum(b.num_rows for b in pa.ipc.open_stream(src))
    finally:
        src.close()


def parquet_rows(url: str) -> int:
    with open_input(url) as f:
        return int(pq.ParquetFile(f).metadata.num_rows)


def _file_ranges(f: InputFile, records: int) -> Iterator[tuple[int, int, int, int]]:
    """``(start, end, first, weight)`` for each shard of one input file."""
    if f.container == "jsonl":
        # A URL is scanned whole before its shards are handed out: no handle stays open while
        # workers read the same file (some filesystems, e.g. fsspec's memory://, share one handle).
        # A local file is scanned as shards are handed out, so the first worker starts at once.
        ranges = jsonl_ranges(f.url, records)
        for a, b, first in list(ranges) if is_url(f.url) else ranges:
            yield a, b, first, b - a
    elif f.container in ("parquet", "arrow"):
        total = parquet_rows(f.url) if f.container == "parquet" else arrow_rows(f.url)
        for a, b, first in _row_ranges(total, records):
            yield a, b, first, f.size * (b - a) // max(total, 1)
    else:
        yield 0, -1, 1, f.size


def _small(f: InputFile) -> bool:
    return f.container == "jsonl" and f.size <= SMALL_FILE_BYTES


def _lines(url: str) -> int:
    """Records (lines, the last one without a newline included) of a small JSONL file."""
    with open_input(url) as fh:
        data = fh.read()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _groups(files: list[InputFile], records: int) -> Iterator[list[InputFile]]:
    """The job's files in order, consecutive small ones of one format and options grouped (each
    group within ``records`` lines and ``SMALL_FILES_BYTES``); any other file alone."""
    group: list[InputFile] = []
    lines = size = 0
    for f in files:
        n = _lines(f.url) if _small(f) else 0
        fits = group and _small(f) and (f.format, f.options) == (group[0].format, group[0].options)
        if group and not (fits and lines + n <= records and size + f.size <= SMALL_FILES_BYTES):
            yield group
            group, lines, size = [], 0, 0
        if not _small(f):
            yield [f]
            continue
        group.append(f)
        lines, size = lines + n, size + f.size
    if group:
        yield group


def plan(job: Job, records: int | None = None) -> Iterator[Shard]:
    """Every shard of the job, in order (lazily, file by file: work starts after the first file's
    scan); ``records`` per shard, the job's ``shard_records`` by default."""
    k = 0
    # a job with a grouping step (threads) plans its stage 1 here with larger shards
    # (engine/partition.py, stage1_records)
    for group in _groups(job.files, records or job.shard_records):
        if len(group) > 1:
            f = group[0]
            members = tuple((m.url, m.size, m.name) for m in group)
            weight = sum(m.size for m in group)
            yield Shard(shard_id(k), f.url, f.container, f.format, f.options, 0, f.size, 1, weight, f.name,
                        members)  # fmt: skip
            k += 1
            continue
        f = group[0]
        for a, b, first, weight in _file_ranges(f, records or job.shard_records):
            yield Shard(shard_id(k), f.url, f.container, f.format, f.options, a, b, first, weight, f.name)
            k += 1
