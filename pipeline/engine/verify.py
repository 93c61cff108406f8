"""``chatlake verify RUN``: is a run directory complete and consistent, end to end?

Checks, in order (docs/run-layout.md is the contract):

1. ``manifest.json`` and ``summary.json`` are there and parse.
2. Every shard listed in the manifest has every folder's file (``output/`` unless the target is
   Parquet), each with the rows, bytes and sha256 the manifest records.
3. No stray files: every file under the run is listed, or is the manifest, the summary or the lock.
4. Counts add up: ``read == written + rejected`` per shard and in total, the manifest's totals equal
   ``summary.json``'s, and each shard's files hold what it says (``conversations`` and ``output``
   rows == written, ``rejected`` rows == rejected, ``records`` rows == read).
5. Every loss and every output line belongs to a written record of the same shard: output lines ==
   written rows, and the losses' ``conversation_id`` are among that shard's conversations (a DuckDB
   anti-join per shard, so memory is bounded by one shard).

:func:`quick_check` is the cheap part of 2 and 3 (names and sizes, no hashing), which ``chatlake
audit``, ``sql`` and ``export-hf`` run before reading; the resume of a run checks bytes and sha256
of the shards it keeps (:func:`pipeline.engine.manifest.check_files`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from .dropped import DROPPED
from .lock import LOCK
from .manifest import JOURNAL, MANIFEST, check_files
from .manifest import read as read_manifest
from .rundir import PARTITIONS, SHARD_FILE, SUMMARY
from .writers import FOLDERS

_OWN_FILES = frozenset({MANIFEST, JOURNAL, SUMMARY, LOCK})
_BLOCK = 1 << 20


def _files(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An entry's files by folder (runs written by early versions list them without the folder key)."""
    files = entry.get("files", {})
    if isinstance(files, list):
        return {f["path"].split("/", 1)[0]: f for f in files}
    return files


def load_manifest(run: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """The run's manifest document, or None and why it cannot be read."""
    path = run / MANIFEST
    if not path.is_file():
        return None, [f"{MANIFEST} is missing: not a chatlake run directory, or no shard of it finished"]
    try:
        doc = read_manifest(run)
        shards = doc["shards"]
        assert isinstance(shards, list)
    except (orjson.JSONDecodeError, KeyError, TypeError, AssertionError):
        return None, [f"{MANIFEST} is not a chatlake manifest (invalid JSON or no shard list)"]
    return doc, []


def _listed(doc: dict[str, Any]) -> set[str]:
    """Every file the manifest lists: the output shards' and a two-stage job's stage-1 files."""
    return {f["path"] for s in [*doc["shards"], *doc.get("partitions", [])] for f in _files(s).values()}


def _stray(run: Path, listed: set[str]) -> list[str]:
    out = []
    for p in sorted(run.rglob("*")):
        rel = p.relative_to(run).as_posix()
        if p.is_dir() and rel in (*FOLDERS, DROPPED, PARTITIONS):
            continue
        if rel in listed or rel in _OWN_FILES:
            continue
        out.append(f"{rel}: stray {'directory' if p.is_dir() else 'file'} (not listed in {MANIFEST})")
    return out


def quick_check(run: Path) -> list[str]:
    """What is missing, unlisted or of the wrong size in a run (no file is read but the manifest).

    A run without a manifest passes: the audit reads runs written by hand or by early versions.
    """
    if not (run / MANIFEST).is_file():
        return []
    doc, problems = load_manifest(run)
    if doc is None:
        return problems
    for s in doc["shards"]:
        for f in _files(s).values():
            path = run / f["path"]
            if not path.is_file():
                problems.append(f"{f['path']}: missing (listed in {MANIFEST})")
            elif "bytes" in f and path.stat().st_size != f["bytes"]:
                problems.append(f"{f['path']}: {path.stat().st_size} bytes, {MANIFEST} says {f['bytes']}")
    listed = _listed(doc)
    for name in FOLDERS:
        for p in sorted((run / name).glob("*")):
            rel = f"{name}/{p.name}"
            if SHARD_FILE.match(p.name) and rel not in listed:
                problems.append(f"{rel}: a shard file that {MANIFEST} does not list")
    return problems


def damaged_files(run: Path, folders: tuple[str, ...] = FOLDERS) -> list[str]:
    """Every listed file of ``folders`` that is missing or whose bytes or sha256 are not as listed
    (reads them all). A run without a manifest has nothing to compare with: [].
    """
    doc, problems = load_manifest(run)
    if doc is None:
        return [] if not (run / MANIFEST).exists() else problems
    return [
        p for s in doc["shards"]
        for p in check_files(run, {"files": {k: f for k, f in _files(s).items() if k in folders}})
    ]  # fmt: skip


def _count_lines(path: Path) -> int:
    n = 0
    with open(path, "rb") as f:
        while block := f.read(_BLOCK):
            n += block.count(b"\n")
    return n


def _shard(run: Path, entry: dict[str, Any], target: str | None, con: Any) -> list[str]:
    """The checks of one shard whose files are intact (steps 2, 4 and 5 of the module docstring)."""
    import pyarrow.parquet as pq

    sid = entry.get("id", "?")
    files = _files(entry)
    problems = []
    expected = [f for f in FOLDERS if not (f == "output" and target == "parquet")]
    for folder in expected:
        if folder not in files:
            problems.append(f"{sid}: no {folder}/ file listed (an incomplete shard)")
    read, written, rejected = entry.get("read"), entry.get("written"), entry.get("rejected")
    dropped = entry.get("dropped")  # a job with a grouping step (dropped/)
    if None not in (read, written, rejected) and read != written + rejected + (dropped or 0):
        also = f" + dropped {dropped}" if dropped is not None else ""
        problems.append(f"{sid}: read {read} != written {written} + rejected {rejected}{also}")
    want = {
        "conversations": written,
        "output": written,
        "rejected": rejected,
        "records": read,
        DROPPED: dropped,
    }
    for folder, f in files.items():
        path = run / f["path"]
        actual = _count_lines(path) if path.suffix == ".jsonl" else pq.read_metadata(path).num_rows
        if "rows" in f and actual != f["rows"]:
            problems.append(f"{f['path']}: {actual} rows, {MANIFEST} says {f['rows']}")
        if want.get(folder) is not None and actual != want[folder]:
            what = "lines" if path.suffix == ".jsonl" else "rows"
            problems.append(f"{f['path']}: {actual} {what}, but shard {sid} {_verb(folder)} {want[folder]}")
    if "losses" in files and "conversations" in files:
        paths = {k: str(run / files[k]["path"]) for k in ("losses", "conversations")}
        orphans = con.execute(
            "SELECT l.conversation_id, count(*) FROM read_parquet($losses) AS l "
            "ANTI JOIN read_parquet($conversations) AS c USING (conversation_id) "
            "GROUP BY ALL ORDER BY 1 LIMIT 3",
            paths,
        ).fetchall()
        if orphans:
            ids = ", ".join(f"{cid!r} ({n})" for cid, n in orphans)
            problems.append(f"{files['losses']['path']}: losses of records not written by shard {sid}: {ids}")
    return problems


def _verb(folder: str) -> str:
    return {"rejected": "rejected", "records": "read"}.get(folder, "wrote")


def _stage1(run: Path, entries: list[dict[str, Any]], read: int) -> list[str]:
    """A two-stage job's stage-1 shards (engine/partition.py): files as listed, each shard's
    ``read == partitioned + rejected``, and the partitions read what stage 1 read."""
    if not entries:
        return []
    problems = []
    for e in entries:
        problems += check_files(run, {"files": _files(e)})
        if e["read"] != e["partitioned"] + e["rejected"]:
            problems.append(f"{MANIFEST}: partitions {e['id']}: read {e['read']} != partitioned "
                            f"{e['partitioned']} + rejected {e['rejected']}")  # fmt: skip
    first = sum(e["read"] for e in entries)
    if first != read:
        problems.append(f"{MANIFEST}: stage 1 read {first} records, its partitions hold {read}")
    return problems


def verify(run: Path) -> list[str]:
    """Everything wrong with the run directory ``run`` ([] = it is complete and consistent)."""
    import duckdb

    doc, problems = load_manifest(run)
    if doc is None:
        return problems
    summary: dict[str, Any] | None = None
    try:
        summary = orjson.loads((run / SUMMARY).read_bytes())
    except FileNotFoundError:
        problems.append(f"{SUMMARY} is missing: the run did not finish")
    except orjson.JSONDecodeError:
        problems.append(f"{SUMMARY} is not valid JSON")
    target = summary.get("target") if summary else None
    problems += _stray(run, _listed(doc))
    con = duckdb.connect(config={"threads": 1})
    totals = {"read": 0, "written": 0, "rejected": 0}
    if any("dropped" in e for e in doc["shards"]):
        totals["dropped"] = 0
    for entry in doc["shards"]:
        for k in totals:
            totals[k] += entry.get(k) or 0
        bad = check_files(run, {"files": _files(entry)})
        problems += bad
        if not bad:  # a damaged file is not read: its bytes say nothing
            problems += _shard(run, entry, target, con)
    problems += _stage1(run, doc.get("partitions", []), totals["read"])
    if totals["read"] != totals["written"] + totals["rejected"] + totals.get("dropped", 0):
        r, w, j = totals["read"], totals["written"], totals["rejected"]
        also = f" + dropped {totals['dropped']}" if "dropped" in totals else ""
        problems.append(f"{MANIFEST}: read {r} != written {w} + rejected {j}{also}")
    if summary is not None:
        for k, v in totals.items():
            if summary.get(k) != v:
                problems.append(f"{SUMMARY}: {k} {summary.get(k)}, the shards of {MANIFEST} add up to {v}")
        if "shards" in summary and summary["shards"] != len(doc["shards"]):
            problems.append(f"{SUMMARY}: shards {summary['shards']}, {MANIFEST} lists {len(doc['shards'])}")
    return problems


def ok_line(run: Path) -> str:
    """The one line ``chatlake verify`` prints for a good run."""
    doc, _ = load_manifest(run)
    assert doc is not None
    n = {k: sum(s.get(k) or 0 for s in doc["shards"]) for k in ("read", "written", "rejected", "dropped")}
    dropped = f" + dropped {n['dropped']}" if any("dropped" in s for s in doc["shards"]) else ""
    return (
        f"OK {run}: {len(doc['shards'])} shards complete and as listed; "
        f"read {n['read']} = written {n['written']} + rejected {n['rejected']}{dropped}"
    )
