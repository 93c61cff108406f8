"""Declarative jobs: a TOML file naming inputs, steps, target, loss policy, output and engine.

A bad job fails here, before any work, saying what to fix:

>>> from pathlib import Path
>>> parse_job('name = "j"\\n[[inputs]]\\npath = "missing.jsonl"\\nformat = "chat"\\n'
...           '[output]\\npath = "run"\\ntarget = "responses"\\n', base=Path("."))
Traceback (most recent call last):
...
pipeline.errors.ConfigError: inputs[0]: 'missing.jsonl' matches no file; check the path or glob
"""

from pipeline.jobs.model import JobSpec
from pipeline.jobs.resolve import (
    CANONICAL,
    TARGETS,
    InputFile,
    Job,
    convert_job,
    load_job,
    parse_job,
    resolve,
)

__all__ = [
    "CANONICAL", "TARGETS", "InputFile", "Job", "JobSpec", "convert_job", "load_job", "parse_job", "resolve",
]  # fmt: skip
