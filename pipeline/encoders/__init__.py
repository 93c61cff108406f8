"""Canonical table -> any wire format, with a per-record loss report.

Same-format rows use the exact codecs in :mod:`pipeline.formats` (no loss by construction);
other rows go through the target's cross-format encoder, which reports every loss.

>>> from pipeline.formats import decode_records
>>> t = decode_records([{"input": [{"type": "reasoning", "id": "rs_1", "summary": []},
...                                {"role": "user", "content": "hi"}]}], "responses").table
>>> [out] = convert_table(t, "chat")
>>> out.record, [loss.kind for loss in out.losses]
({'messages': [{'role': 'user', 'content': 'hi'}]}, ['reasoning'])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import orjson
import pyarrow as pa

from pipeline.encoders import (
    from_dataset,
    response_objects,
    to_anthropic,
    to_chat,
    to_hf,
    to_responses,
    to_sharegpt,
)
from pipeline.encoders._context import Ctx
from pipeline.encoders.edits import drop_stale_state
from pipeline.encoders.request_fields import model_provider_losses
from pipeline.errors import a_or_an
from pipeline.formats import CODECS, gc_paused
from pipeline.formats._common import ConversationView
from pipeline.losses import Loss

ENCODERS: dict[str, ModuleType] = {
    "chat": to_chat,
    "responses": to_responses,
    "anthropic": to_anthropic,
    "hf": to_hf,
    "sharegpt": to_sharegpt,
}


@dataclass
class Converted:
    """One converted record: the wire record (None when it failed), its losses, or why it failed."""

    record: Any
    losses: list[Loss] = field(default_factory=list)
    error: str | None = None


def _finish(record: Any, as_bytes: bool) -> Any:
    data = orjson.dumps(record)
    return data if as_bytes else orjson.loads(data)


def supported(source: str, target: str, kind: str = "request") -> bool:
    """Can a ``kind`` record (request body or response object) of ``source`` be converted to ``target``?"""
    if kind == "response" and source != target:
        return response_objects.supported(source, target)
    return source == target or target in ENCODERS


def convert_table(table: pa.Table, target: str, *, as_bytes: bool = False) -> list[Converted]:
    """Convert every row of a canonical table to ``target``; a failing row never raises.

    ``record`` is a plain dict, or its JSON text when ``as_bytes`` (the fast path for writers).
    Items edited since decoding lose their stale ids and opaque state first (:mod:`.edits`),
    reported as ``edited`` losses, whatever the target. A request whose model is another
    provider's than the target's gets a ``model_provider`` loss last (:mod:`.request_fields`).
    """
    table, edited = drop_stale_state(table)
    with gc_paused():
        view = ConversationView(table)
        same: Callable[[ConversationView, int], Any] = CODECS[target].encode
        cross = ENCODERS.get(target)
        out: list[Converted] = []
        for r in range(view.n):
            try:
                if view.source_format[r] == target:
                    out.append(Converted(_finish(same(view, r), as_bytes)))
                elif view.record_kind[r] != "request":
                    if not response_objects.supported(view.source_format[r], target):
                        out.append(
                            Converted(
                                None,
                                error=f"converting {a_or_an(view.source_format[r])} response object to "
                                f"{target} is not supported yet; convert request bodies",
                            )
                        )
                        continue
                    ctx = Ctx(view, r)
                    out.append(Converted(_finish(response_objects.encode(ctx, target), as_bytes), ctx.losses))
                elif cross is None:
                    out.append(
                        Converted(
                            None, error=f"converting {view.source_format[r]} to {target} is not supported yet"
                        )
                    )
                else:
                    if view.source_format[r] in from_dataset.DATASETS:
                        from_dataset.null_as_absent(view, r)
                    ctx = Ctx(view, r)
                    out.append(Converted(_finish(cross.encode(ctx), as_bytes), ctx.losses))
            except (ValueError, KeyError, TypeError) as e:  # a bad row is reported, not fatal
                out.append(Converted(None, error=f"{type(e).__name__}: {e}"))
        for e in edited:
            ctx = Ctx(view, e.row)
            dropped = ", ".join(f"{k} {v!r}" if k == "id" else k for k, v in e.dropped.items())
            loss = Loss(
                ctx.item_ptr(ctx.start + e.index),
                "edited",
                f"content changed since decoding; dropped {dropped}",
            )
            out[e.row].losses.insert(0, loss)
        # a model another provider's API will refuse: the rule encode_rows applies to its native rows
        model = model_provider_losses(table, target).to_pylist()
        for m in model:
            if out[m["row"]].error is None:
                out[m["row"]].losses.append(Loss(m["path"], m["kind"], m["detail"]))
        return out
