"""pipeline/errors.py: reasons without locations, and the article of a word in a message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.errors import a_or_an, reason_of

PIPELINE = Path(__file__).resolve().parents[1] / "pipeline"


@pytest.mark.parametrize(
    ("word", "expected"),
    [("INTEGER", "an INTEGER"), ("VARCHAR", "a VARCHAR"), ("anthropic", "an anthropic"), ("chat", "a chat"),
     ("responses", "a responses"), ("hf", "an hf"), ("'input_image'", "an 'input_image'"),
     ("'output_text'", "an 'output_text'"), ("'text'", "a 'text'"), ("user", "a user"),
     ("unsupported", "an unsupported"), ("'image_url'", "an 'image_url'"), ("'hf'", "an 'hf'"),
     ("'url'", "a 'url'"), ("'None'", "a 'None'")],
)  # fmt: skip
def test_a_or_an(word: str, expected: str) -> None:
    assert a_or_an(word) == expected


def test_no_message_puts_a_before_a_placeholder() -> None:
    """``f"a {x}"`` reads "a anthropic", "a INTEGER"; ``lit("a '")`` + a column the same: messages
    use :func:`a_or_an` (and the compiled encoder its rule, tests/native/test_encode_differential.py)."""
    pattern = re.compile(r"""\ba ['"]?\{|"a '"\)""")
    found = [
        f"{p.relative_to(PIPELINE)}:{n}: {line.strip()}"
        for p in sorted(PIPELINE.rglob("*.py"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


def test_reason_of_drops_the_location() -> None:
    assert reason_of("$.input[3]: not a string") == "not a string"


def test_reason_of_drops_the_leaf_a_dropped_record_names() -> None:
    assert reason_of("threads: duplicate of an identical record (in leaf a (b) c)") == (
        "threads: duplicate of an identical record"
    )
    assert reason_of("role_swap: unsupported role 'x' (in leaf") == "role_swap: unsupported role 'x' (in leaf"
