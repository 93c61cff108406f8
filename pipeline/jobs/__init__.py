"""Declarative jobs: a TOML file naming inputs, steps, target, loss policy, output and engine.

>>> from pipeline.jobs import parse_job                       # doctest: +SKIP
>>> job = parse_job('name = "j"\\n[[inputs]]\\npath = "a.jsonl"\\nformat = "chat"\\n'
...                 '[output]\\npath = "run"\\ntarget = "responses"\\n', base=Path("."))
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
