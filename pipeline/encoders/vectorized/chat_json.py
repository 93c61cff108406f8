"""Canonical Chat rows made by :func:`responses_to_chat` -> Chat request JSON text, column at a time.

The text is byte for byte what the per-record path writes (``orjson.dumps`` of the dict
``pipeline.encoders.to_chat.encode`` builds), so a job gives the same files whichever path converted
a row. That fixes the key order, which is ``to_chat``'s, not the Chat codec's:

=====================  ===============================================================
element                keys, in order (optional ones only when present)
=====================  ===============================================================
record                 messages, model, tools, tool_choice, then carried keys in order
tool message           role, tool_call_id, content
other message          role, content, tool_calls
function call          id, type, function {name, arguments}
custom call            id, type, custom {name, input}
text / refusal part    type, text / type, refusal
image part             type, image_url {url, detail}
=====================  ===============================================================

How: every output is a sequence of pieces (literals such as ``{"role":``, escaped strings, the stored
JSON of tools, tool_choice and carried keys). Each record, message, content part and call has a fixed
number of piece slots (a piece left out is the empty literal), and items are stored in output order
(calls right after their message's head, parts in order), so the position of every piece is a
cumulative sum over widths: numpy lays out one index array, and :class:`~._json.Pieces` copies the
bytes once. Strings are escaped as orjson does, and only those with a character to escape.

>>> from pipeline.formats import decode_records
>>> from pipeline.encoders.vectorized import responses_to_chat
>>> t = decode_records([{"input": "hi", "model": "m"}], "responses").table
>>> chat_json(responses_to_chat(t).table).to_pylist()
['{"messages":[{"role":"user","content":"hi"}],"model":"m"}']
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.encoders._context import CALLS
from pipeline.encoders.vectorized._json import Pieces

# Piece slots of each element. A string value is one piece (escaped, without quotes); the literals
# around it are chosen per element with the quotes glued on (none around a null, written ``null``).
_ROW_OPEN = 1  # {"messages":[
_ROW_CLOSE = 9  # ] model, tools, tool_choice, carried keys (literal + value each), }
_HEAD_OPEN = 3  # {"role": ... ,"content": and the content's opening, around the role or tool_call_id
_HEAD_CLOSE = 1  # the content's closing, then } or ,"tool_calls":[
_PART = 3  # separator and prefix, text, suffix
_CALL = 7  # {"id": id ,"type":...{"name": name ,"arguments": args }} (and ]} after the last call)


def _flag(values: pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy, null read as false."""
    return pc.fill_null(values, False).to_numpy(zero_copy_only=False)


def _valid(values: pa.Array) -> np.ndarray:
    return values.is_valid().to_numpy(zero_copy_only=False)


def _lengths(lists: pa.Array) -> np.ndarray:
    """Elements per list, 0 for a null list (as ``flatten`` skips it)."""
    return pc.fill_null(pc.list_value_length(lists), 0).to_numpy().astype(np.int64)


def _put(index: np.ndarray, start: np.ndarray, slots: list[np.ndarray | int]) -> None:
    for j, piece in enumerate(slots):
        index[start + j] = piece


def _q(quoted: bool) -> str:
    return '"' if quoted else ""


def chat_json(table: pa.Table) -> pa.Array:
    """One Chat request body (JSON text, ``large_string``) per row of a canonical Chat table from
    :func:`responses_to_chat`."""
    n = table.num_rows
    if n == 0:
        return pa.array([], pa.large_string())
    items = table.column("items").combine_chunks()
    flat = items.flatten()
    n_items = len(flat)
    item_row = np.repeat(np.arange(n), _lengths(items))
    content = flat.field("content")
    n_parts = _lengths(content)
    parts = content.flatten()
    part_item = np.repeat(np.arange(n_items), n_parts)

    kind = flat.field("type")
    is_call = _flag(pc.is_in(kind, value_set=pa.array(sorted(CALLS))))
    custom = _flag(pc.equal(kind, "custom_tool_call"))
    tool = _flag(pc.equal(flat.field("role"), "tool"))
    form = flat.field("content_form")
    f_string, f_parts = _flag(pc.equal(form, "string")), _flag(pc.equal(form, "parts"))
    # a message without content leaves the key out (absent), but a tool message always has one
    content_key = tool | _flag(pc.not_equal(form, "absent"))

    at = np.arange(n_items)
    row_first = np.ones(n_items, bool)
    row_first[1:] = item_row[1:] != item_row[:-1]
    row_last = np.ones(n_items, bool)
    row_last[:-1] = row_first[1:]
    next_call = np.zeros(n_items, bool)
    next_call[:-1] = is_call[1:] & ~row_last[:-1]
    prev_call = np.zeros(n_items, bool)
    prev_call[1:] = is_call[:-1] & ~row_first[1:]
    # calls follow the head of their message
    head_of = np.maximum.accumulate(np.where(is_call, -1, at))
    orphan = is_call & ((head_of < 0) | (item_row[np.maximum(head_of, 0)] != item_row))
    if orphan.any():
        raise ValueError(f"chat_json: row {int(item_row[orphan][0])} has a tool call before any message")

    p = Pieces()
    text_ok, text_v = p.json_strings(parts.field("text"))
    role_ok, role_v = p.json_strings(flat.field("role"))
    cid_ok, cid_v = p.json_strings(flat.field("call_id"))
    name_ok, name_v = p.json_strings(flat.field("name"))
    args_ok, args_v = p.json_strings(pc.coalesce(flat.field("arguments"), flat.field("input")))
    model_ok, model_v = p.json_strings(table.column("model").combine_chunks())
    # an image part's extra_json is {"image_url": {...}}: spliced without its opening brace
    image_extra = parts.field("extra_json")
    image_v = p.add(pc.utf8_slice_codeunits(image_extra, 1))
    tools = table.column("tools").combine_chunks()
    tools_v = p.add(tools)
    choice = table.column("tool_choice").combine_chunks()
    choice_v = p.add(choice)
    # carried keys: the stored object without its braces, after a comma
    extra = table.column("extra_json").combine_chunks()
    extra_v = p.add(pc.utf8_slice_codeunits(extra, 1, -1))

    # a tool message has no tool_calls: calls stored after one are not written (responses_to_chat
    # never stores any)
    call_on = is_call & ~tool[np.maximum(head_of, 0)]

    # where each piece goes: items in stored order, each record framed by its open and close slots
    width = np.where(is_call, _CALL, _HEAD_OPEN + _HEAD_CLOSE + _PART * n_parts)
    item_end = np.cumsum(width)
    items_per_row = np.bincount(item_row, minlength=n)
    row_item_end = np.cumsum(items_per_row)
    ends = np.concatenate([[0], item_end])
    item_sum = ends[row_item_end] - ends[row_item_end - items_per_row]
    bounds = np.zeros(n + 1, np.int64)
    np.cumsum(_ROW_OPEN + _ROW_CLOSE + item_sum, out=bounds[1:])
    item_start = item_end - width + (item_row + 1) * _ROW_OPEN + item_row * _ROW_CLOSE
    index = np.zeros(int(bounds[-1]), np.int32)

    w, lit = np.where, p.literal
    # records
    t_on, c_on = _valid(tools), _valid(choice)
    e_on = _flag(pc.and_(extra.is_valid(), pc.not_equal(extra, "{}")))
    _put(index, bounds[:-1], [lit('{"messages":[')])
    _put(index, bounds[1:] - _ROW_CLOSE, [
        p.choose(lambda m: "]" + (',"model":"' if m else ""), model_ok), w(model_ok, model_v, 0),
        p.choose(lambda m, t: _q(m) + (',"tools":' if t else ""), model_ok, t_on), w(t_on, tools_v, 0),
        p.choose(lambda c: ',"tool_choice":' if c else "", c_on), w(c_on, choice_v, 0),
        p.choose(lambda e: "," if e else "", e_on), w(e_on, extra_v, 0), lit("}"),
    ])  # fmt: skip

    # messages: one per head item
    h = np.flatnonzero(~is_call)
    ht, hp = tool[h], f_parts[h]
    cid_on = ht & cid_ok[h]  # a tool message names its call when it has an id
    has_calls = next_call[h] & ~ht
    # content that is no part list: a string is its one part; an unknown or missing form under a
    # content key reads null (responses_to_chat writes neither)
    open_null = ~hp & ~(f_string[h] & (n_parts[h] > 0)) & content_key[h]

    def head_open(sep: bool, tool: bool, cid: bool, role: bool) -> str:
        if tool:
            return ("," if sep else "") + '{"role":"tool"' + (',"tool_call_id":"' if cid else "")
        return ("," if sep else "") + '{"role":' + _q(role)

    def head_content(tool: bool, cid: bool, role: bool, key: bool, bracket: bool, null: bool) -> str:
        before = _q(cid) if tool else _q(role)
        return before + (',"content":' if key else "") + ("[" if bracket else "") + ("null" if null else "")

    start = item_start[h]
    _put(index, start, [
        p.choose(head_open, ~row_first[h], ht, cid_on, role_ok[h]),
        w(ht, w(cid_on, cid_v[h], 0), role_v[h]),
        p.choose(head_content, ht, cid_on, role_ok[h], content_key[h], hp, open_null),
    ])  # fmt: skip
    index[start + _HEAD_OPEN + _PART * n_parts[h]] = p.choose(
        lambda bracket, calls: ("]" if bracket else "") + (',"tool_calls":[' if calls else "}"), hp, has_calls
    )

    # content parts of the heads
    first_part = np.cumsum(n_parts) - n_parts
    b = np.flatnonzero(~is_call[part_item])
    bi = part_item[b]
    k = b - first_part[bi]
    bp = f_parts[bi]
    bs = f_string[bi] & (k == 0)
    ptype = parts.field("type")
    image = _flag(pc.equal(ptype, "image_url"))[b]
    refusal = _flag(pc.equal(ptype, "refusal"))[b]
    has_extra = _valid(image_extra)[b]
    quoted = text_ok[b]

    def part_open(
        part: bool, sep: bool, single: bool, image: bool, refusal: bool, extra: bool, q: bool
    ) -> str:
        if not part:
            return _q(q) if single else ""
        if image:
            return ("," if sep else "") + ('{"type":"image_url",' if extra else '{"type":"image_url"')
        prefix = '{"type":"refusal","refusal":' if refusal else '{"type":"text","text":'
        return ("," if sep else "") + prefix + _q(q)

    def part_close(part: bool, single: bool, image: bool, extra: bool, q: bool) -> str:
        if not part:
            return _q(q) if single else ""
        return ("" if extra else "}") if image else _q(q) + "}"

    text = (bp & ~image) | bs
    _put(index, item_start[bi] + _HEAD_OPEN + _PART * k, [
        p.choose(part_open, bp, k > 0, bs, image, refusal, has_extra, quoted),
        w(text, text_v[b], w(bp & image & has_extra, image_v[b], 0)),
        p.choose(part_close, bp, bs, image, has_extra, quoted),
    ])  # fmt: skip

    # calls, after their head
    c = np.flatnonzero(is_call)
    cc, iq, nq, aq = custom[c], cid_ok[c], name_ok[c], args_ok[c]

    def call_type(iq: bool, custom: bool, nq: bool) -> str:
        key = ',"type":"custom","custom":{"name":' if custom else ',"type":"function","function":{"name":'
        return _q(iq) + key + _q(nq)

    slots = [
        p.choose(lambda sep, iq: ("," if sep else "") + '{"id":' + _q(iq), prev_call[c], iq), cid_v[c],
        p.choose(call_type, iq, cc, nq), name_v[c],
        p.choose(lambda nq, custom, aq: _q(nq) + (',"input":' if custom else ',"arguments":') + _q(aq),
                 nq, cc, aq),
        args_v[c],
        p.choose(lambda aq, last: _q(aq) + "}}" + ("]}" if last else ""), aq, ~next_call[c]),
    ]  # fmt: skip
    _put(index, item_start[c], [w(call_on[c], s, 0) for s in slots])
    return p.gather(index, bounds)
