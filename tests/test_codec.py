"""pipeline.codec and `chatlake doctor`: which codec decodes, and why."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pipeline import codec
from pipeline.cli import cli


def test_doctor_names_the_python_codec_when_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLAKE_NATIVE", "0")
    res = CliRunner().invoke(cli, ["doctor"])
    assert res.exit_code == 0
    assert res.output == "codec: python: CHATLAKE_NATIVE=0 forces the pure-Python codec\n"
    assert codec.native_module("responses") is None


def test_doctor_names_the_active_codec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHATLAKE_NATIVE", raising=False)
    status = codec.status()
    res = CliRunner().invoke(cli, ["doctor"])
    assert res.exit_code == 0
    assert res.output == f"codec: {status.describe()}\n"
    if status.native:
        assert "native (compiled) for anthropic, chat, responses" in res.output
        assert codec.native_module("hf") is None
    else:
        assert "not built" in status.reason or "cannot be loaded" in status.reason
