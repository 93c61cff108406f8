"""HF / ShareGPT rows as the source of an API encoder (Chat, Responses, Anthropic).

The dataset formats hold what the API formats need in other places:

* **call ids**: ShareGPT has none (an ``observation`` answers the oldest unanswered
  ``function_call``), and HF rows made from ShareGPT have none either. A call without an id gets one
  generated from the record (``generated_id``, reported on the call), and its output the same id
  (:mod:`pipeline.encoders.call_ids`; reported on an HF tool message, which comes back with it).
* **arguments**: an HF call's ``function.arguments`` is an object, stored as its compact JSON text;
  an Arrow-backed dataset may hold a Chat-style string instead (kept in extra_json), which is used
  as the arguments text as it is. A ShareGPT ``function_call`` value that is not ``{name,
  arguments}`` JSON has no call to make: it is sent as arguments text ``{"_raw_arguments": value}``.
* **tool names**: HF tool messages carry the tool ``name``; the API formats name the call only, and
  the way back to HF takes the name from the call, so only a name that differs from its call's is a
  loss (``name``).
* **tools**: ``[{"type": "function", "function": schema}]`` (HF) or bare schemas (ShareGPT, whose
  string the canonical column already holds parsed): :func:`function_schemas` gives bare schemas.

==================  =========================================  ============================
source              target                                      loss
==================  =========================================  ============================
ShareGPT call       ``call_id`` ``call_3f…`` (and its output)   ``generated_id``
HF string args      ``arguments`` = that string                  ``argument_string`` (HF way
                                                                 back makes it an object)
HF tool ``name``    dropped (the call has the name)              ``name`` only if it differs
==================  =========================================  ============================
"""

from __future__ import annotations

from typing import Any

import orjson

from pipeline.encoders import to_hf
from pipeline.encoders._context import Ctx, item_ptr
from pipeline.encoders.call_ids import CallIds
from pipeline.formats import hf
from pipeline.formats._common import ConversationView
from pipeline.losses import pointer
from pipeline.schema import FORM_STRING

DATASETS = frozenset(("hf", "sharegpt"))


class DatasetCalls(CallIds):
    """Call ids (:class:`CallIds`) and tool names for the calls and outputs of one dataset row."""

    def output_name(self, i: int) -> None:
        """Report an HF tool message ``name`` the way back would not give back (it takes the name
        of the paired call)."""
        v = self.ctx.v
        name = v.name[i]
        call = self.pairs.get(i)
        if name is not None and (call is None or v.name[call] != name):
            self.ctx.lose(item_ptr(self.ctx, i) + "/name", "name", "the tool message name has no slot")


def arguments(ctx: Ctx, i: int) -> str | None:
    """The arguments text of call ``i`` from a dataset row (see the module docstring)."""
    v = ctx.v
    if ctx.source == "hf" and v.arguments[i] is None:
        raw = hf.string_arguments(ctx.extra(i))
        if raw is not None:
            ctx.lose(to_hf.field_ptr(ctx, i, "arguments"), "argument_string",
                     "a string of arguments comes back to HF as an object")  # fmt: skip
            return raw
    if ctx.source == "sharegpt" and v.name[i] is None:
        value = v.content.text[v.content_off[i]] if v.content_form[i] == FORM_STRING else ""
        ctx.lose(to_hf.content_ptr(ctx, i), "argument_string", "a function_call value that is not a call")
        return orjson.dumps({to_hf.RAW_ARGUMENTS: value}).decode()
    return v.arguments[i]


def function_tools(ctx: Ctx) -> list[dict[str, Any]] | None:
    """The row's tools as Chat-style function tools (None when it has no ``tools``)."""
    schemas = to_hf.function_schemas(ctx)
    if schemas is None:
        return None
    to_hf.tools_kept(ctx, schemas)
    out = []
    for k, fn in enumerate(schemas):
        path = pointer("tools", k, "function") if ctx.source == "hf" else "/tools"
        # Keys beside name/description/parameters/strict (e.g. a stray "required") have no slot
        # in Chat or Responses function definitions; reported in the source's key order.
        for key in fn:
            if key not in FUNCTION_KEYS:
                ctx.lose(path + (pointer(key) if ctx.source == "hf" else ""), "tools", f"'{key}' has no slot")
        out.append({"type": "function", "function": {k2: fn[k2] for k2 in fn if k2 in FUNCTION_KEYS}})
    return out


FUNCTION_KEYS = ("name", "description", "parameters", "strict")


def call_extra_keys(ctx: Ctx, i: int) -> None:
    """Unmodelled keys of a dataset call (an HF string ``arguments`` is used, not lost)."""
    extra = ctx.extra(i)
    base = item_ptr(ctx, i)
    fn = extra.pop("function", None)
    if isinstance(fn, dict):
        for key in fn:
            if not (key == "arguments" and isinstance(fn[key], str)):
                ctx.lose(base + "/function/" + key, "unknown_field", f"'{key}' has no slot")
    for key in extra:
        ctx.lose(base + "/" + key, "unknown_field", f"'{key}' has no slot")


def _without_nulls(x: Any) -> Any:
    """An ``extra_json`` text without its null-valued keys (None when none is left)."""
    if x is None:
        return None
    d = orjson.loads(x)
    kept = {k: v for k, v in d.items() if v is not None}
    if len(kept) == len(d):
        return x
    return orjson.dumps(kept) if kept else None


def null_as_absent(view: ConversationView, r: int) -> None:
    """Forget the explicit nulls of dataset row ``r`` of ``view`` (in place), before it is converted
    to another format.

    A dataset's rows share one schema: ``datasets.Dataset.to_json`` (and Arrow, Parquet, pandas)
    writes a key a row does not have as ``null`` (``"tool_calls": null`` on every message without
    calls, ``"images": null`` on a text-only row). Such a null says nothing, so dropping it is not a
    loss. The canonical table still records it (an HF -> HF conversion writes it back).
    """
    view.nulls[r] = None
    view.extra[r] = _without_nulls(view.extra[r])
    v, c = view.items, view.items.content
    for i in range(view.items_off[r], view.items_off[r + 1]):
        v.nulls[i] = None
        v.extra[i] = _without_nulls(v.extra[i])
        for j in range(v.content_off[i], v.content_off[i + 1]):
            c.nulls[j] = None
            c.extra[j] = _without_nulls(c.extra[j])
