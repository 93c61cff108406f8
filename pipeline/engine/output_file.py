"""A finished single-file output (``convert -o FILE``, ``transform -o FILE``) read back.

``FILE.manifest.json`` (engine/single_file.py writes it, before FILE, when the command finishes)
lists every file the command put in place beside FILE (by role: ``output``, ``rejected``,
``losses``, ``dropped``; each with its name, format, rows, bytes and sha256) and the run summary.
``chatlake verify``, ``audit``, ``sql`` and ``export-hf`` take FILE where they take a run directory
and find its side files through it (docs/run-layout.md, "The single-file layout").
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pipeline.errors import ConfigError

_BLOCK = 1 << 20
MANIFEST_SUFFIX = ".manifest.json"  # FILE.manifest.json: what the finished files are (docs/run-layout.md)
LAYOUT = "single-file"


def manifest_path(output: Path) -> Path:
    """The manifest a finished single-file command leaves beside ``output`` (engine/single_file.py
    writes it): every file it put in place (name, format, rows, bytes, sha256) and the run summary;
    ``verify``, ``audit``, ``sql`` and ``export-hf`` find a FILE's side files through it."""
    return output.with_name(output.name + MANIFEST_SUFFIX)


class OutputFileError(ConfigError):
    """FILE is not a finished single-file output of chatlake (no manifest beside it, or not its), or
    cannot be read as asked: exit 2, one line."""


@dataclass(frozen=True)
class OutputFile:
    """FILE and what its manifest says: ``files`` (role -> name, format, rows, bytes, sha256) and
    ``summary`` (the run summary, as ``summary.json`` of a run directory)."""

    path: Path
    doc: dict[str, Any]

    @property
    def files(self) -> dict[str, dict[str, Any]]:
        return dict(self.doc["files"])

    @property
    def summary(self) -> dict[str, Any]:
        return dict(self.doc.get("summary") or {})

    @property
    def target(self) -> str:
        return str(self.doc.get("target"))

    @property
    def manifest(self) -> Path:
        return manifest_path(self.path)

    def file(self, role: str) -> Path | None:
        """The path of a role's file beside FILE (None when the command wrote none)."""
        f = self.doc["files"].get(role)
        return None if f is None else self.path.with_name(f["name"])

    def format(self, role: str) -> str | None:
        f = self.doc["files"].get(role)
        return None if f is None else str(f["format"])

    @property
    def canonical(self) -> bool:
        """FILE holds chatlake's canonical table (Parquet: ``--to parquet``, ``transform``), not
        records encoded in a wire format."""
        return self.format("output") == "parquet"


def open_output(path: Path) -> OutputFile:
    """FILE as a single-file output; OutputFileError (exit 2, one line saying what was expected) when
    FILE does not exist, has no manifest beside it, or its manifest is not chatlake's for it."""
    if not path.is_file():
        raise OutputFileError(
            f"{str(path)!r} does not exist (expected a run directory or a file `convert -o` wrote)"
        )
    manifest = manifest_path(path)
    expected = (
        f"chatlake's `convert -o FILE` and `transform -o FILE` write FILE{MANIFEST_SUFFIX} beside FILE "
        "(with FILE.rejected.jsonl or FILE.rejected.parquet, and FILE.losses.parquet for a wire target); "
        "give a run directory or such a FILE"
    )
    if not manifest.is_file():
        raise OutputFileError(
            f"{path} is not a run directory and {manifest.name} is not beside it: {expected} (files "
            "written before chatlake 0.2.0 have none: run the command again)"
        )
    try:
        doc = orjson.loads(manifest.read_bytes())
        listed_names(doc, path.name)
    except orjson.JSONDecodeError:
        raise OutputFileError(f"{manifest} is not a single-file manifest of chatlake: {expected}") from None
    except OutputFileError as e:
        raise OutputFileError(f"{manifest}: {e}: {expected}") from None
    return OutputFile(path, doc)


def listed_names(doc: Any, name: str) -> list[str]:
    """The file names a single-file manifest lists, FILE's (``name``) first; OutputFileError when
    it is not one, names another FILE, or lists anything but a plain name beside FILE."""
    try:
        ok = doc.get("layout") == LAYOUT and isinstance(doc.get("files"), dict) and "output" in doc["files"]
        names = [f["name"] for f in doc["files"].values()] if ok else []
    except (AttributeError, KeyError, TypeError):
        ok, names = False, []
    if not ok or any(not isinstance(n, str) or "/" in n or "\\" in n or n in ("", ".", "..") for n in names):
        raise OutputFileError("not a single-file manifest of chatlake")
    if doc["files"]["output"]["name"] != name:
        raise OutputFileError(f"it describes {doc['files']['output']['name']!r}, not {name!r} (renamed?)")
    return [name, *(n for n in names if n != name)]


def quick_check(out: OutputFile) -> list[str]:
    """Listed files that are missing or not of the listed size (names and sizes only, no hashing):
    what ``audit``, ``sql`` and ``export-hf`` check before reading."""
    problems = []
    for role, f in out.files.items():
        p = out.path.with_name(f["name"])
        if not p.is_file():
            problems.append(f"{f['name']} ({role}) is missing")
        elif p.stat().st_size != f["bytes"]:
            problems.append(
                f"{f['name']} ({role}) holds {p.stat().st_size} bytes, {out.manifest.name} says {f['bytes']}"
            )
    return problems


def _digest(path: Path, jsonl: bool) -> tuple[str, int]:
    """A file's sha256 and (JSON lines) its line count, in one pass."""
    h, lines = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while block := f.read(_BLOCK):
            h.update(block)
            if jsonl:
                lines += block.count(b"\n")
    return h.hexdigest(), lines


def damaged(out: OutputFile) -> list[str]:
    """Listed files whose sha256 is not the manifest's (each read once)."""
    bad = []
    for role, f in out.files.items():
        p = out.path.with_name(f["name"])
        if p.is_file() and _digest(p, False)[0] != f["sha256"]:
            bad.append(
                f"{f['name']} ({role}): its sha256 differs from {out.manifest.name} (changed since written)"
            )
    return bad


def verify(out: OutputFile) -> list[str]:
    """Everything wrong with a single-file output: each listed file there with the bytes, sha256 and
    rows the manifest records; ``read == written + rejected (+ dropped)`` in the summary; FILE holds
    ``written`` records, the rejected file ``rejected`` rows, the dropped file ``dropped``."""
    import pyarrow.parquet as pq

    problems = quick_check(out)
    missing = {p.split(" ", 1)[0] for p in problems}
    for role, f in out.files.items():
        p = out.path.with_name(f["name"])
        if f["name"] in missing:
            continue
        sha, lines = _digest(p, f["format"] == "jsonl")
        if sha != f["sha256"]:
            problems.append(
                f"{f['name']} ({role}): its sha256 differs from {out.manifest.name} (changed since written)"
            )
            continue
        try:
            rows = lines if f["format"] == "jsonl" else pq.ParquetFile(p).metadata.num_rows
        except Exception as e:  # a file whose bytes match but is not Parquet: chatlake did not write it so
            problems.append(f"{f['name']} ({role}): not a Parquet file ({e})")
            continue
        if rows != f["rows"]:
            problems.append(f"{f['name']} ({role}): {rows} rows, {out.manifest.name} says {f['rows']}")
    s = out.summary
    n = {k: s.get(k) for k in ("read", "written", "rejected", "dropped")}
    if not all(isinstance(n[k], int) for k in ("read", "written", "rejected")):
        return [*problems, f"{out.manifest.name}: the summary has no read / written / rejected counts"]
    dropped = n["dropped"] or 0
    if n["read"] != n["written"] + n["rejected"] + dropped:
        problems.append(
            f"summary: read {n['read']} != written {n['written']} + rejected {n['rejected']}"
            + (f" + dropped {dropped}" if dropped else "")
        )
    for role, key in (("output", "written"), ("rejected", "rejected"), ("dropped", "dropped")):
        f = out.files.get(role)
        if f is not None and f["rows"] != (n[key] or 0):
            problems.append(
                f"{f['name']} ({role}) holds {f['rows']} rows, the summary says {key} {n[key] or 0}"
            )
    return problems


def ok_line(out: OutputFile) -> str:
    """The one line ``chatlake verify FILE`` prints for a good single-file output."""
    s = out.summary
    dropped = f" + dropped {s['dropped']}" if s.get("dropped") else ""
    return (
        f"OK {out.path}: {len(out.files)} files complete and as listed in {out.manifest.name}; "
        f"read {s['read']} = written {s['written']} + rejected {s['rejected']}{dropped}"
    )
