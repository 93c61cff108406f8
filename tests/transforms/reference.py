"""Per-record Python reference implementations of every transform step (tests and benchmarks only).

Each function takes one canonical row as a dict (``table.to_pylist()``) and returns ``(row, None)``
with the transformed row (items changed, columns added, ``n_items`` updated) or ``(None, reason)``.
They are written the plain way -- loops over items -- and are what the vectorized steps must equal.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from pipeline.schema import ITEM_FIELDS

Row = dict[str, Any]
Result = tuple[Row | None, str | None]

TEXT_BLOCK_TYPES = ("text", "input_text", "output_text")
SYSTEM_ROLES = ("system", "developer")
CALL_KINDS = ("function_call", "custom_tool_call")


def is_tool_output(it: dict) -> bool:
    return it["type"] in ("function_call_output", "custom_tool_call_output") or it["type"].endswith(
        "_call_output"
    )


def label(it: dict) -> str | None:
    t, role = it["type"], it["role"]
    if is_tool_output(it):
        return "tool"
    if t == "message":
        if role in ("user", "assistant"):
            return role
        return "system" if role in SYSTEM_ROLES else None
    if t in ("reasoning", "function_call", "custom_tool_call", "server_tool_use") or t.endswith(
        ("_call", "_tool_result")
    ):
        return "assistant"
    return None


def text(it: dict) -> str:
    if it["type"] != "message" and not is_tool_output(it):
        return ""
    return "\n".join(b["text"] for b in it["content"] or () if b["text"] is not None)


def _finish(row: Row, items: list | None, changed: bool) -> Row:
    out = dict(row)
    out["items"] = items
    out["n_items"] = len(items or ())
    if changed and row["items_form"] == "string":
        out["items_form"] = "parts"
    return out


def _new_message(
    row: Row, role: str, body: str, block_type: str | None, *, section=None, group=None, part=None
):
    items = row["items"] or []
    if section is None:
        section = "input" if row["source_format"] == "responses" else "messages"
    if group is None:
        groups = [it["group"] for it in items if it["group"] is not None]
        group = max(groups) + 1 if groups else 0
    it: dict[str, Any] = dict.fromkeys(ITEM_FIELDS)
    blk = {
        "type": block_type,
        "text": body,
        "annotations": None,
        "logprobs": None,
        "cache_control": None,
        "citations": None,
        "extra_json": None,
        "null_fields": None,
    }
    it.update(
        section=section,
        group=group,
        part=part,
        type="message",
        role=role,
        content_form="string" if block_type is None else "parts",
        content=[blk],
    )
    return it


# ---- roles -------------------------------------------------------------------------------------


def _swap_error(it: dict, i: int, prefix: str) -> str | None:
    role = it["role"]
    if role is not None and role not in ("user", "assistant"):
        return f"{prefix}: unsupported role '{role}' at item {i}"
    if it["type"] != "message":
        return f"{prefix}: unsupported item type '{it['type']}' at item {i}"
    if it["content_form"] in ("null", "absent"):
        return f"{prefix}: non-text content ({it['content_form']}) at item {i}"
    for b in it["content"] or ():
        if b["type"] is not None and b["type"] not in TEXT_BLOCK_TYPES:
            return f"{prefix}: non-text content '{b['type']}' at item {i}"
    return None


def _swapped(it: dict) -> dict:
    it = copy.deepcopy(it)
    it["role"] = {"user": "assistant", "assistant": "user"}.get(it["role"], it["role"])
    flip = {"input_text": "output_text", "output_text": "input_text"}
    for b in it["content"] or ():
        b["type"] = flip.get(b["type"], b["type"])
    return it


def role_swap(row: Row, on_unsupported: str = "reject") -> Result:
    items = row["items"] or []
    out, dropped = [], []
    for i, it in enumerate(items):
        err = _swap_error(it, i, "role_swap")
        if err is None:
            out.append(_swapped(it))
        elif on_unsupported == "reject":
            return None, err
        else:
            dropped.append(err)
    res = _finish(row, out if row["items"] is not None else None, bool(items))
    if on_unsupported == "drop":
        res["role_swap_dropped"] = dropped
    return res, None


def synthetic_user_view(row: Row, visible_roles=("user", "assistant"), persona: str | None = None) -> Result:
    view = []
    for i, it in enumerate(row["items"] or []):
        if it["type"] != "message" or it["role"] not in visible_roles:
            continue
        if it["role"] == "assistant" and text(it) == "":
            continue  # tool dispatch only
        err = _swap_error(it, i, "synthetic_user_view")
        if err:
            return None, err
        view.append(it)
    if not view:
        return None, "synthetic_user_view: conversation must end on an assistant turn (nothing visible)"
    if view[-1]["role"] != "assistant":
        return (
            None,
            f"synthetic_user_view: conversation must end on an assistant turn (ends on '{view[-1]['role']}')",
        )
    out = [_swapped(it) for it in view]
    if persona is not None:
        if row["record_kind"] == "response":
            return (
                None,
                "synthetic_user_view: response objects hold one reply, not a conversation to insert into",
            )
        groups = [it["group"] for it in out if it["group"] is not None]  # unique within the view
        out.insert(0, _new_message(row, "system", persona, None, group=max(groups) + 1 if groups else 0))
    return _finish(row, out, True), None


# ---- turns and compaction ---------------------------------------------------------------------


def turn_list(items: list, with_system: bool = True) -> list[dict]:
    turns: list[dict] = []
    for i, it in enumerate(items or ()):
        lab = label(it)
        if lab is None or (lab == "system" and not with_system):
            continue
        if turns and turns[-1]["label"] == lab:
            turns[-1]["last"] = i
            turns[-1]["items"].append(i)
        else:
            turns.append({"label": lab, "first": i, "last": i, "items": [i]})
    return turns


def turns(row: Row, preview_chars: int = 80) -> Result:
    items = row["items"] or []
    out = dict(row)
    tl = turn_list(items)
    out["turns"] = [
        {
            "label": t["label"],
            "first": t["first"],
            "last": t["last"],
            "preview": "\n".join(s for s in (text(items[i]) for i in t["items"]) if s)[:preview_chars],
        }
        for t in tl
    ]
    count = {lab: sum(t["label"] == lab for t in tl) for lab in ("user", "assistant", "tool", "system")}
    out.update(
        human_turns=count["user"],
        ai_turns=count["assistant"],
        tool_turns=count["tool"],
        system_turns=count["system"],
        all_turns=count["user"] + count["assistant"],
    )
    out["first_user_task"] = next((text(it) for it in items if label(it) == "user" and text(it)), None)
    return out, None


def compaction(row: Row, markers=(), item_types=("compaction", "compacted")) -> Result:
    hits = []
    for i, it in enumerate(row["items"] or ()):
        scanned = it["type"] == "message" and it["role"] in ("user", "assistant")
        if it["type"] in item_types or (scanned and any(m in text(it) for m in markers)):
            hits.append(i)
    out = dict(row)
    out.update(
        compacted=bool(hits), compaction_count=len(hits), first_compaction_index=hits[0] if hits else None
    )
    return out, None


# ---- system placement, headers, edits -----------------------------------------------------------


def place_system(
    row: Row,
    text_: str,
    role="system",
    position="before_system_content",
    anchor_patterns=(),
    anchor="first",
    missing="start",
) -> Result:
    if row["record_kind"] == "response":
        return None, "place_system: response objects hold one reply, not a conversation to insert into"
    items = list(row["items"] or [])
    hits = [
        i
        for i, it in enumerate(items)
        if it["type"] == "message"
        and it["role"] in SYSTEM_ROLES
        and (not anchor_patterns or any(re.search(p, text(it)) for p in anchor_patterns))
    ]
    at = (hits[0] if anchor == "first" else hits[-1]) if hits else None
    if position == "append":
        pos = len(items)
    elif at is None:
        if missing == "reject":
            return None, "place_system: no inline system message matches the anchor"
        pos = 0
    else:
        pos = at if position == "before_system_content" else at + 1
    items.insert(pos, _new_message(row, role, text_, None))
    return _finish(row, items, True), None


def parse_header(row: Row, pattern: str, fields=()) -> Result:
    items = list(row["items"] or [])
    at = next(
        (
            i
            for i, it in enumerate(items)
            if it["type"] == "message" and it["role"] in SYSTEM_ROLES and re.search(pattern, text(it))
        ),
        None,
    )
    captured = None
    if at is not None:
        captured = re.search(pattern, text(items[at])).group(1)
        try:
            value = json.loads(captured)
        except ValueError:
            return None, f"parse_header: header at item {at} is not valid JSON"
        del items[at]
    out = _finish(row, items if row["items"] is not None else None, at is not None)
    out["header_json"] = captured
    if fields:
        if captured is None:
            out["header"] = None
        else:

            def show(v: Any) -> str | None:
                if v is None:
                    return None
                return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))

            out["header"] = {f: show(value.get(f)) if isinstance(value, dict) else None for f in fields}
    return out, None


def append_note(row: Row, text_: str, mode: str = "block") -> Result:
    if row["record_kind"] == "response":
        return None, "append_note: response objects hold one reply, not a conversation to insert into"
    items = copy.deepcopy(row["items"] or [])
    at = next((i for i in range(len(items) - 1, -1, -1) if label(items[i]) in ("user", "tool")), None)
    if at is None:
        return None, "append_note: no user message or tool output to append to"
    btype = "input_text" if row["source_format"] == "responses" else "text"
    target = items[at]
    if mode == "block" and target["type"] == "message":
        blocks = target["content"] or []
        if target["content_form"] == "string":
            blocks = [dict(b, type=btype) for b in blocks]
        elif target["content_form"] in ("null", "absent"):
            blocks = []
        note = _new_message(row, "user", text_, btype)["content"][0]
        target.update(content_form="parts", content=[*blocks, note])
    elif mode == "block" and row["source_format"] == "anthropic":
        items.insert(
            at + 1,
            _new_message(
                row,
                "user",
                text_,
                btype,
                section=target["section"],
                group=target["group"],
                part=None if target["part"] is None else target["part"] + 1,
            ),
        )
    else:
        items.insert(
            at + 1,
            _new_message(row, "user", text_, btype if mode == "block" else None, section=target["section"]),
        )
    return _finish(row, items, True), None


def prepend_system(row: Row, text_: str, role: str = "system") -> Result:
    if row["record_kind"] == "response":
        return None, "prepend_system: response objects hold one reply, not a conversation to insert into"
    return _finish(row, [_new_message(row, role, text_, None), *(row["items"] or [])], True), None


# ---- compat ---------------------------------------------------------------------------------------


def compat(row: Row, mode: str = "native") -> Result:
    if mode == "native":
        return dict(row), None
    if row["source_format"] != "responses":
        return None, f"compat: mode '{mode}' applies to responses records, got '{row['source_format']}'"
    items = copy.deepcopy(row["items"])
    if items is None:
        return dict(row), None
    if mode == "flat_tools":
        for it in items:
            if it["type"] in CALL_KINDS and it["namespace"] is not None and it["name"] is not None:
                it["name"], it["namespace"] = f"{it['namespace']}__{it['name']}", None
        out = _finish(row, items, False)
        if row["source_format"] == "responses" and row["tools"] is not None:
            out["tools"] = _flat_tools_json(row["tools"])
        return out, None
    # kimi: stretches between messages; outputs follow their call
    seg, segs = 0, []
    for it in items:
        seg += it["type"] == "message"
        segs.append(seg)
    calls: dict[tuple[int, str], int] = {}
    for i, it in enumerate(items):
        if it["type"] in CALL_KINDS and it["call_id"] is not None:
            calls.setdefault((segs[i], it["call_id"]), i)
    keyed = []
    for i, it in enumerate(items):
        c = calls.get((segs[i], it["call_id"])) if is_tool_output(it) and it["call_id"] is not None else None
        if c is not None and it["name"] is None and items[c]["name"] is not None:
            it["name"] = items[c]["name"]
            rest = [n for n in it["null_fields"] or () if n != "name"]
            it["null_fields"] = rest or None
        keyed.append(((i, 0, i) if c is None else (c, 1, i), it))
    keyed.sort(key=lambda kv: kv[0])
    return _finish(row, [it for _, it in keyed], False), None


# ---- window / slice -------------------------------------------------------------------------------


def _drop_orphans(items: list, keep: list[bool]) -> list:
    call_kept: dict[str, bool] = {}
    for it, k in zip(items, keep, strict=True):
        if (it["type"] in CALL_KINDS or it["type"].endswith("_call")) and it["call_id"] is not None:
            call_kept[it["call_id"]] = call_kept.get(it["call_id"], False) or k
    return [
        it
        for it, k in zip(items, keep, strict=True)
        if k and not (is_tool_output(it) and call_kept.get(it["call_id"]) is False)
    ]


def window(
    row: Row, last_turns: int | None = None, max_chars: int | None = None, keep_first_task=True
) -> Result:
    items = row["items"] or []
    tl = turn_list(items, with_system=False)
    cut = 0
    never = 2**31 - 1  # keep no turn
    if last_turns is not None and tl:
        if last_turns == 0:
            cut = never
        elif len(tl) > last_turns:
            cut = tl[len(tl) - last_turns]["first"]
    if max_chars is not None and tl:
        c_cut, total = never, 0
        for t in reversed(tl):
            total += sum(len(text(items[i])) for i in t["items"])
            if total > max_chars:
                break
            c_cut = t["first"]
        cut = max(cut, c_cut)
    task = (
        next((i for i, it in enumerate(items) if label(it) == "user" and text(it)), None)
        if keep_first_task
        else None
    )
    keep = [i >= cut or label(it) == "system" or i == task for i, it in enumerate(items)]
    out = _drop_orphans(items, keep)
    return _finish(row, out if row["items"] is not None else None, len(out) != len(items)), None


def slice_turns(row: Row, start: int | None = None, stop: int | None = None) -> Result:
    items = row["items"] or []
    tl = turn_list(items)[start:stop]
    lo, hi = (tl[0]["first"], tl[-1]["last"]) if tl else (1, 0)
    out = _drop_orphans(items, [lo <= i <= hi for i in range(len(items))])
    return _finish(row, out if row["items"] is not None else None, len(out) != len(items)), None


REFERENCE = {
    "role_swap": role_swap,
    "synthetic_user_view": synthetic_user_view,
    "turns": turns,
    "compaction": compaction,
    "place_system": place_system,
    "parse_header": parse_header,
    "append_note": append_note,
    "prepend_system": prepend_system,
    "compat": compat,
    "window": window,
    "slice_turns": slice_turns,
}


def run_reference(name: str, row: Row, params: dict[str, Any]) -> Result:
    """The reference for step ``name`` with the step's validated params (``text`` -> ``text_``)."""
    kw = {("text_" if k == "text" else k): v for k, v in params.items()}
    return REFERENCE[name](row, **kw)


def _flat_tools_json(text: str) -> str:
    """Reference: namespace tools -> ``ns__name`` top-level tools (exact text when there is none)."""
    tools = json.loads(text)
    def namespace(t: Any) -> bool:
        return (isinstance(t, dict) and t.get("type") == "namespace" and isinstance(t.get("name"), str)
                and isinstance(t.get("tools"), list))  # fmt: skip
    if not isinstance(tools, list) or not any(namespace(t) for t in tools):
        return text
    out = []
    for t in tools:
        if not namespace(t):
            out.append(t)
            continue
        for inner in t["tools"]:
            if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                inner = dict(inner)
                inner["name"] = t["name"] + "__" + inner["name"]
                if inner.get("type") == "function":
                    inner.setdefault("parameters", None)
                    inner.setdefault("strict", None)
            out.append(inner)
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False)


# ---- threads (a grouping step: the reference takes every row at once) ---------------------------

TEXT_TYPES = (None, "text", "input_text", "output_text")


def _blocks_key(blocks: list | None) -> tuple | None:
    if blocks is None:
        return None
    return tuple(
        ("text" if b["type"] in TEXT_TYPES else b["type"], b["text"], b["extra_json"]) for b in blocks
    )


def item_key(it: dict) -> tuple:
    """What the item content hash covers (docs/schema.md), as a plain tuple: equal keys, equal hashes."""
    fields = (
        "type",
        "role",
        "name",
        "namespace",
        "call_id",
        "arguments",
        "input",
        "encrypted_content",
        "extra_json",
    )
    reference = it["id"] if it["type"] == "item_reference" else None  # a reference is its id
    return (*(it[f] for f in fields), reference, _blocks_key(it["content"]), _blocks_key(it["summary"]))


def record_key(row: Row) -> tuple:
    """The top-level fields duplicates share besides their items."""
    ins = row["instructions"]
    return (
        row["record_kind"], row["model"], row["tools"], row["tool_choice"], row["extra_json"],
        None if ins is None else ins["form"], None if ins is None else _blocks_key(ins["content"]),
    )  # fmt: skip


def threads_reference(
    rows: list[Row], keep: str = "all", markers=(), item_types=("compaction", "compacted")
) -> tuple[list[Row], dict[int, str]]:
    """Per record, plainly: the rows with the thread columns added (kept ones), and the reason of
    every dropped row by its index. Same rules as pipeline.transforms.threads, by loops over tuples."""
    seqs = [tuple(item_key(it) for it in row["items"] or ()) for row in rows]
    def is_compaction(it: dict) -> bool:
        scanned = it["type"] == "message" and it["role"] in ("user", "assistant")
        return it["type"] in item_types or (scanned and any(m in text(it) for m in markers))

    hits = [[i for i, it in enumerate(row["items"] or ()) if is_compaction(it)] for row in rows]
    cuts = [h[-1] if h else -1 for h in hits]
    order = sorted(
        range(len(rows)),
        key=lambda i: (rows[i]["conversation_id"] is None, rows[i]["conversation_id"] or "", i),
    )
    rep: dict[tuple, str] = {}
    for i in order:
        rep.setdefault(seqs[i], rows[i]["conversation_id"])
    info = []
    for i, seq in enumerate(seqs):
        found = [n for n in range(max(cuts[i], 0) + 1, len(seq) + 1) if seq[:n] in rep] if seq else []
        root = rep[seq[: found[0]]] if found else rep[seq]
        strict = [n for n in found if n < len(seq)]
        info.append({"thread_id": root, "parent": seq[: strict[-1]] if strict else None,
                     "parent_id": rep[seq[: strict[-1]]] if strict else None,
                     "shared_items": strict[-1] if strict else 0, "found": found})  # fmt: skip
    parents = {d["parent"] for d in info if d["parent"] is not None}
    first: dict[tuple, int] = {}
    for i in order:
        first.setdefault((seqs[i], record_key(rows[i])), i)
    for i, d in enumerate(info):
        d["is_leaf"] = seqs[i] not in parents
        f = first[(seqs[i], record_key(rows[i]))]
        d["duplicate_of"] = rows[f]["conversation_id"] if f != i else None
    # compaction: a compacted root's kept (non-system) items, all found in another thread
    thread_items: dict[str, set] = {}
    for i, d in enumerate(info):
        thread_items.setdefault(d["thread_id"], set()).update(seqs[i])
    compacted_roots, marks = {}, {}
    for i, d in enumerate(info):
        if cuts[i] >= 0 and d["parent_id"] is None and rows[i]["conversation_id"] == d["thread_id"]:
            marks[d["thread_id"]] = seqs[i][cuts[i]]
            compacted_roots.setdefault(d["thread_id"], set()).update(
                seqs[i][j]
                for j, it in enumerate(rows[i]["items"][: cuts[i]])
                if label(it) != "system" and not is_compaction(it)
            )
    continues = {}
    for t, kept in compacted_roots.items():
        # another window of the same compaction (its first request missing) holds the compaction item
        cands = [u for u, its in thread_items.items() if u != t and kept and kept <= its
                 and marks[t] not in its]
        cands.sort(key=lambda u: (u not in compacted_roots, u))
        continues[t] = cands[0] if cands else None
    out_rows, dropped = [], {}
    kept_leaf = [d["is_leaf"] and d["duplicate_of"] is None for d in info]
    for i, row in enumerate(rows):
        d = info[i]
        new = dict(row)
        for c in ("thread_id", "parent_id", "shared_items", "is_leaf", "duplicate_of"):
            new[c] = d[c]
        new["continues_thread"] = continues.get(d["thread_id"])
        if keep == "leaves" and not kept_leaf[i]:
            n = len(seqs[i])  # a leaf contains it: same items, or it is one of the leaf's tree prefixes
            leaves = [
                rows[j]["conversation_id"]
                for j in range(len(rows))
                if kept_leaf[j]
                and (seqs[j] == seqs[i] or (n and seqs[j][:n] == seqs[i] and n in info[j]["found"]))
            ]
            why = (
                "duplicate of an identical record"
                if d["duplicate_of"]
                else "items are a prefix of a longer record"
            )
            dropped[i] = f"threads: {why} (in leaf {min(leaves) if leaves else '?'})"
            continue
        out_rows.append(new)
    return out_rows, dropped
