"""SWE-agent trajectories (``<instance>.traj``): one JSON object, one conversation from ``history``.

``history`` is a Chat message list with SWE-agent keys. Each message becomes a Chat message of its
``role``, ``content`` and (assistant) ``tool_calls``; a ``tool`` message's ``tool_call_ids`` list
becomes ``tool_call_id`` (its first id -- SWE-agent answers one call per step). Every other key
(``agent``, ``message_type``, ``thought``, ``action``, ``is_demo``, the full ``tool_call_ids``
list, ...) goes to ``meta_json.messages`` as ``{"index", ...keys}``.

``meta_json`` also keeps ``info`` (exit status, submission patch, model_stats, ...),
``environment``, ``replay_config`` and ``trajectory`` without its per-step ``messages`` snapshots
(they repeat ``history``). ``model`` comes from ``replay_config.agent.model.name`` when present.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.sources._base import SourceBuilder, SourceResult, check_options, gc_paused, load_json

NAME = "swe-agent"
OPTIONS: dict[str, type] = {}
_CHAT_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def sniff(obj: Any) -> bool:
    return type(obj) is dict and type(obj.get("history")) is list and "trajectory" in obj


def to_chat(history: list[Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """SWE-agent history -> Chat messages and the keys Chat has no place for."""
    out: list[Any] = []
    extras: list[dict[str, Any]] = []
    for i, m in enumerate(history):
        if type(m) is not dict:
            out.append(m)
            continue
        msg = {k: m[k] for k in _CHAT_KEYS if k in m}
        if msg.get("tool_calls") is None or msg.get("tool_calls") == []:
            msg.pop("tool_calls", None)
        extra = {k: v for k, v in m.items() if k not in msg}
        ids = m.get("tool_call_ids")
        if "tool_call_id" not in msg and type(ids) is list and ids and type(ids[0]) is str:
            msg["tool_call_id"] = ids[0]
        if extra:
            extras.append({"index": i, **extra})
        out.append(msg)
    return out, extras


def _model(cfg: Any) -> str | None:
    try:
        name = cfg["agent"]["model"]["name"]
    except (KeyError, TypeError):
        return None
    return name if type(name) is str else None


def read(path: Path, **options: Any) -> Iterator[SourceResult]:
    """Read one trajectory file: one conversation."""
    check_options(NAME, options, OPTIONS)
    b = SourceBuilder(NAME, path)
    with gc_paused():
        traj = load_json(path, b)
        if traj is ...:
            pass
        elif type(traj) is not dict or type(traj.get("history")) is not list:
            b.reject(1, traj, "broken envelope: a trajectory is an object with a 'history' list")
        else:
            messages, extras = to_chat(traj["history"])
            record: dict[str, Any] = {"messages": messages}
            model = _model(traj.get("replay_config"))
            if model is not None:
                record["model"] = model
            meta: dict[str, Any] = {}
            for k, v in traj.items():
                if k == "history":
                    continue
                if k == "trajectory" and type(v) is list:
                    v = [
                        {sk: sv for sk, sv in s.items() if sk != "messages"} if type(s) is dict else s
                        for s in v
                    ]
                meta[k] = v
            if extras:
                meta["messages"] = extras
            b.add("chat", record, line=1, anchor=b"history", meta=meta, reject_value=traj["history"])
    yield b.result(final=True)
