"""Where input bytes come from: local paths, globs and directories, standard input (``-``), or URLs
(``s3://``, ``gs://``, ``az://``, ``hf://``, ``https://``: :mod:`pipeline.storage`, docs/storage.md).

Local paths are opened with plain ``open`` (the fast path); URLs go through their fsspec filesystem,
which reads byte ranges on demand and lists globs and directories remotely.

A directory that is not a saved dataset contributes, recursively and sorted, its files named
``*.jsonl``, ``*.ndjson``, ``*.json``, ``*.parquet``, ``*.eval``, ``*.traj`` and ``*.kiln`` (the
first three also compressed: ``.gz``, ``.zst``, ``.bz2``, ``.xz``) and its saved datasets; hidden
files and directories (a leading dot), ``*.partial/`` staging directories and run directories (one
holding ``manifest.json``) are left out; symbolic links to directories are not followed. The files
chatlake writes (``*.rejected.jsonl``, ``*.rejected.parquet``, ``*.losses.jsonl``,
``*.losses.parquet``, ``*.dropped.parquet``, the ``convert -o`` output ``X`` beside them,
``export_report.json``) are listed apart: a job rejects each whole, saying what it is
(``jobs/resolve.py``), or refuses it with ``strict_inputs``.
"""

from __future__ import annotations

import atexit
import contextlib
import fnmatch
import glob as globmod
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pipeline.errors import ConfigError
from pipeline.sources.inputs import COMPRESSED_SUFFIXES, STDIN, compression_of, is_document
from pipeline.storage import file_size, filesystem, is_url, local_path, open_input, reaching, unstrip

__all__ = ["file_size", "is_url", "open_input"]  # re-exported: the engine and jobs read through them

# stream: a whole file read by pipeline.sources.inputs (compressed, a JSON array or document, stdin)
# skipped: a file that is rejected whole (stage ``detect``): its ``options["reason"]`` says why
Container = Literal["jsonl", "stream", "parquet", "arrow", "dataset", "source", "skipped"]

_DIR_SUFFIXES = (".jsonl", ".ndjson", ".json")
_DIR_FILES = (
    *_DIR_SUFFIXES, *(s + z for s in _DIR_SUFFIXES for z in COMPRESSED_SUFFIXES),
    ".parquet", ".eval", ".traj", ".kiln",
)  # fmt: skip
_OUR_FILES = (
    ".rejected.jsonl", ".rejected.parquet", ".losses.jsonl", ".losses.parquet", ".dropped.parquet",
    ".manifest.json",
)  # fmt: skip
_OUR_NAMES = {"export_report.json": "the report of chatlake export-hf"}
# A file that reads as nothing: empty, or what chatlake wrote (a whole-file rejection, stage detect).
SKIPPED = "skipped"


def _fs(url: str) -> tuple[Any, str]:
    return filesystem(url)


_local = local_path


def expand(pattern: str, base: Path, ours: dict[str, str] | None = None) -> list[str]:
    """The files (or saved-dataset directories) a path, glob or URL names, sorted; [] when none.

    ``ours``: when given, the files of a directory that chatlake wrote (its ``.rejected``,
    ``.losses`` and ``.dropped`` files, the ``convert -o`` output beside them, an
    ``export_report.json``) are listed too, and each is added to it with what it is; otherwise
    they are left out.
    """
    if is_url(pattern):
        fs, path = _fs(pattern)
        with reaching(pattern):
            return _remote_files(fs, path, ours)
    p = Path(_local(pattern)).expanduser()
    if not p.is_absolute():
        p = base / p
    text = str(p)
    if globmod.has_magic(text):
        parts = text.split(os.sep)
        hits = sorted(_glob(parts[0] or os.sep, parts[1:], set()))
    else:
        hits = [text] if os.path.exists(text) else []
        hits = [f for h in hits for f in (_directory_files(h, None, ours) if _is_plain_dir(h) else [h])]
    # Real paths, each once: a file named through two links (or a loop) is still one input.
    real = {h: os.path.realpath(h) for h in hits if os.path.isfile(h) or _is_dataset_dir(None, h)}
    if ours:
        for h in [h for h in ours if h in real and real[h] != h]:
            ours[real[h]] = ours.pop(h)
    return list(dict.fromkeys(real.values()))


def _remote_files(fs: Any, path: str, ours: dict[str, str] | None = None) -> list[str]:
    """The URLs a remote path, glob or directory names: a directory by the rules of a local one
    (listed remotely, recursively, sorted)."""
    path = path.rstrip("/") or path
    hits = sorted(fs.glob(path)) if globmod.has_magic(path) else ([path] if fs.exists(path) else [])
    found: list[str] = []
    for h in hits:
        if not fs.isdir(h) or _is_dataset_dir(fs, h):
            found.append(h)
        elif not globmod.has_magic(path):  # a directory named as such (a glob names only what matches)
            mine: dict[str, str] = {}
            found += _directory_files(h, fs, None if ours is None else mine)
            if ours is not None:
                ours.update({unstrip(fs, k): v for k, v in mine.items()})
    return [unstrip(fs, h) for h in dict.fromkeys(found)]


def _is_plain_dir(path: str) -> bool:
    return os.path.isdir(path) and not _is_dataset_dir(None, path)


def _directory_files(root: str, fs: Any = None, ours: dict[str, str] | None = None) -> list[str]:
    """The input files of a directory (the module docstring says which), sorted by path; ``fs``: the
    fsspec filesystem of a remote directory (None: local); ``ours``: as for :func:`expand`."""
    found: list[str] = []
    walk = os.walk(root) if fs is None else fs.walk(root, topdown=True)
    join = os.path.join if fs is None else (lambda *a: "/".join(a))
    isfile = os.path.isfile if fs is None else fs.isfile
    for here, dirs, files in walk:
        if fs is not None:
            here = here.rstrip("/")
        if here != root and isfile(join(here, "manifest.json")):
            dirs[:] = []  # a run directory (or a convert -o staging directory): chatlake's output
            continue
        keep = []
        for d in sorted(dirs):
            if d.startswith(".") or d.endswith(".partial"):
                continue
            if _is_dataset_dir(fs, join(here, d)):
                found.append(join(here, d))
            else:
                keep.append(d)
        dirs[:] = keep
        names = set(files)
        for name in files:
            low = name.lower()
            if name.startswith(".") or not low.endswith(_DIR_FILES):
                continue
            what = _ours(name, names)
            if what is not None:
                if ours is not None:
                    ours[join(here, name)] = what
                    found.append(join(here, name))
                continue
            found.append(join(here, name))
    return sorted(found)


def _ours(name: str, names: set[str]) -> str | None:
    """What chatlake file ``name`` is (a side file, the ``convert -o`` output beside its side files,
    an export report), else None; ``names``: the files of its directory."""
    low = name.lower()
    if low in _OUR_NAMES:
        return _OUR_NAMES[low]
    for suffix in _OUR_FILES:
        if low.endswith(suffix):
            what = {"rejected": "rejected records", "losses": "loss report", "dropped": "dropped records",
                    "manifest": "manifest"}  # fmt: skip
            return f"the {what[suffix.split('.')[1]]} of chatlake's output {name[: -len(suffix)]}"
    if any(name + suffix in names for suffix in _OUR_FILES):
        return "an output of chatlake convert -o (its side files are beside it)"
    return None


def spool_stdin() -> str:
    """Standard input copied to a temporary file (removed when the process ends), named by its
    content: workers and a resumed run read a file, and the same input resumes the same run."""
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(prefix="chatlake-stdin-")
    with os.fdopen(fd, "wb") as out:
        while data := sys.stdin.buffer.read(1 << 20):
            digest.update(data)
            out.write(data)
    path = os.path.join(os.path.dirname(tmp), f"chatlake-stdin-{digest.hexdigest()[:32]}")
    os.replace(tmp, path)
    atexit.register(_remove, path)
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def is_stdin(pattern: str) -> bool:
    return pattern == STDIN


def is_stream(url: str) -> bool:
    """Whether a wire input is read whole through pipeline.sources.inputs rather than in byte
    ranges: compressed, a JSON array, or one pretty-printed JSON document."""
    with open_input(url) as f:
        head = f.read(1 << 16)
    return compression_of(head) is not None or is_document(head)


def _glob(root: str, parts: list[str], seen: set[tuple[str, int]]) -> Iterator[str]:
    """The paths under ``root`` matching the components ``parts`` (``**`` = any depth), like
    :func:`glob.glob` with ``recursive=True`` (hidden names only for a pattern starting with a dot).

    Unlike :func:`glob.glob`, ``**`` enters each real directory once, so a symlink cycle is not
    walked around until the path gets too long (it used to name every file 41 times).
    """
    if not parts:
        yield root
        return
    head, rest = parts[0], parts[1:]
    if head == "**":
        key = (os.path.realpath(root), len(parts))
        if key in seen:
            return
        seen.add(key)
        yield from _glob(root, rest, seen)
        for name in _names(root, "*"):
            sub = os.path.join(root, name)
            if os.path.isdir(sub):
                yield from _glob(sub, parts, seen)
            elif not rest:  # a last ``**`` names files too
                yield sub
    elif globmod.has_magic(head):
        for name in _names(root, head):
            yield from _glob(os.path.join(root, name), rest, seen)
    elif head == "" and not rest:  # a trailing separator: the directory itself
        yield root
    elif os.path.lexists(sub := os.path.join(root, head)):
        yield from _glob(sub, rest, seen)


def _names(directory: str, pattern: str) -> list[str]:
    try:
        names = os.listdir(directory)
    except OSError:  # not a directory, or unreadable: nothing matches under it, as with glob
        return []
    if not pattern.startswith("."):
        names = [n for n in names if not n.startswith(".")]
    return fnmatch.filter(names, pattern)


def _is_dataset_dir(fs: Any, path: str) -> bool:
    names = ("state.json", "dataset_dict.json")
    if fs is None:
        return any(os.path.isfile(os.path.join(path, n)) for n in names)
    return any(fs.exists(f"{path}/{n}") for n in names)


def container_of(url: str) -> Container:
    """How a file is read, from its name: Parquet, a saved dataset (directory), arrow, else JSONL."""
    name = url.rstrip("/").rsplit("/", 1)[-1].lower()
    if name.endswith(".zip"):
        raise ConfigError(f"input {url!r} is a zip archive; unpack it first (zip archives: not read)")
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(".arrow"):
        return "arrow"
    if not is_url(url) and os.path.isdir(_local(url)):
        return "dataset"
    if is_url(url):
        fs, path = _fs(url)
        with reaching(url):
            if fs.isdir(path):
                return "dataset"
    return "jsonl"


def dataset_arrow_files(url: str) -> list[str]:
    """The arrow files of a ``Dataset.save_to_disk`` directory (every split of a DatasetDict), in order."""
    if is_url(url):
        fs, root = _fs(url)
        read = lambda p: fs.cat_file(p).decode()  # noqa: E731
        exists = fs.exists
        join = lambda *a: "/".join(a)  # noqa: E731
        to_url = lambda p: unstrip(fs, p)  # noqa: E731
    else:
        root = _local(url)
        read = lambda p: Path(p).read_text()  # noqa: E731
        exists = os.path.exists
        join = os.path.join
        to_url = str
    if exists(join(root, "dataset_dict.json")):
        splits = json.loads(read(join(root, "dataset_dict.json")))["splits"]
        return [a for s in splits for a in dataset_arrow_files(to_url(join(root, s)))]
    if not exists(join(root, "state.json")):
        raise ValueError("not a saved dataset (no state.json or dataset_dict.json)")
    state = json.loads(read(join(root, "state.json")))
    return [to_url(join(root, d["filename"])) for d in state["_data_files"]]


def open_arrow(url: str) -> Any:
    """An arrow stream source: memory-mapped for a local file (zero copy), a file object for a URL."""
    import pyarrow as pa

    if is_url(url):
        return open_input(url)
    return pa.memory_map(_local(url))
