"""Where input bytes come from: local paths and globs, or any fsspec URL whose filesystem is installed.

Local paths are opened with plain ``open`` (the fast path); ``s3://``, ``gs://``, ``hf://``, ... go
through :mod:`fsspec`, which needs the matching package (``s3fs``, ``gcsfs``, ``huggingface_hub``).
"""

from __future__ import annotations

import fnmatch
import glob as globmod
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

from pipeline.errors import ConfigError

Container = Literal["jsonl", "parquet", "arrow", "dataset", "source"]


def is_url(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def _fs(url: str) -> tuple[Any, str]:
    try:
        import fsspec
    except ImportError:
        raise ConfigError(f"{url!r}: reading URLs needs fsspec (pip install fsspec)") from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as e:
        raise ConfigError(f"{url!r}: its filesystem package is not installed ({e})") from None
    except ValueError as e:
        raise ConfigError(f"{url!r}: {e}") from None


def _local(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


def expand(pattern: str, base: Path) -> list[str]:
    """The files (or saved-dataset directories) a path, glob or URL names, sorted; [] when none."""
    if is_url(pattern):
        fs, path = _fs(pattern)
        hits = sorted(fs.glob(path)) if globmod.has_magic(path) else ([path] if fs.exists(path) else [])
        return [fs.unstrip_protocol(h) for h in hits if not fs.isdir(h) or _is_dataset_dir(fs, h)]
    p = Path(_local(pattern)).expanduser()
    if not p.is_absolute():
        p = base / p
    text = str(p)
    if globmod.has_magic(text):
        parts = text.split(os.sep)
        hits = sorted(_glob(parts[0] or os.sep, parts[1:], set()))
    else:
        hits = [text] if os.path.exists(text) else []
    # Real paths, each once: a file named through two links (or a loop) is still one input.
    return list(dict.fromkeys(
        os.path.realpath(h) for h in hits if os.path.isfile(h) or _is_dataset_dir(None, h)
    ))  # fmt: skip


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
    if name.endswith((".gz", ".zst", ".bz2", ".xz", ".zip")):
        # Byte-range shards need seekable plain text; reading compressed bytes as JSONL would reject
        # every line, so refuse before any work.
        raise ConfigError(f"input {url!r} is compressed; decompress it first (compressed inputs: not yet)")
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(".arrow"):
        return "arrow"
    if not is_url(url) and os.path.isdir(_local(url)):
        return "dataset"
    if is_url(url):
        fs, path = _fs(url)
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
        unstrip = fs.unstrip_protocol
    else:
        root = _local(url)
        read = lambda p: Path(p).read_text()  # noqa: E731
        exists = os.path.exists
        join = os.path.join
        unstrip = str
    if exists(join(root, "dataset_dict.json")):
        splits = json.loads(read(join(root, "dataset_dict.json")))["splits"]
        return [a for s in splits for a in dataset_arrow_files(unstrip(join(root, s)))]
    if not exists(join(root, "state.json")):
        raise ValueError("not a saved dataset (no state.json or dataset_dict.json)")
    state = json.loads(read(join(root, "state.json")))
    return [unstrip(join(root, d["filename"])) for d in state["_data_files"]]


def file_size(url: str) -> int:
    if is_url(url):
        fs, path = _fs(url)
        return int(fs.size(path))
    return os.path.getsize(_local(url))


def open_input(url: str) -> IO[bytes]:
    """A seekable binary file for a local path or a URL."""
    if is_url(url):
        fs, path = _fs(url)
        return fs.open(path, "rb")
    return open(_local(url), "rb")


def open_arrow(url: str) -> Any:
    """An arrow stream source: memory-mapped for a local file (zero copy), a file object for a URL."""
    import pyarrow as pa

    if is_url(url):
        return open_input(url)
    return pa.memory_map(_local(url))
