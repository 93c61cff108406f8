"""Call ids for a record whose calls and outputs have none (ShareGPT rows, id-less HF rows,
Anthropic ``tool_use`` / ``tool_result`` blocks recorded without ids, and any source's id-less calls
on their way to Anthropic, which requires ``tool_use`` ids): the one scheme every encoder uses.

Chat and Responses pair a tool output with its call by id, and the SDKs require the id, so a call
without one gets an id generated from the record (:meth:`Ctx.generated_id`: the same record always
gets the same ids), and an output without one the id of the call it answers: the oldest
unanswered call before it (pairing by position, as ShareGPT does), where a call is answered by an
output with its id anywhere in the record, or by an earlier id-less output (:func:`pair_outputs`).
Both are reported as ``generated_id``; ShareGPT outputs are not (a ShareGPT turn has no slot an id
could come back to). Chat, Responses and Anthropic all use this one rule, for every source, so a
record gets the same ids in every target. HF and ShareGPT rows hold no generated id, but the way
back from them does (:func:`report_way_back`).

==========================================  ================================  ================
source                                      target                            loss
==========================================  ================================  ================
call ``{"name": "f"}`` (no id) at item 3    ``id`` ``call_3f…``               ``generated_id``
the output after it (no ``tool_use_id``)    ``tool_call_id`` ``call_3f…``     ``generated_id``
==========================================  ================================  ================
"""

from __future__ import annotations

from pipeline.encoders._context import CALLS, OUTPUTS, Ctx, item_ptr


def pair_outputs(ctx: Ctx, positional: bool = False) -> dict[int, int]:
    """Output item -> its call item: by call id, or (ShareGPT has no ids; nor, with ``positional``,
    any id-less output) the oldest call before it that no output answers.

    A call whose own output (by id) comes anywhere in the record is not free for an id-less output,
    even when that output comes later: pairing the id-less one with it would give the call two
    outputs, and the way back would keep the wrong one. So outputs with ids are paired first (each
    with the first call of its id before it), then the id-less ones by position among the calls left.
    """
    v = ctx.v
    by_id: dict[str, int] = {}
    out: dict[int, int] = {}
    id_less: list[int] = []
    for i in range(ctx.start, ctx.end):
        t = v.type[i]
        if t in CALLS:
            if v.call_id[i] is not None:
                by_id.setdefault(v.call_id[i], i)
        elif t in OUTPUTS:
            cid = v.call_id[i]
            if cid is None:
                id_less.append(i)
            elif (j := by_id.get(cid)) is not None:
                out[i] = j
    if not id_less or not (positional or ctx.source == "sharegpt"):
        return out
    answered = set(out.values())
    pending: list[int] = []
    outputs = iter(id_less)
    nxt = next(outputs)
    for i in range(ctx.start, ctx.end):
        if i == nxt:
            if pending:
                out[i] = pending.pop(0)
            nxt = next(outputs, -1)
        elif v.type[i] in CALLS and i not in answered:
            pending.append(i)
    return dict(sorted(out.items()))  # in source order: CallIds reports the paired outputs in it


class CallIds:
    """Call ids for the calls and outputs of one record: their own, or generated / paired."""

    def __init__(self, ctx: Ctx, *, way_back: bool = False) -> None:
        """Generate the ids of record ``ctx`` and report them (``way_back``: see :func:`report_way_back`)."""
        v = ctx.v
        call_detail = (
            "the way back from this target gives the call an id" if way_back else "a call without id got one"
        )
        output_detail = (
            "the way back from this target gives the output its call's id (paired by position)"
            if way_back
            else "an output without a call id got its call's id (paired by position)"
        )
        self.ctx = ctx
        self.ids: dict[int, str] = {}
        self.pairs = pair_outputs(ctx, positional=True)
        for i in range(ctx.start, ctx.end):
            if v.type[i] in CALLS and v.call_id[i] is None:
                self.ids[i] = ctx.generated_id("call", i)
                ctx.lose(item_ptr(ctx, i), "generated_id", call_detail)
        for out, call in self.pairs.items():  # in source order: pair_outputs walks the items
            if v.call_id[out] is None:
                self.ids[out] = v.call_id[call] if v.call_id[call] is not None else self.ids[call]
                if ctx.source != "sharegpt":
                    # on the output itself, as for a dropped call id: the id is its link to its call
                    ctx.lose(item_ptr(ctx, out), "generated_id", output_detail)

    def call_id(self, i: int) -> str | None:
        """Item ``i``'s call id: its own, or the generated / paired one."""
        own = self.ctx.v.call_id[i]
        return own if own is not None else self.ids.get(i)

    def needed(self) -> bool:
        """Did any call or output of the record lack an id?"""
        return bool(self.ids)


def report_way_back(ctx: Ctx) -> None:
    """Report an API record's id-less calls and outputs on its way to HF / ShareGPT.

    Those rows have no id for them either, but converted back (:mod:`pipeline.encoders.from_dataset`)
    each id-less call gets a generated id and each id-less output its call's: A -> dataset -> A adds
    ids A did not have, reported (``generated_id``) where a direct conversion reports them.
    """
    if ctx.source not in ("hf", "sharegpt"):
        CallIds(ctx, way_back=True)
