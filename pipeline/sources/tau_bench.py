"""tau-bench trajectories: a JSON list of ``{task_id, reward, info, traj, trial}`` records.

``traj`` is a Chat Completions message list (system policy, simulated user, assistant with
``tool_calls``, ``tool`` results with ``name``), decoded as it is by the chat codec: one
conversation per record. Provenance: ``sample_id`` = ``task_id``, ``score`` = ``reward``;
``meta_json`` holds ``trial``, ``info`` (task, source, user_cost, reward_info) and every other key
except ``traj``. ``source_line`` is the 1-based position of the record in the list.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.sources._base import (
    SourceBuilder,
    SourceResult,
    batched,
    check_options,
    gc_paused,
    iter_records,
    load_json,
    records_of,
)

NAME = "tau-bench"
OPTIONS: dict[str, type] = {}


def sniff(obj: Any) -> bool:
    return type(obj) is dict and type(obj.get("traj")) is list and "task_id" in obj


def read(path: Path, **options: Any) -> Iterator[SourceResult]:
    """Read one trajectories file: one conversation per record."""
    check_options(NAME, options, OPTIONS)
    b = SourceBuilder(NAME, path)
    with gc_paused():
        records = records_of(load_json(path, b), b, "trajectory records")
        for number, rec in iter_records(records, b, "records_read"):
            if type(rec) is not dict or type(rec.get("traj")) is not list:
                b.reject(number, rec, f"broken envelope: record {number} has no 'traj' list")
                continue
            task = rec.get("task_id")
            reward = rec.get("reward")
            meta = {k: v for k, v in rec.items() if k not in ("traj", "task_id", "reward")}
            meta["task_id"], meta["reward"] = task, reward
            b.add(
                "chat",
                {"messages": rec["traj"]},
                line=number,
                anchor=b"record",
                sample_id=None if task is None else str(task),
                score=float(reward) if type(reward) in (int, float) else None,
                meta=meta,
                reject_value=rec,
            )
            out = batched(b)
            if out is not None:
                yield out
    yield b.result(final=True)
