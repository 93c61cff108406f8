"""Errors shared by every job: a configuration that cannot run fails before any work starts; a rejected
record's reason is counted without its location."""

from __future__ import annotations

import re


class ConfigError(ValueError):
    """A job, step or command line that cannot run as configured; the message says what to fix.

    The CLI turns it into exit code 2 with the message on stderr, before reading any input.
    """


_PATH_PREFIX = re.compile(r"^\$[^:]*: ")


def reason_of(error: str) -> str:
    """The reason of a rejection without its location, for counting (``$.input[3]: x`` -> ``x``)."""
    return _PATH_PREFIX.sub("", error)


def a_or_an(word: str) -> str:
    """``word`` with its indefinite article, for messages: ``an 'input_image'``, ``an INTEGER``,
    ``an anthropic``, ``a chat``, ``a user``; quotes around the word are ignored."""
    w = word.lstrip("'\"`").lower()
    vowel = w[:1] in ("a", "e", "i", "o") or (w[:1] == "u" and not w.startswith(("us", "ur", "uni", "uti")))
    return f"{'an' if vowel or w == 'hf' or w.startswith('hf_') else 'a'} {word}"
