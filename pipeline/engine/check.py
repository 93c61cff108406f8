"""``chatlake check``: lint a dataset against a target API's acceptance rules, at dataset scale.

The files are read as ``convert --from FORMAT`` reads them (the same shards and batches, the
compiled decoder where it is active): a record the decoder refuses does not fit the format's types
and counts as failing under the pseudo-rule :data:`TYPES`; every decoded record is checked by
:func:`pipeline.encoders.rule_checks.violations` (columnar, one batch at a time). The result holds
counts per rule (violations and records) and the first offending records with file, line and JSON
pointer.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.encoders.rule_checks import violations
from pipeline.engine.read import read_shard
from pipeline.engine.shards import plan
from pipeline.jobs.resolve import convert_job

TYPES = "types"  # a record the format's decoder refuses: it does not fit the SDK's request types


@dataclass
class CheckResult:
    """What :func:`check_files` found."""

    target: str
    records: int = 0  # records read (decoded, or refused by the decoder)
    failing: int = 0  # records that break at least one rule (or do not decode)
    violations: Counter[str] = field(default_factory=Counter)  # by rule id
    records_by_rule: Counter[str] = field(default_factory=Counter)  # records breaking each rule
    examples: list[dict[str, Any]] = field(default_factory=list)  # file, line, rule, path, detail
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "records": self.records,
            "failing": self.failing,
            "passing": self.records - self.failing,
            "violations_by_rule": dict(sorted(self.violations.items())),
            "records_by_rule": dict(sorted(self.records_by_rule.items())),
            "examples": self.examples,
            "seconds": round(self.seconds, 3),
        }


def check_files(inputs: list[str], target: str, *, examples: int = 10) -> CheckResult:
    """Check every record of ``inputs`` (read as ``target``'s wire format) against its rules.

    Bad usage (a missing file, a format that cannot be read) raises ``ConfigError`` before any work.
    ``examples``: how many offending records to keep (the first ones, in input order), each with its
    first violation.
    """
    started = time.perf_counter()
    # a convert job's inputs, shards and batches; its output path is never written (nothing is)
    job = convert_job(inputs, target, target, str(Path(tempfile.gettempdir()) / "chatlake-check"),
                      layout="single_file")  # fmt: skip
    out = CheckResult(target)
    for shard in plan(job):
        for batch in read_shard(shard, job.chunk_bytes, job.batch_rows):
            _count(out, batch, target, examples)
    out.seconds = time.perf_counter() - started
    return out


def _count(out: CheckResult, batch: Any, target: str, examples: int) -> None:
    """Add one batch's decode failures and rule violations to ``out``."""
    out.records += batch.read
    failed = [(r["source_file"], r["source_line"], TYPES, "", r["reason"]) for r in batch.rejected]
    if failed:
        out.violations[TYPES] += len(failed)
        out.records_by_rule[TYPES] += len(failed)
    found = violations(batch.table, target)
    if found.height:
        out.violations.update(dict(found.group_by("rule").len().iter_rows()))
        per = found.unique(["row", "rule"]).group_by("rule").len()
        out.records_by_rule.update(dict(per.iter_rows()))
    bad_rows = found["row"].unique()
    out.failing += len(failed) + len(bad_rows)
    if len(out.examples) >= examples:
        return
    first = found.unique("row", keep="first", maintain_order=True).head(examples)
    where = pl.from_arrow(batch.table.select(["source_file", "source_line"]))
    assert isinstance(where, pl.DataFrame)
    rows = first.with_columns(
        where["source_file"].gather(first["row"]).alias("file"),
        where["source_line"].gather(first["row"]).alias("line"),
    )
    found_ex = [(d["file"], d["line"], d["rule"], d["path"], d["detail"]) for d in rows.to_dicts()]
    merged = sorted(failed + found_ex, key=lambda e: (e[1] is None, e[1] or 0))
    for file, line, rule, path, detail in merged[: examples - len(out.examples)]:
        out.examples.append({"file": file, "line": line, "rule": rule, "path": path, "detail": detail})
