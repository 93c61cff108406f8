"""tests/s3_server.py: the S3 server of the tests starts even when a port it found free is taken
before weed binds it (by another process: the ports are found free, then handed to weed); weed stops
on the bind error and the start is tried again on other ports."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests import s3_server


def test_a_port_taken_before_weed_binds_it_is_given_up_for_other_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import s3fs

    s3_server.require_weed()
    real = s3_server._free_ports
    picked: list[list[int]] = []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()

        def first_taken(n: int) -> list[int]:
            ports = real(n)
            if not picked:
                ports[6] = taken.getsockname()[1]  # the S3 gateway's: it binds last, seconds in
            picked.append(ports)
            return ports

        monkeypatch.setattr(s3_server, "_free_ports", first_taken)
        with s3_server.running(tmp_path) as server:
            fs = s3fs.S3FileSystem(key=server.key, secret=server.secret, skip_instance_cache=True,
                                   client_kwargs={"endpoint_url": server.endpoint})  # fmt: skip
            fs.pipe_file(f"{server.bucket}/x", b"stored")
            assert fs.cat_file(f"{server.bucket}/x") == b"stored"
    assert len(picked) == 2 and server.endpoint == f"http://127.0.0.1:{picked[1][6]}"
    assert s3_server.ADDRESS_IN_USE in (tmp_path / "weed-0.log").read_text()
