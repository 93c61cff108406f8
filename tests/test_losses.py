"""The loss vocabulary is closed and documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.losses import ADDITIONS, LOSS_KINDS, Loss, LossPolicy, pointer

DOC = Path(__file__).resolve().parents[1] / "docs" / "conversion.md"


def test_every_kind_is_documented_with_an_example() -> None:
    text = DOC.read_text()
    for kind, (meaning, example, addition) in LOSS_KINDS.items():
        assert f"| `{kind}` |" in text, f"docs/conversion.md does not document {kind}"
        assert meaning and example
        if addition:  # the docs' table says which kinds are additions
            assert f"| `{kind}` | (addition) " in text, f"docs/conversion.md does not mark {kind} an addition"


def test_additions_are_never_refused() -> None:
    assert {"filled_default", "set"} <= ADDITIONS and "model_provider" not in ADDITIONS
    filled = Loss("/max_tokens", "filled_default", "no token limit; max_tokens 4096 was set")
    lost = Loss("/temperature", "request_field", "'temperature' is not carried to Anthropic")
    assert LossPolicy("reject").refused([filled]) == []
    assert LossPolicy("reject").refused([filled, lost]) == [lost]
    assert LossPolicy("reject", frozenset({"request_field"})).refused([filled, lost]) == []
    assert LossPolicy("allow").refused([lost]) == []


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown loss kind"):
        Loss("/x", "not_a_kind", "")


def test_pointer_escapes_per_rfc6901() -> None:
    assert pointer("input", 3, "a/b~c") == "/input/3/a~1b~0c"
