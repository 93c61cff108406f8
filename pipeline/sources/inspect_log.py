"""inspect_ai eval logs: JSON (``logs/<time>_<task>.json``) and the zipped ``.eval`` form.

A file that starts like a zip archive is read as ``.eval`` (``pipeline/sources/inspect_eval.py``:
header and ``samples/*.json`` members); every sample then goes through the same code as here.

One Chat-format conversation per sample, from ``samples[].messages`` (inspect's ChatMessage list).
Every ``attachment://<hex>`` string is replaced by ``samples[i].attachments[<hex>]`` first (an
unknown reference stays as it is and is counted as ``unresolved_attachments``).

=============================  ==============================================================
inspect ChatMessage            Chat message
=============================  ==============================================================
``role``, ``content`` (str)    ``role``, ``content``
content ``text`` part          ``{"type": "text", "text"}``
content ``image`` part         ``{"type": "image_url", "image_url": {"url", "detail"?}}``
other content parts            kept as they are (the encoders report what they cannot carry)
``tool_calls[j]``              ``{"id", "type", "function": {"name": function, "arguments":
                               json.dumps(arguments)}}`` -- the text inspect itself sends back
``tool_call_id`` (tool)        ``tool_call_id``
=============================  ==============================================================

Other message keys (``id``, ``source``, ``model``, ``metadata``, a tool message's ``function`` and
``error``, a tool call's ``parse_error``/``view``/...) go to ``meta_json.messages`` as
``{"index", ...keys}``. ``model`` is the first assistant message's model, else ``eval.model``.

Provenance: ``session_id`` = ``eval.eval_id``, ``sample_id`` = the sample ``id`` (``epoch`` in
meta), ``score`` = the first scorer's value as a number (``C``/``I``/``P``/``N`` -> 1/0/0.5/0,
booleans -> 1/0), ``started_at``/``ended_at`` = the sample's ``started_at``/``completed_at`` or its
first/last event timestamp. ``meta_json`` keeps ``eval`` (task, run id, model, created, ...), every
score, and every other sample key except ``messages``, ``attachments`` (resolved), ``events``
and ``events_data`` (see below) and ``output.choices`` (the last assistant message again).

Option ``model_calls=True`` also yields the raw model calls of the sample's ``model`` events:
``call.request`` as a request conversation and ``call.response`` as a response conversation, each
in its own wire format (Chat, Responses or Anthropic, from the body's shape), attachments resolved
(newer inspect pools request messages in ``events_data.calls``: a ``call_refs`` request gets its
``call_key`` list back from the pool first; a bad reference rejects that call),
``meta_json.call`` = ``{"event": index, "part": "request"|"response"}``.
"""

from __future__ import annotations

import json
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
)
from pipeline.sources.inspect_eval import (
    DEFAULT_MAX_ARCHIVE_BYTES,
    DEFAULT_MAX_MEMBER_BYTES,
    is_zip,
    read_eval,
)

NAME = "inspect-log"
OPTIONS: dict[str, type] = {"model_calls": bool, "max_member_bytes": int, "max_archive_bytes": int}

ATTACHMENT = "attachment://"
_SCORE_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_MESSAGE_KEYS = frozenset(("role", "content", "tool_calls", "tool_call_id"))
_CALL_KEYS = frozenset(("id", "function", "arguments", "type"))
# events_data: the message / call pools newer inspect condenses events into (part of the events)
_DROPPED_SAMPLE_KEYS = frozenset(("messages", "attachments", "events", "events_data"))


def sniff(obj: Any) -> bool:
    return type(obj) is dict and "eval" in obj and "version" in obj and ("samples" in obj or "status" in obj)


def resolve(value: Any, attachments: dict[str, Any], unresolved: list[int]) -> Any:
    """``value`` with every ``attachment://<hex>`` string replaced by its attachment text."""
    if type(value) is str:
        if value.startswith(ATTACHMENT):
            got = attachments.get(value[len(ATTACHMENT) :])
            if type(got) is str:
                return got
            unresolved[0] += 1
        return value
    if type(value) is list:
        return [resolve(v, attachments, unresolved) for v in value]
    if type(value) is dict:
        return {k: resolve(v, attachments, unresolved) for k, v in value.items()}
    return value


def score_of(scores: Any) -> float | None:
    """The first scorer's value as a number (inspect's CORRECT/INCORRECT/PARTIAL/NOANSWER letters)."""
    if type(scores) is not dict or not scores:
        return None
    first = next(iter(scores.values()))
    value = first.get("value") if type(first) is dict else None
    if type(value) is bool:
        return 1.0 if value else 0.0
    if type(value) in (int, float):
        return float(value)
    if type(value) is str:
        return _SCORE_LETTERS.get(value)
    return None


def _content(content: Any) -> Any:
    if type(content) is not list:
        return content
    out = []
    for part in content:
        if type(part) is dict and part.get("type") == "text" and set(part) <= {"type", "text"}:
            out.append(part)
        elif type(part) is dict and part.get("type") == "image" and set(part) <= {"type", "image", "detail"}:
            url: dict[str, Any] = {"url": part.get("image")}
            if "detail" in part:
                url["detail"] = part["detail"]
            out.append({"type": "image_url", "image_url": url})
        else:
            out.append(part)
    return out


def to_chat(messages: list[Any]) -> tuple[list[Any], list[dict[str, Any]], str | None]:
    """inspect ChatMessages -> Chat messages, the keys Chat has no place for, the first model."""
    out: list[Any] = []
    extras: list[dict[str, Any]] = []
    model = None
    for i, m in enumerate(messages):
        if type(m) is not dict:
            out.append(m)  # the chat codec rejects it with its path
            continue
        msg: dict[str, Any] = {"role": m.get("role")}
        if "content" in m:
            msg["content"] = _content(m["content"])
        if m.get("tool_call_id") is not None:
            msg["tool_call_id"] = m["tool_call_id"]
        calls = m.get("tool_calls")
        call_extras = []
        if type(calls) is list and calls:
            msg["tool_calls"] = []
            for tc in calls:
                if type(tc) is not dict:
                    msg["tool_calls"].append(tc)
                    continue
                args = tc.get("arguments")
                msg["tool_calls"].append(
                    {
                        "id": tc.get("id"),
                        "type": tc.get("type", "function"),
                        "function": {
                            "name": tc.get("function"),
                            "arguments": args if type(args) is str else json.dumps(args),
                        },
                    }
                )
                call_extras.append({k: v for k, v in tc.items() if k not in _CALL_KEYS})
        extra = {k: v for k, v in m.items() if k not in _MESSAGE_KEYS}
        if "tool_calls" in m and "tool_calls" not in msg:
            extra["tool_calls"] = m["tool_calls"]  # null or [] : nothing to call
        if "tool_call_id" in m and "tool_call_id" not in msg:
            extra["tool_call_id"] = m["tool_call_id"]
        if any(call_extras):
            extra["tool_call_extras"] = call_extras
        if extra:
            extras.append({"index": i, **extra})
        if model is None and m.get("role") == "assistant" and type(m.get("model")) is str:
            model = m["model"]
        out.append(msg)
    return out, extras, model


def wire_format(body: dict[str, Any], part: str, provider_model: Any = None) -> str | None:
    """The wire format of a raw model call body, from its shape (and the event's ``provider/model``)."""
    anthropic = type(provider_model) is str and provider_model.startswith("anthropic/")
    if part == "request":
        if "input" in body:
            return "responses"
        if "messages" in body:
            return "anthropic" if anthropic or "system" in body else "chat"
        return None
    if "choices" in body:
        return "chat"
    if body.get("object") == "response" or "output" in body:
        return "responses"
    if body.get("type") == "message" and "content" in body:
        return "anthropic"
    return None


def read(path: Path, **options: Any) -> Iterator[SourceResult]:
    """Read one eval log (JSON or ``.eval``): one conversation per sample (plus its model calls)."""
    check_options(NAME, options, OPTIONS)
    model_calls = options.get("model_calls", False)
    max_member_bytes = options.get("max_member_bytes", DEFAULT_MAX_MEMBER_BYTES)
    max_archive_bytes = options.get("max_archive_bytes", DEFAULT_MAX_ARCHIVE_BYTES)
    b = SourceBuilder(NAME, path)
    with gc_paused():
        if is_zip(path):
            yield from _read_eval(path, b, model_calls, max_member_bytes, max_archive_bytes)
        else:
            log = load_json(path, b, "samples")
            if log is not ...:
                _read_log(b, log, model_calls)
    yield b.result(final=True)


def _read_eval(
    path: Path, b: SourceBuilder, model_calls: bool, max_bytes: int, max_archive_bytes: int
) -> Iterator[SourceResult]:
    """Read one ``.eval`` archive's samples into ``b``, yielding full batches (the caller yields the last)."""
    meta: dict[str, Any] | None = None
    for log, number, name, sample in read_eval(path, b, max_bytes, max_archive_bytes):
        if meta is None:  # the same header for every sample of the archive
            meta = eval_meta_of(log.get("eval") if type(log.get("eval")) is dict else {}, log.get("status"))
            session = session_of(log)
        read_sample(b, number, sample, session, meta, model_calls, where=name)
        out = batched(b)
        if out is not None:
            yield out


def eval_meta_of(ev: dict[str, Any], status: Any) -> dict[str, Any]:
    """The eval spec keys a sample's provenance keeps (``meta_json.eval``)."""
    meta = {k: ev[k] for k in ("eval_id", "run_id", "task", "task_id", "model", "created") if k in ev}
    meta["status"] = status
    return meta


def session_of(log: dict[str, Any]) -> str | None:
    ev = log.get("eval")
    eid = ev.get("eval_id") if type(ev) is dict else None
    return eid if type(eid) is str else None


def _read_log(b: SourceBuilder, log: Any, model_calls: bool) -> None:
    if type(log) is not dict or type(log.get("eval")) is not dict:
        b.reject(1, log, "broken envelope: an inspect log is an object with an 'eval' object")
        return
    eval_meta = eval_meta_of(log["eval"], log.get("status"))
    samples = log.get("samples")
    if samples is None or samples == []:  # as an .eval archive without sample members
        b.counts["skipped:log_without_samples"] += 1
        return
    if type(samples) is not list:
        b.reject(1, {"samples": samples}, "broken envelope: 'samples' is not a list")
        return
    session = session_of(log)
    for number, sample in iter_records(samples, b, "samples_read"):
        read_sample(b, number, sample, session, eval_meta, model_calls)


def _sample_times(sample: dict[str, Any]) -> tuple[str | None, str | None]:
    start, end = sample.get("started_at"), sample.get("completed_at")
    events = sample.get("events")
    if type(events) is list and events:
        if type(start) is not str and type(events[0]) is dict:
            start = events[0].get("timestamp")
        if type(end) is not str and type(events[-1]) is dict:
            end = events[-1].get("timestamp")
    return (start if type(start) is str else None), (end if type(end) is str else None)


def read_sample(
    b: SourceBuilder,
    number: int,
    sample: Any,
    session: str | None,
    eval_meta: dict[str, Any],
    model_calls: bool,
    where: str | None = None,
) -> None:
    """One sample (the ``number``-th, 1-based) -> its conversation (and model calls); ``where`` names it
    in reject reasons (default ``samples[<number - 1>]``; a ``.eval`` member name)."""
    where = where or f"samples[{number - 1}]"
    if type(sample) is not dict or type(sample.get("messages")) is not list:
        b.reject(number, sample, f"broken envelope: {where} has no 'messages' list")
        return
    attachments = sample.get("attachments") if type(sample.get("attachments")) is dict else {}
    unresolved = [0]
    messages = resolve(sample["messages"], attachments, unresolved)
    chat, extras, model = to_chat(messages)
    record: dict[str, Any] = {"messages": chat}
    model = model or eval_meta.get("model")
    if type(model) is str:
        record["model"] = model
    meta: dict[str, Any] = {"eval": eval_meta}
    for k, v in sample.items():
        if k in _DROPPED_SAMPLE_KEYS:
            continue
        if k == "output" and type(v) is dict:
            v = {ok: ov for ok, ov in v.items() if ok != "choices"}
        meta[k] = v
    if extras:
        meta["messages"] = extras
    if unresolved[0]:
        meta["unresolved_attachments"] = unresolved[0]
        b.counts["unresolved_attachments"] += unresolved[0]
    sid = sample.get("id")
    sample_id = sid if type(sid) is str else (str(sid) if type(sid) is int else None)
    start, end = _sample_times(sample)
    b.add(
        "chat",
        record,
        line=number,
        anchor=f"sample {number}".encode(),
        session_id=session,
        sample_id=sample_id,
        started_at=start,
        ended_at=end,
        score=score_of(sample.get("scores")),
        meta=meta,
        reject_value={"sample": number - 1, "id": sid, "messages": sample["messages"]},
    )
    if model_calls:
        _read_calls(b, number, sample, attachments, session, sample_id, where)


def _read_calls(
    b: SourceBuilder,
    number: int,
    sample: dict[str, Any],
    attachments: dict[str, Any],
    session: str | None,
    sample_id: str | None,
    where: str,
) -> None:
    events = sample.get("events")
    if type(events) is not list:
        return
    pool = sample.get("events_data")
    calls_pool = pool.get("calls") if type(pool) is dict else None
    for e, event in enumerate(events):
        if type(event) is not dict or event.get("event") != "model":
            continue
        call = event.get("call")
        if type(call) is not dict:
            b.counts["skipped:model_event_without_call"] += 1
            continue
        for part in ("request", "response"):
            body = call.get(part)
            if type(body) is not dict:
                continue
            b.counts[f"model_calls:{part}"] += 1
            if part == "request" and "call_refs" in call:
                body = _expand_call_refs(body, call, calls_pool)
                if type(body) is str:
                    b.reject(number, call, f"{where}.events[{e}].call.call_refs: {body}")
                    continue
            body = resolve(body, attachments, [0])
            fmt = wire_format(body, part, event.get("model"))
            if fmt is None:
                b.reject(number, body, f"{where}.events[{e}].call.{part}: unknown wire format")
                continue
            b.add(
                fmt,
                body,
                line=number,
                anchor=f"sample {number} event {e} {part}".encode(),
                session_id=session,
                sample_id=sample_id,
                started_at=event.get("timestamp") if type(event.get("timestamp")) is str else None,
                meta={"call": {"event": e, "part": part, "model": event.get("model")}},
            )


def _expand_call_refs(body: dict[str, Any], call: dict[str, Any], pool: Any) -> dict[str, Any] | str:
    """A condensed request with its messages put back; a string says why it cannot be.

    Recent inspect (0.3.285 checked) pools call messages in ``sample.events_data.calls``:
    ``call_refs`` is a list of ``[start, end_exclusive]`` ranges into that pool and ``call_key`` the
    request key they came from (default ``messages``).
    """
    refs = call.get("call_refs")
    if refs is None:
        return body
    if type(pool) is not list:
        return "the sample has no events_data.calls pool"
    msgs: list[Any] = []
    for r in refs if type(refs) is list else [refs]:
        if type(r) is not list or len(r) != 2 or not all(type(x) is int for x in r):
            return f"expected [start, end] pairs, got {r!r}"
        start, end = r
        if not 0 <= start <= end <= len(pool):
            return f"range {r} outside the pool of {len(pool)} messages"
        msgs.extend(pool[start:end])
    key = call.get("call_key") if type(call.get("call_key")) is str else "messages"
    return {key: msgs, **{k: v for k, v in body.items() if k != key}}
