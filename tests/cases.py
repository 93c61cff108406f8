"""Hand-written conversations, one per edge case, shared by every test.

Each case is ``(name, record)``; the name says what the record exercises. Records are wire bodies
exactly as a user would hold them.
"""

from __future__ import annotations

from typing import Any

Case = tuple[str, dict[str, Any]]

RESPONSES: list[Case] = [
    ("input_string", {"model": "gpt-5", "input": "  What is 2+2?\n"}),
    ("instructions_absent_null_string", {"input": [], "instructions": None}),
    ("instructions_empty_string", {"input": [{"role": "user", "content": "hi"}], "instructions": ""}),
    (
        "instructions_as_items",
        {
            "input": [{"role": "user", "content": "hi"}],
            "instructions": [
                {
                    "type": "message",
                    "role": "developer",
                    "content": [{"type": "input_text", "text": "Be terse."}],
                }
            ],
        },
    ),
    (
        "easy_messages_without_type_and_inline_developer",
        {
            "model": "gpt-5.3-codex",
            "instructions": "You are Codex.",
            "input": [
                {"role": "developer", "content": "sandbox: read-only"},
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "list files"},
                        {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,AAAA"},
                    ],
                },
                {"role": "system", "content": "   "},
                {"type": "message", "role": "user", "content": "again", "status": "completed"},
            ],
            "temperature": 1.0,
            "top_p": 1,
            "store": False,
            "metadata": {"run": "a", "n": 3},
        },
    ),
    (
        "assistant_phase_absent_null_set",
        {
            "input": [
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Looking.", "annotations": []}],
                    "phase": "commentary",
                },
                {
                    "type": "message",
                    "id": "msg_2",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Done.", "annotations": [], "logprobs": []}],
                    "phase": None,
                },
                {
                    "type": "message",
                    "id": "msg_3",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {
                            "type": "output_text",
                            "text": "Final",
                            "annotations": [
                                {
                                    "type": "url_citation",
                                    "url": "https://e.x",
                                    "title": "E",
                                    "start_index": 0,
                                    "end_index": 5,
                                }
                            ],
                        },
                        {"type": "refusal", "refusal": "no"},
                    ],
                    "phase": "final_answer",
                },
            ]
        },
    ),
    (
        "reasoning_parallel_calls_and_outputs",
        {
            "input": [
                {"role": "user", "content": "weather in Paris and Rome?"},
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA=="},
                {
                    "type": "reasoning",
                    "id": "rs_2",
                    "summary": [{"type": "summary_text", "text": "**Plan**\n\ncall twice"}],
                    "content": [{"type": "reasoning_text", "text": "t"}],
                    "encrypted_content": None,
                    "status": "completed",
                },
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_a",
                    "name": "weather",
                    "arguments": '{"city": "Paris" }',
                    "status": "completed",
                },
                {
                    "type": "function_call",
                    "id": "fc_2",
                    "call_id": "call_b",
                    "name": "weather",
                    "namespace": "tools",
                    "arguments": "not json",
                },
                {
                    "type": "function_call_output",
                    "call_id": "call_b",
                    "output": "18C",
                    "status": None,
                    "id": None,
                },
                {
                    "type": "function_call_output",
                    "call_id": "call_a",
                    "output": [{"type": "input_text", "text": "21C"}],
                },
            ]
        },
    ),
    (
        "custom_tool_compaction_reference_hosted_unknown",
        {
            "input": [
                {
                    "type": "custom_tool_call",
                    "call_id": "call_c",
                    "name": "apply",
                    "input": "*** Begin Patch\n",
                    "id": "ctc_1",
                },
                {"type": "custom_tool_call_output", "call_id": "call_c", "output": "ok"},
                {"type": "compaction", "encrypted_content": "enc", "id": None},
                {"type": "compaction", "encrypted_content": "enc2"},
                {"id": "msg_stored"},
                {"type": "item_reference", "id": "msg_stored2"},
                {"type": None, "id": "msg_stored3"},
                {
                    "type": "web_search_call",
                    "id": "ws_1",
                    "status": "completed",
                    "action": {
                        "type": "search",
                        "query": "q",
                        "sources": [{"type": "url", "url": "https://a"}],
                    },
                },
                {
                    "type": "local_shell_call",
                    "id": "lsh_1",
                    "call_id": "call_d",
                    "status": "completed",
                    "action": {"type": "exec", "command": ["ls"], "env": {}},
                },
                {"type": "brand_new_item", "payload": {"deep": [1, 1.0, True, None]}, "id": "x"},
                {"type": "function_call_output", "call_id": "call_e", "output": {"stdout": "object output"}},
                {"type": "compaction_trigger"},
            ]
        },
    ),
    (
        "whitespace_and_unicode",
        {
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": " \t\n"},
                        {"type": "input_text", "text": "مرحبا 👋🏽 e\u0301 中文"},
                        {"type": "input_text", "text": ""},
                    ],
                }
            ]
        },
    ),
    (
        "response_object",
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1741476542,
            "status": "completed",
            "model": "gpt-5-mini",
            "instructions": None,
            "output": [
                {
                    "type": "reasoning",
                    "id": "rs_9",
                    "summary": [{"type": "summary_text", "text": "s"}],
                    "encrypted_content": "e",
                },
                {
                    "type": "message",
                    "id": "msg_9",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {
                            "type": "output_text",
                            "text": "hi",
                            "annotations": [],
                            "logprobs": [
                                {"token": "hi", "bytes": [104, 105], "logprob": -0.1, "top_logprobs": []}
                            ],
                        }
                    ],
                },
            ],
            "tools": [{"type": "function", "name": "f", "parameters": None, "strict": True}],
            "tool_choice": "auto",
            "parallel_tool_calls": True,
            "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
            "input_transformations": None,
        },
    ),
    (
        # OpenAI's cache hint: Chat has the slot on text and image_url parts
        "prompt_cache_breakpoint_on_parts",
        {
            "model": "gpt-5",
            "input": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "input_text",
                            "text": "Read this.",
                            "prompt_cache_breakpoint": {"mode": "explicit", "ttl": "30m"},
                        },
                        {
                            "type": "input_image",
                            "image_url": "https://example.com/a.png",
                            "detail": "high",
                            "prompt_cache_breakpoint": {"mode": "explicit"},
                        },
                    ],
                },
                {
                    "type": "message",
                    "role": "assistant",
                    "id": "msg_1",
                    "status": "completed",
                    "content": [
                        {
                            "type": "output_text",
                            "text": "Done.",
                            "annotations": [],
                            "prompt_cache_breakpoint": {"mode": "explicit"},
                        }
                    ],
                },
            ],
        },
    ),
]

CHAT: list[Case] = [
    ("minimal", {"messages": [{"role": "user", "content": "hi"}]}),
    (
        "assistant_content_four_states",
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "policy"},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a"},
                        {"type": "image_url", "image_url": {"url": "https://i", "detail": "low"}},
                    ],
                },
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "r1"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_2",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"x":1}'},
                        },
                        {"id": "call_3", "type": "custom", "custom": {"name": "g", "input": "raw"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "r2"}]},
                {"role": "tool", "tool_call_id": "call_3", "name": "g", "content": ""},
                {"role": "assistant", "content": "", "refusal": None, "tool_calls": []},
                {"role": "developer", "content": "inline developer"},
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "x"}, {"type": "refusal", "refusal": "y"}],
                    "name": "bot",
                    "tool_calls": None,
                },
            ],
            "temperature": 0.0,
            "n": 1,
        },
    ),
    (
        "provider_extras_and_legacy_function",
        {
            "messages": [
                {"role": "user", "content": "q", "name": "alice"},
                {
                    "role": "assistant",
                    "content": "thinking...",
                    "reasoning_content": "r",
                    "function_call": {"name": "f", "arguments": "{}"},
                },
                {"role": "function", "name": "f", "content": "fr"},
                {"role": "tool", "content": "no id", "tool_call_ids": ["a", "b"]},
                {
                    "role": "assistant",
                    "content": "x",
                    "tool_calls": [
                        {
                            "id": "",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}", "thought_signature": "sig"},
                            "extra_content": {"google": {}},
                        }
                    ],
                },
            ]
        },
    ),
    (
        "completion_object",
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "logprobs": None,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": None,
                        "annotations": [],
                        "tool_calls": [
                            {"id": "call_9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                        ],
                    },
                },
                {"index": 1, "finish_reason": "stop", "message": {"role": "assistant", "content": "alt"}},
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            "system_fingerprint": None,
        },
    ),
    (
        # OpenAI's cache hint: Responses has the slot on input_text / input_image, not output_text
        "prompt_cache_breakpoint_on_parts",
        {
            "model": "gpt-5",
            "messages": [
                {
                    "role": "system",
                    "content": [
                        {"type": "text", "text": "Policy.", "prompt_cache_breakpoint": {"mode": "explicit"}}
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "Read this.",
                            "prompt_cache_breakpoint": {"mode": "explicit", "ttl": "30m"},
                        },
                        {
                            "type": "image_url",
                            "image_url": {"url": "https://example.com/a.png", "detail": "low"},
                            "prompt_cache_breakpoint": {"mode": "explicit", "ttl": "12h"},
                        },
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Done.", "prompt_cache_breakpoint": {"mode": "explicit"}}
                    ],
                },
                {"role": "user", "content": [{"type": "text", "text": "x", "prompt_cache_breakpoint": None}]},
            ],
        },
    ),
]

ANTHROPIC: list[Case] = [
    (
        "minimal",
        {"model": "claude-sonnet-4-5", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]},
    ),
    (
        "system_blocks_and_thinking_tools",
        {
            "system": [
                {"type": "text", "text": "Policy A", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": " B "},
            ],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "go", "citations": None},
                        {"type": "image", "source": {"type": "url", "url": "https://i"}},
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "plan", "signature": "sig=="},
                        {"type": "redacted_thinking", "data": "opaque"},
                        {"type": "text", "text": "calling"},
                        {"type": "text", "text": "two"},
                        {
                            "type": "tool_use",
                            "id": "toolu_1",
                            "name": "f",
                            "input": {"a": 1, "b": 1.0, "c": [True, None], "é": {}},
                        },
                        {
                            "type": "tool_use",
                            "id": "toolu_2",
                            "name": "g",
                            "input": {},
                            "cache_control": {"type": "ephemeral", "ttl": "1h"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok", "is_error": False},
                        {"type": "tool_result", "tool_use_id": "toolu_2"},
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_3",
                            "content": [{"type": "text", "text": "r"}],
                            "is_error": True,
                        },
                        {"type": "text", "text": "and then?"},
                    ],
                },
                {"role": "system", "content": "inline system"},
                {"role": "assistant", "content": []},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "server_tool_use",
                            "id": "srvtoolu_1",
                            "name": "web_search",
                            "input": {"query": "q"},
                        },
                        {
                            "type": "web_search_tool_result",
                            "tool_use_id": "srvtoolu_1",
                            "content": {"type": "web_search_tool_result_error", "error_code": "unavailable"},
                        },
                        {"type": "compaction", "content": None},
                        {"type": "fallback", "from": "a", "to": "b"},
                    ],
                },
            ],
            "tools": [{"name": "f", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "auto"},
            "thinking": {"type": "enabled", "budget_tokens": 1024},
        },
    ),
    (
        "message_object",
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-6",
            "content": [
                {"type": "text", "text": "hello", "citations": None},
                {"type": "tool_use", "id": "toolu_9", "name": "f", "input": {"q": "x"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 2},
        },
    ),
    (
        "refusal_empty_content",
        {
            "id": "msg_2",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "stop_reason": "refusal",
        },
    ),
    (
        "claude_code_extra_message_keys",
        {
            "messages": [
                {
                    "role": "assistant",
                    "id": "msg_x",
                    "type": "message",
                    "model": "claude",
                    "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}}],
                    "usage": {"output_tokens": 1},
                }
            ]
        },
    ),
    (
        "inline_system_messages_and_adjacent_same_role",
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": "You are a code reviewer.",
            "messages": [
                {"role": "system", "content": "Leading inline system text."},
                {"role": "user", "content": [{"type": "text", "text": "Review it."}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Looks fine."}]},
                {"role": "user", "content": [{"type": "text", "text": "Again."}]},
                {"role": "user", "content": "Once more."},
                {"role": "system", "content": [{"type": "text", "text": "Use type annotations."}]},
                {"role": "system", "content": [{"type": "text", "text": "State the complexity."}]},
            ],
            "temperature": 0.5,
        },
    ),
    (
        "claude_code_split_messages_and_trailing_tool_use",
        {
            "messages": [
                {"role": "user", "content": "list the files"},
                {
                    "role": "assistant",
                    "id": "msg_01",
                    "type": "message",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "thinking", "thinking": "use ls", "signature": "EqQB"}],
                    "stop_reason": None,
                    "usage": {"input_tokens": 3, "output_tokens": 5},
                },
                {
                    "role": "assistant",
                    "id": "msg_01",
                    "type": "message",
                    "model": "claude-sonnet-4-5",
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"c": "ls"}}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a\nb", "is_error": True}
                    ],
                },
                {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "opaque"}]},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"p": "a"}}],
                },
            ],
        },
    ),
    (
        "tool_results_out_of_place",
        {
            "max_tokens": 0,
            "tools": [{"type": "custom", "name": "f", "input_schema": {"type": "object"}}],
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "nobody", "content": "x"}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": ""},
                        {"type": "tool_use", "id": "toolu_u", "name": "f", "input": {}},
                    ],
                },
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_a", "name": "f", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "first the text"},
                        {"type": "tool_result", "tool_use_id": "toolu_a", "content": " "},
                    ],
                },
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_b", "name": "f", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_b", "content": ""},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/bmp", "data": "Qk0="},
                        },
                        {
                            "type": "image",
                            "source": {"type": "url", "url": "https://example.com/a.png", "x_vendor": 1},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "run it yourself"},
                        {"type": "tool_use", "id": "toolu_s", "name": "f", "input": {}},
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_s", "content": "ok"}],
                },
                {"role": "assistant", "content": "Done.  "},
            ],
        },
    ),
    (
        "blank_system_and_empty_tools",
        {"max_tokens": 16, "system": " ", "tools": [], "messages": [{"role": "user", "content": "hi"}]},
    ),
]

CASES: dict[str, list[Case]] = {"responses": RESPONSES, "chat": CHAT, "anthropic": ANTHROPIC}

# Lines that break their format: (format, line, expected error).
BAD_LINES: list[tuple[str, bytes, str]] = [
    ("responses", b'{"input": [{"role": "user", "content": "a"}', "$: invalid JSON"),
    ("responses", b"[1, 2]", "$: expected object, got array"),
    ("responses", b'"just a string"', "$: expected object, got string"),
    (
        "responses",
        b'{"input": [{"content": "no type, no role"}]}',
        "$.input[0]: item has neither 'type' nor 'role'",
    ),
    ("responses", b'{"input": [{"type": "message", "content": "x"}]}', "$.input[0]: message without role"),
    (
        "responses",
        b'{"input": [{"role": "user", "content": 5}]}',
        "$.input[0].content: expected string or array, got number",
    ),
    (
        "responses",
        b'{"input": [{"role": "user", "content": ["bare"]}]}',
        "$.input[0].content[0]: expected object, got string",
    ),
    ("responses", b'{"input": 7}', "$.input: expected string or array, got number"),
    ("responses", b'{"model": "gpt-5"}', "$: request body without 'input'"),
    (
        "responses",
        b'{"input": [], "instructions": 3}',
        "$.instructions: expected string, array or null, got number",
    ),
    ("chat", b'{"messages": [{"content": "no role"}]}', "$.messages[0]: message without role"),
    (
        "chat",
        b'{"messages": [{"role": "user", "content": {"text": "x"}}]}',
        "$.messages[0].content: expected string or array, got object",
    ),
    ("chat", b'{"messages": "hi"}', "$.messages: expected array, got string"),
    (
        "chat",
        b'{"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}]}',
        "$.messages[0].tool_calls[0]: tool call without 'function'",
    ),
    (
        "anthropic",
        b'{"messages": [{"role": "user", "content": 1.5}]}',
        "$.messages[0].content: expected string or array, got number",
    ),
    (
        "anthropic",
        b'{"messages": [{"role": "user", "content": ["x"]}]}',
        "$.messages[0].content[0]: expected object, got string",
    ),
    (
        "anthropic",
        b'{"system": {"text": "x"}, "messages": []}',
        "$.system: expected string or array, got object",
    ),
    ("anthropic", b'{"max_tokens": 5}', "$.messages: expected array, got nothing"),
    (
        "chat",
        b'{"messages": [], "seed": 18446744073709551616}',
        "$.seed: integer outside the 64-bit range cannot be stored exactly",
    ),
]

# -- appended cases ---------------------------------------------------------------------------------

# Claude Code's schema fixtures record tool_use / tool_result blocks without ids: Chat and Responses
# need ids (generated from the record, results paired by position); the second result answers no call.
ANTHROPIC.append(
    (
        "tool_use_without_ids",
        {
            "max_tokens": 64,
            "messages": [
                {"role": "user", "content": "list files"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Listing."},
                        {"type": "tool_use", "name": "bash", "input": {"command": "ls"}},
                    ],
                },
                {"role": "user", "content": [{"type": "tool_result", "content": "a.txt"}]},
                {"role": "user", "content": [{"type": "tool_result", "content": "denied", "is_error": True}]},
                {"role": "assistant", "content": "Done."},
            ],
        },
    )
)

# Calls and tool outputs recorded without call ids (agent logs, hand-written fixtures): every target
# gets the ids pipeline/encoders/call_ids.py generates from the record, outputs their call's id by
# position (the oldest unanswered call before them): one call and its output, then two parallel calls
# and their two outputs.
RESPONSES.append(
    (
        "calls_and_outputs_without_call_ids",
        {
            "model": "gpt-5",
            "input": [
                {"role": "user", "content": "list files, then the weather in Paris and Rome"},
                {"type": "function_call", "name": "sh", "arguments": '{"cmd":"ls"}'},
                {"type": "function_call_output", "output": "a.txt"},
                {"type": "function_call", "name": "weather", "arguments": '{"city":"Paris"}'},
                {"type": "function_call", "name": "weather", "arguments": '{"city":"Rome"}'},
                {"type": "function_call_output", "output": "18C"},
                {"type": "function_call_output", "output": "21C"},
                {"role": "assistant", "content": "a.txt; Paris 18C, Rome 21C."},
            ],
        },
    )
)
CHAT.append(
    (
        "tool_calls_and_tool_messages_without_ids",
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "user", "content": "list files, then the weather in Paris and Rome"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"type": "function", "function": {"name": "sh", "arguments": '{"cmd":"ls"}'}}
                    ],
                },
                {"role": "tool", "content": "a.txt"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                        },
                        {
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{"city":"Rome"}'},
                        },
                    ],
                },
                {"role": "tool", "content": "18C"},
                {"role": "tool", "content": "21C"},
                {"role": "assistant", "content": "a.txt; Paris 18C, Rome 21C."},
            ],
        },
    )
)

# Nesting past the decoders' limit (pipeline.formats.MAX_DEPTH = 200): ~500 levels around a 20-digit
# integer once killed the whole job with a RecursionError; 1100 is past orjson's own read limit.
BAD_LINES += [
    (
        "responses",
        b'{"input": "x", "deep": ' + b"[" * 500 + b"123456789012345678901234" + b"]" * 500 + b"}",
        "$.deep[0][0][0][0][0][0][0][0][0][0][0]...: nested deeper than 200 levels",
    ),
    (
        "chat",
        b'{"messages": [{"role": "user", "content": "x", "deep": '
        + b'{"a":' * 300
        + b"1"
        + b"}" * 300
        + b"}]}",
        "$.messages[0].deep.a.a.a.a.a.a.a.a.a...: nested deeper than 200 levels",
    ),
    (
        "anthropic",
        b'{"messages": [], "deep": ' + b"[" * 1100 + b"]" * 1100 + b"}",
        "$: nested deeper than 200 levels",
    ),
]

# Records that break one acceptance rule of their own format (pipeline/encoders/rules.py):
# (rule id, format, record). `chatlake check --as FORMAT` finds exactly that rule in each.
_U = {"role": "user", "content": "hi"}


def _fn(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def _chat_call(call_id: str, name: str = "f") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}],
    }


RULE_BREAKERS: list[tuple[str, str, dict[str, Any]]] = [
    ("chat.messages_nonempty", "chat", {"model": "gpt-5", "messages": []}),
    (
        "chat.tool_results_follow_call",
        "chat",
        {
            "messages": [
                _U,
                _chat_call("c1"),
                {"role": "developer", "content": "sandbox: on"},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            ]
        },
    ),
    (
        "chat.tool_calls_answered",
        "chat",
        {"messages": [_U, _chat_call("c1"), {"role": "user", "content": "go on"}]},
    ),
    (
        "chat.tool_result_has_call",
        "chat",
        {"messages": [_U, {"role": "tool", "tool_call_id": "c9", "content": "ok"}]},
    ),
    (
        "chat.tool_name",
        "chat",
        {
            "messages": [
                _U,
                _chat_call("c1", "mcp.files.read"),
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
            ],
            "tools": [_fn("mcp.files.read")],
        },
    ),
    ("chat.content_nonempty", "chat", {"messages": [_U, {"role": "user", "content": []}]}),
    ("chat.tool_choice_needs_tools", "chat", {"messages": [_U], "tools": [], "tool_choice": "none"}),
    (
        "chat.tool_choice_declared",
        "chat",
        {
            "messages": [_U],
            "tools": [_fn("a")],
            "tool_choice": {"type": "function", "function": {"name": "b"}},
        },
    ),
    (
        "responses.output_has_call",
        "responses",
        {"input": [_U, {"type": "function_call_output", "call_id": "c1", "output": "ok"}]},
    ),
    (
        "responses.tool_name",
        "responses",
        {"input": [_U], "tools": [{"type": "function", "name": "x" * 65, "parameters": {}, "strict": False}]},
    ),
    (
        "responses.tool_choice_declared",
        "responses",
        {"input": [_U], "tool_choice": "required"},
    ),
    (
        "responses.calls_declared",
        "responses",
        {
            "input": [
                _U,
                {"type": "function_call", "call_id": "c1", "name": "search_tools", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            ],
            "tools": [{"type": "function", "name": "get_weather", "parameters": {}, "strict": False}],
        },
    ),
    ("anthropic.messages_nonempty", "anthropic", {"max_tokens": 8, "messages": []}),
    (
        "anthropic.first_message_user",
        "anthropic",
        {"max_tokens": 8, "messages": [{"role": "assistant", "content": "hello"}, _U]},
    ),
    ("anthropic.roles_alternate", "anthropic", {"max_tokens": 8, "messages": [_U, _U]}),
    (
        "anthropic.tool_result_next",
        "anthropic",
        {
            "max_tokens": 8,
            "messages": [
                _U,
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
                },
                {"role": "user", "content": "go on"},
            ],
        },
    ),
    (
        "anthropic.tool_result_first",
        "anthropic",
        {
            "max_tokens": 8,
            "messages": [
                _U,
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "here:"},
                        {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                    ],
                },
            ],
        },
    ),
    (
        "anthropic.tool_result_has_call",
        "anthropic",
        {
            "max_tokens": 8,
            "messages": [
                _U,
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
            ],
        },
    ),
    (
        "anthropic.tool_name",
        "anthropic",
        {
            "max_tokens": 8,
            "messages": [_U],
            "tools": [{"name": "read file", "input_schema": {"type": "object"}}],
        },
    ),
    (
        "anthropic.content_nonempty",
        "anthropic",
        {
            "max_tokens": 8,
            "messages": [{"role": "user", "content": []}, {"role": "assistant", "content": "x"}, _U],
        },
    ),
    (
        "anthropic.tool_choice_declared",
        "anthropic",
        {
            "max_tokens": 8,
            "messages": [_U],
            "tools": [{"name": "a", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "b"},
        },
    ),
    ("hf.messages_nonempty", "hf", {"messages": []}),
    (
        "hf.tool_name",
        "hf",
        {
            "messages": [
                _U,
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"type": "function", "function": {"name": "x" * 65, "arguments": {}}}],
                },
                {"role": "tool", "content": "ok"},
            ]
        },
    ),
    (
        "hf.tool_results_follow_call",
        "hf",
        {
            "messages": [
                _U,
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}],
                },
                {"role": "user", "content": "and?"},
                {"role": "tool", "content": "ok"},
            ]
        },
    ),
]


# Records a conversion once changed with no loss reported (both codecs): a key that belongs to
# another Responses item type, an OpenAI part's cache_control and a Chat tool message's "output"
# on the way to Anthropic, an Anthropic tool_choice string on the way to Responses. Each is kept
# (Responses -> Responses verbatim) and reported where a target cannot carry it:
# (name, format, record, the paths reported on the way to each other format).
_CALL = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
_OUT = {"type": "function_call_output", "call_id": "c", "output": "x"}
_CUSTOM = {"type": "custom_tool_call", "call_id": "c", "name": "f", "input": "i"}
_CUSTOM_OUT = {"type": "custom_tool_call_output", "call_id": "c", "output": "o"}
_USER = {"role": "user", "content": "x"}
_CACHE = {"type": "ephemeral"}
_CHAT_CALL = {
    "role": "assistant",
    "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
}


def _both(path: str) -> dict[str, str]:
    return {"chat": path, "anthropic": path}


def _openai(path: str) -> dict[str, str]:
    return {"responses": path, "anthropic": path}


def _user_part(part: dict) -> dict:
    return {"messages": [{"role": "user", "content": [part]}]}


_IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}, "cache_control": _CACHE}
_IMAGE_URL = {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "auto"}}
_PDF = {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERg==", "filename": "a.pdf"}}
_INPUT_IMAGE = {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"}
_TOOL_MESSAGE = {"role": "tool", "tool_call_id": "c", "content": "r", "output": "o"}
_ASSISTANT_WITH_ID = {"type": "message", "role": "assistant", "content": "a", "call_id": "c"}
STRAY_KEYS: list[tuple[str, str, dict, dict[str, str]]] = [
    ("input on a function call", "responses",
     {"input": [_USER, {**_CALL, "input": "q"}, _OUT]}, _both("/input/1/input")),
    ("role on a function call", "responses",
     {"input": [_USER, {**_CALL, "role": "user"}, _OUT]}, _both("/input/1/role")),
    ("input on a call output", "responses",
     {"input": [_USER, _CALL, {**_OUT, "input": "q"}]}, _both("/input/2/input")),
    ("role on a call output", "responses",
     {"input": [_USER, _CALL, {**_OUT, "role": "user"}]}, _both("/input/2/role")),
    ("arguments on a custom tool call", "responses",
     {"input": [_USER, {**_CUSTOM, "arguments": "{}"}, _CUSTOM_OUT]},
     {"chat": "/input/1/arguments", "anthropic": "/input/1"}),
    ("role on a custom tool output", "responses",
     {"input": [_USER, _CUSTOM, {**_CUSTOM_OUT, "role": "assistant"}]},
     {"chat": "/input/2/role", "anthropic": "/input/2"}),
    ("call_id on a message", "responses", {"input": [{**_USER, "call_id": "c"}]}, _both("/input/0/call_id")),
    ("call_id on an assistant message", "responses",
     {"input": [_USER, _ASSISTANT_WITH_ID]}, _both("/input/1/call_id")),
    ("encrypted_content on a message", "responses",
     {"input": [{**_USER, "encrypted_content": "e"}]}, _both("/input/0/encrypted_content")),
    ("arguments on a message", "responses",
     {"input": [{**_USER, "arguments": "{}"}]}, _both("/input/0/arguments")),
    ("cache_control on a Chat text part", "chat",
     _user_part({"type": "text", "text": "x", "cache_control": _CACHE}),
     _openai("/messages/0/content/0/cache_control")),
    ("cache_control on a Chat system part", "chat",
     {"messages": [{"role": "system", "content": [{"type": "text", "text": "s", "cache_control": _CACHE}]},
                   _USER]},
     _openai("/messages/0/content/0/cache_control")),
    ("cache_control on a Chat image part", "chat", _user_part(_IMAGE),
     _openai("/messages/0/content/0/cache_control")),
    ("cache_control on a Responses text part", "responses",
     {"input": [{"role": "user", "content": [{"type": "input_text", "text": "x", "cache_control": _CACHE}]}]},
     _both("/input/0/content/0/cache_control")),
    ("output on a Chat tool message", "chat",
     {"messages": [_USER, _CHAT_CALL, _TOOL_MESSAGE]}, _openai("/messages/2/output")),
    ("Anthropic tool_choice as a string", "anthropic", {"messages": [_USER], "tool_choice": "auto"},
     {"responses": "/tool_choice", "chat": "/tool_choice"}),
    # a text part's keys on an image or file part (the block's text / annotations / logprobs /
    # citations columns): an image or document block has no slot for them
    ("text on a Chat image part", "chat", _user_part({**_IMAGE_URL, "text": "t"}),
     {"anthropic": "/messages/0/content/0/text"}),
    ("null text on a Chat image part", "chat", _user_part({**_IMAGE_URL, "text": None}),
     {"anthropic": "/messages/0/content/0/text"}),
    ("annotations on a Chat image part", "chat", _user_part({**_IMAGE_URL, "annotations": []}),
     {"anthropic": "/messages/0/content/0/annotations"}),
    ("logprobs on a Chat image part", "chat", _user_part({**_IMAGE_URL, "logprobs": [1]}),
     {"anthropic": "/messages/0/content/0/logprobs"}),
    ("citations on a Chat image part", "chat", _user_part({**_IMAGE_URL, "citations": None}),
     {"anthropic": "/messages/0/content/0/citations"}),
    ("text on a Chat file part", "chat", _user_part({**_PDF, "text": "t"}),
     {"anthropic": "/messages/0/content/0/text"}),
    ("text on a Responses image part", "responses",
     {"input": [{"role": "user", "content": [{**_INPUT_IMAGE, "text": "t"}]}]},
     {"anthropic": "/input/0/content/0/text"}),
    # a Chat tool's sub-object of the other type ("function" on a custom tool): the target's tool
    # is built from the one its type names
    ("function on a Chat custom tool", "chat",
     {"messages": [_USER], "tools": [{"type": "custom", "custom": {"name": "g"}, "function": {"name": "f"}}]},
     {"responses": "/tools/0/function", "anthropic": "/tools"}),
    ("custom on a Chat function tool", "chat",
     {"messages": [_USER], "tools": [{"type": "function", "function": {"name": "f", "parameters": {}},
                                      "custom": {"name": "g"}}]},
     _openai("/tools/0/custom")),
    # carried to Responses as file_url, which comes back to Anthropic only when it is http(s)
    ("a document URL that is not http(s)", "anthropic",
     {"messages": [{"role": "user", "content": [
         {"type": "text", "text": "a"},
         {"type": "document", "source": {"type": "url", "url": "data:image/png;base64,iVBORw0KGgo="}}]}]},
     {"responses": "/messages/0/content/1", "chat": "/messages/0/content/1"}),
]  # fmt: skip
