"""One line for an operating-system error: what went wrong, where, and the exit code it gets.

The CLI turns every ``OSError`` with a known errno into such a line (``pipeline/cli.py``) instead of a
traceback; the engine uses :func:`describe` for a job that failed on one.
"""

from __future__ import annotations

import errno

# Exit 2: the command pointed somewhere it cannot read or write (nothing was done, fix the command).
# Exit 1: the machine ran out of something while the command was working.
_MESSAGES: dict[int, tuple[str, int]] = {
    errno.EACCES: ("permission denied", 2),
    errno.EPERM: ("operation not permitted", 2),
    errno.EROFS: ("read-only file system", 2),
    errno.ENOENT: ("no such file or directory", 2),
    errno.ENOTDIR: ("not a directory", 2),
    errno.EISDIR: ("is a directory", 2),
    errno.ELOOP: ("a loop of symbolic links (or a link where none may be)", 2),
    errno.ENOSPC: ("no space left on the device", 1),
    errno.EDQUOT: ("disk quota exceeded", 1),
    errno.EFBIG: ("file too large (the file size limit was reached)", 1),
    errno.EIO: ("input/output error", 1),
}
KNOWN = frozenset(_MESSAGES)


def describe(e: OSError) -> str:
    """``PATH: what went wrong`` (or just what, when the error names no file)."""
    what = _MESSAGES[e.errno][0] if e.errno in _MESSAGES else (e.strerror or str(e))
    return f"{e.filename}: {what}" if e.filename else what


def exit_code(e: OSError) -> int:
    """2 for a path the command cannot use, 1 for a resource that ran out while working."""
    return _MESSAGES[e.errno][1] if e.errno in _MESSAGES else 1
