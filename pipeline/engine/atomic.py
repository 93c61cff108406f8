"""Safe writes: chatlake writes only into files it has just created, never through a link, and puts
them in place by rename (a reader sees the old bytes or the new ones, never a mix).

Every file chatlake writes (shards, manifest, summary, join files, the lock, ``--report``, ``audit
--html``, an export, ``synth -o``, the quick start's files) goes through this module:

- :class:`NewFile` creates a temp file with ``O_CREAT | O_EXCL | O_NOFOLLOW``: whatever already
  sits at that name (a planted symbolic link, a hard link to someone's file) is never opened. A
  regular file at the name is a temp file a killed run left: its *name* is removed first (which
  never changes a file a hard link shares), a symbolic link or anything else is refused
  (:class:`UnsafePath`).
- A writer that opens files by path (Arrow, Parquet) is given ``/proc/self/fd/N`` where the system
  has it: the file chatlake created, whatever is at its name by then.
- :meth:`NewFile.commit` renames the temp file into place only if its name still holds the file
  that was created (same device and inode, a regular file). A rename replaces a link at the final
  name; it never writes through it.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from pipeline.errors import ConfigError
from pipeline.oserrors import describe

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class PathError(ConfigError):
    """A path that cannot be used as given (a loop of links, a read-only place): one line, exit 2."""


class UnsafePath(PathError):
    """A path chatlake would write through is a symbolic link or not a regular file (exit code 2)."""


def link_problem(path: Path) -> str | None:
    """Why chatlake will not write at ``path`` (a symbolic link, or not a regular file), or None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link; chatlake does not write through links: remove it"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} exists and is not a regular file; move it away"
    return None


def _create(path: Path, stale: bool) -> int:
    try:
        return os.open(path, _CREATE, 0o644)
    except FileExistsError:
        if (why := link_problem(path)) is not None:
            raise UnsafePath(why) from None
        if not stale:
            raise
        os.unlink(path)  # a killed run's temp file: the name goes, a file it shares is untouched
        return os.open(path, _CREATE, 0o644)


class NewFile:
    """A temp file chatlake has just created (exclusively, not through a link), renamed into
    place by :meth:`commit` or removed by :meth:`discard`.

    ``stale``: a regular file already at ``path`` is a temp file of a killed run (a name only
    chatlake writes, inside a run directory) and is replaced; otherwise it is an error.
    """

    def __init__(self, path: Path, stale: bool = True) -> None:
        self.path = Path(path)
        self.fd = _create(self.path, stale)
        st = os.fstat(self.fd)
        self._ident = (st.st_dev, st.st_ino)

    @property
    def where(self) -> str:
        """A path for a writer that opens by name: this very file, whatever its name holds now."""
        proc = f"/proc/self/fd/{self.fd}"
        return proc if os.path.exists(proc) else str(self.path)

    def open(self) -> BinaryIO:
        """The file for writing (its own descriptor: closing it leaves this one open)."""
        return os.fdopen(os.dup(self.fd), "wb")

    def _ours(self) -> bool:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return False
        return stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == self._ident

    def commit(self, final: Path) -> None:
        """Rename the file over ``final``; refused if its temp name no longer holds it."""
        try:
            if not self._ours():
                raise UnsafePath(f"{self.path} was replaced while chatlake wrote it; nothing put in place")
            os.replace(self.path, final)
        finally:
            self.close()

    def discard(self) -> None:
        """Remove the temp file (only if its name still holds it) and close it."""
        try:
            if self._ours():
                self.path.unlink()
        finally:
            self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@contextmanager
def created(path: Path) -> Iterator[str]:
    """Create ``path`` as a :class:`NewFile` (a stale temp file of ours replaced) and yield a path
    for a writer that opens by name (:attr:`NewFile.where`); the file stays, for a rename later."""
    new = NewFile(path)
    try:
        yield new.where
    finally:
        new.close()


def open_new(path: Path) -> BinaryIO:
    """``path`` created as a :class:`NewFile`, open for writing (a stale temp file of ours replaced)."""
    new = NewFile(path)
    try:
        return new.open()
    finally:
        new.close()


def open_plain(path: Path, flags: int = 0) -> int:
    """A descriptor (``O_RDWR | flags``) of a file chatlake rewrites in place (the lock, a join
    temp file): never through a link, and only a regular file no other name shares."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | flags, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafePath(f"{path} is a symbolic link; chatlake does not write through links") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise UnsafePath(f"{path} is not a plain file of its own (a hard link or a special file): remove it")
    return fd


def open_ours(path: Path) -> BinaryIO:
    """A temp file chatlake wrote earlier, open to append to (``r+b``, :func:`open_plain`)."""
    return os.fdopen(open_plain(path), "r+b")


@contextmanager
def replacing(path: Path, user: bool = False) -> Iterator[BinaryIO]:
    """A file, open for writing, that replaces ``path`` when the block ends without an error: written
    to ``.NAME.tmp`` beside ``path`` (created by :class:`NewFile`: never through a link), fsynced
    and renamed over it. On an error the temp file is removed and ``path`` is as it was (a full
    disk leaves the old file whole).

    ``user``: ``path`` is a file the user named outside a run directory (``--report``, ``--html``,
    ``synth -o``): the temp name is unique (``.NAME.PID.RANDOM.tmp``) and nothing already there is
    ever removed. Otherwise the temp name is the one ``rundir.py`` recognises as chatlake's.
    """
    if user:
        tmp = NewFile(path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"), stale=False)
    else:
        tmp = NewFile(path.with_name(f".{path.name}.tmp"))
    try:
        with tmp.open() as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        tmp.discard()
        raise
    tmp.commit(path)


def write_atomic(path: Path, data: bytes, user: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (:func:`replacing`)."""
    with replacing(path, user) as f:
        f.write(data)


def check_writable(path: Path, what: str) -> None:
    """Refuse (UnsafePath / ConfigError, before any work) a file path chatlake cannot write.

    A symbolic link (a loop included) or a non-regular file at ``path``, a parent that is not a
    directory or a place where no file can be created (read-only, no permission): one line each.
    A missing directory is not created (a check writes nothing): its nearest existing ancestor must
    be a directory chatlake may create entries in.
    """
    try:
        if (why := link_problem(path)) is not None:
            raise UnsafePath(f"{what} {why}")
        parent = path.parent
        anc = parent
        while True:
            try:
                st = os.stat(anc)  # a loop of links raises ELOOP here
                break
            except FileNotFoundError:
                if anc == anc.parent:
                    raise
                anc = anc.parent
        if not stat.S_ISDIR(st.st_mode):
            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(anc))
        if anc == parent:
            probe = NewFile(parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp", stale=False)
            probe.discard()
        elif not os.access(anc, os.W_OK | os.X_OK):  # EROFS and EACCES both show here
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(anc))
    except RuntimeError as e:  # pathlib's "Symlink loop from ..."
        raise PathError(f"{what} {str(path)!r}: {e}") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise PathError(f"{what} {str(path)!r}: a loop of symbolic links; fix the path") from None
        where = OSError(e.errno, e.strerror, str(path.parent))  # the folder, not the probe's name
        raise PathError(f"{what} {str(path)!r} cannot be written: {describe(where)}") from None
