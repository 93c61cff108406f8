"""Resolve a Claude Code thread's ``parentUuid`` tree into its active conversation and its branches.

Claude Code writes every line with a ``uuid`` and the ``parentUuid`` of the line before it in the
conversation. A rewind (Esc-Esc, editing an earlier prompt) or a regenerated answer starts a second
child under an old line; the file keeps both. On resume Claude Code shows the chain from the most
recent leaf back to the root; that chain is the *active* conversation here, and every other leaf's
chain, from the point where it left an already-taken chain, is one *branch*:

====  =========================  =========================================================
line  line (uuid <- parentUuid)  where it goes
====  =========================  =========================================================
1     user  u1 <- null           active (root)
2     asst  a1 <- u1             active
3     user  u2 <- a1             branch ``branch:a2`` (abandoned: the user rewound to a1)
4     asst  a2 <- u2             branch ``branch:a2`` (its leaf; forks at a1, line 2)
5     user  u3 <- a1             active (the edited prompt)
6     asst  a3 <- u3             active (the most recent leaf)
====  =========================  =========================================================

Two things look like forks and are not:

* parallel tool use: Claude Code writes one assistant line per content block, all with the same
  ``message.id``, and each ``tool_result`` line's parent is the line of *its* ``tool_use``. All
  assistant lines of one ``message.id`` and the tool-result-only user lines hanging off them are
  one node (assistant lines first, then the results, each in file order);
* non-message lines (``system``, ``attachment``, ``progress``) sit in the chain too: a message's
  parent is its nearest *message* ancestor, found through them.

Each message line lands in exactly one conversation (the active one or one branch), so the total
work and output are linear in the file. When the links cannot be trusted the thread keeps file
order instead, with the reason: a message line without a ``uuid`` or without the ``parentUuid``
key (``no_links``), a ``uuid`` written on two lines (``duplicate_uuid``), or a cycle (``cycle``).
A ``parentUuid`` that names no line of the file makes its line a root (counted as a missing
parent); so does a parent in another thread (a sub-agent's first line pointing into the main one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Results of walking up through non-message lines.
_ROOT = "\x00root"  # parentUuid null: a root
_MISSING = "\x00missing"  # parentUuid names no line of the file
_CYCLE = "\x00cycle"
_DUP = "\x00dup"  # the walk met a uuid written on two lines


@dataclass(slots=True)
class Node:
    """One line of the file that has a string ``uuid``: its parent and, for message lines, its thread."""

    line: int
    parent: Any  # the raw parentUuid value (absent -> None)
    thread: tuple[str | None, str | None] | None  # (session, thread) for user/assistant lines, else None


@dataclass(slots=True)
class MessageLine:
    """A user/assistant line of one thread, as the scan kept it."""

    line: int
    obj: dict[str, Any]  # the whole line
    msg: dict[str, Any]  # its ``message``
    content: Any  # ``message.content`` (``...`` when absent)


@dataclass
class Resolved:
    """One conversation of a thread: its lines in conversation order and, for a branch, where it forks."""

    lines: list[MessageLine]
    leaf: str | None = None  # uuid of the branch leaf (None: the active conversation / file order)
    branch: dict[str, Any] | None = None


def resolve_threads(
    lines: list[MessageLine],
    nodes: dict[str, Node],
    duplicates: set[str],
    memo: dict[str, str],
) -> tuple[list[Resolved], str | None, dict[str, int]]:
    """The conversations of one thread (active first), the fallback reason (None: tree) and counts.

    ``nodes`` maps every uuid of the file to its line, ``duplicates`` holds uuids written on more
    than one line, ``memo`` is shared by all threads of the file (each non-message line is walked
    through once).
    """
    counts: dict[str, int] = {}
    uuids: list[str] = []
    for m in lines:
        u = m.obj.get("uuid")
        if type(u) is not str or "parentUuid" not in m.obj:
            return [Resolved(lines)], "no_links", counts
        if u in duplicates:
            return [Resolved(lines)], "duplicate_uuid", counts
        uuids.append(u)
    index = {u: i for i, u in enumerate(uuids)}

    # Message parent of each line (index into ``lines``, -1 = root).
    mparent = [-1] * len(lines)
    for i, m in enumerate(lines):
        p = m.obj["parentUuid"]
        a = _anchor(p, nodes, duplicates, memo) if type(p) is str else _ROOT
        if a == _DUP:
            return [Resolved(lines)], "duplicate_uuid", {}
        if a == _CYCLE:
            return [Resolved(lines)], "cycle", {}
        if a == _MISSING:
            counts["missing_parents"] = counts.get("missing_parents", 0) + 1
        elif a != _ROOT:
            j = index.get(a)
            if j is None:  # a message line of another thread (or session)
                counts["cross_thread_parents"] = counts.get("cross_thread_parents", 0) + 1
            else:
                mparent[i] = j

    node_of = _nodes(lines, mparent)
    if node_of is None:
        return [Resolved(lines)], "cycle", {}
    n_nodes = max(node_of) + 1 if node_of else 0
    members: list[list[int]] = [[] for _ in range(n_nodes)]
    for i, c in enumerate(node_of):
        members[c].append(i)
    # Parent node: that of the first member (file order) whose message parent is in another node.
    nparent = [-1] * n_nodes
    for c, ms in enumerate(members):
        for i in ms:
            j = mparent[i]
            if j >= 0 and node_of[j] != c:
                nparent[c] = node_of[j]
                break
    if _has_cycle(nparent):
        return [Resolved(lines)], "cycle", {}
    has_child = [False] * n_nodes
    for p in nparent:
        if p >= 0:
            has_child[p] = True
    last_line = [lines[ms[-1]].line for ms in members]  # members are in file order
    leaves = sorted((c for c in range(n_nodes) if not has_child[c]), key=lambda c: -last_line[c])

    # The most recent leaf's whole chain first; then each other leaf up to the first taken node.
    taken = [False] * n_nodes
    owner: list[int] = [-1] * n_nodes  # which conversation (index into ``out``) holds a node
    out: list[Resolved] = []
    for rank, leaf in enumerate(leaves):
        chain: list[int] = []
        c = leaf
        while c >= 0 and not taken[c]:
            taken[c] = True
            chain.append(c)
            c = nparent[c]
        chain.reverse()
        conv_lines = [lines[i] for n in chain for i in _in_node_order(members[n], lines)]
        if rank == 0:
            out.append(Resolved(conv_lines))
        else:
            leaf_uuid = uuids[max(members[leaf], key=lambda i: lines[i].line)]
            fork: dict[str, Any] = {"leaf": leaf_uuid, "leaf_line": last_line[leaf]}
            if c >= 0:  # forks off a node another conversation holds: name the line it hangs from
                at = next(
                    mparent[i] for i in members[chain[0]] if mparent[i] >= 0 and node_of[mparent[i]] == c
                )
                fork["fork_uuid"] = uuids[at]
                fork["fork_line"] = lines[at].line
                fork["fork_leaf"] = out[owner[c]].leaf
            out.append(Resolved(conv_lines, leaf=leaf_uuid, branch=fork))
        for n in chain:
            owner[n] = len(out) - 1
    if len(out) > 1:
        counts["branches"] = len(out) - 1
    return out, None, counts


def _anchor(start: str, nodes: dict[str, Node], duplicates: set[str], memo: dict[str, str]) -> str:
    """The nearest message line at or above uuid ``start``, walking up through non-message lines."""
    path: list[str] = []
    seen: set[str] = set()
    cur: Any = start
    while True:
        if type(cur) is not str:
            res = _ROOT
            break
        if cur in memo:
            res = memo[cur]
            break
        if cur in duplicates:
            res = _DUP
            break
        node = nodes.get(cur)
        if node is None:
            res = _MISSING
            break
        if node.thread is not None:
            res = cur
            break
        if cur in seen:
            res = _CYCLE
            break
        seen.add(cur)
        path.append(cur)
        cur = node.parent
    for u in path:
        memo[u] = res
    return res


def _nodes(lines: list[MessageLine], mparent: list[int]) -> list[int] | None:
    """Node number of each line: one per assistant ``message.id`` plus the tool results under it.

    None when the message parents form a cycle.
    """
    node_of = [-1] * len(lines)
    by_id: dict[str, int] = {}
    next_node = 0
    head_is_assistant: list[bool] = []
    for i in range(len(lines)):
        if node_of[i] >= 0:
            continue
        # Walk up to a line whose node is known (or a root), then assign on the way back down.
        path: list[int] = []
        j = i
        while j >= 0 and node_of[j] < 0:
            if len(path) > len(lines):  # longer than the thread: the parents loop
                return None
            path.append(j)
            j = mparent[j]
        for k in reversed(path):
            m = lines[k]
            mid = m.msg.get("id")
            if m.obj.get("type") == "assistant" and type(mid) is str:
                c = by_id.get(mid)
                if c is None:
                    c = by_id[mid] = next_node
                    next_node += 1
                    head_is_assistant.append(True)
            elif _only_tool_results(m) and mparent[k] >= 0 and head_is_assistant[node_of[mparent[k]]]:
                c = node_of[mparent[k]]
            else:
                c = next_node
                next_node += 1
                head_is_assistant.append(m.obj.get("type") == "assistant")
            node_of[k] = c
    return node_of


def _in_node_order(members: list[int], lines: list[MessageLine]) -> list[int]:
    """A node's lines as one message: its assistant lines, then the tool results, each in file order."""
    if len(members) == 1:
        return members
    return sorted(members, key=lambda i: (lines[i].obj.get("type") != "assistant", lines[i].line))


def _only_tool_results(m: MessageLine) -> bool:
    c = m.content
    return (
        m.obj.get("type") == "user"
        and type(c) is list
        and bool(c)
        and all(type(b) is dict and b.get("type") == "tool_result" for b in c)
    )


def _has_cycle(parent: list[int]) -> bool:
    """Whether following ``parent`` from some node comes back to it (linear: each node coloured once)."""
    state = [0] * len(parent)  # 0 new, 1 on the current walk, 2 done
    for s in range(len(parent)):
        walk = []
        c = s
        while c >= 0 and state[c] == 0:
            state[c] = 1
            walk.append(c)
            c = parent[c]
        if c >= 0 and state[c] == 1:
            return True
        for w in walk:
            state[w] = 2
    return False
