"""The compiled MD5 (pipeline/_native/md5.c, used by the item fingerprints) against hashlib."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline import codec

native = codec.native_fingerprints()
pytestmark = pytest.mark.skipif(
    native is None, reason="pipeline._native is not built (no C compiler at install)"
)


def test_rfc_1321_test_suite() -> None:
    """The seven test vectors of RFC 1321, appendix A.5."""
    suite = {
        b"": "d41d8cd98f00b204e9800998ecf8427e",
        b"a": "0cc175b9c0f1b6a831c399e269772661",
        b"abc": "900150983cd24fb0d6963f7d28e17f72",
        b"message digest": "f96b697d7cb7938d525a2f31aaf161d0",
        b"abcdefghijklmnopqrstuvwxyz": "c3fcd3d76192e4007dfb496cca67e13b",
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789": "d174ab98d277d9f5a5611c2c9f419d9f",
        b"1234567890" * 8: "57edf4a22be3c955ac49da2e2107b67a",
    }
    assert {data: native.md5_hex(data) for data in suite} == suite


def test_every_length_around_the_block_and_padding_boundaries() -> None:
    data = bytes(range(256)) * 5
    for n in range(0, 300):
        assert native.md5_hex(data[:n]) == hashlib.md5(data[:n]).hexdigest(), n
    big = data * 1000  # 1.28 MB: many whole blocks
    assert native.md5_hex(big) == hashlib.md5(big).hexdigest()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_random_bytes(data: bytes) -> None:
    assert native.md5_hex(data) == hashlib.md5(data).hexdigest()
