"""``summary.json``: what a run did, added up from the manifest's shard entries.

Built from the manifest, so a resumed run reports the whole job, not just the shards it ran.
"""

from __future__ import annotations

import platform
from collections import Counter
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pipeline import codec
from pipeline.jobs.files import SKIPPED
from pipeline.jobs.resolve import Job, chatlake_version


def _version(pkg: str) -> str:
    try:
        return version(pkg)
    except PackageNotFoundError:
        return "not installed"


def versions() -> dict[str, str]:
    return {
        "chatlake": chatlake_version(),
        "python": platform.python_version(),
        **{p: _version(p) for p in ("pyarrow", "polars", "duckdb", "orjson")},
    }


def summarize(
    job: Job, shards: list[dict[str, Any]], partitions: list[dict[str, Any]] | None = None, **run: Any
) -> dict[str, Any]:
    """The run summary (docs/run-layout.md); ``run`` adds run_id, timestamps, timings, status, ...

    ``partitions``: the stage-1 entries of a two-stage job (engine/partition.py). Then what was
    read (by input, blank lines, source counts, codec, fallbacks) comes from them, and what was
    written, rejected and lost from ``shards`` (the partitions, which read the stage-1 files).
    """
    by_stage: Counter[str] = Counter()
    by_reason: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    additions: Counter[str] = Counter()
    source_counts: Counter[str] = Counter()
    fallback: Counter[str] = Counter()
    codecs: Counter[str] = Counter()
    inputs: dict[tuple[str, str], int] = {(f.url, f.format): 0 for f in job.files}
    names = {f.url: f.name for f in job.files if f.name}
    skipped = {f.url: f.options["reason"] for f in job.files if f.container == SKIPPED}
    detected: dict[tuple[str, str], Counter[str]] = {}
    read = written = rejected = lossy = blank = dropped = 0
    dropped_by: Counter[str] = Counter()
    for s in sorted(shards, key=lambda s: s["id"]):
        read += s["read"]
        written += s["written"]
        rejected += s["rejected"]
        dropped += s.get("dropped", 0)
        dropped_by.update(s.get("dropped_by_reason", {}))
        lossy += s["records_with_losses"]
        by_stage.update(s["rejected_by_stage"])
        by_reason.update(s["rejected_by_reason"])
        kinds.update(s["losses_by_kind"])
        additions.update(s.get("additions_by_kind", {}))  # .get: manifests from before additions
    for s in sorted(shards if partitions is None else partitions, key=lambda s: s["id"]):
        blank += s["blank_lines"]
        source_counts.update(s.get("source_counts", {}))
        # .get: manifests written before the codec was recorded resume without these keys
        fallback.update(s.get("native_fallback", {}))
        if "codec" in s:
            codecs[s["codec"]] += 1
        key = (s["input"]["url"], s["input"]["format"])
        inputs[key] = inputs.get(key, 0) + s["read"]
        if "detected" in s:
            detected.setdefault(key, Counter()).update(s["detected"])
    active = codec.status()
    return {
        "job": job.name,
        "run_id": run.pop("run_id", None),
        "started_at": run.pop("started_at", None),
        "finished_at": run.pop("finished_at", None),
        "status": run.pop("status", "ok"),
        "run_dir": job.run_url or str(job.run_dir),
        "engine": job.engine,
        "inputs": [
            {
                "path": names.get(p, p),
                "format": f,
                "read": n,
                **({"detected": dict(sorted(detected[p, f].items()))} if (p, f) in detected else {}),
                # a file no reader recognises, rejected whole (stage detect): why
                **({"skipped": skipped[p]} if p in skipped else {}),
            }
            for (p, f), n in inputs.items()
        ],
        "read": read,
        "written": written,
        "rejected": rejected,
        # a job with a grouping step: records it dropped (dropped/); read == written + rejected + dropped
        **({"dropped": dropped, "dropped_by_reason": dict(dropped_by.most_common())} if job.grouping else {}),
        "blank_lines": blank,
        "rejected_by_stage": dict(by_stage.most_common()),
        "rejected_by_reason": dict(by_reason.most_common()),
        "losses_by_kind": dict(kinds.most_common()),
        "records_with_losses": lossy,
        "additions_by_kind": dict(additions.most_common()),
        **({"source_counts": dict(sorted(source_counts.items()))} if source_counts else {}),
        "codec": "native" if active.native else "python",
        "codec_detail": active.describe(),
        "codec_shards": dict(sorted(codecs.items())),
        "native_fallback": sum(fallback.values()),
        "fallback_by_reason": dict(fallback.most_common()),
        "steps": job.step_names,
        "target": job.target,
        "shards": len(shards),
        **run,
        "versions": versions(),
    }
