"""Hypothesis strategies for random, valid-shaped LLM wire bodies.

The strategies generate request and response bodies of the three wire formats described in
``/work/shared/reference/wire-formats.md``: OpenAI Responses, OpenAI Chat Completions and Anthropic
Messages.  They exist to *break* a lossless codec, so they prefer adversarial variety over realism:

* every ``o?`` key is drawn in all three states (absent via ``st.fixed_dictionaries(optional=...)``,
  explicit ``null``, and a value);
* text contains empty and whitespace-only strings, leading/trailing blanks and newlines, astral-plane
  characters, combining marks and control characters (never NUL, never lone surrogates);
* numbers mix ints and integral floats (``1`` vs ``1.0``), ``-0.0``, int64 bounds and extreme floats
  (always finite);
* unknown keys holding arbitrary JSON are sprinkled on top-level objects, items, messages, content
  parts and nested sub-objects; unknown item / part / block types appear for forward compatibility;
* call ids are sometimes paired coherently (call followed by its output) and sometimes random.

Every generated value is a ``dict`` that survives ``orjson.loads(orjson.dumps(x)) == x`` (key order,
int/float distinction and the sign of zero included).  Lists are kept to 0-6 elements.

Records: ``responses_request()``, ``responses_response()``, ``chat_request()``, ``chat_response()``,
``anthropic_request()``, ``anthropic_response()``, or ``wire_record(fmt, kind)``.

Components (for focused tests): ``RESPONSES_ITEMS`` / ``RESPONSES_PARTS``, ``CHAT_MESSAGES`` /
``CHAT_PARTS`` and ``ANTHROPIC_BLOCKS`` map a kind to its strategy; the ``*_WEIGHTS`` tables say how
the record unions (``RESPONSES_INPUT_ITEM``, ``RESPONSES_OUTPUT_ITEM``, ``CHAT_MESSAGE``,
``ANTHROPIC_REQUEST_BLOCK``, ``ANTHROPIC_RESPONSE_BLOCK``) mix them.

Wire rules that are *not* enforced, on purpose: call/result adjacency (ids are paired only some of the
time), ``compaction_trigger`` being last, annotation indices lying inside the text, Chat assistant
``content`` being required without ``tool_calls``, Anthropic's ban on empty or whitespace-only text.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import orjson
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

__all__ = [
    "ANTHROPIC_BLOCKS",
    "ANTHROPIC_MESSAGE",
    "ANTHROPIC_REQUEST_BLOCK",
    "ANTHROPIC_REQUEST_BLOCK_WEIGHTS",
    "ANTHROPIC_RESPONSE_BLOCK",
    "ANTHROPIC_RESPONSE_BLOCK_WEIGHTS",
    "CHAT_MESSAGE",
    "CHAT_MESSAGES",
    "CHAT_MESSAGE_WEIGHTS",
    "CHAT_PARTS",
    "FORMATS",
    "KINDS",
    "RESPONSES_INPUT_ITEM",
    "RESPONSES_INPUT_WEIGHTS",
    "RESPONSES_ITEMS",
    "RESPONSES_OUTPUT_ITEM",
    "RESPONSES_OUTPUT_WEIGHTS",
    "RESPONSES_PARTS",
    "anthropic_request",
    "anthropic_response",
    "chat_request",
    "chat_response",
    "responses_request",
    "responses_response",
    "wire_record",
]

JsonDict = dict[str, Any]
S = SearchStrategy

MAX_LIST = 6  # top-level sequences (items, messages, response content)
MAX_PARTS = 4  # nested sequences (content parts, annotations, ...)

# --------------------------------------------------------------------------------------------------
# Generic building blocks
# --------------------------------------------------------------------------------------------------


def _weighted(*pairs: tuple[int, S[Any]]) -> S[Any]:
    """Choose among *groups* of strategies with the given integer weights.

    ``st.one_of`` flattens nested unions (even through ``.map``), which would give each leaf the same
    weight; drawing the strategy first keeps the grouping.
    """
    pool: list[S[Any]] = [s for weight, s in pairs for _ in range(weight)]
    return st.sampled_from(pool).flatmap(lambda s: s)


def _union(registry: Mapping[str, S[JsonDict]], weights: Mapping[str, int]) -> S[JsonDict]:
    """The weighted union of the *registry* entries named in *weights*."""
    return _weighted(*((weight, registry[kind]) for kind, weight in weights.items()))


def _nullable(strategy: S[Any]) -> S[Any]:
    """A value or an explicit null (use as the value of an *optional* key for three states)."""
    return st.one_of(st.none(), strategy)


def _lists(strategy: S[Any], *, min_size: int = 0, max_size: int = MAX_PARTS) -> S[list[Any]]:
    return st.lists(strategy, min_size=min_size, max_size=max_size)


def _flatten(groups: Sequence[Sequence[Any]]) -> list[Any]:
    return [x for group in groups for x in group]


def _merge(base: JsonDict, extra: JsonDict) -> JsonDict:
    return {**base, **extra}


_SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
_CHARS = st.characters(exclude_categories=_SURROGATES, exclude_characters="\x00")

_SPECIAL_TEXT: tuple[str, ...] = (
    "",
    " ",
    "   ",
    "\n",
    "\n\n",
    " \t\r\n ",
    "\t",
    "\r",
    "\r\n",
    " leading space",
    "trailing space ",
    "\nleading and trailing newline\n",
    "  both  ",
    "line one\nline two\r\nline three",
    "tab\there",
    "plain text",
    "e\u0301",  # combining acute accent
    "a\u0308\u0301\u20dd",  # stacked combining marks
    "\u0301starts with a combining mark",
    "\U0001f600 emoji",
    "\U0001d518\U0001d52b\U0001d526 \U0010fffd",  # astral plane, incl. a plane-16 private-use char
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # ZWJ sequence
    "\u200b",
    "\ufeffBOM",
    "\u2028\u2029",
    "\x7f\x1b[0m\x01\x1f",
    "日本語のテキスト",
    "עברית RTL \u202e",
    "null",
    "true",
    "0",
    "1.0",
    "[]",
    "{}",
    '{"a": 1}',
    "\\",
    '"quoted"',
    "<|im_end|>",
    "</s>",
)

#: Adversarial text: special cases or arbitrary unicode (no lone surrogates, no NUL).
TEXT: S[str] = st.one_of(st.sampled_from(_SPECIAL_TEXT), st.text(_CHARS, max_size=16))

_ID_PREFIXES = (
    "msg_",
    "fc_",
    "call_",
    "rs_",
    "cmp_",
    "ctc_",
    "ws_",
    "lsh_",
    "mcp_",
    "resp_",
    "chatcmpl-",
    "toolu_",
    "srvtoolu_",
    "msg_01",
    "file-",
)
_ID_CHARS = "abcdefXYZ0123456789_-"
#: Identifiers: mostly realistic-looking, sometimes arbitrary text (including "" and whitespace).
IDENT: S[str] = st.one_of(
    st.builds(str.__add__, st.sampled_from(_ID_PREFIXES), st.text(_ID_CHARS, min_size=1, max_size=10)),
    TEXT,
)
NAME: S[str] = st.one_of(
    st.sampled_from(["get_weather", "search", "run", "a", "ns.tool", "tool-with-dash", "ünïcode_tool"]),
    TEXT,
)
MODEL: S[str] = st.one_of(
    st.sampled_from(["gpt-5", "gpt-4o-mini", "claude-sonnet-4-5", "o3", "qwen3:8b", ""]),
    TEXT,
)
URL: S[str] = st.one_of(
    st.sampled_from(
        [
            "https://example.com/a.png",
            "https://example.com/path?q=1&r=%20#frag",
            "data:image/png;base64,iVBORw0KGgo=",
            "http://ünïcode.example/ä",
            "",
        ]
    ),
    TEXT,
)
B64: S[str] = st.binary(max_size=24).map(lambda b: base64.b64encode(b).decode("ascii"))
#: Opaque blobs (encrypted_content, signatures): base64 or arbitrary text; must be kept byte-exact.
OPAQUE: S[str] = st.one_of(B64, TEXT)

INTS: S[int] = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, 1, -1, 2**31, 2**53, 2**53 + 1, 2**63 - 1, -(2**63)]),
)
SMALL_INTS: S[int] = st.integers(0, 100_000)
FLOATS: S[float] = st.one_of(
    st.sampled_from([1.0, 0.0, -0.0, 0.5, -1.5, 2.0, 100.0, 0.1, 1e16, 1e-7, 2.0**53, 1e308, 5e-324]),
    st.floats(allow_nan=False, allow_infinity=False),
)
LOGPROB: S[float] = st.one_of(
    st.sampled_from([0.0, -0.0, -1.0, -1e-9, -100.0]),
    st.floats(max_value=0.0, allow_nan=False, allow_infinity=False),
)
TIMESTAMP: S[int | float] = st.one_of(
    st.integers(0, 2**40),
    st.sampled_from([1_700_000_000, 1_700_000_000.0, 0, 0.0]),
    st.floats(0, 2**40, allow_nan=False),
)

KEYS: S[str] = st.one_of(
    st.sampled_from(
        [
            "a",
            "b",
            "x",
            "",
            " ",
            "key with space",
            "ünï",
            "ключ",
            "\U0001d4b3",
            "日本",
            "null",
            "type",
            "id",
            "1",
            "__proto__",
            "a.b",
            "$ref",
            "async",
            "from",
            "\t",
            "e\u0301",
        ]
    ),
    st.text(_CHARS, max_size=8),
)

JSON_SCALARS: S[Any] = st.one_of(st.none(), st.booleans(), INTS, FLOATS, TEXT)
#: Any JSON value (nested up to a few levels).
JSON: S[Any] = st.recursive(
    JSON_SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(KEYS, children, max_size=4),
    ),
    max_leaves=5,
)
#: A JSON object (e.g. Anthropic ``tool_use.input``, tool parameter schemas).
_JSON_OBJECT_POOL: tuple[JsonDict, ...] = (
    {},
    {"n": 1, "f": 1.0, "z": -0.0, "t": True, "no": None, "ключ": {"nested": [1, 1.0, "x", None]}},
    {"location": "Paris", "unit": "celsius"},
    {"query": " spaced query \n", "limit": 10, "offset": 0.0},
    {"a": {"b": {"c": {"d": [{"e": None}]}}}},
    {"\U0001f600": "\U0001f600", "e\u0301": "e\u0301", "": ""},
    {"big": 9223372036854775807, "neg": -9223372036854775808, "p53": 9007199254740993},
    {"floats": [1.0, 2.5, 1e16, 1e-7, 5e-324, 1e308, -0.0]},
    {"code": "print('hi')\n", "flags": [True, False, None]},
    {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
)
JSON_OBJECT: S[JsonDict] = _weighted(
    (1, st.sampled_from(_JSON_OBJECT_POOL).map(lambda d: orjson.loads(orjson.dumps(d)))),
    (2, st.dictionaries(KEYS, JSON, max_size=3)),
)

_EXTRA_KEYS: S[str] = st.one_of(
    st.sampled_from(
        [
            "reasoning_content",
            "thought",
            "agent",
            "x_vendor",
            "provider_specific_fields",
            "created_by",
            "annotations_v2",
            "async",
            "from",
            "",
            " ",
            "ünïcödé",
            "\U0001d4b3",
            "nested",
        ]
    ),
    st.text(_CHARS, min_size=1, max_size=8),
)


#: Hand-written unknown-key payloads (cheap to draw); random ones are mixed in by ``_extras``.
_EXTRA_POOL: tuple[JsonDict, ...] = (
    {"reasoning_content": "Let me think.\n"},
    {"reasoning_content": None},
    {"reasoning_content": ""},
    {"thought": True},
    {"thought": "  "},
    {"agent": {"name": "planner", "depth": 1, "score": 1.0, "tags": [], "parent": None}},
    {"agent": None},
    {"x_vendor": {"nested": {"deeper": [1, 1.0, -0.0, True, None, "\U0001f600"]}}},
    {"provider_specific_fields": {}},
    {"created_by": "user_\u00e9"},
    {"async": False},
    {"from": "e\u0301"},
    {"": ""},
    {" ": [None]},
    {"\U0001d4b3": {"\u043a\u043b\u044e\u0447": 9007199254740993}},
    {"x_float": 1e16, "x_int": 10000000000000000},
    {"x_list": [[], {}, [[]], {"a": {}}]},
    {"x_big": -9223372036854775808, "x_small": 5e-324},
    {"x_text": "\t\r\n trailing \n"},
)


def _copy_json(value: Any) -> Any:
    """A fresh deep copy (pooled payloads must not be shared between generated records)."""
    return orjson.loads(orjson.dumps(value))


#: Values of random unknown keys: mostly scalars (cheap to generate), sometimes nested JSON.
_EXTRA_VALUE: S[Any] = _weighted((2, JSON_SCALARS), (1, JSON))

# Pseudo-key under which ``obj`` draws the unknown keys; it contains NUL, which no generated key does.
_EXTRA_SLOT = "\x00extras"


def _extras(reserved: frozenset[str]) -> S[JsonDict]:
    """Unknown keys (never in *reserved*): pooled or random; half the draws are empty."""
    pool = [d for d in _EXTRA_POOL if reserved.isdisjoint(d)]
    keys = _EXTRA_KEYS.filter(lambda k: k not in reserved)
    return _weighted(
        (3, st.just({})),
        (2, st.sampled_from(pool).map(_copy_json)),
        (1, st.dictionaries(keys, _EXTRA_VALUE, min_size=1, max_size=2)),
    )


def _assemble(consts: Mapping[str, Any], order: Sequence[str], drawn: JsonDict) -> JsonDict:
    out: JsonDict = {k: consts[k] if k in consts else drawn[k] for k in order}
    for key, value in drawn.items():  # optional keys come in a random order
        if key == _EXTRA_SLOT:
            out.update(value)
        elif key not in out:
            out[key] = value
    return out


Field = S[Any] | str


def obj(
    required: Mapping[str, Field],
    optional: Mapping[str, Field] | None = None,
    *,
    extra: bool = True,
) -> S[JsonDict]:
    """A JSON object: *required* keys, independently present *optional* keys, and unknown extras.

    Plain ``str`` values are constants (e.g. a ``type`` tag).  Optional keys, including the unknown
    extras, appear in a random order after the required ones.
    """
    consts = {k: v for k, v in required.items() if isinstance(v, str)}
    drawn = {k: v for k, v in required.items() if not isinstance(v, str)}
    opt: dict[str, S[Any]] = {k: st.just(v) if isinstance(v, str) else v for k, v in (optional or {}).items()}
    if extra:
        opt[_EXTRA_SLOT] = _extras(frozenset(required) | frozenset(opt))
    order = tuple(required)
    return st.fixed_dictionaries(drawn, optional=opt).map(lambda d: _assemble(consts, order, d))


def _typed(tag: str) -> str:
    """A constant ``type`` tag (for ``obj``)."""
    return tag


_UNKNOWN_TYPE: S[str] = st.one_of(
    st.sampled_from(["x_future_thing", "x_hologram", "x-vendor.block", "x_", "x_\U0001f600"]),
    st.text(_CHARS, min_size=1, max_size=8).map(lambda s: "x_" + s),
)


def _unknown_typed(*, min_keys: int = 0) -> S[JsonDict]:
    """An object with an unknown ``type`` tag and random keys (forward compatibility)."""
    keys = _EXTRA_KEYS.filter(lambda k: k != "type")
    return st.builds(
        _merge,
        st.fixed_dictionaries({"type": _UNKNOWN_TYPE}),
        st.dictionaries(keys, JSON, min_size=min_keys, max_size=4),
    )


def _json_dumps_variant(value: Any, style: int) -> str:
    if style == 0:
        return orjson.dumps(value).decode()
    if style == 1:
        return json.dumps(value)
    if style == 2:
        return json.dumps(value, ensure_ascii=False, indent=2)
    if style == 3:
        return json.dumps(value, separators=(" ,", " :  "))
    return "\n " + json.dumps(value, ensure_ascii=False) + " \t"


#: Function-call ``arguments``: valid JSON in several formattings, odd spacing, and invalid JSON.
ARGUMENTS: S[str] = st.one_of(
    st.builds(_json_dumps_variant, st.one_of(JSON_OBJECT, JSON), st.integers(0, 4)),
    st.sampled_from(
        [
            "",
            "{}",
            " {} ",
            "{",
            '{"a":1',
            '{"a" :  1 }\n',
            "null",
            "[1,2]",
            '"str"',
            '{"x": 1.0}',
            '{"x": 1e2, "y": -0}',
            '{"a":1,"a":2}',
            '{"e": "\\u00e9\\ud83d\\ude00"}',
            '{"lone": "\\ud800"}',
            "{'single': 'quotes'}",
            '{"trailing": 1,}',
            "NaN",
        ]
    ),
    TEXT,
)

_CACHE_BREAKPOINT = obj({"mode": _typed("explicit")}, {"ttl": st.sampled_from(["30m", "12h"])})

# --------------------------------------------------------------------------------------------------
# OpenAI Responses
# --------------------------------------------------------------------------------------------------

_MESSAGE_STATUS = st.sampled_from(["in_progress", "completed", "incomplete"])
_PHASE = st.sampled_from(["commentary", "final_answer"])

_R_INPUT_TEXT = obj(
    {"type": _typed("input_text"), "text": TEXT}, {"prompt_cache_breakpoint": _CACHE_BREAKPOINT}
)
_R_INPUT_IMAGE = obj(
    {"type": _typed("input_image"), "detail": st.sampled_from(["low", "high", "auto", "original"])},
    {
        "image_url": _nullable(URL),
        "file_id": _nullable(IDENT),
        "prompt_cache_breakpoint": _CACHE_BREAKPOINT,
    },
)
_R_INPUT_FILE = obj(
    {"type": _typed("input_file")},
    {
        "file_data": B64,
        "file_id": _nullable(IDENT),
        "file_url": URL,
        "filename": TEXT,
        "detail": st.sampled_from(["auto", "low", "high"]),
        "prompt_cache_breakpoint": _CACHE_BREAKPOINT,
    },
)
# The *Content variants used by tool outputs: optional keys are nullable, ``detail`` is optional.
_R_INPUT_IMAGE_CONTENT = obj(
    {"type": _typed("input_image")},
    {
        "detail": _nullable(st.sampled_from(["low", "high", "auto", "original"])),
        "image_url": _nullable(URL),
        "file_id": _nullable(IDENT),
    },
)
_R_INPUT_FILE_CONTENT = obj(
    {"type": _typed("input_file")},
    {
        "file_data": _nullable(B64),
        "file_id": _nullable(IDENT),
        "file_url": _nullable(URL),
        "filename": _nullable(TEXT),
    },
)

_INDEX = st.one_of(st.integers(0, 64), SMALL_INTS)
_R_ANNOTATION = st.one_of(
    obj(
        {
            "type": _typed("url_citation"),
            "url": URL,
            "title": TEXT,
            "start_index": _INDEX,
            "end_index": _INDEX,
        }
    ),
    obj({"type": _typed("file_citation"), "file_id": IDENT, "filename": TEXT, "index": _INDEX}),
    obj(
        {
            "type": _typed("container_file_citation"),
            "container_id": IDENT,
            "file_id": IDENT,
            "filename": TEXT,
            "start_index": _INDEX,
            "end_index": _INDEX,
        }
    ),
    obj({"type": _typed("file_path"), "file_id": IDENT, "index": _INDEX}),
)
_BYTES = _lists(st.integers(0, 255), max_size=4)
_R_TOP_LOGPROB = obj({"token": TEXT, "bytes": _BYTES, "logprob": LOGPROB})
_R_LOGPROB = obj(
    {"token": TEXT, "bytes": _BYTES, "logprob": LOGPROB, "top_logprobs": _lists(_R_TOP_LOGPROB, max_size=2)}
)
_R_OUTPUT_TEXT = obj(
    {"type": _typed("output_text"), "text": TEXT, "annotations": _lists(_R_ANNOTATION, max_size=2)},
    {"logprobs": _nullable(_lists(_R_LOGPROB, max_size=2))},
)
_R_REFUSAL = obj({"type": _typed("refusal"), "refusal": TEXT})

_R_UNKNOWN_PART = _unknown_typed()
_R_INPUT_PART = _weighted((3, _R_INPUT_TEXT), (1, _R_INPUT_IMAGE), (1, _R_INPUT_FILE), (1, _R_UNKNOWN_PART))
_R_ASSISTANT_PART = _weighted(
    (2, _R_INPUT_TEXT), (3, _R_OUTPUT_TEXT), (1, _R_REFUSAL), (1, _R_INPUT_IMAGE), (1, _R_UNKNOWN_PART)
)
_R_OUTPUT_PART = _weighted((4, _R_OUTPUT_TEXT), (1, _R_REFUSAL))
_R_TOOL_OUTPUT_PART = st.one_of(_R_INPUT_TEXT, _R_INPUT_IMAGE_CONTENT, _R_INPUT_FILE_CONTENT)


def _r_easy_message(role: str) -> S[JsonDict]:
    part = _R_ASSISTANT_PART if role == "assistant" else _R_INPUT_PART
    return obj(
        {"role": role, "content": st.one_of(TEXT, _lists(part))},
        {"phase": _nullable(_PHASE), "type": _typed("message")},
    )


_R_EASY_MESSAGE = st.sampled_from(["user", "assistant", "system", "developer"]).flatmap(_r_easy_message)
_R_INPUT_MESSAGE = obj(
    {"role": st.sampled_from(["user", "system", "developer"]), "content": _lists(_R_INPUT_PART)},
    {"status": _MESSAGE_STATUS, "type": _typed("message"), "id": IDENT},
)
_R_OUTPUT_MESSAGE = obj(
    {
        "id": IDENT,
        "type": _typed("message"),
        "role": _typed("assistant"),
        "status": _MESSAGE_STATUS,
        "content": _lists(_R_OUTPUT_PART),
    },
    {"phase": _nullable(_PHASE)},
)
_R_ANY_MESSAGE = _weighted((3, _R_EASY_MESSAGE), (1, _R_INPUT_MESSAGE), (2, _R_OUTPUT_MESSAGE))

_R_CALLER = st.one_of(
    obj({"type": _typed("direct")}),
    obj({"type": _typed("program"), "caller_id": IDENT}),
)


def _r_function_call(call_id: S[str] = IDENT) -> S[JsonDict]:
    return obj(
        {"type": _typed("function_call"), "call_id": call_id, "name": NAME, "arguments": ARGUMENTS},
        {
            "id": _nullable(IDENT),
            "namespace": NAME,
            "status": _nullable(_MESSAGE_STATUS),
            "caller": _nullable(_R_CALLER),
            "async": st.booleans(),
        },
    )


def _r_function_call_output(call_id: S[str | None] | None = None) -> S[JsonDict]:
    return obj(
        {
            "type": _typed("function_call_output"),
            "output": st.one_of(TEXT, ARGUMENTS, _lists(_R_TOOL_OUTPUT_PART)),
        },
        {
            "call_id": _nullable(IDENT) if call_id is None else call_id,
            "id": _nullable(IDENT),
            "name": _nullable(NAME),
            "namespace": _nullable(NAME),
            "caller": _nullable(_R_CALLER),
            "status": _nullable(_MESSAGE_STATUS),
        },
    )


def _r_custom_tool_call(call_id: S[str] = IDENT) -> S[JsonDict]:
    return obj(
        {
            "type": _typed("custom_tool_call"),
            "call_id": call_id,
            "name": NAME,
            "input": st.one_of(TEXT, ARGUMENTS),
        },
        {
            "id": IDENT,
            "namespace": NAME,
            "caller": _nullable(_R_CALLER),
            "async": st.booleans(),
            "status": _MESSAGE_STATUS,
        },
    )


def _r_custom_tool_call_output(call_id: S[str] = IDENT) -> S[JsonDict]:
    return obj(
        {
            "type": _typed("custom_tool_call_output"),
            "call_id": call_id,
            "output": st.one_of(TEXT, _lists(_R_INPUT_PART)),
        },
        {"id": IDENT, "caller": _nullable(_R_CALLER)},
    )


def _r_call_pair(call_id: str) -> S[list[JsonDict]]:
    cid = st.just(call_id)
    return st.one_of(
        st.tuples(_r_function_call(cid), _r_function_call_output(cid)).map(list),
        st.tuples(_r_custom_tool_call(cid), _r_custom_tool_call_output(cid)).map(list),
    )


_R_CALL_PAIR = IDENT.flatmap(_r_call_pair)
_R_FUNCTION_CALL = _r_function_call()
_R_FUNCTION_CALL_OUTPUT = _r_function_call_output()
_R_CUSTOM_TOOL_CALL = _r_custom_tool_call()
_R_CUSTOM_TOOL_CALL_OUTPUT = _r_custom_tool_call_output()

_R_REASONING = obj(
    {
        "type": _typed("reasoning"),
        "id": IDENT,
        "summary": _lists(obj({"type": _typed("summary_text"), "text": TEXT}), max_size=4),
    },
    {
        "content": _lists(obj({"type": _typed("reasoning_text"), "text": TEXT}), max_size=4),
        "encrypted_content": _nullable(OPAQUE),
        "status": _MESSAGE_STATUS,
    },
)
_R_COMPACTION = obj(
    {"type": _typed("compaction"), "encrypted_content": OPAQUE},
    {"id": _nullable(IDENT), "created_by": _nullable(TEXT)},
)
_R_COMPACTION_TRIGGER = obj({"type": _typed("compaction_trigger")}, {"id": _nullable(IDENT)})
_R_ITEM_REFERENCE = obj({"id": IDENT}, {"type": _nullable(st.just("item_reference"))})
_EFFORT = st.sampled_from(["none", "minimal", "low", "medium", "high", "xhigh", "max"])
_R_CONFIGURATION_UPDATE = obj(
    {"type": _typed("configuration_update")},
    {
        "id": _nullable(IDENT),
        "reasoning": obj({}, {"effort": _nullable(_EFFORT)}),
        "text": obj({"format": obj({"type": st.sampled_from(["text", "json_object"])})}),
    },
)

_SEARCH_STATUS = st.sampled_from(["in_progress", "searching", "completed", "failed", "incomplete"])
_R_WEB_SEARCH_CALL = obj(
    {
        "id": IDENT,
        "type": _typed("web_search_call"),
        "status": _SEARCH_STATUS,
        "action": st.one_of(
            obj(
                {"type": _typed("search")},
                {
                    "queries": _lists(TEXT, max_size=3),
                    "query": TEXT,
                    "sources": _lists(obj({"type": _typed("url"), "url": URL}), max_size=2),
                },
            ),
            obj({"type": _typed("open_page")}, {"url": _nullable(URL)}),
            obj({"type": _typed("find_in_page"), "pattern": TEXT, "url": URL}),
        ),
    }
)
_R_FILE_SEARCH_CALL = obj(
    {
        "id": IDENT,
        "type": _typed("file_search_call"),
        "queries": _lists(TEXT, max_size=3),
        "status": _SEARCH_STATUS,
    },
    {
        "results": _nullable(
            _lists(
                obj(
                    {},
                    {
                        "attributes": _nullable(
                            st.dictionaries(KEYS, st.one_of(TEXT, FLOATS, st.booleans()), max_size=3)
                        ),
                        "file_id": IDENT,
                        "filename": TEXT,
                        "score": FLOATS,
                        "text": TEXT,
                    },
                ),
                max_size=2,
            )
        )
    },
)
_R_CODE_INTERPRETER_CALL = obj(
    {
        "id": IDENT,
        "type": _typed("code_interpreter_call"),
        "code": _nullable(TEXT),
        "container_id": IDENT,
        "outputs": _nullable(
            _lists(
                st.one_of(
                    obj({"type": _typed("logs"), "logs": TEXT}),
                    obj({"type": _typed("image"), "url": URL}),
                ),
                max_size=2,
            )
        ),
        "status": st.sampled_from(["in_progress", "completed", "incomplete", "interpreting", "failed"]),
    }
)
_R_IMAGE_GENERATION_CALL = obj(
    {
        "id": IDENT,
        "type": _typed("image_generation_call"),
        "result": _nullable(B64),
        "status": st.sampled_from(["in_progress", "completed", "generating", "failed"]),
    },
    {
        "revised_prompt": _nullable(TEXT),
        "size": _nullable(st.sampled_from(["1024x1024", "auto"])),
        "quality": _nullable(st.sampled_from(["low", "high", "auto"])),
        "background": _nullable(st.sampled_from(["transparent", "opaque", "auto"])),
        "output_format": _nullable(st.sampled_from(["png", "webp", "jpeg"])),
    },
)
_R_LOCAL_SHELL_CALL = obj(
    {
        "id": IDENT,
        "type": _typed("local_shell_call"),
        "call_id": IDENT,
        "status": _MESSAGE_STATUS,
        "action": obj(
            {
                "type": _typed("exec"),
                "command": _lists(TEXT, max_size=4),
                "env": st.dictionaries(KEYS, TEXT, max_size=3),
            },
            {
                "timeout_ms": _nullable(SMALL_INTS),
                "user": _nullable(TEXT),
                "working_directory": _nullable(TEXT),
            },
        ),
    }
)
_R_LOCAL_SHELL_CALL_OUTPUT = obj(
    {"id": IDENT, "type": _typed("local_shell_call_output"), "output": ARGUMENTS},
    {"status": _nullable(_MESSAGE_STATUS)},
)
_R_MCP_CALL = obj(
    {"id": IDENT, "type": _typed("mcp_call"), "arguments": ARGUMENTS, "name": NAME, "server_label": TEXT},
    {
        "approval_request_id": _nullable(IDENT),
        "output": _nullable(TEXT),
        "status": st.sampled_from(["in_progress", "completed", "incomplete", "calling", "failed"]),
        "error": _nullable(
            st.one_of(
                obj({"type": _typed("mcp_protocol_error"), "code": INTS, "message": TEXT}),
                obj({"type": _typed("mcp_tool_execution_error"), "content": JSON}),
                obj({"type": _typed("http_error"), "code": INTS, "message": TEXT}),
            )
        ),
    },
)
_R_MCP_LIST_TOOLS = obj(
    {
        "id": IDENT,
        "type": _typed("mcp_list_tools"),
        "server_label": TEXT,
        "tools": _lists(
            obj(
                {"name": NAME, "input_schema": JSON},
                {"annotations": _nullable(JSON), "description": _nullable(TEXT)},
            ),
            max_size=2,
        ),
    },
    {"error": _nullable(TEXT)},
)
_R_MCP_APPROVAL_REQUEST = obj(
    {
        "id": IDENT,
        "type": _typed("mcp_approval_request"),
        "arguments": ARGUMENTS,
        "name": NAME,
        "server_label": TEXT,
    }
)
_R_MCP_APPROVAL_RESPONSE = obj(
    {"type": _typed("mcp_approval_response"), "approval_request_id": IDENT, "approve": st.booleans()},
    {"id": _nullable(IDENT), "reason": _nullable(TEXT)},
)
_R_UNKNOWN_ITEM = st.one_of(
    _unknown_typed(min_keys=1),
    obj({"type": _UNKNOWN_TYPE}, {"id": _nullable(IDENT), "status": _nullable(TEXT), "content": JSON}),
)

#: Responses items by kind: the ``type`` tag, or ``message:<shape>`` for the three message shapes.
RESPONSES_ITEMS: dict[str, S[JsonDict]] = {
    "message:easy": _R_EASY_MESSAGE,
    "message:input": _R_INPUT_MESSAGE,
    "message:output": _R_OUTPUT_MESSAGE,
    "function_call": _R_FUNCTION_CALL,
    "function_call_output": _R_FUNCTION_CALL_OUTPUT,
    "custom_tool_call": _R_CUSTOM_TOOL_CALL,
    "custom_tool_call_output": _R_CUSTOM_TOOL_CALL_OUTPUT,
    "reasoning": _R_REASONING,
    "compaction": _R_COMPACTION,
    "compaction_trigger": _R_COMPACTION_TRIGGER,
    "item_reference": _R_ITEM_REFERENCE,
    "configuration_update": _R_CONFIGURATION_UPDATE,
    "web_search_call": _R_WEB_SEARCH_CALL,
    "file_search_call": _R_FILE_SEARCH_CALL,
    "code_interpreter_call": _R_CODE_INTERPRETER_CALL,
    "image_generation_call": _R_IMAGE_GENERATION_CALL,
    "local_shell_call": _R_LOCAL_SHELL_CALL,
    "local_shell_call_output": _R_LOCAL_SHELL_CALL_OUTPUT,
    "mcp_call": _R_MCP_CALL,
    "mcp_list_tools": _R_MCP_LIST_TOOLS,
    "mcp_approval_request": _R_MCP_APPROVAL_REQUEST,
    "mcp_approval_response": _R_MCP_APPROVAL_RESPONSE,
    "unknown": _R_UNKNOWN_ITEM,
}
#: Responses content parts by ``type`` (``:content`` = the nullable variants used in tool outputs).
RESPONSES_PARTS: dict[str, S[JsonDict]] = {
    "input_text": _R_INPUT_TEXT,
    "input_image": _R_INPUT_IMAGE,
    "input_file": _R_INPUT_FILE,
    "input_image:content": _R_INPUT_IMAGE_CONTENT,
    "input_file:content": _R_INPUT_FILE_CONTENT,
    "output_text": _R_OUTPUT_TEXT,
    "refusal": _R_REFUSAL,
    "unknown": _R_UNKNOWN_PART,
}
#: Relative weights of the item kinds in ``input`` lists: every kind stays at >= 2 % of the items
#: while the conversation-bearing ones are favoured.
RESPONSES_INPUT_WEIGHTS: dict[str, int] = {
    "message:easy": 6,
    "message:input": 2,
    "message:output": 4,
    "function_call": 4,
    "function_call_output": 4,
    "custom_tool_call": 2,
    "custom_tool_call_output": 2,
    "reasoning": 3,
    "compaction": 3,
    "compaction_trigger": 2,
    "item_reference": 3,
    "configuration_update": 1,
    "web_search_call": 2,
    "file_search_call": 1,
    "code_interpreter_call": 1,
    "image_generation_call": 1,
    "local_shell_call": 2,
    "local_shell_call_output": 1,
    "mcp_call": 2,
    "mcp_list_tools": 1,
    "mcp_approval_request": 1,
    "mcp_approval_response": 1,
    "unknown": 2,
}
#: Relative weights of the item kinds in ``Response.output`` (no input-only kinds).
RESPONSES_OUTPUT_WEIGHTS: dict[str, int] = {
    "message:output": 8,
    "function_call": 4,
    "function_call_output": 2,
    "custom_tool_call": 2,
    "custom_tool_call_output": 1,
    "reasoning": 3,
    "compaction": 2,
    "web_search_call": 2,
    "file_search_call": 1,
    "code_interpreter_call": 1,
    "image_generation_call": 1,
    "local_shell_call": 2,
    "local_shell_call_output": 1,
    "mcp_call": 2,
    "mcp_list_tools": 1,
    "mcp_approval_request": 1,
    "mcp_approval_response": 1,
    "unknown": 2,
}


#: One ``input`` item / one ``output`` item.
RESPONSES_INPUT_ITEM: S[JsonDict] = _union(RESPONSES_ITEMS, RESPONSES_INPUT_WEIGHTS)
RESPONSES_OUTPUT_ITEM: S[JsonDict] = _union(RESPONSES_ITEMS, RESPONSES_OUTPUT_WEIGHTS)


def _item_list(item: S[JsonDict]) -> S[list[JsonDict]]:
    """0-6 items: single items and call/output pairs sharing a ``call_id`` (cut at 6 items)."""
    segment = _weighted((6, item.map(lambda x: [x])), (1, _R_CALL_PAIR))
    return _lists(segment, max_size=MAX_LIST).map(_flatten).map(lambda items: items[:MAX_LIST])


_R_INPUT_ITEMS = _item_list(RESPONSES_INPUT_ITEM)
_R_OUTPUT_ITEMS = _item_list(RESPONSES_OUTPUT_ITEM)

_R_FUNCTION_TOOL = obj(
    {
        "type": _typed("function"),
        "name": NAME,
        "parameters": _nullable(JSON_OBJECT),
        "strict": _nullable(st.booleans()),
    },
    {"description": _nullable(TEXT), "defer_loading": st.booleans()},
)
_R_CUSTOM_TOOL = obj(
    {"type": _typed("custom"), "name": NAME},
    {
        "description": TEXT,
        "format": st.one_of(
            obj({"type": _typed("text")}),
            obj(
                {"type": _typed("grammar"), "syntax": st.sampled_from(["lark", "regex"]), "definition": TEXT}
            ),
        ),
    },
)
_R_HOSTED_TOOL = obj(
    {
        "type": st.sampled_from(
            [
                "web_search",
                "file_search",
                "code_interpreter",
                "image_generation",
                "local_shell",
                "mcp",
                "shell",
            ]
        )
    }
)
_R_TOOLS = _lists(st.one_of(_R_FUNCTION_TOOL, _R_CUSTOM_TOOL, _R_HOSTED_TOOL), max_size=2)
_R_TOOL_CHOICE = st.one_of(
    st.sampled_from(["none", "auto", "required"]),
    obj({"type": _typed("function"), "name": NAME}),
    obj({"type": _typed("custom"), "name": NAME}),
    obj(
        {
            "type": _typed("allowed_tools"),
            "mode": st.sampled_from(["auto", "required"]),
            "tools": _lists(JSON),
        }
    ),
)
_R_REASONING_CFG = obj(
    {},
    {
        "effort": _nullable(_EFFORT),
        "summary": _nullable(st.sampled_from(["auto", "concise", "detailed"])),
        "context": _nullable(st.sampled_from(["auto", "current_turn", "all_turns"])),
    },
)
_R_INSTRUCTIONS = st.one_of(TEXT, _lists(_R_ANY_MESSAGE, max_size=3))
_METADATA = st.dictionaries(TEXT, TEXT, max_size=3)

_RESPONSES_REQUEST = obj(
    {"input": _weighted((1, TEXT), (4, _R_INPUT_ITEMS))},
    {
        "instructions": _nullable(_R_INSTRUCTIONS),
        "model": MODEL,
        "previous_response_id": _nullable(IDENT),
        "conversation": _nullable(st.one_of(IDENT, obj({"id": IDENT}))),
        "tools": _R_TOOLS,
        "tool_choice": _R_TOOL_CHOICE,
        "reasoning": _nullable(_R_REASONING_CFG),
        "include": _nullable(
            _lists(
                st.sampled_from(["reasoning.encrypted_content", "message.output_text.logprobs", "x.unknown"]),
                max_size=2,
            )
        ),
        "parallel_tool_calls": _nullable(st.booleans()),
        "max_output_tokens": _nullable(SMALL_INTS),
        "store": _nullable(st.booleans()),
        "stream": st.booleans(),
        "temperature": _nullable(FLOATS),
        "metadata": _nullable(_METADATA),
    },
)

_R_USAGE = obj(
    {
        "input_tokens": SMALL_INTS,
        "input_tokens_details": obj({"cached_tokens": SMALL_INTS}),
        "output_tokens": SMALL_INTS,
        "output_tokens_details": obj({"reasoning_tokens": SMALL_INTS}),
        "total_tokens": SMALL_INTS,
    }
)

_RESPONSES_RESPONSE = obj(
    {
        "id": IDENT,
        "object": _typed("response"),
        "created_at": TIMESTAMP,
        "model": MODEL,
        "output": _R_OUTPUT_ITEMS,
    },
    {
        "instructions": _nullable(_R_INSTRUCTIONS),
        "status": _nullable(
            st.sampled_from(["completed", "failed", "in_progress", "cancelled", "queued", "incomplete"])
        ),
        "completed_at": _nullable(TIMESTAMP),
        "usage": _nullable(_R_USAGE),
        "previous_response_id": _nullable(IDENT),
        "conversation": _nullable(obj({"id": IDENT})),
        "tools": _R_TOOLS,
        "tool_choice": _R_TOOL_CHOICE,
        "parallel_tool_calls": st.booleans(),
        "reasoning": _nullable(_R_REASONING_CFG),
        "error": _nullable(obj({"code": TEXT, "message": TEXT})),
        "incomplete_details": _nullable(
            obj(
                {
                    "reason": st.sampled_from(
                        ["max_output_tokens", "max_messages", "content_filter", "steered"]
                    )
                }
            )
        ),
        "input_transformations": _nullable(
            _lists(
                obj(
                    {
                        "id": IDENT,
                        "type": _typed("reasoning"),
                        "action": _typed("removed"),
                        "reason": st.sampled_from(
                            [
                                "organization_mismatch",
                                "end_user_mismatch",
                                "model_mismatch",
                                "prefix_mismatch",
                                "turn_boundary",
                            ]
                        ),
                    }
                ),
                max_size=2,
            )
        ),
        "temperature": _nullable(FLOATS),
        "metadata": _nullable(_METADATA),
        "store": st.booleans(),
        "service_tier": _nullable(st.sampled_from(["auto", "default", "flex", "priority"])),
    },
)

# --------------------------------------------------------------------------------------------------
# OpenAI Chat Completions
# --------------------------------------------------------------------------------------------------

_C_TEXT_PART = obj({"type": _typed("text"), "text": TEXT}, {"prompt_cache_breakpoint": _CACHE_BREAKPOINT})
_C_IMAGE_PART = obj(
    {
        "type": _typed("image_url"),
        "image_url": obj({"url": URL}, {"detail": st.sampled_from(["auto", "low", "high", "original"])}),
    },
    {"prompt_cache_breakpoint": _CACHE_BREAKPOINT},
)
_C_AUDIO_PART = obj(
    {
        "type": _typed("input_audio"),
        "input_audio": obj({"data": B64, "format": st.sampled_from(["wav", "mp3"])}),
    }
)
_C_FILE_PART = obj(
    {"type": _typed("file"), "file": obj({}, {"file_data": B64, "file_id": IDENT, "filename": TEXT})}
)
_C_REFUSAL_PART = obj({"type": _typed("refusal"), "refusal": TEXT})
_C_UNKNOWN_PART = _unknown_typed()
_C_USER_PART = _weighted(
    (3, _C_TEXT_PART), (1, _C_IMAGE_PART), (1, _C_AUDIO_PART), (1, _C_FILE_PART), (1, _C_UNKNOWN_PART)
)

_C_FUNCTION_TOOL_CALL = obj(
    {"id": IDENT, "type": _typed("function"), "function": obj({"name": NAME, "arguments": ARGUMENTS})}
)
_C_CUSTOM_TOOL_CALL = obj(
    {
        "id": IDENT,
        "type": _typed("custom"),
        "custom": obj({"name": NAME, "input": st.one_of(TEXT, ARGUMENTS)}),
    }
)
_C_TOOL_CALL = _weighted((3, _C_FUNCTION_TOOL_CALL), (1, _C_CUSTOM_TOOL_CALL))
_C_FUNCTION_CALL = obj({"name": NAME, "arguments": ARGUMENTS})

_C_SYSTEM_MESSAGE = obj(
    {"role": st.sampled_from(["system", "developer"]), "content": st.one_of(TEXT, _lists(_C_TEXT_PART))},
    {"name": TEXT},
)
_C_USER_MESSAGE = obj(
    {"role": _typed("user"), "content": st.one_of(TEXT, _lists(_C_USER_PART))},
    {"name": TEXT},
)
_C_ASSISTANT_CONTENT = st.one_of(
    st.none(),
    st.just(""),
    TEXT,
    _lists(_weighted((3, _C_TEXT_PART), (1, _C_REFUSAL_PART))),
)


def _c_assistant_message(tool_calls: S[Any]) -> S[JsonDict]:
    return obj(
        {"role": _typed("assistant")},
        {
            "content": _C_ASSISTANT_CONTENT,
            "refusal": _nullable(TEXT),
            "name": _nullable(TEXT),
            "tool_calls": tool_calls,
            "function_call": _nullable(_C_FUNCTION_CALL),
            "audio": _nullable(obj({"id": IDENT})),
        },
    )


_C_ASSISTANT_MESSAGE = _c_assistant_message(_nullable(_lists(_C_TOOL_CALL, max_size=4)))
_C_TOOL_MESSAGE = obj(
    {"role": _typed("tool"), "tool_call_id": IDENT, "content": st.one_of(TEXT, _lists(_C_TEXT_PART))}
)
_C_FUNCTION_MESSAGE = obj({"role": _typed("function"), "name": NAME, "content": _nullable(TEXT)})


def _c_tool_turn(ids: list[str]) -> S[list[JsonDict]]:
    """An assistant message with tool calls, followed by one tool message per call id."""
    calls = st.tuples(*(st.builds(_merge, _C_TOOL_CALL, st.just({"id": i})) for i in ids)).map(list)
    assistant = obj(
        {"role": _typed("assistant"), "tool_calls": calls},
        {"content": _C_ASSISTANT_CONTENT, "refusal": _nullable(TEXT)},
    )
    replies = st.tuples(
        *(
            obj(
                {
                    "role": _typed("tool"),
                    "tool_call_id": st.just(i),
                    "content": st.one_of(TEXT, _lists(_C_TEXT_PART)),
                }
            )
            for i in ids
        )
    ).map(list)
    return st.tuples(assistant, replies).map(lambda t: [t[0], *t[1]])


_C_TOOL_TURN = st.lists(IDENT, min_size=1, max_size=3, unique=True).flatmap(_c_tool_turn)
#: Chat Completions request messages by role (``system`` also yields ``developer``).
CHAT_MESSAGES: dict[str, S[JsonDict]] = {
    "system": _C_SYSTEM_MESSAGE,
    "user": _C_USER_MESSAGE,
    "assistant": _C_ASSISTANT_MESSAGE,
    "tool": _C_TOOL_MESSAGE,
    "function": _C_FUNCTION_MESSAGE,
}
#: Chat Completions content parts by ``type``.
CHAT_PARTS: dict[str, S[JsonDict]] = {
    "text": _C_TEXT_PART,
    "image_url": _C_IMAGE_PART,
    "input_audio": _C_AUDIO_PART,
    "file": _C_FILE_PART,
    "refusal": _C_REFUSAL_PART,
    "unknown": _C_UNKNOWN_PART,
}
#: Relative weights of the roles in ``messages`` (besides the coherent tool-call turns).
CHAT_MESSAGE_WEIGHTS: dict[str, int] = {"system": 2, "user": 3, "assistant": 4, "tool": 1, "function": 1}
#: One request message.
CHAT_MESSAGE: S[JsonDict] = _union(CHAT_MESSAGES, CHAT_MESSAGE_WEIGHTS)
_C_MESSAGE = CHAT_MESSAGE
_C_MESSAGES = (
    _lists(_weighted((5, _C_MESSAGE.map(lambda m: [m])), (1, _C_TOOL_TURN)), max_size=5)
    .map(_flatten)
    .map(lambda ms: ms[:MAX_LIST])
)

_C_TOOL = st.one_of(
    obj(
        {
            "type": _typed("function"),
            "function": obj(
                {"name": NAME},
                {"description": TEXT, "parameters": JSON_OBJECT, "strict": _nullable(st.booleans())},
            ),
        }
    ),
    obj(
        {
            "type": _typed("custom"),
            "custom": obj(
                {"name": NAME},
                {
                    "description": TEXT,
                    "format": st.one_of(
                        obj({"type": _typed("text")}),
                        obj(
                            {
                                "type": _typed("grammar"),
                                "grammar": obj(
                                    {"definition": TEXT, "syntax": st.sampled_from(["lark", "regex"])}
                                ),
                            }
                        ),
                    ),
                },
            ),
        }
    ),
)
_C_TOOL_CHOICE = st.one_of(
    st.sampled_from(["none", "auto", "required"]),
    obj({"type": _typed("function"), "function": obj({"name": NAME})}),
    obj({"type": _typed("custom"), "custom": obj({"name": NAME})}),
)

_CHAT_REQUEST = obj(
    {"messages": _C_MESSAGES},
    {
        "model": MODEL,
        "temperature": _nullable(FLOATS),
        "max_tokens": _nullable(SMALL_INTS),
        "n": _nullable(st.integers(1, 4)),
        "stop": _nullable(st.one_of(TEXT, _lists(TEXT, max_size=3))),
        "stream": st.booleans(),
        "tools": _lists(_C_TOOL, max_size=2),
        "tool_choice": _C_TOOL_CHOICE,
        "reasoning_effort": _nullable(_EFFORT),
        "response_format": st.one_of(
            obj({"type": st.sampled_from(["text", "json_object"])}),
            obj({"type": _typed("json_schema"), "json_schema": obj({"name": NAME}, {"schema": JSON_OBJECT})}),
        ),
        "logprobs": _nullable(st.booleans()),
        "function_call": st.one_of(st.sampled_from(["none", "auto"]), obj({"name": NAME})),
        "metadata": _nullable(_METADATA),
    },
)

_C_TOP_LOGPROB = obj({"token": TEXT, "bytes": _nullable(_BYTES), "logprob": LOGPROB})
_C_TOKEN_LOGPROB = obj(
    {
        "token": TEXT,
        "bytes": _nullable(_BYTES),
        "logprob": LOGPROB,
        "top_logprobs": _lists(_C_TOP_LOGPROB, max_size=2),
    }
)
_C_RESPONSE_MESSAGE = obj(
    {"role": _typed("assistant")},
    {
        "content": _nullable(st.one_of(st.just(""), TEXT)),
        "refusal": _nullable(TEXT),
        "annotations": _nullable(
            _lists(
                obj(
                    {
                        "type": _typed("url_citation"),
                        "url_citation": obj(
                            {"url": URL, "title": TEXT, "start_index": _INDEX, "end_index": _INDEX}
                        ),
                    }
                ),
                max_size=2,
            )
        ),
        "audio": _nullable(obj({"id": IDENT, "data": B64, "expires_at": TIMESTAMP, "transcript": TEXT})),
        "tool_calls": _nullable(_lists(_C_TOOL_CALL, max_size=4)),
        "function_call": _nullable(_C_FUNCTION_CALL),
    },
)
_C_CHOICE = obj(
    {
        "index": st.integers(0, 8),
        "finish_reason": _nullable(
            st.sampled_from(["stop", "length", "tool_calls", "content_filter", "function_call"])
        ),
        "message": _C_RESPONSE_MESSAGE,
    },
    {
        "logprobs": _nullable(
            obj(
                {},
                {
                    "content": _nullable(_lists(_C_TOKEN_LOGPROB, max_size=2)),
                    "refusal": _nullable(_lists(_C_TOKEN_LOGPROB, max_size=2)),
                },
            )
        )
    },
)


def _renumber(choices: list[JsonDict]) -> list[JsonDict]:
    return [{**c, "index": i} for i, c in enumerate(choices)]


_C_USAGE = obj(
    {"prompt_tokens": SMALL_INTS, "completion_tokens": SMALL_INTS, "total_tokens": SMALL_INTS},
    {
        "prompt_tokens_details": _nullable(
            obj({}, {"cached_tokens": _nullable(SMALL_INTS), "audio_tokens": _nullable(SMALL_INTS)})
        ),
        "completion_tokens_details": _nullable(
            obj(
                {},
                {
                    "reasoning_tokens": _nullable(SMALL_INTS),
                    "audio_tokens": _nullable(SMALL_INTS),
                    "accepted_prediction_tokens": _nullable(SMALL_INTS),
                    "rejected_prediction_tokens": _nullable(SMALL_INTS),
                },
            )
        ),
    },
)

_CHAT_RESPONSE = obj(
    {
        "id": IDENT,
        "object": _typed("chat.completion"),
        "created": st.one_of(st.integers(0, 2**40), st.just(0)),
        "model": MODEL,
        "choices": _weighted(
            (3, _lists(_C_CHOICE, max_size=3).map(_renumber)), (1, _lists(_C_CHOICE, max_size=3))
        ),
    },
    {
        "usage": _nullable(_C_USAGE),
        "service_tier": _nullable(st.sampled_from(["auto", "default", "flex", "scale", "priority"])),
        "system_fingerprint": _nullable(TEXT),
        "metadata": _nullable(_METADATA),
    },
)

# --------------------------------------------------------------------------------------------------
# Anthropic Messages
# --------------------------------------------------------------------------------------------------

_A_CACHE_CONTROL = _nullable(obj({"type": _typed("ephemeral")}, {"ttl": st.sampled_from(["5m", "1h"])}))
_A_CITATION = st.one_of(
    obj(
        {
            "type": _typed("char_location"),
            "cited_text": TEXT,
            "document_index": SMALL_INTS,
            "document_title": _nullable(TEXT),
            "start_char_index": _INDEX,
            "end_char_index": _INDEX,
        }
    ),
    obj(
        {
            "type": _typed("page_location"),
            "cited_text": TEXT,
            "document_index": SMALL_INTS,
            "document_title": _nullable(TEXT),
            "start_page_number": _INDEX,
            "end_page_number": _INDEX,
        }
    ),
    obj(
        {
            "type": _typed("content_block_location"),
            "cited_text": TEXT,
            "document_index": SMALL_INTS,
            "document_title": _nullable(TEXT),
            "start_block_index": _INDEX,
            "end_block_index": _INDEX,
        }
    ),
    obj(
        {
            "type": _typed("web_search_result_location"),
            "cited_text": TEXT,
            "url": URL,
            "title": _nullable(TEXT),
            "encrypted_index": OPAQUE,
        }
    ),
    obj(
        {
            "type": _typed("search_result_location"),
            "cited_text": TEXT,
            "search_result_index": SMALL_INTS,
            "source": TEXT,
            "title": _nullable(TEXT),
            "start_block_index": _INDEX,
            "end_block_index": _INDEX,
        }
    ),
)
_A_TEXT = obj(
    {"type": _typed("text"), "text": TEXT},
    {"cache_control": _A_CACHE_CONTROL, "citations": _nullable(_lists(_A_CITATION, max_size=2))},
)
_A_IMAGE = obj(
    {
        "type": _typed("image"),
        "source": st.one_of(
            obj(
                {
                    "type": _typed("base64"),
                    "media_type": st.sampled_from(["image/jpeg", "image/png", "image/gif", "image/webp"]),
                    "data": B64,
                }
            ),
            obj({"type": _typed("url"), "url": URL}),
            obj({"type": _typed("file"), "file_id": IDENT}),
        ),
    },
    {"cache_control": _A_CACHE_CONTROL},
)
_A_DOCUMENT = obj(
    {
        "type": _typed("document"),
        "source": st.one_of(
            obj({"type": _typed("base64"), "media_type": _typed("application/pdf"), "data": B64}),
            obj({"type": _typed("text"), "media_type": _typed("text/plain"), "data": TEXT}),
            obj(
                {
                    "type": _typed("content"),
                    "content": st.one_of(TEXT, _lists(st.one_of(_A_TEXT, _A_IMAGE), max_size=2)),
                }
            ),
            obj({"type": _typed("url"), "url": URL}),
            obj({"type": _typed("file"), "file_id": IDENT}),
        ),
    },
    {
        "title": _nullable(TEXT),
        "context": _nullable(TEXT),
        "citations": _nullable(obj({}, {"enabled": st.booleans()})),
        "cache_control": _A_CACHE_CONTROL,
    },
)
_A_SEARCH_RESULT = obj(
    {"type": _typed("search_result"), "source": TEXT, "title": TEXT, "content": _lists(_A_TEXT, max_size=2)},
    {"citations": obj({}, {"enabled": st.booleans()}), "cache_control": _A_CACHE_CONTROL},
)
_A_THINKING = obj({"type": _typed("thinking"), "thinking": TEXT, "signature": OPAQUE})
_A_REDACTED_THINKING = obj({"type": _typed("redacted_thinking"), "data": OPAQUE})
_A_CALLER = st.one_of(
    obj({"type": _typed("direct")}),
    obj({"type": st.sampled_from(["code_execution_20250825", "code_execution_20260120"]), "tool_id": IDENT}),
)


def _a_tool_use(tool_id: S[str] = IDENT) -> S[JsonDict]:
    return obj(
        {"type": _typed("tool_use"), "id": tool_id, "name": NAME, "input": JSON_OBJECT},
        {"caller": _A_CALLER, "toolset_name": _nullable(NAME), "cache_control": _A_CACHE_CONTROL},
    )


def _a_tool_result(tool_use_id: S[str] = IDENT) -> S[JsonDict]:
    return obj(
        {"type": _typed("tool_result"), "tool_use_id": tool_use_id},
        {
            "content": st.one_of(
                TEXT, _lists(st.one_of(_A_TEXT, _A_IMAGE, _A_SEARCH_RESULT, _A_DOCUMENT), max_size=4)
            ),
            "is_error": st.booleans(),
            "toolset_name": _nullable(NAME),
            "cache_control": _A_CACHE_CONTROL,
        },
    )


_A_SERVER_TOOL_USE = obj(
    {
        "type": _typed("server_tool_use"),
        "id": IDENT,
        "name": st.sampled_from(
            [
                "web_search",
                "web_fetch",
                "code_execution",
                "bash_code_execution",
                "text_editor_code_execution",
                "tool_search_tool_regex",
                "tool_search_tool_bm25",
            ]
        ),
        "input": JSON_OBJECT,
    },
    {"caller": _A_CALLER, "cache_control": _A_CACHE_CONTROL},
)
_A_WEB_SEARCH_TOOL_RESULT = obj(
    {
        "type": _typed("web_search_tool_result"),
        "tool_use_id": IDENT,
        "content": st.one_of(
            _lists(
                obj(
                    {
                        "type": _typed("web_search_result"),
                        "url": URL,
                        "title": TEXT,
                        "encrypted_content": OPAQUE,
                    },
                    {"page_age": _nullable(TEXT)},
                ),
                max_size=2,
            ),
            obj(
                {
                    "type": _typed("web_search_tool_result_error"),
                    "error_code": st.sampled_from(
                        [
                            "invalid_tool_input",
                            "unavailable",
                            "max_uses_exceeded",
                            "too_many_requests",
                            "query_too_long",
                        ]
                    ),
                }
            ),
        ),
    },
    {"caller": _A_CALLER, "cache_control": _A_CACHE_CONTROL},
)
_A_CONTAINER_UPLOAD = obj(
    {"type": _typed("container_upload"), "file_id": IDENT}, {"cache_control": _A_CACHE_CONTROL}
)

_A_TOOL_USE = _a_tool_use()
_A_TOOL_RESULT = _a_tool_result()
_A_UNKNOWN_BLOCK = _unknown_typed()
#: Anthropic content blocks by ``type``.
ANTHROPIC_BLOCKS: dict[str, S[JsonDict]] = {
    "text": _A_TEXT,
    "image": _A_IMAGE,
    "document": _A_DOCUMENT,
    "search_result": _A_SEARCH_RESULT,
    "thinking": _A_THINKING,
    "redacted_thinking": _A_REDACTED_THINKING,
    "tool_use": _A_TOOL_USE,
    "tool_result": _A_TOOL_RESULT,
    "server_tool_use": _A_SERVER_TOOL_USE,
    "web_search_tool_result": _A_WEB_SEARCH_TOOL_RESULT,
    "container_upload": _A_CONTAINER_UPLOAD,
    "unknown": _A_UNKNOWN_BLOCK,
}
#: Relative weights of the block types in request messages / in response ``content``.
ANTHROPIC_REQUEST_BLOCK_WEIGHTS: dict[str, int] = {
    "text": 4,
    "image": 1,
    "document": 1,
    "search_result": 1,
    "thinking": 1,
    "redacted_thinking": 1,
    "tool_use": 2,
    "tool_result": 2,
    "server_tool_use": 1,
    "web_search_tool_result": 1,
    "container_upload": 1,
    "unknown": 1,
}
ANTHROPIC_RESPONSE_BLOCK_WEIGHTS: dict[str, int] = {
    "text": 4,
    "thinking": 2,
    "redacted_thinking": 1,
    "tool_use": 2,
    "server_tool_use": 1,
    "web_search_tool_result": 1,
    "container_upload": 1,
    "unknown": 1,
}
ANTHROPIC_REQUEST_BLOCK: S[JsonDict] = _union(ANTHROPIC_BLOCKS, ANTHROPIC_REQUEST_BLOCK_WEIGHTS)
ANTHROPIC_RESPONSE_BLOCK: S[JsonDict] = _union(ANTHROPIC_BLOCKS, ANTHROPIC_RESPONSE_BLOCK_WEIGHTS)
_A_REQUEST_BLOCK = ANTHROPIC_REQUEST_BLOCK
_A_RESPONSE_BLOCK = ANTHROPIC_RESPONSE_BLOCK

# A tool_result belongs in a user message (the decoder rejects it elsewhere).
_A_ASSISTANT_BLOCK = _union(
    ANTHROPIC_BLOCKS, {k: w for k, w in ANTHROPIC_REQUEST_BLOCK_WEIGHTS.items() if k != "tool_result"}
)
_A_CONVERSATION_MESSAGE = st.one_of(
    obj({"role": _typed("user"), "content": st.one_of(TEXT, _lists(_A_REQUEST_BLOCK))}),
    obj({"role": _typed("assistant"), "content": st.one_of(TEXT, _lists(_A_ASSISTANT_BLOCK))}),
)
_A_SYSTEM_MESSAGE = obj({"role": _typed("system"), "content": st.one_of(TEXT, _lists(_A_TEXT, max_size=3))})
#: One request message (``user``/``assistant`` with any blocks, or a mid-conversation ``system``).
ANTHROPIC_MESSAGE: S[JsonDict] = _weighted((6, _A_CONVERSATION_MESSAGE), (1, _A_SYSTEM_MESSAGE))


def _a_tool_turn(ids: list[str]) -> S[list[JsonDict]]:
    """An assistant turn with tool_use blocks and the user turn answering each of them."""
    uses = st.tuples(*(_a_tool_use(st.just(i)) for i in ids)).map(list)
    results = st.tuples(*(_a_tool_result(st.just(i)) for i in ids)).map(list)
    lead = _lists(st.one_of(_A_THINKING, _A_TEXT), max_size=2)
    trail = _lists(_A_TEXT, max_size=1)
    assistant = st.tuples(lead, uses).map(lambda t: {"role": "assistant", "content": t[0] + t[1]})
    user = st.tuples(results, trail).map(lambda t: {"role": "user", "content": t[0] + t[1]})
    return st.tuples(assistant, user).map(list)


_A_TOOL_TURN = st.lists(IDENT, min_size=1, max_size=3, unique=True).flatmap(_a_tool_turn)
_A_MESSAGES = (
    _lists(
        _weighted(
            (6, _A_CONVERSATION_MESSAGE.map(lambda m: [m])),
            (1, _A_SYSTEM_MESSAGE.map(lambda m: [m])),
            (1, _A_TOOL_TURN),
        ),
        max_size=5,
    )
    .map(_flatten)
    .map(lambda ms: ms[:MAX_LIST])
)

_A_TOOL = st.one_of(
    obj(
        {"name": NAME, "input_schema": JSON_OBJECT},
        {
            "description": TEXT,
            "type": _nullable(st.just("custom")),
            "strict": st.booleans(),
            "cache_control": _A_CACHE_CONTROL,
        },
    ),
    obj(
        {
            "type": st.sampled_from(["web_search_20250305", "bash_20250124", "code_execution_20250825"]),
            "name": NAME,
        }
    ),
)
_A_TOOL_CHOICE = st.one_of(
    obj({"type": st.sampled_from(["auto", "any"])}, {"disable_parallel_tool_use": st.booleans()}),
    obj({"type": _typed("tool"), "name": NAME}, {"disable_parallel_tool_use": st.booleans()}),
    obj({"type": _typed("none")}),
)
_A_THINKING_CFG = st.one_of(
    obj(
        {"type": _typed("enabled"), "budget_tokens": SMALL_INTS},
        {"display": _nullable(st.sampled_from(["summarized", "omitted"]))},
    ),
    obj({"type": _typed("adaptive")}, {"display": _nullable(st.sampled_from(["summarized", "omitted"]))}),
    obj({"type": st.sampled_from(["disabled", "between_tools"])}),
)

_ANTHROPIC_REQUEST = obj(
    {"messages": _A_MESSAGES},
    {
        "system": st.one_of(TEXT, _lists(_A_TEXT, max_size=4)),
        "model": MODEL,
        "max_tokens": SMALL_INTS,
        "tools": _lists(_A_TOOL, max_size=2),
        "tool_choice": _A_TOOL_CHOICE,
        "thinking": _A_THINKING_CFG,
        "cache_control": _A_CACHE_CONTROL,
        "stop_sequences": _lists(TEXT, max_size=3),
        "metadata": obj({}, {"user_id": _nullable(TEXT)}),
        "temperature": FLOATS,
        "top_p": FLOATS,
        "top_k": SMALL_INTS,
        "stream": st.booleans(),
        "service_tier": st.sampled_from(["auto", "standard_only"]),
        "container": _nullable(TEXT),
    },
)

_A_USAGE = obj(
    {"input_tokens": SMALL_INTS, "output_tokens": SMALL_INTS},
    {
        "cache_creation_input_tokens": _nullable(SMALL_INTS),
        "cache_read_input_tokens": _nullable(SMALL_INTS),
        "server_tool_use": _nullable(obj({"web_search_requests": SMALL_INTS})),
        "service_tier": _nullable(st.sampled_from(["standard", "priority", "batch"])),
        "cache_creation": _nullable(
            obj({"ephemeral_5m_input_tokens": SMALL_INTS, "ephemeral_1h_input_tokens": SMALL_INTS})
        ),
    },
)
_ANTHROPIC_RESPONSE = obj(
    {
        "id": IDENT,
        "type": _typed("message"),
        "role": _typed("assistant"),
        "model": MODEL,
        "content": _lists(_A_RESPONSE_BLOCK, max_size=MAX_LIST),
        "stop_reason": _nullable(
            st.sampled_from(
                [
                    "end_turn",
                    "max_tokens",
                    "stop_sequence",
                    "tool_use",
                    "pause_turn",
                    "refusal",
                    "model_context_window_exceeded",
                ]
            )
        ),
        "stop_sequence": _nullable(TEXT),
        "usage": _A_USAGE,
    },
    {
        "stop_details": _nullable(
            obj({"type": _typed("refusal")}, {"category": _nullable(TEXT), "explanation": _nullable(TEXT)})
        ),
        "container": _nullable(obj({"id": IDENT, "expires_at": TEXT})),
    },
)


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------


def responses_request() -> S[JsonDict]:
    """OpenAI Responses ``responses.create`` body: ``input`` (string or items), ``instructions`` etc."""
    return _RESPONSES_REQUEST


def responses_response() -> S[JsonDict]:
    """OpenAI Responses ``Response`` object (``object: "response"``, ``output`` items, ...)."""
    return _RESPONSES_RESPONSE


def chat_request() -> S[JsonDict]:
    """OpenAI Chat Completions request body (``messages``, ``model``?, ...)."""
    return _CHAT_REQUEST


def chat_response() -> S[JsonDict]:
    """OpenAI ``chat.completion`` object."""
    return _CHAT_RESPONSE


def anthropic_request() -> S[JsonDict]:
    """Anthropic ``messages.create`` body (``messages``, ``system``?, ...)."""
    return _ANTHROPIC_REQUEST


def anthropic_response() -> S[JsonDict]:
    """Anthropic ``Message`` response object."""
    return _ANTHROPIC_RESPONSE


_DISPATCH: dict[tuple[str, str], Callable[[], S[JsonDict]]] = {
    ("responses", "request"): responses_request,
    ("responses", "response"): responses_response,
    ("chat", "request"): chat_request,
    ("chat", "response"): chat_response,
    ("anthropic", "request"): anthropic_request,
    ("anthropic", "response"): anthropic_response,
}

FORMATS: tuple[str, ...] = ("responses", "chat", "anthropic")
KINDS: tuple[str, ...] = ("request", "response")


def wire_record(fmt: str, kind: str) -> S[JsonDict]:
    """Dispatch on ``fmt`` in ``responses|chat|anthropic`` and ``kind`` in ``request|response``."""
    try:
        factory = _DISPATCH[(fmt, kind)]
    except KeyError:
        raise ValueError(f"unknown wire format/kind: {fmt!r}/{kind!r}") from None
    return factory()


def draw_edits(table: Any, data: st.DataObject) -> Any:
    """A canonical table whose items were edited as a transform or a user would: some texts
    lengthened, some roles changed (so their fingerprints no longer match), drawn with ``data``."""
    import pyarrow as pa

    from pipeline.schema import CONVERSATION_SCHEMA

    rows = table.to_pylist()
    for row in rows:
        for item in row["items"] or []:
            how = data.draw(st.sampled_from(["none", "none", "text", "role"]))
            if how == "text" and item["content"]:
                text = item["content"][0]["text"] or ""
                item["content"][0]["text"] = text + data.draw(st.text(max_size=3))
            elif how == "role":
                item["role"] = data.draw(st.sampled_from(["user", "assistant", "system", None]))
    return pa.Table.from_pylist(rows, schema=CONVERSATION_SCHEMA)
