"""Kiln task runs (``task_run.kiln`` files: one ``TaskRun`` JSON object, or a JSON list of them).

A run's ``trace`` is the OpenAI Chat message list Kiln sent to and got from the model; it is decoded
by the chat codec, one conversation per run. Older runs store ``trace`` as a JSON *string* of that
list; it is parsed (``meta_json.trace_was_string``). A run without a trace gives the two turns Kiln
recorded, ``input`` (user) and ``output.output`` (assistant), counted as ``built_from_input_output``.

Provenance: ``session_id`` = ``id``, ``sample_id`` = ``parent_task_run_id``, ``started_at`` =
``created_at``, ``score`` = ``output.rating.value`` when it is a number, ``model`` (column) =
``output.source.properties.model_name``; ``meta_json`` holds every other key of the run.

No Kiln file is in the shared corpus: the format follows Kiln's ``kiln_ai.datamodel.TaskRun``
(``trace: list[ChatCompletionMessageParam] | None``) and the tests use hand-made runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.formats import RecordError
from pipeline.formats import _loads as loads_record
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

NAME = "kiln"
OPTIONS: dict[str, type] = {}


def sniff(obj: Any) -> bool:
    return type(obj) is dict and (
        obj.get("model_type") == "task_run" or {"input", "output", "trace"} <= obj.keys()
    )


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if type(d) is not dict:
            return None
        d = d.get(k)
    return d


def read(path: Path, **options: Any) -> Iterator[SourceResult]:
    """Read one Kiln file: one conversation per task run."""
    check_options(NAME, options, OPTIONS)
    b = SourceBuilder(NAME, path)
    with gc_paused():
        for number, run in iter_records(records_of(load_json(path, b), b, "task runs"), b, "records_read"):
            _read_run(b, number, run)
            out = batched(b)
            if out is not None:
                yield out
    yield b.result(final=True)


def _read_run(b: SourceBuilder, number: int, run: Any) -> None:
    if type(run) is not dict:
        b.reject(number, run, "broken envelope: a task run is an object")
        return
    meta = {k: v for k, v in run.items() if k != "trace"}
    trace = run.get("trace")
    if type(trace) is str:
        try:
            trace = loads_record(trace.encode())
        except RecordError as e:
            b.reject(number, run, f"$.trace: legacy string trace: {e}")
            return
        except ValueError as e:
            b.reject(number, run, f"$.trace: legacy string trace is not JSON: {e}")
            return
        meta["trace_was_string"] = True
    if trace is None:
        output = _get(run, "output", "output")
        if type(run.get("input")) is not str or type(output) is not str:
            b.reject(number, run, "broken envelope: no trace, and no string input and output.output")
            return
        trace = [{"role": "user", "content": run["input"]}, {"role": "assistant", "content": output}]
        b.counts["built_from_input_output"] += 1
    if type(trace) is not list:
        b.reject(number, run, "$.trace: expected a message list")
        return
    record: dict[str, Any] = {"messages": trace}
    model = _get(run, "output", "source", "properties", "model_name")
    if type(model) is str:
        record["model"] = model
    rating = _get(run, "output", "rating", "value")
    rid, parent, created = run.get("id"), run.get("parent_task_run_id"), run.get("created_at")
    b.add(
        "chat",
        record,
        line=number,
        anchor=b"run",
        session_id=rid if type(rid) is str else None,
        sample_id=parent if type(parent) is str else None,
        started_at=created if type(created) is str else None,
        score=float(rating) if type(rating) in (int, float) else None,
        meta=meta,
        reject_value=run,
    )
