"""Write a small file so that a reader sees the old bytes or the new ones, never a mix."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``.NAME.tmp`` beside ``path``, fsync it, rename it over ``path`` (the temp
    name is the one ``rundir.py`` recognises as chatlake's)."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
