"""The loss vocabulary: every way a conversion can drop or change something, one kind each.

A loss is ``{"path", "kind", "detail"}``: ``path`` is an RFC 6901 JSON pointer into the *source*
record naming what was dropped or changed, ``kind`` one of :data:`LOSS_KINDS`, ``detail`` a short
human sentence. The vocabulary is closed: a converter that reports a kind not listed here fails its
tests (``Loss.__post_init__`` checks it).

Most kinds are losses: something of the source is not in the target as it was. A few are
*additions* (``addition=True`` on their entry, :data:`ADDITIONS`): something chatlake put in the
target that the source did not have (a required value filled with its documented default, a value
the user set with ``--set``). They are reported in the same loss table, so a user sees them, but
``--on-loss reject`` never refuses a record for them and the counts of lossy records leave them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class LossKind(NamedTuple):
    """One entry of :data:`LOSS_KINDS`."""

    meaning: str
    example: str
    addition: bool = False  # chatlake added something (not a loss): never refused, not "lossy"


# kind -> (what it means, an example[, True for an addition])
_KINDS: dict[str, tuple[str, str] | tuple[str, str, bool]] = {
    "item_id": ("an item id the target has no slot for", "Responses /input/3/id 'msg_1' -> Chat"),
    "generated_id": (
        "the target requires an id the source did not have; one was generated deterministically",
        "Chat assistant message -> Responses output message id 'msg_gen_…'",
    ),
    "phase": ("assistant phase (commentary / final_answer / explicit null) dropped", "/input/4/phase"),
    "status": ("item status dropped", "/input/2/status 'completed' -> Chat"),
    "instruction_position": (
        "top-level instructions/system became (or came from) a positioned message",
        "Responses /instructions -> Chat leading system message",
    ),
    "developer_role": (
        "developer and system merged into one role",
        "Responses developer -> Anthropic system",
    ),
    "role": (
        "a role or speaker tag written back under the target's own name (an alias is not kept)",
        "ShareGPT /conversations/3/from 'chatgpt' -> HF assistant -> 'gpt'",
    ),
    "system_position": (
        "an inline system/developer message moved (to the top-level system, or into user text)",
        "/input/5 developer message -> Anthropic user text",
    ),
    "reasoning": ("a reasoning / thinking item dropped (its text is lost)", "/input/1 -> Chat"),
    "encrypted_reasoning": ("opaque reasoning state dropped", "/input/1/encrypted_content -> Chat"),
    "thinking_signature": ("an Anthropic thinking signature has no slot", "/messages/1/content/0/signature"),
    "compaction": ("a compaction item dropped", "/input/7 -> Chat"),
    "content_form": (
        "string vs list form, or absent / null / empty content, changed",
        "Chat assistant content '' -> Responses (no message item)",
    ),
    "block_boundary": ("several text blocks joined into one string", "/messages/0/content -> ShareGPT value"),
    "whitespace": (
        "text changed by trimming (the target rejects the whitespace)",
        "/messages/3/content/1/text",
    ),
    "empty_text": ("an empty or whitespace-only text dropped (the target rejects it)", "/input/2/content/0"),
    "annotations": ("output_text annotations dropped", "/output/1/content/0/annotations"),
    "logprobs": ("token logprobs dropped", "/output/1/content/0/logprobs"),
    "refusal": ("a refusal became plain text or was dropped", "/input/3/content/1 -> Anthropic"),
    "custom_tool": ("a custom (free-form) tool call wrapped or dropped", "/input/6 -> Anthropic"),
    "hosted_tool": ("a hosted/server tool item dropped", "/input/8 web_search_call -> Chat"),
    "argument_string": (
        "tool arguments re-serialised (formatting changed, or invalid JSON wrapped)",
        "/input/3/arguments '{\"a\": 1}' -> Anthropic input object",
    ),
    "text_order": (
        "text after tool calls in the same turn moved before them (Chat cannot order text after calls)",
        "/input/4 message after the call /input/3",
    ),
    "tool_output_order": ("tool outputs reordered to follow their calls", "/input/6 moved before /input/5"),
    "orphan_output": ("a tool output without a matching call", "/messages/4 tool_call_id 'x'"),
    "unanswered_call": (
        "a tool call with no output after it dropped (the target rejects unanswered calls)",
        "/input/5 function_call without function_call_output -> Anthropic",
    ),
    "name": ("a participant or tool name the target has no slot for", "/messages/0/name"),
    "namespace": ("a tool namespace dropped or flattened", "/input/2/namespace"),
    "cache_control": ("a prompt-caching marker dropped", "/messages/0/content/1/cache_control"),
    "citations": ("citations dropped", "/content/2/citations"),
    "image": (
        "an image part dropped or changed (file id, a detail value the target does not accept, media type)",
        "/input/0/content/1/detail '[trimmed]' -> Chat (not auto/low/high/original)",
    ),
    "file": ("a file/document part dropped", "/messages/0/content/2"),
    "audio": ("an audio part or reference dropped", "/messages/2/audio"),
    "tool_error": ("a tool result's is_error flag has no slot", "/messages/2/content/0/is_error"),
    "message_merge": ("adjacent same-role messages merged into one", "/messages/3 merged into /messages/2"),
    "tools": ("a tool definition or tool_choice dropped or changed", "/tools/2 namespace tool"),
    "unknown_item": ("an item kind the target cannot express dropped", "/input/9 'brand_new_item'"),
    "unknown_field": ("a key the target has no slot for dropped", "/input/2/caller"),
    "filled_default": (
        "the target requires a value the source did not have; a documented default was set",
        "/max_output_tokens absent -> Anthropic max_tokens 4096",
        True,
    ),
    "set": (
        "a top-level request field set by the user (--set FIELD=VALUE, a job's [set] table)",
        "/max_output_tokens set to 4096 by --set max_tokens=4096 -> Anthropic",
        True,
    ),
    "model_provider": (
        "the source's model names another provider's model, which the target's API will likely refuse",
        "/model 'claude-sonnet-4-5' -> Chat (OpenAI); replace it with --set model=NAME",
    ),
    "tool_reference": (
        "an Anthropic tool_reference result block became a text placeholder naming the tool",
        "/messages/3/content/0/content/0 -> Responses output text '[tool_reference: get_weather]'",
    ),
    "request_field": ("a top-level request field the target does not take dropped", "/temperature"),
    "edited": (
        "an edited item's stale id or encrypted content was dropped",
        "/input/4/encrypted_content (reasoning text edited)",
    ),
    "response_field": (
        "a response object's top-level field (or a further choice) the target response has no slot for",
        "Chat completion /system_fingerprint -> Responses Response",
    ),
    "usage": (
        "a token count the target's usage has no slot for, or counts it differently",
        "Responses /usage/output_tokens_details/reasoning_tokens -> Anthropic Message",
    ),
    "message_split": (
        "a message's blocks come back as more than one message (a tool call in a user message)",
        "/messages/2 user text + tool_use -> a user and an assistant message",
    ),
    # The repairs of the target rules (pipeline/encoders/rules.py): each detail starts with the rule's id.
    "moved_message": (
        "a message between a tool call and its result moved to right after the results (the target "
        "wants the results next to the call)",
        "/input/5 developer message -> Chat, after the tool message of /input/6",
    ),
    "tool_name": (
        "a tool name the target's pattern or length refuses replaced by a valid one with a stable hash "
        "suffix, in the tools, the tool_choice and every call of the record",
        "/tools/0/name 'mcp.files.read' -> Chat 'mcp_files_read_e3bc728f'",
    ),
    "empty_content": (
        "a message left with no content (an empty list, or every part dropped) dropped (the target "
        "rejects empty content)",
        "/input/2 user message with only an input_file part -> Chat",
    ),
    "tool_choice": (
        "a tool_choice the target rejects (no tools left, or naming a tool the request does not declare) "
        "dropped",
        "/tool_choice 'auto' with tools [] -> Chat",
    ),
}
LOSS_KINDS: dict[str, LossKind] = {kind: LossKind(*entry) for kind, entry in _KINDS.items()}

ADDITIONS: frozenset[str] = frozenset(kind for kind, entry in LOSS_KINDS.items() if entry.addition)
"""The kinds that are additions, not losses (from :data:`LOSS_KINDS`)."""


@dataclass(frozen=True)
class Loss:
    path: str
    kind: str
    detail: str

    def __post_init__(self) -> None:
        if self.kind not in LOSS_KINDS:
            raise ValueError(f"unknown loss kind {self.kind!r}; add it to pipeline.losses.LOSS_KINDS")

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True)
class LossPolicy:
    """What to do with a record that has losses.

    ``allow`` (default) writes it and records the losses; ``reject`` sends it to the rejected file
    unless every loss kind is in ``allowed`` (``--allow-loss KIND,...`` implies ``reject``) or is an
    addition (:data:`ADDITIONS`).
    """

    on_loss: str = "allow"
    allowed: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.on_loss not in ("allow", "reject"):
            raise ValueError(f"on_loss must be 'allow' or 'reject', not {self.on_loss!r}")
        unknown = sorted(self.allowed - LOSS_KINDS.keys())
        if unknown:
            raise ValueError(f"unknown loss kinds {unknown}; known kinds: {', '.join(sorted(LOSS_KINDS))}")

    def refused(self, losses: list[Loss]) -> list[Loss]:
        """The losses that make this record rejected (empty: write it). Additions never do."""
        if self.on_loss == "allow":
            return []
        return [loss for loss in losses if loss.kind not in self.accepted]

    @property
    def accepted(self) -> frozenset[str]:
        """The kinds that never make a record rejected: the allowed ones and the additions."""
        return self.allowed | ADDITIONS


def pointer(*parts: str | int) -> str:
    """An RFC 6901 JSON pointer from path parts (``pointer('input', 3, 'a/b')`` -> ``/input/3/a~1b``)."""
    out = []
    for p in parts:
        s = str(p)
        if "~" in s or "/" in s:
            s = s.replace("~", "~0").replace("/", "~1")
        out.append("/" + s)
    return "".join(out)
