"""inspect_ai ``.eval`` logs: the zip archive inspect writes by default, read member by member.

Layout (``inspect_ai/log/_recorders/eval.py``; every member is a JSON document):

========================================  ==========================================================
member                                    holds
========================================  ==========================================================
``header.json``                           the log without samples (``version``, ``status``,
                                          ``eval``, ``plan``, ``results``, ``stats``, ``error``);
                                          written when the run finishes
``_journal/start.json``                   ``version``, ``eval``, ``plan``: all there is of the
                                          header while a run is going (or after it crashed)
``samples/<id>_epoch_<epoch>.json``       one ``EvalSample``, exactly as in a JSON log's ``samples``
``summaries.json``, ``_journal/...``,     sample summaries and score reductions: repeats of what the
``reductions.json``                       samples and the header hold, not read
========================================  ==========================================================

Each sample becomes one conversation through the JSON adapter's own code
(:func:`pipeline.sources.inspect_log.read_sample`), so the rows are the ones the same log in JSON
gives (same columns, provenance, ``attachment://`` resolution, model calls), in inspect's sample
order (epoch, then id; numeric ids in number order); ``source_line`` is the 1-based sample number
in that order, as for a JSON log.

Compression: members are DEFLATE (older inspect releases) or Zstandard (zip method 93: opt-in via
``INSPECT_USE_ZSTD`` from about 0.3.169, the default in 0.3.285, checked), which Python's ``zipfile``
reads only from 3.14 on; Zstandard members are
decompressed with pyarrow's codec (already a dependency) and checked against the member's CRC-32.
Nothing in the archive is executed or unpickled: the members are parsed as JSON.

Nothing vanishes: a file that is not a zip archive is one rejected record (line 1); a broken
``header.json`` is rejected (named) and ``_journal/start.json`` used instead; no usable header is one
rejected record and the samples are still read (without the eval's ``eval_id``/``model``); a sample
member that cannot be read (bad CRC, truncated, not JSON, not an
object) is rejected with the member's name and its sample number, and the other samples go on. A
member declaring more than ``max_member_bytes`` inflated (a source option, default
:data:`DEFAULT_MAX_MEMBER_BYTES`) is rejected by name before anything is inflated; of several
members of one name the last is read and each other copy is rejected by name. An archive whose
members declare more than ``max_archive_bytes`` inflated together (a source option, default
:data:`DEFAULT_MAX_ARCHIVE_BYTES`) is one rejected record naming the limit, before anything is
inflated.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

from pipeline.formats import RecordError
from pipeline.formats import _loads as loads_record
from pipeline.sources._base import SourceBuilder
from pipeline.storage import open_input

HEADER = "header.json"
JOURNAL_START = "_journal/start.json"
SAMPLES_DIR = "samples/"
ZIP_ZSTANDARD = 93  # the zip method id of Zstandard (APPNOTE 4.4.5)
# A member that says it inflates beyond this is refused rather than inflated (zip bombs): a member
# is inflated whole in memory and then parsed, so one member costs about three times its size
# (a 1 GB member cost 3.2 GB RSS). Source option ``max_member_bytes`` changes it (docs/sources.md).
DEFAULT_MAX_MEMBER_BYTES = 256 << 20
# The bytes all the members an archive's read inflates to, together: a few MB of DEFLATE hold
# gigabytes of repeated text in members each under the member cap (1,000:1), and what the samples
# become is held until the archive's rows are written (512 MiB inflated cost 1.8 GB RSS). The same
# log as one JSON document is capped at the wire inputs' max_document_bytes, 1 GiB; this is the
# same budget. Source option ``max_archive_bytes`` changes it (docs/sources.md).
DEFAULT_MAX_ARCHIVE_BYTES = 1 << 30
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature ... file name length, extra field length
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


class MemberError(Exception):
    """A member that cannot be read (the message says why; the caller adds the member's name)."""


def looks_like_eval(path: Path) -> bool:
    """Whether ``path`` is a zip archive with an inspect header or sample members (for ``--from auto``)."""
    try:
        with open_input(path) as f:
            if f.read(4) not in _ZIP_MAGIC:
                return False
            f.seek(0)
            with zipfile.ZipFile(f) as z:
                names = z.namelist()
    except (OSError, zipfile.BadZipFile, ValueError):
        return False
    return any(n in (HEADER, JOURNAL_START) or _is_sample(n) for n in names)


def is_zip(path: Path) -> bool:
    """Whether the file starts like a zip archive (the adapter then reads it as ``.eval``)."""
    try:
        with open_input(path) as f:
            return f.read(4) in _ZIP_MAGIC
    except OSError:
        return False


def path_size(f: IO[bytes]) -> int:
    """The size of an open seekable file (its position is kept)."""
    here = f.tell()
    size = f.seek(0, 2)
    f.seek(here)
    return size


def _is_sample(name: str) -> bool:
    return name.startswith(SAMPLES_DIR) and name.endswith(".json") and "/" not in name[len(SAMPLES_DIR) :]


def sample_order(name: str) -> tuple[int, int, str, str]:
    """inspect's sample order (``sort_samples``: epoch, then id with numbers zero-filled) from a name.

    >>> sorted(["samples/10_epoch_1.json", "samples/2_epoch_1.json", "samples/1_epoch_2.json"],
    ...        key=sample_order)
    ['samples/2_epoch_1.json', 'samples/10_epoch_1.json', 'samples/1_epoch_2.json']
    """
    stem = name[len(SAMPLES_DIR) : -len(".json")]
    sid, sep, epoch = stem.rpartition("_epoch_")
    if not sep or not epoch.isdigit():
        return (1, 0, stem, name)  # not inspect's naming: after the others, by name
    return (0, int(epoch), sid.zfill(20) if sid.isdigit() else sid, name)


def read_member(
    z: zipfile.ZipFile, f: IO[bytes], info: zipfile.ZipInfo, max_bytes: int = DEFAULT_MAX_MEMBER_BYTES
) -> bytes:
    """The bytes of one member, CRC-checked; ``MemberError`` says why it cannot be read.

    The size the member declares is checked against ``max_bytes`` before anything is inflated, and
    no more than that size is ever produced: ``zipfile`` stops at the declared size (more data
    fails the CRC), the zstd codec fails on a frame larger than the buffer it is given.
    """
    if info.flag_bits & 0x1:
        raise MemberError("encrypted member")
    if info.file_size > max_bytes:
        raise MemberError(
            f"member inflates to {info.file_size} bytes, "
            f"more than max_member_bytes = {max_bytes} (a source option)"
        )
    if info.compress_type != ZIP_ZSTANDARD:
        try:
            return z.read(info)  # zipfile checks the CRC
        except NotImplementedError as e:
            raise MemberError(f"unsupported compression method {info.compress_type}: {e}") from e
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as e:
            raise MemberError(f"corrupt member: {e}") from e
    f.seek(info.header_offset)
    head = f.read(_LOCAL_HEADER.size)
    if len(head) < _LOCAL_HEADER.size or head[:4] != b"PK\x03\x04":
        raise MemberError("corrupt member: bad local file header")
    _, name_len, extra_len = _LOCAL_HEADER.unpack(head)
    f.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
    data = f.read(info.compress_size)
    if len(data) < info.compress_size:
        raise MemberError(f"truncated member: {len(data)} of {info.compress_size} compressed bytes")
    try:
        out = pa.Codec("zstd").decompress(data, decompressed_size=info.file_size, asbytes=True)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise MemberError(f"corrupt member: zstd: {e}") from e
    if zlib.crc32(out) != info.CRC:
        raise MemberError("corrupt member: bad CRC-32")
    return out


def _load_json(z: zipfile.ZipFile, f: IO[bytes], info: zipfile.ZipInfo, max_bytes: int) -> Any:
    raw = read_member(z, f, info, max_bytes)
    try:
        return loads_record(raw)
    except RecordError as e:
        raise MemberError(str(e)) from e
    except ValueError as e:
        raise MemberError(f"$: invalid JSON: {e}") from e


def _header(
    z: zipfile.ZipFile, f: IO[bytes], infos: dict[str, zipfile.ZipInfo], b: SourceBuilder, max_bytes: int
) -> dict:
    """``header.json``, else ``_journal/start.json`` (a run still going or crashed), else ``{}``.

    A member that is there but unusable is rejected (line 1, named) and the next one is tried; no
    usable header is one rejected record, and the samples are read all the same.
    """
    for name in (HEADER, JOURNAL_START):
        if name not in infos:
            continue
        try:
            header = _load_json(z, f, infos[name], max_bytes)
        except MemberError as e:
            b.reject(1, {"member": name}, f"{name}: {e}")
            continue
        if type(header) is dict and type(header.get("eval")) is dict:
            return header
        b.reject(1, header, f"broken envelope: {name}: an inspect header is an object with an 'eval' object")
    if HEADER not in infos and JOURNAL_START not in infos:
        b.reject(
            1,
            {"members": sorted(infos)[:100]},
            f"broken envelope: neither {HEADER} nor {JOURNAL_START} in the archive; "
            "samples read without the eval spec",
        )
    return {}


def duplicate_note(name: str, copies: int) -> str:
    """The reason a member whose name another member also has is not read."""
    return f"{name}: duplicate member name ({copies} members of this name); the last one is read"


def over_budget(entries: list[zipfile.ZipInfo], max_bytes: int, max_archive_bytes: int) -> str | None:
    """Why an archive is not read at all, or None: the members a read would inflate (each of a
    name's last copy within ``max_bytes``) declare more than ``max_archive_bytes`` together.

    A member's declared size bounds what it inflates to (``read_member``), so the sum is known from
    the zip's directory before one byte is inflated: the check costs no memory.
    """
    last = {i.filename: i for i in entries}
    read = [
        i for i in last.values()
        if (i.filename in (HEADER, JOURNAL_START) or _is_sample(i.filename)) and i.file_size <= max_bytes
    ]  # fmt: skip
    total = sum(i.file_size for i in read)
    if total <= max_archive_bytes:
        return None
    return (
        f"archive inflates to {total} bytes ({len(read)} members), more than max_archive_bytes = "
        f"{max_archive_bytes} (a source option); not read"
    )


def read_eval(
    path: Path,
    b: SourceBuilder,
    max_bytes: int = DEFAULT_MAX_MEMBER_BYTES,
    max_archive_bytes: int = DEFAULT_MAX_ARCHIVE_BYTES,
) -> Iterator[tuple[dict[str, Any], int, str, Any]]:
    """Each readable sample of one ``.eval`` archive as ``(header, number, member name, sample)``, in
    inspect's sample order; a file that is not an archive, a broken header and unreadable members are
    rejected into ``b`` (the JSON adapter turns the samples into rows).

    A zip may hold several members of one name: the last is read (as ``zipfile`` reads a name) and
    every other copy of a header or sample member is rejected by name, so none vanishes.
    """
    with open_input(path) as f:
        try:
            z = zipfile.ZipFile(f)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, struct.error) as e:
            f.seek(0)
            head = f.read(4096).decode("utf-8", "replace")  # enough to recognise what the file is
            b.reject(1, head, f"not a zip archive: {e}")
            return
        with z:
            entries = z.infolist()
            too_big = over_budget(entries, max_bytes, max_archive_bytes)
            if too_big is not None:  # the whole file is one rejected record: no sample is inflated
                b.reject(1, {"members": len(entries), "compressed_bytes": path_size(f)}, too_big)
                return
            infos = {i.filename: i for i in entries}  # the last member of each name
            copies = Counter(i.filename for i in entries)
            for i in entries:
                if i.filename in (HEADER, JOURNAL_START) and infos[i.filename] is not i:
                    b.reject(1, {"member": i.filename}, duplicate_note(i.filename, copies[i.filename]))
            log = _header(z, f, infos, b, max_bytes)
            # every sample member, duplicates included, in inspect's order (copies in archive order)
            samples = sorted(
                ((i, pos) for pos, i in enumerate(entries) if _is_sample(i.filename)),
                key=lambda e: (sample_order(e[0].filename), e[1]),
            )
            if not samples:
                b.counts["skipped:log_without_samples"] += 1
            for number, (info, _) in enumerate(samples, 1):
                name = info.filename
                b.counts["samples_read"] += 1
                if infos[name] is not info:
                    b.reject(number, {"member": name}, duplicate_note(name, copies[name]))
                    continue
                try:
                    sample = _load_json(z, f, info, max_bytes)
                except MemberError as e:
                    b.reject(number, {"member": name}, f"{name}: {e}")
                    continue
                yield log, number, name, sample
