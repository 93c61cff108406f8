"""Where bytes live: a local path, or a URL of an object store or the Hub (docs/storage.md).

Every place that takes an input or an output path goes through here to learn whether it is a URL
and, if so, which fsspec filesystem serves it. A URL's driver is an optional package; a missing one,
a store that cannot be reached, refused credentials or a missing bucket or object become one
:class:`StorageError` line naming the URL and what to install or set (the CLI exits 2 with it).

=========================  =====================================  ================================
URL                        driver (fsspec filesystem)             install
=========================  =====================================  ================================
``s3://bucket/key``        s3fs                                   ``pip install 'chatlake[s3]'``
``gs://bucket/key``        gcsfs                                  ``pip install 'chatlake[gcs]'``
``az://container/key``     adlfs (also ``abfs://``)               ``pip install 'chatlake[azure]'``
``hf://datasets/o/n/f``    huggingface_hub's HfFileSystem         always installed
``https://host/f``         fsspec's HTTP filesystem (aiohttp)     ``pip install 'chatlake[http]'``
=========================  =====================================  ================================

Credentials come from each driver's own environment variables and config files (``AWS_*``,
``GOOGLE_APPLICATION_CREDENTIALS``, ``AZURE_STORAGE_*``, ``HF_TOKEN``); chatlake never takes them on
its command line and never prints them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from pipeline.errors import ConfigError

# protocol -> (the package that serves it, the pip command that installs it)
DRIVERS: dict[str, tuple[str, str]] = {
    "s3": ("s3fs", "pip install 'chatlake[s3]'"),
    "s3a": ("s3fs", "pip install 'chatlake[s3]'"),
    "gs": ("gcsfs", "pip install 'chatlake[gcs]'"),
    "gcs": ("gcsfs", "pip install 'chatlake[gcs]'"),
    "az": ("adlfs", "pip install 'chatlake[azure]'"),
    "abfs": ("adlfs", "pip install 'chatlake[azure]'"),
    "abfss": ("adlfs", "pip install 'chatlake[azure]'"),
    "hf": ("huggingface_hub", "pip install huggingface_hub"),
    "http": ("aiohttp", "pip install 'chatlake[http]'"),
    "https": ("aiohttp", "pip install 'chatlake[http]'"),
}
# What to set when a store refuses us, by protocol (docs/storage.md#credentials).
CREDENTIALS: dict[str, str] = {
    "s3": "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), and AWS_ENDPOINT_URL for a "
    "store other than AWS",
    "gs": "set GOOGLE_APPLICATION_CREDENTIALS (or run gcloud auth application-default login)",
    "az": "set AZURE_STORAGE_CONNECTION_STRING (or AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY)",
    "hf": "set HF_TOKEN (or run hf auth login) for a private or gated dataset",
    "https": "check that the URL is public",
}
_FAMILY = {"s3a": "s3", "gcs": "gs", "abfs": "az", "abfss": "az", "http": "https"}
# Exception classes (by name, anywhere in the MRO: the drivers' own classes are not imported here)
# that mean the store could not be reached, or refused the credentials.
_UNREACHABLE = frozenset({
    "EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ClientConnectorError",
    "ServerDisconnectedError", "ClientOSError", "ConnectError", "ConnectTimeout", "NetworkError",
    "TransportError", "TimeoutException", "ConnectionError", "TimeoutError", "OfflineModeIsEnabled",
    "ServerTimeoutError",
})  # fmt: skip
_REFUSED = frozenset({
    "NoCredentialsError", "PartialCredentialsError", "GatedRepoError", "DefaultCredentialsError",
    "ClientAuthenticationError", "HfHubHTTPError401", "PermissionError",
})  # fmt: skip
_MISSING = frozenset({
    "FileNotFoundError", "RepositoryNotFoundError", "RevisionNotFoundError", "EntryNotFoundError",
    "NoSuchBucket", "NoSuchKey", "ResourceNotFoundError",
})  # fmt: skip


class StorageError(ConfigError):
    """A URL that cannot be used: its driver is missing, its store cannot be reached, refuses the
    credentials, or has no such bucket or object. The message is one line that names the URL."""


def is_url(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a remote location (``scheme://``); ``file://`` is a local path."""
    text = os.fspath(path)
    return "://" in text and not text.startswith("file://")


def as_path(path: str | os.PathLike[str]) -> str | Path:
    """``path`` as a :class:`~pathlib.Path` when local, as the URL string when remote (a Path would
    fold ``s3://`` into ``s3:/``)."""
    text = os.fspath(path)
    return text if is_url(text) else Path(text)


def protocol(url: str) -> str:
    """The lower-case scheme of a URL (``s3``, ``hf``, ...)."""
    return str(url).split("://", 1)[0].lower()


def local_path(path: str) -> str:
    """A local path as given, or the path of a ``file://`` URL."""
    return path[len("file://") :] if path.startswith("file://") else path


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _names(e: BaseException) -> set[str]:
    return {c.__name__ for c in type(e).__mro__}


def _status(e: BaseException) -> int | None:
    """The HTTP status an exception carries (huggingface_hub's, botocore's), else None."""
    response = getattr(e, "response", None)
    code = getattr(response, "status_code", None)
    if isinstance(code, int):
        return code
    if isinstance(response, dict):
        meta = response.get("ResponseMetadata", {})
        if isinstance(meta.get("HTTPStatusCode"), int):
            return int(meta["HTTPStatusCode"])
    return None


def describe(url: str, e: BaseException) -> StorageError:
    """One :class:`StorageError` line for an error a driver raised while using ``url``."""
    if isinstance(e, StorageError):
        return e
    family = _FAMILY.get(protocol(url), protocol(url))
    names, status = _names(e), _status(e)
    chain = [e, *([e.__cause__] if e.__cause__ is not None else [])]
    if names & _MISSING or status == 404:
        return StorageError(f"{url}: no such bucket, repository or object ({_one_line(e)})")
    if names & _REFUSED or status in (401, 403):
        hint = CREDENTIALS.get(family, "check the credentials")
        return StorageError(f"{url}: access denied ({_one_line(e)}); {hint}")
    if any(_names(c) & _UNREACHABLE for c in chain):
        where = "; check the network, or AWS_ENDPOINT_URL" if family == "s3" else "; check the network"
        if family == "hf":
            where = "; check the network, or HF_ENDPOINT"
        return StorageError(f"{url}: cannot reach the store ({_one_line(e)}){where}")
    return StorageError(f"{url}: {type(e).__name__}: {_one_line(e)}")


@contextlib.contextmanager
def reaching(url: str) -> Iterator[None]:
    """Run driver calls for ``url``: whatever they raise becomes one :class:`StorageError` line."""
    try:
        yield
    except StorageError:
        raise
    except Exception as e:
        raise describe(url, e) from None


def filesystem(url: str, use: str = "reading") -> tuple[Any, str]:
    """The fsspec filesystem serving ``url`` and the path inside it (StorageError: no driver, the
    message saying what it was needed for: ``use``)."""
    import fsspec

    proto = protocol(url)
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError:
        package, install = DRIVERS.get(proto, (proto, f"pip install the fsspec driver for {proto}://"))
        raise StorageError(f"{url}: {use} {proto}:// needs {package}: {install}") from None
    except ValueError as e:
        if "Protocol not known" in str(e) or "not known" in str(e):
            raise StorageError(f"{url}: unknown URL scheme {proto}:// (docs/storage.md lists them)") from None
        raise describe(url, e) from None
    return fs, path


def unstrip(fs: Any, path: str) -> str:
    """The URL of ``path`` on ``fs`` (the scheme put back)."""
    return str(fs.unstrip_protocol(path))


def open_input(url: str | os.PathLike[str]) -> IO[bytes]:
    """A seekable binary file for a local path or a URL; a URL's file reads byte ranges on demand
    (nothing is downloaded whole)."""
    url = os.fspath(url)
    if not is_url(url):
        return open(local_path(url), "rb")
    fs, path = filesystem(url)
    with reaching(url):
        return fs.open(path, "rb")  # type: ignore[no-any-return]


def file_size(url: str) -> int:
    """The size in bytes of a local file or of the object at ``url``."""
    if not is_url(url):
        return os.path.getsize(local_path(url))
    fs, path = filesystem(url)
    with reaching(url):
        return int(fs.size(path))


def exists(url: str) -> bool:
    """Whether the object (or prefix) ``url`` names exists."""
    fs, path = filesystem(url)
    with reaching(url):
        return bool(fs.exists(path))


def join(url: str, *names: str) -> str:
    """``url`` with ``names`` appended, ``/``-separated."""
    return "/".join([url.rstrip("/"), *names])


# --- outputs at URLs ------------------------------------------------------------------------------
# An object store has no rename, so an output is never written in place. chatlake writes it on the
# local disk first, in a directory of its cache that belongs to the URL (:func:`work_dir`), with the
# same commit rules as any local output, and then uploads each finished file (:func:`upload`). An
# upload appears on the store whole, at the end, or not at all (S3's single PUT or completed multipart
# upload, GCS's finalized upload, Azure's committed block list, a Hub commit): a reader never sees a
# partial object under a final name.


UPLOAD_PART_BYTES = 16 << 20  # S3 multipart: parts of at least 5 MiB, at most 10,000 of them


def cache_root() -> Path:
    """Where chatlake keeps local working copies of outputs at URLs: ``$CHATLAKE_CACHE``, else
    ``$XDG_CACHE_HOME/chatlake``, else ``~/.cache/chatlake``."""
    given = os.environ.get("CHATLAKE_CACHE")
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "chatlake"


def work_dir(url: str, kind: str) -> Path:
    """The local directory that belongs to the output ``url`` (``kind``: ``runs`` for a run
    directory's working copy, ``files`` for a single-file output's staging): the same URL always
    gets the same directory, so a command run again resumes there."""
    import hashlib

    canonical = url.rstrip("/")
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:20]
    return cache_root() / kind / digest


def check_output(url: str) -> None:
    """Before any work: the driver of ``url`` is installed, its store answers and accepts the
    credentials, and its bucket (container, repository) exists; else one :class:`StorageError`."""
    fs, path = filesystem(url, "writing")
    parts = path.strip("/").split("/")
    # the bucket or container; on the Hub, the repository (datasets/ORG/NAME)
    root = "/".join(parts[:3]) if protocol(url) == "hf" else parts[0]
    with reaching(url):
        fs.ls(root, detail=False)  # a missing bucket, refused credentials or no store fail here
        fs.exists(path)  # credentials may list the bucket but not read the prefix


def upload(local: Path, url: str) -> None:
    """Copy the local file to ``url``, streaming it (a multipart upload for a large file); the
    object appears whole when the upload completes."""
    fs, path = filesystem(url)
    # s3fs sends a large file in parts read ahead concurrently: bound what is in memory at once
    # (16 MiB parts, 4 in flight) instead of its default of 50 MiB parts, 10 in flight
    parts = {"chunksize": UPLOAD_PART_BYTES, "max_concurrency": 4} if protocol(url) in ("s3", "s3a") else {}
    with reaching(url):
        # object stores have no folders (a no-op there); a filesystem-backed store needs them
        fs.makedirs(fs._parent(path), exist_ok=True)
        fs.put_file(str(local), path, **parts)


def upload_bytes(data: bytes, url: str) -> None:
    """Write a small object (a manifest, a summary) in one request."""
    fs, path = filesystem(url)
    with reaching(url):
        fs.makedirs(fs._parent(path), exist_ok=True)
        fs.pipe_file(path, data)


def read_bytes(url: str) -> bytes | None:
    """A small object's bytes (a manifest), None when there is no such object."""
    fs, path = filesystem(url)
    fs.invalidate_cache(path)  # a listing cached earlier does not know objects written since
    with reaching(url):
        try:
            return bytes(fs.cat_file(path))
        except FileNotFoundError:
            return None


def download(url: str, local: Path) -> None:
    """Copy the object at ``url`` to the local file (written beside it, renamed into place)."""
    fs, path = filesystem(url)
    tmp = local.with_name(f".{local.name}.download")
    local.parent.mkdir(parents=True, exist_ok=True)
    with reaching(url):
        fs.get_file(path, str(tmp))
    os.replace(tmp, local)


def listing(url: str) -> dict[str, int]:
    """Every object under the prefix ``url``: its path relative to ``url`` -> its size in bytes."""
    fs, path = filesystem(url)
    root = path.rstrip("/")
    fs.invalidate_cache(root)
    with reaching(url):
        try:
            found = fs.find(root, detail=True)
        except FileNotFoundError:
            return {}
    return {
        name[len(root) + 1 :]: int(info.get("size") or 0)
        for name, info in found.items()
        if name.startswith(root + "/") and info.get("type") != "directory"
    }


def sha256_of(url: str) -> str:
    """The sha256 of the object at ``url``, read a MiB at a time (an object store's ETag is an MD5
    only for some uploads, and never a sha256)."""
    import hashlib

    h = hashlib.sha256()
    fs, path = filesystem(url)
    with reaching(url), fs.open(path, "rb", cache_type="none") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def remove(url: str) -> None:
    """Delete the object at ``url`` (nothing when it is already gone)."""
    fs, path = filesystem(url)
    with reaching(url), contextlib.suppress(FileNotFoundError):
        fs.rm_file(path)


def upload_tree(local: Path, url: str, last: tuple[str, ...] = ()) -> list[str]:
    """Upload every file under the local directory to the prefix ``url`` (relative paths kept),
    the names in ``last`` after all others, in that order (the file that says the rest is complete
    goes up at the end); returns the relative paths uploaded."""
    names = sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())
    ordered = [n for n in names if n not in last] + [n for n in last if n in names]
    for name in ordered:
        upload(local / name, join(url, name))
    return ordered


def download_tree(url: str, local: Path) -> list[str]:
    """Download every object under the prefix ``url`` into the local directory (relative paths
    kept; StorageError when there is none); returns the relative paths."""
    names = sorted(listing(url))
    if not names:
        raise StorageError(f"{url}: no such bucket, repository or object (nothing under this prefix)")
    for name in names:
        if name.startswith("/") or ".." in name.split("/"):  # an object name may not escape the folder
            raise StorageError(f"{url}: refusing the object name {name!r} (it leaves the folder)")
        download(join(url, name), local / name)
    return names
