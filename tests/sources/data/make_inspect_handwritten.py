"""Write ``inspect_handwritten.json`` and ``.eval`` (beside this file) with inspect_ai's own writer.

A hand-written log (3 samples, ids 10 and 2, two epochs, a tool call, a long tool output inspect moves
into attachments, two model events per sample with raw Chat bodies) written by inspect_ai in both
formats; ``tests/sources/test_inspect_eval.py`` checks that both read to the same table. chatlake does
not depend on inspect_ai (it would pull ~40 packages and pin fsspec lower than ``datasets`` gets), so
this runs in a separate venv: ``python -m venv /tmp/iv && /tmp/iv/bin/pip install inspect_ai==0.3.285
&& /tmp/iv/bin/python tests/sources/data/make_inspect_handwritten.py tests/sources/data/inspect_handwritten``
"""

import sys

from inspect_ai.log import EvalLog, write_eval_log

big = "Tool output that is long enough for inspect to move it into attachments. " * 20
req1 = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "What is 2+2? Use the tool."},
    ],
    "tools": [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}],
}
resp1 = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'},
                    }
                ],
            },
        }
    ],
}
req2 = {
    **req1,
    "messages": req1["messages"]
    + [resp1["choices"][0]["message"], {"role": "tool", "tool_call_id": "call_1", "content": big}],
}
resp2 = {
    "id": "chatcmpl-2",
    "object": "chat.completion",
    "created": 2,
    "model": "gpt-4o-mini",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "4"}}],
}


def sample(sid, epoch, answer, score):
    msgs = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": [{"type": "text", "text": "What is 2+2? Use the tool."}]},
        {
            "role": "assistant",
            "content": "",
            "model": "gpt-4o-mini",
            "tool_calls": [
                {"id": "call_1", "function": "add", "arguments": {"a": 2, "b": 2}, "type": "function"}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "function": "add", "content": big},
        {"role": "assistant", "content": answer, "model": "gpt-4o-mini"},
    ]

    def ev(t, req, resp):
        return {
            "event": "model",
            "timestamp": t,
            "model": "openai/gpt-4o-mini",
            "input": [],
            "tools": [],
            "tool_choice": "auto",
            "config": {},
            "output": {"model": "gpt-4o-mini", "choices": []},
            "call": {"request": req, "response": resp},
        }

    return {
        "id": sid,
        "epoch": epoch,
        "input": "What is 2+2?",
        "target": "4",
        "messages": msgs,
        "output": {"model": "gpt-4o-mini", "choices": []},
        "scores": {"match": {"value": score, "answer": answer}},
        "metadata": {"hand": True},
        "events": [
            ev("2025-01-01T00:00:01+00:00", req1, resp1),
            ev("2025-01-01T00:00:02+00:00", req2, resp2),
        ],
    }


log = {
    "version": 2,
    "status": "success",
    "eval": {
        "eval_id": "EvalHand1",
        "run_id": "RunHand1",
        "created": "2025-01-01T00:00:00+00:00",
        "task": "hand",
        "task_id": "TaskHand1",
        "dataset": {"name": "hand"},
        "model": "openai/gpt-4o-mini",
        "config": {},
    },
    "plan": {"name": "plan", "steps": []},
    "results": {"total_samples": 3, "completed_samples": 3, "scores": []},
    "stats": {"started_at": "2025-01-01T00:00:00+00:00", "completed_at": "2025-01-01T00:00:09+00:00"},
    "samples": [sample(10, 1, "4", "C"), sample(2, 1, "5", "I"), sample(2, 2, "4", "C")],
}
out = sys.argv[1]
parsed = EvalLog.model_validate(log)
write_eval_log(parsed, out + ".json", format="json")
write_eval_log(parsed, out + ".eval", format="eval")
