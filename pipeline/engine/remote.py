"""Outputs at URLs (``s3://``, ``gs://``, ``az://``, ``hf://``): the same commit rules as on disk.

An object store cannot rename, so nothing is written under a final name until it is complete. The
engine runs as it does for a local output, into a local working directory that belongs to the URL
(:func:`pipeline.storage.work_dir`), and finished files are uploaded; an upload appears on the store
whole or not at all (docs/storage.md, "Outputs").

- A single-file output (``convert -o URL``, ``transform -o URL``) is staged and joined locally as
  usual; then its side files are uploaded, and ``FILE`` last: ``FILE`` appearing on the store is the
  commit point. An interrupted command resumes from the local staging directory.
- A run directory (``output.path = URL``, ``convert --run-dir URL``) is mirrored: while the job
  runs, every finished shard's files are uploaded, then the manifest that lists them, so the
  manifest on the store only ever lists files that are there; ``summary.json`` goes last. A job
  started again pulls the store's manifest and the files it lists into its working copy (on any
  machine), and resumes.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from pipeline import storage
from pipeline.errors import ConfigError
from pipeline.jobs.resolve import Job

from . import rundir
from .atomic import write_atomic
from .lock import LOCK
from .manifest import MANIFEST
from .manifest import dumps as manifest_bytes
from .manifest import read as read_manifest
from .rundir import SUMMARY

SYNC_INTERVAL_S = 0.25  # how often the mirror looks for newly finished shards


# --- single-file outputs --------------------------------------------------------------------------


def local_output(url: str) -> Path:
    """Where ``convert``/``transform -o URL`` builds its files before uploading them: a local file
    of the same name in the URL's working directory (its ``.partial`` staging directory beside it)."""
    name = url.rstrip("/").rsplit("/", 1)[-1]
    folder = storage.work_dir(url, "files")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def publish_single_file(summary: dict[str, Any], output: Path, url: str) -> dict[str, Any]:
    """Upload a finished single-file command's files from ``output``'s folder to beside ``url``
    (side files first, ``FILE`` last), delete the local copies, and return the summary naming the
    URLs."""
    base = url.rstrip("/").rsplit("/", 1)[0]
    side = ("rejected_file", "losses_file", "dropped_file", "manifest_file")
    roles = [k for k in side if summary.get(k)] + ["output"]
    for role in roles:  # FILE last: it appears only when everything else is in place
        local = Path(summary[role])
        remote = f"{base}/{local.name}"
        storage.upload(local, remote)
        summary[role] = remote
    for role in roles:
        Path(output.parent / Path(summary[role]).name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # empty now, unless another command's files are staged there
        output.parent.rmdir()
    return summary


# --- run directories ------------------------------------------------------------------------------


def _listed_files(doc: dict[str, Any]) -> dict[str, str]:
    """The files a manifest lists (shards and a two-stage job's partitions): path -> sha256."""
    entries = [*doc.get("shards", []), *doc.get("partitions", [])]
    return {f["path"]: f["sha256"] for e in entries for f in e["files"].values()}


class Mirror:
    """Keeps a run directory's store copy in step with its local working copy (:mod:`.remote`)."""

    def __init__(self, job: Job) -> None:
        assert job.run_url is not None
        self.url = job.run_url
        self.local = job.run_dir
        self.fingerprint = job.fingerprint()
        self.job_name = job.name
        self.uploaded: dict[str, str] = {}  # path -> sha256 on the store
        self.manifest_sent = b""
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.summary_pulled: tuple[int, int, int] | None = None  # set once the working copy is ready
        self.thread = threading.Thread(target=self._loop, name="chatlake-mirror", daemon=True)

    def _url(self, relative: str) -> str:
        return storage.join(self.url, relative)

    def check_fresh(self) -> None:
        """``--fresh`` on the store: refuse a prefix that is not a chatlake run, as on disk."""
        names = storage.listing(self.url)
        if MANIFEST in names:
            return
        others = sorted(n for n in names if not rundir.is_chatlake_name(n))
        if others:
            raise ConfigError(
                f"{self.url} is not a chatlake run directory (no {MANIFEST}; it holds {others[:3]}), so "
                "--fresh will not delete anything in it; choose another output.path"
            )

    def clear(self) -> None:
        """``--fresh``: delete the objects chatlake wrote under the URL and can vouch for (the files
        the store's manifest lists, at their listed sizes; the manifest and summary), as on disk;
        refused when an object at a name the run writes is not one of them (it would be overwritten)."""
        names = storage.listing(self.url)
        data = storage.read_bytes(self._url(MANIFEST))
        doc = orjson.loads(data) if data else {}
        sizes = {f["path"]: f["bytes"] for e in [*doc.get("shards", []), *doc.get("partitions", [])]
                 for f in e["files"].values()}  # fmt: skip
        delete = [n for n, size in names.items() if sizes.get(n) == size or n in (MANIFEST, SUMMARY)]
        blocking = [n for n in names if n not in delete and rundir.is_chatlake_name(n)]
        if blocking:
            raise ConfigError(
                f"--fresh deletes only files {MANIFEST} lists; {self.url} holds {', '.join(blocking[:3])} "
                "that a new run would overwrite: move them away and run again"
            )
        for name in sorted(delete, key=lambda n: n == MANIFEST):  # the manifest last
            storage.remove(self._url(name))
        self._empty_local()

    def _empty_local(self, keep: dict[str, int] | None = None) -> None:
        """Delete the working copy's files (chatlake's own folder, in its cache), but the lock its
        caller holds and the files of ``keep`` (relative path -> size) that have their size."""
        keep = keep or {}
        for p in sorted(self.local.rglob("*"), reverse=True):
            rel = p.relative_to(self.local).as_posix()
            if p.is_dir() and not p.is_symlink():
                continue
            if rel != LOCK and not (rel in keep and not p.is_symlink() and p.stat().st_size == keep[rel]):
                p.unlink()

    def pull(self) -> None:
        """Make the working copy the store's run: its manifest and the files it lists (downloaded
        when missing locally or of another size), and nothing else (a shard finished here but never
        uploaded is redone: the store is the truth). Another job's run on the store is refused,
        naming the URL."""
        data = storage.read_bytes(self._url(MANIFEST))
        doc: dict[str, Any] = {}
        if data is None and (names := sorted(storage.listing(self.url))):  # as rundir.check_run_dir
            raise ConfigError(
                f"{self.url} is not empty and is not a chatlake run directory (no {MANIFEST}; it holds "
                f"{names[:3]}), so chatlake will not write into it; choose an empty or new output.path"
            )
        if data is not None:
            try:
                doc = orjson.loads(data)
            except orjson.JSONDecodeError:
                where = self._url(MANIFEST)
                raise ConfigError(f"{where} is not valid JSON; pass --fresh to start over") from None
            if doc.get("job", self.job_name) != self.job_name or doc.get("fingerprint") != self.fingerprint:
                raise ConfigError(
                    f"{self.url} holds a run of another job (or of changed inputs or settings); choose "
                    "another output.path, or pass --fresh to delete it and start over"
                )
        sizes = {f["path"]: f["bytes"] for e in [*doc.get("shards", []), *doc.get("partitions", [])]
                 for f in e["files"].values()}  # fmt: skip
        self._empty_local(keep=sizes)  # whatever the store does not list goes
        for path in sizes:
            if not (self.local / path).is_file():
                storage.download(self._url(path), self.local / path)
        self.uploaded = _listed_files(doc)
        if data is not None:
            self.manifest_sent = data
            write_atomic(self.local / MANIFEST, data)  # never through a link planted in the working copy

    def sync(self) -> None:
        """Upload the files the local manifest lists that the store lacks, then the manifest."""
        with self.lock:
            try:  # with the shards its journal lists: the store gets the whole document
                data = manifest_bytes(read_manifest(self.local))
            except FileNotFoundError:
                return
            if data == self.manifest_sent:
                return
            for path, sha in _listed_files(orjson.loads(data)).items():
                if self.uploaded.get(path) != sha:
                    storage.upload(self.local / path, self._url(path))
                    self.uploaded[path] = sha
            storage.upload_bytes(data, self._url(MANIFEST))  # after the files it lists
            self.manifest_sent = data

    def _loop(self) -> None:
        try:
            while not self.stop.wait(SYNC_INTERVAL_S):
                self.sync()
        except BaseException as e:  # raised by finish() in the main thread
            self.error = e

    def finish(self) -> None:
        """Stop the background uploads and upload what is left: the last shards, the manifest and,
        when this run wrote one (it ran to the end), ``summary.json`` last. After a failed or
        interrupted run this uploads what finished, so that a run started anywhere resumes."""
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()
        if self.error is not None:
            raise self.error
        self.sync()
        summary = self._summary_signature()
        if summary is not None and summary != self.summary_pulled:
            storage.upload(self.local / SUMMARY, self._url(SUMMARY))

    def _summary_signature(self) -> tuple[int, int, int] | None:
        """Which ``summary.json`` the working copy holds: its inode, mtime (ns) and size, or None.
        The run writes it by temp file and rename (a new inode), so a summary this run wrote differs
        from the pulled one even where the filesystem keeps mtimes to the whole second."""
        try:
            st = (self.local / SUMMARY).stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)


@contextlib.contextmanager
def mirrored(job: Job, fresh: bool) -> Iterator[Mirror]:
    """Run the block with the run directory mirrored to ``job.run_url`` (the caller holds the
    working copy's lock): pull (or, with ``fresh``, clear) first, upload as shards finish, and
    upload the rest at the end, also when the block fails."""
    mirror = Mirror(job)
    if fresh:
        mirror.check_fresh()
        mirror.clear()
    else:
        mirror.pull()
    mirror.summary_pulled = mirror._summary_signature()
    mirror.thread.start()
    try:
        yield mirror
    except BaseException:
        with contextlib.suppress(Exception):  # the run's own error is the one to report
            mirror.finish()
        raise
    mirror.finish()


def remove_work_dir(job: Job) -> None:
    """Delete a mirrored run's working copy (everything is on the store)."""
    shutil.rmtree(job.run_dir, ignore_errors=True)
