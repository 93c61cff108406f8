"""Whether a finished run did what was asked: a run whose records were (nearly) all rejected fails.

A wrong ``--from``, a pretty-printed JSON file or a transform step that rejects every record
would otherwise exit 0 with an empty output. The rule (docs/run-layout.md, "verdict"):

- ``max_rejected_share`` unset: the run fails when something was read and everything read was
  rejected;
- ``max_rejected_share = s`` (0 <= s <= 1): the run fails when ``rejected / read > s``.

The verdict names the top rejection reasons and, when it can tell, what to change: another input
format (a sample of the rejected lines decoded with the other wire formats and the source
sniffers), or the parameter of the step that rejected them. It is computed once, here, by
:func:`pipeline.engine.run.run_job`, so every command that runs a job gets it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pyarrow.compute as pc
import pyarrow.dataset as ds

from pipeline.formats import WIRE_FORMATS, decode_lines
from pipeline.jobs.resolve import Job
from pipeline.sources.detect import detect_source, row_source
from pipeline.transforms.registry import STEPS

SAMPLE = 20  # rejected lines decoded with the other formats for the hint: enough to be sure, cheap
TOP_REASONS = 3


def judge(summary: dict[str, Any], job: Job) -> dict[str, Any]:
    """The verdict of a finished run: ``{"ok", "rejected_share", "max_rejected_share", "message"}``.

    ``message`` is one line (None when ok) saying how many were rejected, where, why, and a hint.
    """
    read, rejected = summary["read"], summary["rejected"]
    share = rejected / read if read else 0.0
    limit = job.max_rejected_share
    failed = read > 0 and (rejected == read if limit is None else share > limit)
    verdict: dict[str, Any] = {
        "ok": not failed,
        "rejected_share": round(share, 6),
        "max_rejected_share": limit,
        "message": None,
    }
    if failed:
        verdict["message"] = _message(summary, job, share)
    return verdict


def _message(summary: dict[str, Any], job: Job, share: float) -> str:
    read, rejected = summary["read"], summary["rejected"]
    if rejected == read:
        head = f"all {read:,} records rejected"
    else:
        head = (
            f"{rejected:,} of {read:,} records rejected ({share:.0%}, more than max_rejected_share "
            f"{job.max_rejected_share})"
        )
    stages = summary["rejected_by_stage"]
    stage = next(iter(stages), "?")
    reasons = "; ".join(f"`{r}`" for r in list(summary["rejected_by_reason"])[:TOP_REASONS])
    more = len(summary["rejected_by_reason"]) - TOP_REASONS
    if more > 0:
        reasons += f" (and {more} more)"
    step = _top_step(job.run_dir) if stage == "transform" else None
    where = f"by step `{step}`" if step else f"at {stage}"
    line = f"{head} {where}: {reasons}"
    if step:
        hint = _step_hint(step)
    elif stage in ("read", "decode"):
        hint = _format_hint(job)
    elif stage == "loss_policy":
        hint = _loss_hint(summary["rejected_by_reason"])
    else:
        hint = None
    return f"{line}; {hint}" if hint else line


_REFUSED = re.compile(r"^loss: (\S+) \(on_loss = reject\)$")  # the loss policy's reason (engine.process)


def _loss_hint(reasons: dict[str, int]) -> str | None:
    """The loss kinds the policy refused, and the flags that accept them."""
    kinds = sorted({m.group(1) for r in reasons if (m := _REFUSED.match(r))})
    if not kinds:
        return None
    allow = ",".join(kinds)
    listed = ", ".join(f'"{k}"' for k in kinds)
    hint = (
        f"to write them, accept those losses: `--allow-loss {allow}` or `--on-loss allow` "
        f"(a job file: `[loss] allow = [{listed}]`)"
    )
    if "model_provider" in kinds:  # another provider's model: replacing it is the usual way out
        hint += "; or give the target's model: `--set model=NAME` (a job file: `[set] model = \"NAME\"`)"
    return hint


def _rejected(run_dir: Path) -> ds.Dataset | None:
    folder = run_dir / "rejected"
    if not folder.is_dir() or not any(folder.glob("*.parquet")):
        return None
    return ds.dataset(sorted(str(p) for p in folder.glob("*.parquet")), format="parquet")


def _top_step(run_dir: Path) -> str | None:
    """The transform step that rejected the most records (Arrow group-by, no per-row Python)."""
    data = _rejected(run_dir)
    if data is None:
        return None
    steps = data.to_table(columns=["step"], filter=pc.field("stage") == "transform")
    counts = steps.group_by("step").aggregate([("step", "count")]).sort_by([("step_count", "descending")])
    return counts["step"][0].as_py() if counts.num_rows else None


def _step_hint(step: str) -> str | None:
    """The step's parameters whose choices include ``reject``: the ones that keep records."""
    if step not in STEPS:
        return None
    model = STEPS[step][0]
    keep = []
    for name, info in model.model_fields.items():
        choices = getattr(info.annotation, "__args__", ())
        if "reject" in choices:
            others = "|".join(str(c) for c in choices if c != "reject")
            keep.append(f"`{step}:{name}={others}`")
    if not keep:
        return f"see what `{step}` accepts in docs/transforms.md"
    return f"to keep them, set {' or '.join(keep)} (docs/transforms.md)"


def _format_hint(job: Job) -> str | None:
    """Which other format the rejected records look like, from a sample of their text or the file."""
    data = _rejected(job.run_dir)
    given = {f.format for f in job.files}
    fits: list[str] = []
    if data is not None:
        sample = data.head(SAMPLE, columns=["input"], filter=pc.field("input").is_valid())
        lines = [s.encode() for s in sample["input"].to_pylist()]
        fits = _fitting_formats(lines, given)
    whole = ""
    if not fits:  # a pretty-printed JSON file: its lines are not records, the whole file may be
        local = [Path(f.url) for f in job.files if Path(f.url).is_file()]
        # (JSON arrays and documents are read as such: only a file read as JSON Lines can be one)
        lines = {Path(f.url) for f in job.files if f.container == "jsonl"}
        documents = [p.name for p in local if p in lines and _one_json_document(p)]
        if documents:
            whole = f"{documents[0]} is one JSON document, not one record per line (JSON Lines)"
        found = {detect_source(p) for p in local}
        fits = sorted(s for s in found if s is not None and s not in given)
    if not fits:
        return whole or None
    if whole:
        whole += "; "
    names = " or ".join(f"`{f}`" for f in fits)
    tries = " or ".join(f"`--from {f}`" for f in fits)
    auto = " or `--from auto`" if any(f not in WIRE_FORMATS for f in fits) else ""
    return f"{whole}they look like {names} records: try {tries}{auto} (a job file: `format = \"{fits[0]}\"`)"


def _one_json_document(path: Path) -> bool:
    """Whether the file (up to 64 MiB; bigger ones are not checked) parses as one JSON value."""
    if path.stat().st_size > 64 << 20:
        return False
    try:
        orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:
        return False
    return True


def _fitting_formats(lines: list[bytes], given: set[str]) -> list[str]:
    """The wire formats that decode every line, else the one source every line's sniffer names."""
    if not lines:
        return []
    fits = [f for f in WIRE_FORMATS if f not in given and not decode_lines(lines, f).rejected]
    if fits:
        return fits
    names = set()
    for raw in lines:
        try:
            names.add(row_source(orjson.loads(raw)))
        except orjson.JSONDecodeError:
            return []
    return [n for n in names if n is not None and n not in given] if len(names) == 1 else []
