"""Errors shared by every job: a configuration that cannot run fails before any work starts."""

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
