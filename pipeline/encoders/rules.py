"""What each target API accepts beyond its SDK types: the acceptance rules, as data, in one place.

An SDK's request types check field names and shapes; the server refuses far more (message order,
call/result pairing, name patterns, empty arrays). :data:`RULES` lists the rules chatlake enforces,
one row each: a stable id (``chat.tool_results_follow_call``), one sentence, where the rule comes
from (the API's error text and the provider's documentation), and the repair chatlake applies to a
converted record that breaks it (the loss kind it is reported under), or ``None`` when such a
record is rejected with the rule's id as the reason.

Who uses the table:

* :mod:`pipeline.encoders.rule_checks` finds the records of a target format that break a rule
  (``chatlake check``, and the tests of every conversion's output);
* :mod:`pipeline.encoders.repairs` repairs (or rejects) the canonical rows a conversion is about to
  encode, ahead of both the compiled and the Python encoders;
* ``docs/target-rules.md`` is this table as a page (``tests/encoders/test_rules.py`` keeps them equal).

>>> [r.id for r in rules_of("anthropic")][:2]
['anthropic.messages_nonempty', 'anthropic.first_message_user']
>>> RULE["chat.tool_name"].repair
'tool_name'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# What a target accepts as a function / tool name. Chat documents ^[a-zA-Z0-9_-]{1,64}$; Responses
# enforces the same pattern; Anthropic's documents {1,64} (its server has since allowed 128):
# 64 is what all three accept.
NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
NAME_MAX = 64
NAME_RE = re.compile(NAME_PATTERN)


@dataclass(frozen=True)
class Rule:
    """One acceptance rule of one target."""

    id: str  # <target>.<what>, stable: rejection reasons, loss details and audits name it
    target: str
    rule: str  # one sentence
    source: str  # the API's error text and the provider documentation or report it comes from
    repair: str | None  # the loss kind of chatlake's repair; None: a breaking record is rejected
    how: str = ""  # what the repair does (empty when there is none)


_CHAT_ORDER = (
    "`An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'.` — https://platform.openai.com/docs/guides/function-calling ; "
    "https://github.com/BerriAI/litellm/issues/10083"
)
_CHAT_NAME = (
    "`Invalid 'tools[N].function.name': string does not match pattern. Expected a string that matches "
    "the pattern '^[a-zA-Z0-9_-]+$'.` / `…string too long. Expected a string with maximum length 64` — "
    "https://platform.openai.com/docs/api-reference/chat/create"
)

RULES: tuple[Rule, ...] = (
    # --- OpenAI Chat Completions -------------------------------------------------------------
    Rule(
        "chat.messages_nonempty",
        "chat",
        "`messages` holds at least one message.",
        "`Invalid 'messages': empty array. Expected an array with minimum length 1` — "
        "https://platform.openai.com/docs/api-reference/chat/create",
        None,
    ),
    Rule(
        "chat.tool_results_follow_call",
        "chat",
        "An assistant message with `tool_calls` is followed directly by one `tool` message per call; "
        "no other message comes between them.",
        _CHAT_ORDER,
        "moved_message",
        "the messages between a call and its results move to right after the results",
    ),
    Rule(
        "chat.tool_calls_answered",
        "chat",
        "Every `tool_call_id` of an assistant message is answered by a `tool` message.",
        _CHAT_ORDER,
        None,
    ),
    Rule(
        "chat.tool_result_has_call",
        "chat",
        "A `tool` message answers a `tool_call_id` of the assistant message right before its tool messages.",
        "`Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
        "'tool_calls'.` — https://github.com/smarter-sh/smarter/issues/264",
        None,
    ),
    Rule(
        "chat.tool_name",
        "chat",
        "Function names (in `tools` and in the calls of `messages`) match `^[a-zA-Z0-9_-]{1,64}$`.",
        _CHAT_NAME,
        "tool_name",
        "the name's invalid characters become `_` and a long one is cut, with a stable hash suffix; the "
        "same new name in `tools`, `tool_choice` and every call of the record",
    ),
    Rule(
        "chat.content_nonempty",
        "chat",
        "A message's content list is not empty.",
        "`Invalid 'messages[N].content': empty array. Expected an array with minimum length 1` — "
        "https://platform.openai.com/docs/api-reference/chat/create ; "
        "https://github.com/openai/openai-python/issues/1812",
        "empty_content",
        'a message left with no content is dropped (a tool message\'s content becomes `""`)',
    ),
    Rule(
        "chat.tool_choice_needs_tools",
        "chat",
        "`tool_choice` is sent only with a non-empty `tools` list.",
        "`Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.` — "
        "https://github.com/vllm-project/vllm/pull/40311",
        "tool_choice",
        "the `tool_choice` is dropped",
    ),
    Rule(
        "chat.tool_choice_declared",
        "chat",
        "A named `tool_choice` names a function the request declares in `tools`.",
        "(uncertain: no public report quotes the error) — https://github.com/NVIDIA-NeMo/Guardrails/issues/2268",
        "tool_choice",
        "the `tool_choice` is dropped",
    ),
    # --- OpenAI Responses --------------------------------------------------------------------
    Rule(
        "responses.output_has_call",
        "responses",
        "Every `function_call_output` / `custom_tool_call_output` has a call with its `call_id` earlier "
        "in `input`.",
        "`No tool call found for function call output with call_id call_….` — "
        "https://developers.openai.com/api/docs/guides/function-calling",
        None,
    ),
    Rule(
        "responses.tool_name",
        "responses",
        "Function tool names (in `tools` and in the calls of `input`) match `^[a-zA-Z0-9_-]{1,64}$`.",
        "`Invalid 'tools[N].name': string does not match pattern. Expected a string that matches the "
        "pattern '^[a-zA-Z0-9_-]+$'.` — https://github.com/openai/openai-dotnet/issues/441",
        "tool_name",
        "as `chat.tool_name`",
    ),
    Rule(
        "responses.tool_choice_declared",
        "responses",
        '`tool_choice: "required"` comes with tools, and a named `tool_choice` names a declared tool.',
        "`Tool choice 'required' must be specified with 'tools' parameter.` / `Tool choice '<name>' not "
        "found in 'tools' parameter.` — https://github.com/vllm-project/vllm/pull/40399",
        "tool_choice",
        "the `tool_choice` is dropped",
    ),
    Rule(
        "responses.calls_declared",
        "responses",
        "When the request declares tools, every function call in `input` names one of them.",
        "a call to an undeclared tool cannot be continued: the function-calling guide pairs every call "
        "with a declared tool — https://developers.openai.com/api/docs/guides/function-calling",
        None,
    ),
    # --- Anthropic Messages ------------------------------------------------------------------
    Rule(
        "anthropic.messages_nonempty",
        "anthropic",
        "`messages` holds at least one message.",
        "`messages: at least one message is required` — https://platform.claude.com/docs/en/api/messages",
        None,
    ),
    Rule(
        "anthropic.first_message_user",
        "anthropic",
        "The first message is a `user` message.",
        '`messages: first message must use the "user" role` — https://github.com/lobehub/lobehub/issues/1601',
        None,
    ),
    Rule(
        "anthropic.roles_alternate",
        "anthropic",
        "`user` and `assistant` messages alternate.",
        '`messages: roles must alternate between "user" and "assistant"` — '
        "https://platform.claude.com/docs/en/api/messages",
        None,
    ),
    Rule(
        "anthropic.tool_result_next",
        "anthropic",
        "Every `tool_use` block is answered by a `tool_result` block in the very next (user) message.",
        "`` `tool_use` ids were found without `tool_result` blocks immediately after `` — "
        "https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls",
        None,
    ),
    Rule(
        "anthropic.tool_result_first",
        "anthropic",
        "In that user message the `tool_result` blocks come first, any text or image after them.",
        "`Messages following tool_use blocks must begin with a matching number of tool_result blocks.` — "
        "https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls",
        None,
    ),
    Rule(
        "anthropic.tool_result_has_call",
        "anthropic",
        "A `tool_result` block answers a `tool_use` block of the previous (assistant) message.",
        "`` unexpected `tool_use_id` found in `tool_result` blocks `` — "
        "https://github.com/anthropics/claude-code/issues/13460",
        None,
    ),
    Rule(
        "anthropic.tool_name",
        "anthropic",
        "Tool names (in `tools` and in `tool_use` blocks) match `^[a-zA-Z0-9_-]{1,64}$`.",
        "`tools.N.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'` — "
        "https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools",
        "tool_name",
        "as `chat.tool_name`",
    ),
    Rule(
        "anthropic.content_nonempty",
        "anthropic",
        "Every message has non-empty content (only a final assistant message may be empty).",
        "`messages.N: all messages must have non-empty content except for the optional final assistant "
        "message` — https://github.com/anthropics/claude-code/issues/4416",
        "empty_content",
        "a message left with no content is dropped",
    ),
    Rule(
        "anthropic.tool_choice_declared",
        "anthropic",
        "A `tool_choice` of type `any` or `tool` comes with tools, and a `tool` choice names a declared "
        "tool.",
        "`tool_choice.name: Tool '<name>' not found in tools` — "
        "https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use",
        "tool_choice",
        "the `tool_choice` is dropped",
    ),
    # --- Hugging Face / TRL conversational rows ----------------------------------------------
    Rule(
        "hf.messages_nonempty",
        "hf",
        "A row holds at least one message.",
        "a chat template renders nothing for an empty conversation; TRL's SFT trainer needs one — "
        "https://huggingface.co/docs/trl/dataset_formats",
        None,
    ),
    Rule(
        "hf.tool_name",
        "hf",
        "Function names (in `tools` and in the calls of `messages`) match `^[a-zA-Z0-9_-]{1,64}$`.",
        "a row's calls are what the model learns to emit: `--style openai` rows are the OpenAI "
        "fine-tuning format (Chat's `tools`, as `chat.tool_name`), and OpenAI-compatible servers in front "
        "of chat templates refuse other names — https://github.com/raullenchai/Rapid-MLX/pull/748 ; "
        "https://github.com/waybarrios/vllm-mlx/pull/582",
        "tool_name",
        "as `chat.tool_name`",
    ),
    Rule(
        "hf.tool_results_follow_call",
        "hf",
        "An assistant message with `tool_calls` is followed directly by its `tool` messages.",
        "chat templates render tool results right after the call that asked for them — "
        "https://huggingface.co/docs/transformers/chat_extras#tools",
        "moved_message",
        "as `chat.tool_results_follow_call`",
    ),
)

RULE: dict[str, Rule] = {r.id: r for r in RULES}
TARGETS: tuple[str, ...] = tuple(dict.fromkeys(r.target for r in RULES))
REPAIR_KINDS: frozenset[str] = frozenset(r.repair for r in RULES if r.repair is not None)


def rules_of(target: str) -> tuple[Rule, ...]:
    """The rules of one target, in table order (ShareGPT has none: no API reads it)."""
    return tuple(r for r in RULES if r.target == target)


def markdown_table(target: str) -> str:
    """The rules of ``target`` as the Markdown table of ``docs/target-rules.md``."""
    lines = ["| id | rule | source | repair |", "|---|---|---|---|"]
    for r in rules_of(target):
        repair = f"`{r.repair}`: {r.how}" if r.repair else "none: the record is rejected"
        lines.append(f"| `{r.id}` | {r.rule} | {r.source} | {repair} |")
    return "\n".join(lines)
