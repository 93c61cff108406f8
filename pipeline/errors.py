"""Errors shared by every job: a configuration that cannot run fails before any work starts; a rejected
record's reason is counted without its location."""

from __future__ import annotations

import re


class ConfigError(ValueError):
    """A job, step or command line that cannot run as configured; the message says what to fix.

    The CLI turns it into exit code 2 with the message on stderr, before reading any input.
    """


_PATH_PREFIX = re.compile(r"^\$[^:]*: ")
# a record dropped by a grouping step names the record that holds it (threads: its leaf)
_LEAF_SUFFIX = re.compile(r" \(in leaf .*\)\Z", re.DOTALL)
# the same suffix for Polars (Rust regex: ``$`` is the end of the text), group 1 = the leaf's id
LEAF_OF = r"(?s) \(in leaf (.*)\)$"


def reason_of(error: str) -> str:
    """The reason of a rejection without its location, for counting (``$.input[3]: x`` -> ``x``;
    ``threads: ... (in leaf r7)`` -> ``threads: ...``)."""
    return _LEAF_SUFFIX.sub("", _PATH_PREFIX.sub("", error))


# Words that take "an": a vowel sound (a, e, i, o; u except in "us..", "ur..", "uni..", "uti.."),
# and "hf" (aitch). A plain regex, no lookaround, so Polars (Rust regex) runs the same rule.
AN_WORD = r"^['\"`]?(?i:hf(?:$|[^a-z0-9])|[aeio]|u(?:$|[^srnt]|n(?:$|[^i])|t(?:$|[^i])))"
_AN = re.compile(AN_WORD)


def quoted(value: object) -> str:
    """``value`` in single quotes, as messages name a type: ``'input_image'`` (``'None'`` for None)."""
    return f"'{value}'"


def a_or_an(word: str) -> str:
    """``word`` with its indefinite article, for messages: ``an 'input_image'``, ``an INTEGER``,
    ``an anthropic``, ``a chat``, ``a user``; quotes around the word are ignored."""
    return f"{'an' if _AN.match(word) else 'a'} {word}"
