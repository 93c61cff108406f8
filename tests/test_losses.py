"""The loss vocabulary is closed and documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.losses import LOSS_KINDS, Loss, pointer

DOC = Path(__file__).resolve().parents[1] / "docs" / "conversion.md"


def test_every_kind_is_documented_with_an_example() -> None:
    text = DOC.read_text()
    for kind, (meaning, example) in LOSS_KINDS.items():
        assert f"| `{kind}` |" in text, f"docs/conversion.md does not document {kind}"
        assert meaning and example


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown loss kind"):
        Loss("/x", "not_a_kind", "")


def test_pointer_escapes_per_rfc6901() -> None:
    assert pointer("input", 3, "a/b~c") == "/input/3/a~1b~0c"
