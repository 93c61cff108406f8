"""Seeded generator of realistic synthetic LLM request bodies.

Three wire formats are produced as plain JSON-able dicts:

* ``"responses"``  - OpenAI Responses API ``responses.create`` bodies,
* ``"chat"``       - OpenAI Chat Completions ``chat.completions.create`` bodies,
* ``"anthropic"``  - Anthropic Messages ``messages.create`` bodies.

API::

    generate(fmt, n, seed=0, *, start=0) -> Iterator[dict]
    write_jsonl(path, fmt, n, seed=0, *, workers=1) -> int   # bytes written

Determinism: record ``i`` of a run is a pure function of ``(seed, start + i)``.  Each
record re-seeds a ``random.Random`` with the hash-free integer ``(seed mod 2**64) << 64
| index``; all text and tool material comes from module-level pools built from fixed
seeds at import time.  Shards generated with ``start=`` agree byte for byte with a
serial run, in any process, independent of ``PYTHONHASHSEED``.  Records never share
mutable sub-objects.

Shapes follow ``/work/shared/reference/wire-formats.md`` (openai 3.57, anthropic 2.14)
and every record validates strictly against the SDK request types
(``tests/sdk_validate.py``) and the documented server-side rules (call/output pairing,
Anthropic alternation, no empty text blocks, <= 4 cache breakpoints, strict-mode
schemas listing every property, ...).  Each feature listed in ``tests/test_synth.py``
appears in at least 10 of any 1,000 records; Responses conversations average ~12.5
items.

Deliberately *not* generated:

* Anthropic ``temperature``: anthropic 2.14 dropped it from ``MessageCreateParams``,
  so a strict SDK validation rejects it.  Anthropic ``role: "system"`` messages
  (server acceptance unverified) and beta-only blocks are not generated either.
* Responses assistant messages without ``id`` carrying ``output_text`` parts (seen in
  public examples, but typed as EasyInputMessage whose list content is *input* parts):
  id-less assistant messages use string content.
* Responses hosted items other than ``web_search_call`` and ``local_shell_call``
  (file search, computer use, code interpreter, image generation, MCP, shell,
  apply_patch, program, tool search), ``compaction_trigger``, ``configuration_update``,
  ``additional_tools``, and request keys beyond model/input/instructions/tools/
  tool_choice/temperature/metadata/store.
* Chat ``input_audio``/``file`` parts, assistant ``audio`` and the legacy
  ``function_call``/``functions``.
"""

from __future__ import annotations

import base64
import json
import multiprocessing
import random
import struct
import zlib
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson

from pipeline.engine.atomic import replacing

__all__ = ["FORMATS", "generate", "request_log", "write_jsonl", "write_request_log"]

FORMATS = ("responses", "chat", "anthropic")

Json = dict[str, Any]
Rnd = Callable[[], float]
_T = TypeVar("_T")

_M64 = (1 << 64) - 1


def _record_seed(seed: int, index: int) -> int:
    """Hash-free, collision-free mix of (seed, index) for ``random.Random``."""
    return ((seed & _M64) << 64) | (index & _M64)


# ---------------------------------------------------------------------------
# Precomputed pools (built once per process from a fixed seed)
# ---------------------------------------------------------------------------

_WORD_TEXT = (
    "the of and to in is for on that with as it this be are by from at or an we can "
    "you not have will your which more data model pipeline table column query result "
    "value error request response token cache store index schema record batch stream "
    "latency memory file path config service server client user system agent tool call "
    "output input message format field type string number list object array key null "
    "check update create delete read write run build test deploy review merge branch "
    "commit version release issue bug fix feature change support please thanks could "
    "would should might also just then when where what why how because about into over "
    "after before between during without within across each every some any many most "
    "first last next previous new old large small fast slow simple complex important "
    "quickly carefully exactly roughly actually probably likely really still already "
    "customer order invoice payment account report dashboard metric weather forecast "
    "temperature city travel flight hotel booking calendar meeting email document "
    "summary analysis function parameter argument return exception timeout retry "
    "python rust sql json arrow parquet duckdb postgres kafka spark docker kubernetes"
)
_WORDS = tuple(_WORD_TEXT.split())

_CJK_WORDS = (
    "数据",
    "管道",
    "模型",
    "对话",
    "你好",
    "世界",
    "请",
    "帮我",
    "总结",
    "这个",
    "文件",
    "日本語",
    "のテキスト",
    "東京",
    "天気",
    "です",
    "ありがとう",
    "会議",
    "予定",
    "한국어",
    "문장",
    "서울",
    "감사합니다",
    "。",
    "，",
    "？",
    "「引用」",
)
_RTL_WORDS = (
    "مرحبا",
    "بالعالم",
    "البيانات",
    "نموذج",
    "شكرا",
    "القاهرة",
    "طقس",
    "שלום",
    "עולם",
    "נתונים",
    "תודה",
    "ירושלים",
    "מזג",
    "אוויר",
)
_MARKED_WORDS = (
    "cafe\u0301",
    "nai\u0308ve",
    "fac\u0327ade",
    "Tie\u0302\u0301ng",
    "Vie\u0323\u0302t",
    "man\u0303ana",
    "Zu\u0308rich",
    "Ελληνικά",
    "Привет",
    "мир",
    "Ångström",
    "Z\u0351\u0368a\u0310lg\u0315o",
    "e\u0301te\u0301",
    "co\u00f6perate",
)
_EMOJI = (
    "🚀",
    "👍",
    "👍🏽",
    "✅",
    "❌",
    "🔥",
    "😅",
    "🙏",
    "💡",
    "📊",
    "🇯🇵",
    "🇧🇷",
    "👨\u200d👩\u200d👧",
    "🧑\u200d💻",
    "❤\ufe0f",
    "⚠\ufe0f",
    "🤔",
    "🎉",
)
_CODE_SNIPPETS = (
    "```python\ndef add(a, b):\n    return a + b\n```",
    "```sql\nSELECT id, name\nFROM users\nWHERE created_at > now() - interval '7 days';\n```",
    '```bash\n$ ls -la /tmp\n$ grep -rn "TODO" src/\n```',
    '```json\n{"ok": true, "items": [1, 2, 3]}\n```',
    "`x = y ** 2`",
    '```rust\nfn main() {\n    println!("hi");\n}\n```',
)


def _build_corpus(unicode: bool, size: int, seed: int) -> tuple[str, array[int], array[int], float]:
    """One long text made of tokens: (corpus, token starts, token ends, mean chars per token).

    A token end excludes the separator that follows it, so ``corpus[starts[i]:ends[j]]``
    starts at a word and never ends in whitespace.  The ASCII corpus is kept pure ASCII
    so that slicing it is a plain memcpy; the unicode corpus holds CJK, RTL, combining
    marks and emoji.
    """
    r = random.Random(seed)
    rr = r.random
    toks: list[list[str]] = []  # [word, separator]
    total = 0

    def add(word: str, sep: str) -> None:
        nonlocal total
        toks.append([word, sep])
        total += len(word) + len(sep)

    words = _WORDS
    nw = len(words)
    while total < size:
        style = rr()
        if unicode:
            if style < 0.3:
                for _ in range(8 + int(rr() * 30)):
                    add(_CJK_WORDS[int(rr() * len(_CJK_WORDS))], "")
                add("🙂" if rr() < 0.3 else "。", " ")
            elif style < 0.5:
                for _ in range(5 + int(rr() * 15)):
                    add(_RTL_WORDS[int(rr() * len(_RTL_WORDS))], " ")
                add(".", "\n" if rr() < 0.3 else " ")
            elif style < 0.65:
                for _ in range(4 + int(rr() * 10)):
                    add(_MARKED_WORDS[int(rr() * len(_MARKED_WORDS))], " ")
            else:  # English with emoji, accents and foreign words sprinkled in
                for j in range(6 + int(rr() * 20)):
                    x = rr()
                    if x < 0.12:
                        w = _EMOJI[int(rr() * len(_EMOJI))]
                    elif x < 0.2:
                        w = _MARKED_WORDS[int(rr() * len(_MARKED_WORDS))]
                    elif x < 0.25:
                        w = _CJK_WORDS[int(rr() * len(_CJK_WORDS))]
                    else:
                        w = words[int(rr() * nw)]
                    add(w.capitalize() if j == 0 else w, " ")
                toks[-1][0] += "."
                if rr() < 0.3:
                    toks[-1][1] = "\n"
            continue
        if style < 0.86:  # English prose paragraph
            for _ in range(2 + int(rr() * 6)):
                n = 4 + int(rr() * 16)
                for j in range(n):
                    w = words[int(rr() * nw)]
                    if j == 0:
                        w = w.capitalize()
                    if rr() < 0.006:
                        w = str(int(rr() * 10_000))
                    if j == n - 1:
                        end = rr()
                        w += "." if end < 0.8 else ("?" if end < 0.9 else "!")
                        add(w, "\n" if rr() < 0.12 else " ")
                    else:
                        add(w + ("," if rr() < 0.07 else ""), " ")
            if rr() < 0.4:
                toks[-1][1] = "\n\n"
        elif style < 0.94:  # markdown list
            add("Steps:", "\n")
            for k in range(2 + int(rr() * 4)):
                add(f"{k + 1}.", " ")
                for _ in range(3 + int(rr() * 6)):
                    add(words[int(rr() * nw)], " ")
                add(words[int(rr() * nw)] + ";", "\n")
        else:  # code block
            add("Example:", "\n")
            add(_CODE_SNIPPETS[int(rr() * len(_CODE_SNIPPETS))], "\n")
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    p = 0
    for w, sep in toks:
        starts.append(p)
        p += len(w)
        ends.append(p)
        p += len(sep)
        parts.append(w)
        parts.append(sep)
    # int arrays: contiguous memory is noticeably faster to index at random than lists
    return "".join(parts), array("l", starts), array("l", ends), p / len(toks)


_A_CORPUS, _A_STARTS, _A_ENDS, _A_TOKLEN = _build_corpus(False, 500_000, 0x5EED)
_U_CORPUS, _U_STARTS, _U_ENDS, _U_TOKLEN = _build_corpus(True, 300_000, 0xC0FFEE)
_A_NTOK = len(_A_STARTS) - 700
_U_NTOK = len(_U_STARTS) - 700
# 70% of ASCII texts start at a sentence (token after ". ", "? ", "! " or a line break),
# the rest at any token, which keeps the number of distinct texts high
_A_SENTENCES = array(
    "l",
    (
        k
        for k in range(1, _A_NTOK)
        if _A_CORPUS[_A_ENDS[k - 1] - 1] in ".?!:;" or "\n" in _A_CORPUS[_A_ENDS[k - 1] : _A_STARTS[k]]
    ),
)
_A_NSENT = len(_A_SENTENCES)
assert _A_CORPUS.isascii()


# base64 alphabet -> base62: "+" and "/" become letters (the tiny bias is irrelevant)
_B62_TR = bytes.maketrans(b"+/", b"Qx")
_F53 = float(1 << 53)


def _png(width: int, height: int, seed: int) -> bytes:
    r = random.Random(seed)
    raw = b"".join(b"\x00" + r.randbytes(width * 3) for _ in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    )


_GIF_1X1 = base64.b64decode("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==")
_IMAGES_B64: tuple[tuple[str, str], ...] = tuple(
    [
        ("image/png", base64.b64encode(_png(w, h, w * 31 + h)).decode("ascii"))
        for w, h in ((1, 1), (2, 2), (4, 3), (8, 8), (16, 9))
    ]
    + [("image/gif", base64.b64encode(_GIF_1X1).decode("ascii"))]
)
_IMAGE_URLS = (
    "https://upload.wikimedia.org/wikipedia/commons/4/47/PNG_transparency_demonstration_1.png",
    "https://example.com/images/chart-q3.png",
    "https://cdn.example.org/photos/2024/05/receipt_0193.jpg",
    "https://images.example.net/screenshots/error-dialog.webp",
    "https://example.com/diagram.gif?size=large&v=2",
)
_URLS = (
    "https://en.wikipedia.org/wiki/Apache_Arrow",
    "https://docs.python.org/3/library/json.html",
    "https://www.example.com/blog/2024/streaming-pipelines",
    "https://arxiv.org/abs/2303.08774",
    "https://github.com/apache/arrow/issues/12345",
    "https://news.example.org/world/2025/03/weather-report?lang=en",
    "https://例え.jp/パス?q=テスト",
)
_TITLES = (
    "Apache Arrow - Wikipedia",
    "json — JSON encoder and decoder",
    "Streaming pipelines in practice",
    "GPT-4 Technical Report",
    "Issue #12345",
    "Weather report",
    "テストページ",
)

_OAI_REASONING_MODELS = ("gpt-5", "gpt-5-mini", "gpt-5.1", "o3", "o4-mini", "gpt-5.3-codex")
_OAI_CHAT_MODELS = ("gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini", "gpt-4o-2024-08-06")
_ANTHROPIC_MODELS = (
    "claude-sonnet-4-5",
    "claude-sonnet-4-20250514",
    "claude-opus-4-1-20250805",
    "claude-3-5-haiku-latest",
    "claude-haiku-4-5",
    "claude-3-7-sonnet-20250219",
)
_WS_ONLY = (" ", "  ", "\n", "\t", " \n\t ", "\n\n", "\u3000", "   \n")
_REFUSALS = (
    "I'm sorry, but I can't help with that.",
    "I can’t assist with that request.",
    "Sorry — I won't be able to provide that information.",
)
_CITIES = ("Paris", "Tokyo", "São Paulo", "Zürich", "القاهرة", "New York, NY", "Москва", "東京都", "Tel Aviv")
_PATHS = (
    "src/main.py",
    "README.md",
    "pipeline/io.py",
    "/etc/hosts",
    "docs/guide.md",
    "tests/test_io.py",
    "数据/报告.csv",
)
_EMAILS = ("alice@example.com", "bob@example.org", "ops+alerts@example.net", "josé@example.com")
_TICKERS = ("AAPL", "MSFT", "^GSPC", "7203.T", "BRK.B")
_LANGS = ("en", "ja", "ar", "he", "zh", "de", "pt-BR")


def _pick(rnd: Rnd, seq: Sequence[_T]) -> _T:
    return seq[int(rnd() * len(seq))]


# ---------------------------------------------------------------------------
# Text and id helpers
# ---------------------------------------------------------------------------


def _text(rnd: Rnd, lo: int = 20, hi: int = 600) -> str:
    """Corpus slice of lo..hi chars starting at a token, never with edge whitespace
    (a single token longer than hi, e.g. a code block, is kept whole).

    15% of texts come from the unicode corpus (CJK, RTL, combining marks, emoji).
    """
    target = lo + int(rnd() * rnd() * (hi - lo))
    if rnd() < 0.85:
        corpus, starts, ends = _A_CORPUS, _A_STARTS, _A_ENDS
        x = rnd()
        k = _A_SENTENCES[int(x * 1.4 * _A_NSENT)] if x < 0.7 else int((x - 0.7) * 3.3 * _A_NTOK)
        j = k + int(target / _A_TOKLEN)
    else:
        corpus, starts, ends = _U_CORPUS, _U_STARTS, _U_ENDS
        k = int(rnd() * _U_NTOK)
        j = k + int(target / _U_TOKLEN)
    s = starts[k]
    if ends[j] - s > hi:
        while j > k and ends[j] - s > hi:
            j -= 1
    elif ends[j] - s < lo:
        while ends[j] - s < lo:  # tokens are >= 1 char and k + 700 is in range
            j += 1
    return corpus[s : ends[j]]


def _short(rnd: Rnd) -> str:
    return _text(rnd, 8, 60)


def _otext(rnd: Rnd, lo: int = 20, hi: int = 600) -> str:
    """OpenAI-side text: plain, whitespace-only, or with leading/trailing whitespace."""
    x = rnd()
    if x < 0.03:
        return _pick(rnd, _WS_ONLY)
    t = _text(rnd, lo, hi)
    if x < 0.07:
        return " " + t
    if x < 0.11:
        return t + "\n"
    if x < 0.13:
        return "\n\n" + t + "  "
    return t


def _atext(rnd: Rnd, lo: int = 20, hi: int = 600, *, trailing_ws: bool = True) -> str:
    """Anthropic-side text: never empty or whitespace-only; inner whitespace kept."""
    x = rnd()
    t = _text(rnd, lo, hi)
    if x < 0.04:
        return "\n" + t
    if trailing_ws and x < 0.08:
        return t + "\n"
    if trailing_ws and x < 0.10:
        return "  " + t + " "
    return t


def _hex(bits_fn: Callable[[int], int], nchars: int) -> str:
    return f"{bits_fn(nchars * 4):0{nchars}x}"


def _b62(rnd: Rnd, n: int) -> str:
    """n <= 26 random [0-9A-Za-z] chars (~159 bits), like OpenAI/Anthropic call ids."""
    v = int(rnd() * _F53) | int(rnd() * _F53) << 53 | int(rnd() * _F53) << 106
    return base64.b64encode(v.to_bytes(20, "little")).translate(_B62_TR)[:n].decode("ascii")


def _b64(bits: Callable[[int], int], lo: int, hi: int) -> str:
    """Opaque base64 payload (encrypted content, signatures) of lo..hi chars."""
    nbytes = ((lo + bits(12) * (hi - lo) // 4096) // 4) * 3
    return base64.b64encode(bits(8 * nbytes).to_bytes(nbytes, "little")).decode("ascii")


# ---------------------------------------------------------------------------
# Tool catalog (shared by all three formats)
# ---------------------------------------------------------------------------

# (name, description, [(param, kind, required)])
_ToolSpec = tuple[str, str, tuple[tuple[str, str, bool], ...]]

_FUNCTIONS: tuple[_ToolSpec, ...] = (
    (
        "get_weather",
        "Get the current weather for a location.",
        (("location", "city", True), ("unit", "unit", False)),
    ),
    (
        "search_docs",
        "Search the internal documentation.",
        (("query", "short", True), ("top_k", "int", False), ("filters", "filters", False)),
    ),
    (
        "run_sql",
        "Run a read-only SQL query against the warehouse.",
        (("query", "sql", True), ("database", "db", False)),
    ),
    (
        "read_file",
        "Read a file from the workspace.",
        (("path", "path", True), ("start_line", "int", False), ("end_line", "int", False)),
    ),
    ("write_file", "Write text content to a file.", (("path", "path", True), ("content", "text", True))),
    (
        "send_email",
        "Send an email message.",
        (("to", "emails", True), ("subject", "short", True), ("body", "text", True)),
    ),
    (
        "create_event",
        "Create a calendar event.",
        (
            ("title", "short", True),
            ("start", "datetime", True),
            ("duration_minutes", "int", False),
            ("attendees", "emails", False),
        ),
    ),
    (
        "get_stock_price",
        "Get the latest stock price.",
        (("ticker", "ticker", True), ("currency", "currency", False)),
    ),
    (
        "translate",
        "Translate text into another language.",
        (("text", "text", True), ("target_lang", "lang", True)),
    ),
    (
        "calculate",
        "Evaluate an arithmetic expression.",
        (("expression", "expr", True), ("precision", "int", False)),
    ),
    (
        "lookup_order",
        "Look up an order by id.",
        (("order_id", "order", True), ("include_items", "bool", False)),
    ),
    ("set_thermostat", "Set the thermostat.", (("temperature", "float", True), ("mode", "mode", False))),
    ("get_time", "Get the current time.", ()),
)
_NAMESPACES: tuple[tuple[str, str, tuple[_ToolSpec, ...]], ...] = (
    (
        "crm",
        "Customer relationship management tools.",
        (
            ("lookup_customer", "Find a customer record.", (("email", "email", True),)),
            (
                "update_ticket",
                "Update a support ticket.",
                (("ticket_id", "order", True), ("status", "ticket_status", True), ("note", "text", False)),
            ),
        ),
    ),
    (
        "github",
        "GitHub repository tools.",
        (
            (
                "create_issue",
                "Open a new issue.",
                (("repo", "repo", True), ("title", "short", True), ("body", "text", False)),
            ),
            (
                "list_pull_requests",
                "List open pull requests.",
                (("repo", "repo", True), ("limit", "int", False)),
            ),
        ),
    ),
)
# (name, description, format kind)
_CUSTOM_TOOLS: tuple[tuple[str, str, str], ...] = (
    ("apply_diff", "Apply a unified diff to the workspace.", "text"),
    ("math_expr", "Evaluate a math expression written in the grammar.", "lark"),
    ("shell_script", "Run a POSIX shell script.", "none"),
    ("date_regex", "Emit an ISO date.", "regex"),
)

_KIND_SCHEMA: dict[str, Json] = {
    "city": {"type": "string", "description": "City and country, e.g. Paris, France"},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    "short": {"type": "string"},
    "text": {"type": "string"},
    "sql": {"type": "string", "description": "A SQL SELECT statement"},
    "db": {"type": "string", "enum": ["analytics", "prod_replica", "staging"]},
    "path": {"type": "string"},
    "int": {"type": "integer", "minimum": 0},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "emails": {"type": "array", "items": {"type": "string", "format": "email"}},
    "email": {"type": "string", "format": "email"},
    "datetime": {"type": "string", "format": "date-time"},
    "ticker": {"type": "string"},
    "currency": {"type": ["string", "null"], "enum": ["USD", "EUR", "JPY", None]},
    "lang": {"type": "string", "enum": list(_LANGS)},
    "expr": {"type": "string"},
    "order": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"},
    "mode": {"type": "string", "enum": ["heat", "cool", "auto"]},
    "filters": {
        "type": "object",
        "properties": {"lang": {"type": "string"}, "after": {"type": ["string", "null"]}},
        "required": ["lang", "after"],
        "additionalProperties": False,
    },
    "ticket_status": {"type": "string", "enum": ["open", "pending", "closed"]},
    "repo": {"type": "string", "description": "owner/name"},
}


def _schema(params: tuple[tuple[str, str, bool], ...], strict: bool = False) -> Json:
    """JSON schema for a tool; strict mode (OpenAI structured outputs) requires every
    property, so optional ones become nullable instead of omittable."""
    if strict:
        props = {
            p: _KIND_SCHEMA[k] if req else {"anyOf": [_KIND_SCHEMA[k], {"type": "null"}]}
            for p, k, req in params
        }
        required = [p for p, _, _ in params]
    else:
        props = {p: _KIND_SCHEMA[k] for p, k, _ in params}
        required = [p for p, _, req in params if req]
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _frozen(obj: Any) -> bytes:
    return orjson.dumps(obj)


def _thaw(b: bytes) -> Any:
    """Fresh (unshared) copy of a precomputed JSON value."""
    return orjson.loads(b)


_GRAMMAR_LARK = (
    'start: expr\nexpr: term (("+"|"-") term)*\nterm: NUMBER (("*"|"/") NUMBER)*\n'
    '%import common.NUMBER\n%ignore " "'
)
_GRAMMAR_REGEX = r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"

# Responses-shaped tools
_R_FN_TOOLS = tuple(
    _frozen(
        {"type": "function", "name": n, "description": d, "parameters": _schema(ps, True), "strict": True}
    )
    for n, d, ps in _FUNCTIONS
)
_R_FN_TOOLS_LOOSE = tuple(
    _frozen({"type": "function", "name": n, "description": d, "parameters": _schema(ps), "strict": None})
    for n, d, ps in _FUNCTIONS
)
_R_NS_TOOLS = tuple(
    _frozen(
        {
            "type": "namespace",
            "name": ns,
            "description": nd,
            "tools": [
                {"type": "function", "name": n, "description": d, "parameters": _schema(ps)}
                for n, d, ps in fns
            ],
        }
    )
    for ns, nd, fns in _NAMESPACES
)


def _custom_format_r(kind: str) -> Json | None:
    if kind == "text":
        return {"type": "text"}
    if kind == "lark":
        return {"type": "grammar", "syntax": "lark", "definition": _GRAMMAR_LARK}
    if kind == "regex":
        return {"type": "grammar", "syntax": "regex", "definition": _GRAMMAR_REGEX}
    return None


def _custom_tool_r(name: str, desc: str, kind: str) -> Json:
    t: Json = {"type": "custom", "name": name, "description": desc}
    f = _custom_format_r(kind)
    if f is not None:
        t["format"] = f
    return t


def _custom_tool_c(name: str, desc: str, kind: str) -> Json:
    c: Json = {"name": name, "description": desc}
    f = _custom_format_r(kind)
    if f is not None:
        c["format"] = (
            f
            if f["type"] == "text"
            else {"type": "grammar", "grammar": {"definition": f["definition"], "syntax": f["syntax"]}}
        )
    return {"type": "custom", "custom": c}


_R_CUSTOM_TOOLS = tuple(_frozen(_custom_tool_r(n, d, k)) for n, d, k in _CUSTOM_TOOLS)
_C_FN_TOOLS = tuple(
    _frozen(
        {
            "type": "function",
            "function": {"name": n, "description": d, "parameters": _schema(ps, True), "strict": True},
        }
    )
    for n, d, ps in _FUNCTIONS
)
_C_FN_TOOLS_PLAIN = tuple(
    _frozen({"type": "function", "function": {"name": n, "description": d, "parameters": _schema(ps)}})
    for n, d, ps in _FUNCTIONS
)
_C_CUSTOM_TOOLS = tuple(_frozen(_custom_tool_c(n, d, k)) for n, d, k in _CUSTOM_TOOLS)
_A_TOOLS = tuple(
    _frozen({"name": n, "description": d, "input_schema": _schema(ps)}) for n, d, ps in _FUNCTIONS
)


# ---------------------------------------------------------------------------
# Argument values and JSON encodings
# ---------------------------------------------------------------------------


def _arg_value(rnd: Rnd, kind: str) -> Any:
    if kind == "city":
        return _pick(rnd, _CITIES)
    if kind == "unit":
        return "celsius" if rnd() < 0.6 else "fahrenheit"
    if kind in ("short", "expr_text"):
        return _short(rnd)
    if kind == "text":
        return _text(rnd, 10, 300)
    if kind == "sql":
        return _pick(
            rnd,
            (
                "SELECT count(*) FROM orders WHERE status = 'open'",
                "SELECT user_id, sum(total) AS spend\nFROM invoices\nGROUP BY 1\nORDER BY 2 DESC\nLIMIT 10",
                "select * from events where ts > now() - interval '1 day'",
            ),
        )
    if kind == "db":
        return _pick(rnd, ("analytics", "prod_replica", "staging"))
    if kind == "path":
        return _pick(rnd, _PATHS)
    if kind == "int":
        return int(rnd() * 200)
    if kind == "float":
        x = rnd()
        return 1.0 if x < 0.1 else (20 if x < 0.2 else round(15 + rnd() * 10, 1))
    if kind == "bool":
        return rnd() < 0.5
    if kind == "emails":
        return [_pick(rnd, _EMAILS) for _ in range(1 + int(rnd() * 3))]
    if kind == "email":
        return _pick(rnd, _EMAILS)
    if kind == "datetime":
        month, day, hour, minute = (
            1 + int(rnd() * 12),
            1 + int(rnd() * 28),
            int(rnd() * 24),
            int(rnd() * 4) * 15,
        )
        return f"2025-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:00Z"
    if kind == "ticker":
        return _pick(rnd, _TICKERS)
    if kind == "currency":
        return _pick(rnd, ("USD", "EUR", "JPY", None))
    if kind == "lang":
        return _pick(rnd, _LANGS)
    if kind == "expr":
        return f"{1 + int(rnd() * 99)} * ({int(rnd() * 50)} + {int(rnd() * 50)}) / {1 + int(rnd() * 9)}"
    if kind == "order":
        return f"{_pick(rnd, ('US', 'EU', 'JP'))}-{int(rnd() * 1_000_000)}"
    if kind == "mode":
        return _pick(rnd, ("heat", "cool", "auto"))
    if kind == "filters":
        return {"lang": _pick(rnd, _LANGS), "after": "2024-01-01" if rnd() < 0.5 else None}
    if kind == "ticket_status":
        return _pick(rnd, ("open", "pending", "closed"))
    if kind == "repo":
        return _pick(rnd, ("apache/arrow", "openai/openai-python", "anthropics/anthropic-sdk-python"))
    raise ValueError(kind)


def _args(rnd: Rnd, params: tuple[tuple[str, str, bool], ...], strict: bool = False) -> Json:
    """Arguments for a call; a strict tool always gets every key (null when unused)."""
    out: Json = {}
    for p, kind, req in params:
        if req or rnd() < 0.5:
            out[p] = _arg_value(rnd, kind)
        elif strict:
            out[p] = None
    return out


_SEPS = (", ", ",  ", " ,", ",\n", ",")
_KSEPS = (": ", ":", " : ", ":  ")


def _weird_json(rnd: Rnd, v: Any) -> str:
    """Valid JSON with irregular spacing, e.g. '{"a": 1,  "b":[1.0, 2]}'."""
    if isinstance(v, dict):
        if not v:
            return "{ }" if rnd() < 0.5 else "{}"
        body = "".join(
            (_pick(rnd, _SEPS) if i else "")
            + orjson.dumps(k).decode()
            + _pick(rnd, _KSEPS)
            + _weird_json(rnd, x)
            for i, (k, x) in enumerate(v.items())
        )
        return "{" + body + "}" if rnd() < 0.7 else "{ " + body + " }"
    if isinstance(v, list):
        return (
            "["
            + "".join((_pick(rnd, _SEPS) if i else "") + _weird_json(rnd, x) for i, x in enumerate(v))
            + "]"
        )
    if isinstance(v, str) and rnd() < 0.5:
        return json.dumps(v)  # \uXXXX escapes for non-ASCII
    return orjson.dumps(v).decode()


def _dump_args(rnd: Rnd, obj: Json) -> str:
    x = rnd()
    if x < 0.55:
        return orjson.dumps(obj).decode()
    if x < 0.70:
        return json.dumps(obj)
    if x < 0.80:
        return json.dumps(obj, ensure_ascii=False)
    if x < 0.86:
        return orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode()
    s = _weird_json(rnd, obj)
    y = rnd()
    return " " + s if y < 0.2 else (s + "\n" if y < 0.4 else s)


def _tool_output_text(rnd: Rnd, name: str) -> str:
    x = rnd()
    if x < 0.45:
        res: Json = {
            "ok": True,
            "tool": name,
            "value": round(rnd() * 1000, 2),
            "items": [_short(rnd) for _ in range(int(rnd() * 3))],
        }
        if rnd() < 0.3:
            res["note"] = None
        return orjson.dumps(res, option=0 if rnd() < 0.7 else orjson.OPT_INDENT_2).decode()
    if x < 0.55:
        return _pick(
            rnd,
            (
                "Error: timeout after 30s",
                "error: permission denied (EACCES)",
                "404 Not Found",
                "rate limited; retry in 2s",
            ),
        )
    if x < 0.58:
        return _pick(rnd, ("", " ", "\n"))
    return _text(rnd, 20, 600)


def _custom_input(rnd: Rnd, name: str) -> str:
    if name == "apply_diff":
        p = _pick(rnd, _PATHS)
        return f"--- a/{p}\n+++ b/{p}\n@@ -1,3 +1,3 @@\n {_short(rnd)}\n-{_short(rnd)}\n+{_short(rnd)}\n"
    if name == "math_expr":
        return str(_arg_value(rnd, "expr"))
    if name == "date_regex":
        return f"2025-{1 + int(rnd() * 12):02d}-{1 + int(rnd() * 28):02d}"
    return _pick(
        rnd,
        (
            "#!/bin/sh\nset -eu\nls -la\n",
            'echo "$HOME" && pwd',
            "find . -name '*.py' | xargs wc -l",
            "printf '%s\\n' 'héllo wörld'",
        ),
    )


# ---------------------------------------------------------------------------
# Toolkit: which tools a conversation has
# ---------------------------------------------------------------------------


class _Toolkit:
    __slots__ = ("callables", "customs", "fns", "local_shell", "loose", "ns", "web_search")

    def __init__(self, rnd: Rnd, *, allow_ns: bool, allow_custom: bool, allow_hosted: bool) -> None:
        nf = len(_FUNCTIONS)
        k = 1 + int(rnd() * rnd() * 5)
        first = int(rnd() * nf)
        self.fns: list[int] = sorted({(first + int(rnd() * nf)) % nf for _ in range(k)} | {first})
        self.loose = rnd() < 0.15
        self.ns: int | None = int(rnd() * len(_NAMESPACES)) if allow_ns and rnd() < 0.18 else None
        self.customs: list[int] = []
        if allow_custom and rnd() < 0.2:
            c = int(rnd() * len(_CUSTOM_TOOLS))
            self.customs = [c] if rnd() < 0.7 else sorted({c, (c + 1) % len(_CUSTOM_TOOLS)})
        self.web_search = allow_hosted and rnd() < 0.12
        self.local_shell = allow_hosted and rnd() < 0.08
        # (kind, spec index, namespace index or -1)
        self.callables: list[tuple[str, int, int]] = [("fn", i, -1) for i in self.fns]
        if self.ns is not None:
            self.callables += [("fn", j, self.ns) for j in range(len(_NAMESPACES[self.ns][2]))]
        self.callables += [("custom", c, -1) for c in self.customs]

    def spec(self, idx: int, ns: int) -> _ToolSpec:
        return _FUNCTIONS[idx] if ns < 0 else _NAMESPACES[ns][2][idx]


# ---------------------------------------------------------------------------
# OpenAI Responses
# ---------------------------------------------------------------------------


def _r_image(rnd: Rnd, bits: Callable[[int], int], *, detail_required: bool = True) -> Json:
    part: Json = {"type": "input_image"}
    if detail_required or rnd() < 0.6:
        part["detail"] = _pick(rnd, ("auto", "low", "high", "original"))
    x = rnd()
    if x < 0.6:
        part["image_url"] = _pick(rnd, _IMAGE_URLS)
    elif x < 0.85:
        mt, data = _pick(rnd, _IMAGES_B64)
        part["image_url"] = f"data:{mt};base64,{data}"
    else:
        part["file_id"] = "file-" + _b62(rnd, 22)
        if rnd() < 0.3:
            part["image_url"] = None
    return part


def _r_input_parts(rnd: Rnd, bits: Callable[[int], int], images: bool) -> list[Json]:
    parts: list[Json] = [{"type": "input_text", "text": _otext(rnd)}]
    if images and rnd() < 0.22:
        parts.insert(0 if rnd() < 0.4 else 1, _r_image(rnd, bits))
    if rnd() < 0.2:
        parts.append({"type": "input_text", "text": _otext(rnd, 20, 200)})
    return parts


def _r_easy_or_message(rnd: Rnd, bits: Callable[[int], int], role: str) -> Json:
    x = rnd()
    if x < 0.04:  # stored "Message" input shape: list content, status
        return {
            "type": "message",
            "role": role,
            "content": _r_input_parts(rnd, bits, role == "user"),
            "status": "completed",
        }
    content: str | list[Json] = _otext(rnd) if rnd() < 0.55 else _r_input_parts(rnd, bits, role == "user")
    if x < 0.52:
        return {"role": role, "content": content}
    return {"type": "message", "role": role, "content": content}


def _r_output_text(rnd: Rnd) -> Json:
    x = rnd()
    if x < 0.05:  # short text with logprobs covering it
        text = _text(rnd, 20, 60)
        toks = [text[i : i + 4] for i in range(0, len(text), 4)]
        lps = []
        for t in toks:
            lp = -round(rnd() * rnd() * 3, 6)
            top = [{"token": t, "bytes": list(t.encode()), "logprob": lp}]
            if rnd() < 0.5:
                alt = _pick(rnd, ("the", " a", "ing", "。", "🙂"))
                top.append(
                    {"token": alt, "bytes": list(alt.encode()), "logprob": lp - round(1 + rnd() * 4, 6)}
                )
            lps.append({"token": t, "bytes": list(t.encode()), "logprob": lp, "top_logprobs": top})
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": lps}
    text = _otext(rnd)
    annotations: list[Json] = []
    if x < 0.16 and len(text) > 10:
        for _ in range(1 + int(rnd() * 2)):
            a = int(rnd() * (len(text) - 5))
            b = a + 1 + int(rnd() * (len(text) - a - 1))
            ui = int(rnd() * len(_URLS))
            annotations.append(
                {
                    "type": "url_citation",
                    "start_index": a,
                    "end_index": b,
                    "url": _URLS[ui],
                    "title": _TITLES[ui],
                }
            )
    return {"type": "output_text", "text": text, "annotations": annotations}


def _r_assistant(rnd: Rnd, bits: Callable[[int], int], phase: str) -> Json:
    """Assistant message: output shape (with id) or an id-less EasyInputMessage with string content."""
    if rnd() < 0.14:
        m: Json = {"role": "assistant", "content": _otext(rnd)}
        if rnd() < 0.4:
            m = {"type": "message", **m}
    else:
        if rnd() < 0.04:
            content = [{"type": "refusal", "refusal": _pick(rnd, _REFUSALS)}]
        else:
            content = [_r_output_text(rnd)]
            if rnd() < 0.12:
                content.append(_r_output_text(rnd))
        m = {
            "id": "msg_" + _hex(bits, 48),
            "type": "message",
            "status": "completed" if rnd() < 0.97 else "incomplete",
            "role": "assistant",
            "content": content,
        }
    x = rnd()
    if x < 0.15:
        m["phase"] = None
    elif x < 0.55:
        m["phase"] = phase
    return m


def _r_reasoning(rnd: Rnd, bits: Callable[[int], int]) -> Json:
    it: Json = {"id": "rs_" + _hex(bits, 48), "type": "reasoning"}
    ns = int(rnd() * 3.2)
    it["summary"] = [{"type": "summary_text", "text": _text(rnd, 40, 400)} for _ in range(ns)]
    if rnd() < 0.2:
        it["content"] = [{"type": "reasoning_text", "text": _text(rnd, 40, 600)}]
    x = rnd()
    if x < 0.6:
        it["encrypted_content"] = "gAAAAA" + _b64(bits, 200, 1400)
    elif x < 0.72:
        it["encrypted_content"] = None
    if rnd() < 0.2:
        it["status"] = "completed"
    return it


def _r_call(rnd: Rnd, bits: Callable[[int], int], tk: _Toolkit) -> tuple[Json, Json]:
    kind, idx, ns = _pick(rnd, tk.callables)
    call_id = "call_" + _b62(rnd, 24)
    if kind == "custom":
        name = _CUSTOM_TOOLS[idx][0]
        call: Json = {"type": "custom_tool_call"}
        if rnd() < 0.8:
            call["id"] = "ctc_" + _hex(bits, 48)
        call["call_id"] = call_id
        call["name"] = name
        call["input"] = _custom_input(rnd, name)
        out: Json = {"type": "custom_tool_call_output", "call_id": call_id}
        if rnd() < 0.75:
            out["output"] = _tool_output_text(rnd, name)
        else:
            out["output"] = [{"type": "input_text", "text": _tool_output_text(rnd, name)}]
        return call, out
    name, _desc, params = tk.spec(idx, ns)
    call = {"type": "function_call"}
    if rnd() < 0.85:
        call["id"] = "fc_" + _hex(bits, 48)
    if rnd() < 0.6:
        call["status"] = "completed"
    call["arguments"] = _dump_args(rnd, _args(rnd, params, ns < 0 and not tk.loose))
    call["call_id"] = call_id
    call["name"] = name
    if ns >= 0:
        call["namespace"] = _NAMESPACES[ns][0]
    out = {"type": "function_call_output", "call_id": call_id}
    x = rnd()
    if x < 0.78:
        out["output"] = _tool_output_text(rnd, name)
    else:
        parts: list[Json] = [{"type": "input_text", "text": _tool_output_text(rnd, name)}]
        if x > 0.95:
            parts.append(_r_image(rnd, bits, detail_required=False))
        out["output"] = parts
    y = rnd()
    if y < 0.1:
        out["id"] = None
    elif y < 0.18:
        out["id"] = "fco_" + _hex(bits, 48)
    z = rnd()
    if z < 0.12:
        out["status"] = None
    elif z < 0.3:
        out["status"] = "completed"
    return call, out


def _r_web_search(rnd: Rnd, bits: Callable[[int], int]) -> Json:
    x = rnd()
    if x < 0.6:
        action: Json = {"type": "search", "query": _short(rnd)}
        if rnd() < 0.4:
            action["queries"] = [action["query"], _short(rnd)]
        if rnd() < 0.4:
            action["sources"] = [{"type": "url", "url": _pick(rnd, _URLS)} for _ in range(1 + int(rnd() * 3))]
    elif x < 0.8:
        action = {"type": "open_page", "url": _pick(rnd, _URLS)}
    else:
        action = {
            "type": "find_in_page",
            "pattern": _pick(rnd, ("Arrow", "price", "2025", "天気")),
            "url": _pick(rnd, _URLS),
        }
    return {"type": "web_search_call", "id": "ws_" + _hex(bits, 48), "status": "completed", "action": action}


def _r_local_shell(rnd: Rnd, bits: Callable[[int], int]) -> tuple[Json, Json]:
    call_id = "call_" + _b62(rnd, 24)
    action: Json = {
        "type": "exec",
        "command": _pick(
            rnd,
            (
                ["bash", "-lc", "ls -la"],
                ["python", "-c", "print(1+1)"],
                ["git", "status", "--short"],
                ["cat", "README.md"],
            ),
        ),
        "env": {} if rnd() < 0.6 else {"LANG": "C.UTF-8", "PAGER": "cat"},
    }
    if rnd() < 0.5:
        action["timeout_ms"] = 10_000 * (1 + int(rnd() * 6))
    if rnd() < 0.4:
        action["working_directory"] = "/workspace"
    if rnd() < 0.1:
        action["user"] = None
    call = {
        "type": "local_shell_call",
        "id": "lsh_" + _hex(bits, 48),
        "call_id": call_id,
        "status": "completed",
        "action": action,
    }
    output = orjson.dumps(
        {"stdout": _text(rnd, 0, 300), "stderr": "", "exit_code": 0 if rnd() < 0.85 else 1}
    ).decode()
    out: Json = {"type": "local_shell_call_output", "id": call_id, "output": output}
    if rnd() < 0.3:
        out["status"] = "completed"
    return call, out


def _r_tool_round(
    rnd: Rnd, bits: Callable[[int], int], tk: _Toolkit, items: list[Json], reasoning_model: bool
) -> None:
    if rnd() < 0.22:
        items.append(_r_assistant(rnd, bits, "commentary"))
    if tk.web_search and rnd() < 0.35:
        items.append(_r_web_search(rnd, bits))
        return
    if tk.local_shell and rnd() < 0.35:
        c, o = _r_local_shell(rnd, bits)
        items.append(c)
        items.append(o)
        return
    n = 1 if rnd() < 0.72 else 2 + int(rnd() * 3)
    calls: list[Json] = []
    outs: list[Json] = []
    for _ in range(n):
        c, o = _r_call(rnd, bits, tk)
        calls.append(c)
        outs.append(o)
    if n > 1 and rnd() < 0.45:
        outs.reverse() if rnd() < 0.5 else outs.insert(0, outs.pop())
    items.extend(calls)
    items.extend(outs)
    if reasoning_model and rnd() < 0.3:
        items.append(_r_reasoning(rnd, bits))


def _r_items(rnd: Rnd, bits: Callable[[int], int], tk: _Toolkit | None, reasoning_model: bool) -> list[Json]:
    items: list[Json] = []
    if rnd() < 0.06:
        cmp: Json = {"type": "compaction", "encrypted_content": "gAAAAA" + _b64(bits, 400, 3000)}
        x = rnd()
        if x < 0.3:
            cmp["id"] = None
        elif x < 0.65:
            cmp = {"id": "cmp_" + _hex(bits, 48), **cmp}
        items.append(cmp)
    if rnd() < 0.08:
        for _ in range(1 + int(rnd() * 2)):
            ref_id = _pick(rnd, ("msg_", "rs_", "fc_")) + _hex(bits, 48)
            x = rnd()
            items.append(
                {"id": ref_id}
                if x < 0.35
                else ({"type": None, "id": ref_id} if x < 0.5 else {"type": "item_reference", "id": ref_id})
            )
    turns = 1 + int(rnd() * 3.7) if rnd() < 0.86 else 5 + int(rnd() * 5)
    for t in range(turns):
        if rnd() < (0.25 if t == 0 else 0.1):
            items.append(_r_easy_or_message(rnd, bits, "developer" if rnd() < 0.6 else "system"))
        items.append(_r_easy_or_message(rnd, bits, "user"))
        last = t == turns - 1
        if last and (tk is None or rnd() < 0.6):
            break
        if reasoning_model and rnd() < 0.7:
            items.append(_r_reasoning(rnd, bits))
        if tk is not None:
            rounds = 0 if rnd() < 0.3 else (1 if rnd() < 0.6 else 2 + int(rnd() * 2))
            if last:
                rounds = max(rounds, 1)
            for _ in range(rounds):
                _r_tool_round(rnd, bits, tk, items, reasoning_model)
        if last:
            break
        items.append(_r_assistant(rnd, bits, "final_answer"))
    # a reasoning item must be followed by the output item it belongs to
    while items and items[-1].get("type") == "reasoning":
        items.pop()
    return items


def _r_tools(rnd: Rnd, tk: _Toolkit) -> list[Json]:
    pool = _R_FN_TOOLS_LOOSE if tk.loose else _R_FN_TOOLS
    tools: list[Json] = [_thaw(pool[i]) for i in tk.fns]
    if tk.ns is not None:
        tools.append(_thaw(_R_NS_TOOLS[tk.ns]))
    tools.extend(_thaw(_R_CUSTOM_TOOLS[c]) for c in tk.customs)
    if tk.web_search:
        tools.append(
            {"type": "web_search"} if rnd() < 0.6 else {"type": "web_search", "search_context_size": "low"}
        )
    if tk.local_shell:
        tools.append({"type": "local_shell"})
    return tools


def _r_tool_choice(rnd: Rnd, tk: _Toolkit) -> Any:
    if tk.customs and rnd() < 0.25:
        return {"type": "custom", "name": _CUSTOM_TOOLS[tk.customs[0]][0]}
    x = rnd()
    if x < 0.4:
        return "auto"
    if x < 0.5:
        return "required"
    if x < 0.58:
        return "none"
    if x < 0.75:
        return {"type": "function", "name": _FUNCTIONS[_pick(rnd, tk.fns)][0]}
    if x < 0.85 and tk.customs:
        return {"type": "custom", "name": _CUSTOM_TOOLS[tk.customs[0]][0]}
    return {
        "type": "allowed_tools",
        "mode": "auto" if rnd() < 0.5 else "required",
        "tools": [{"type": "function", "name": _FUNCTIONS[i][0]} for i in tk.fns],
    }


def _metadata(rnd: Rnd) -> dict[str, str]:
    md = {"user_id": "u_" + _b62(rnd, 10)}
    if rnd() < 0.5:
        md["session"] = _b62(rnd, 16)
    if rnd() < 0.3:
        md["env"] = _pick(rnd, ("prod", "staging", "dev"))
    if rnd() < 0.1:
        md["note"] = _short(rnd)
    return md


def _gen_responses(rng: random.Random) -> Json:
    rnd = rng.random
    bits = rng.getrandbits
    reasoning_model = rnd() < 0.55
    body: Json = {"model": _pick(rnd, _OAI_REASONING_MODELS if reasoning_model else _OAI_CHAT_MODELS)}
    x = rnd()
    if x < 0.05:
        body["instructions"] = None
    elif x < 0.10:
        body["instructions"] = ""
    elif x < 0.70:
        body["instructions"] = _otext(rnd)
    tk = _Toolkit(rnd, allow_ns=True, allow_custom=True, allow_hosted=True) if rnd() < 0.65 else None
    if rnd() < 0.03:
        body["input"] = _otext(rnd)
    else:
        body["input"] = _r_items(rnd, bits, tk, reasoning_model)
    if tk is not None:
        body["tools"] = _r_tools(rnd, tk)
        if rnd() < 0.5:
            body["tool_choice"] = _r_tool_choice(rnd, tk)
    if rnd() < 0.4:
        if reasoning_model:
            body["temperature"] = 1 if rnd() < 0.7 else 1.0
        else:
            body["temperature"] = (
                _pick(rnd, (0.0, 0.2, 0.5, 0.7, 1.0, 1.3)) if rnd() < 0.7 else round(rnd() * 1.5, 2)
            )
    if rnd() < 0.3:
        body["metadata"] = _metadata(rnd)
    if rnd() < 0.4:
        body["store"] = rnd() < 0.5
    return body


# ---------------------------------------------------------------------------
# OpenAI Chat Completions
# ---------------------------------------------------------------------------


def _c_text_parts(rnd: Rnd) -> list[Json]:
    parts: list[Json] = [{"type": "text", "text": _otext(rnd)}]
    if rnd() < 0.25:
        parts.append({"type": "text", "text": _otext(rnd, 20, 200)})
    return parts


def _c_user(rnd: Rnd) -> Json:
    if rnd() < 0.6:
        content: str | list[Json] = _otext(rnd)
    else:
        content = _c_text_parts(rnd)
        if rnd() < 0.3:
            x = rnd()
            if x < 0.65:
                url = _pick(rnd, _IMAGE_URLS)
            else:
                mt, data = _pick(rnd, _IMAGES_B64)
                url = f"data:{mt};base64,{data}"
            img: Json = {"url": url}
            if rnd() < 0.6:
                img["detail"] = _pick(rnd, ("auto", "low", "high"))
            content.insert(int(rnd() * 2), {"type": "image_url", "image_url": img})
    m: Json = {"role": "user", "content": content}
    if rnd() < 0.08:
        m["name"] = _pick(rnd, ("alice", "bob_2", "customer-42"))
    return m


def _c_system(rnd: Rnd) -> Json:
    m: Json = {
        "role": "developer" if rnd() < 0.45 else "system",
        "content": _otext(rnd) if rnd() < 0.75 else _c_text_parts(rnd),
    }
    if rnd() < 0.06:
        m["name"] = "policy"
    return m


def _c_tool_round(rnd: Rnd, tk: _Toolkit, msgs: list[Json]) -> None:
    n = 1 if rnd() < 0.7 else 2 + int(rnd() * 3)
    calls: list[Json] = []
    tool_msgs: list[Json] = []
    for _ in range(n):
        kind, idx, _ns = _pick(rnd, tk.callables)
        cid = "call_" + _b62(rnd, 24)
        if kind == "custom":
            name = _CUSTOM_TOOLS[idx][0]
            calls.append(
                {"id": cid, "type": "custom", "custom": {"name": name, "input": _custom_input(rnd, name)}}
            )
        else:
            name, _d, params = _FUNCTIONS[idx]
            calls.append(
                {
                    "id": cid,
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": _dump_args(rnd, _args(rnd, params, not tk.loose)),
                    },
                }
            )
        content: str | list[Json] = _tool_output_text(rnd, name)
        if rnd() < 0.2:
            content = [{"type": "text", "text": content}]
        tool_msgs.append({"role": "tool", "tool_call_id": cid, "content": content})
    a: Json = {"role": "assistant"}
    x = rnd()
    if x < 0.35:
        a["content"] = None
    elif x < 0.45:
        a["content"] = ""
    elif x < 0.6:
        a["content"] = _otext(rnd, 20, 300)
    elif x < 0.66:
        a["content"] = _c_text_parts(rnd)
    # else: content absent
    if rnd() < 0.15:
        a["refusal"] = None
    a["tool_calls"] = calls
    if rnd() < 0.05:
        a["name"] = "planner"
    msgs.append(a)
    if n > 1 and rnd() < 0.4:
        tool_msgs.reverse()
    msgs.extend(tool_msgs)


def _c_final(rnd: Rnd) -> Json:
    a: Json = {"role": "assistant"}
    x = rnd()
    if x < 0.04:
        a["content"] = None
        a["refusal"] = _pick(rnd, _REFUSALS)
        return a
    if x < 0.06:
        a["content"] = [{"type": "refusal", "refusal": _pick(rnd, _REFUSALS)}]
        return a
    if x < 0.08:
        a["content"] = ""
    elif x < 0.22:
        a["content"] = _c_text_parts(rnd)
    else:
        a["content"] = _otext(rnd)
    if rnd() < 0.12:
        a["refusal"] = None
    if rnd() < 0.04:
        a["name"] = "assistant_v2"
    return a


def _gen_chat(rng: random.Random) -> Json:
    rnd = rng.random
    model = _pick(rnd, _OAI_CHAT_MODELS + _OAI_REASONING_MODELS[:3])
    body: Json = {"model": model}
    msgs: list[Json] = []
    if rnd() < 0.6:
        msgs.append(_c_system(rnd))
    tk = _Toolkit(rnd, allow_ns=False, allow_custom=True, allow_hosted=False) if rnd() < 0.6 else None
    turns = 1 + int(rnd() * rnd() * 6)
    for t in range(turns):
        if t and rnd() < 0.12:
            msgs.append(_c_system(rnd))
        msgs.append(_c_user(rnd))
        last = t == turns - 1
        if last and (tk is None or rnd() < 0.6):
            break
        if tk is not None:
            rounds = 0 if rnd() < 0.35 else (1 if rnd() < 0.65 else 2)
            if last:
                rounds = max(rounds, 1)
            for _ in range(rounds):
                _c_tool_round(rnd, tk, msgs)
        if last:
            break
        msgs.append(_c_final(rnd))
    body["messages"] = msgs
    if tk is not None:
        pool = _C_FN_TOOLS_PLAIN if tk.loose else _C_FN_TOOLS
        tools = [_thaw(pool[i]) for i in tk.fns]
        tools.extend(_thaw(_C_CUSTOM_TOOLS[c]) for c in tk.customs)
        body["tools"] = tools
        if rnd() < 0.5:
            x = rnd()
            if x < 0.45:
                body["tool_choice"] = "auto"
            elif x < 0.55:
                body["tool_choice"] = "required"
            elif x < 0.62:
                body["tool_choice"] = "none"
            elif x < 0.8:
                body["tool_choice"] = {"type": "function", "function": {"name": _FUNCTIONS[tk.fns[0]][0]}}
            elif x < 0.9 and tk.customs:
                body["tool_choice"] = {"type": "custom", "custom": {"name": _CUSTOM_TOOLS[tk.customs[0]][0]}}
            else:
                body["tool_choice"] = {
                    "type": "allowed_tools",
                    "allowed_tools": {
                        "mode": "auto",
                        "tools": [
                            {"type": "function", "function": {"name": _FUNCTIONS[i][0]}} for i in tk.fns
                        ],
                    },
                }
    if rnd() < 0.4:
        if model in _OAI_REASONING_MODELS:  # reasoning models only accept the default
            body["temperature"] = 1 if rnd() < 0.6 else 1.0
        else:
            body["temperature"] = (
                _pick(rnd, (0.0, 0.2, 0.7, 1.0, 1, 1.5)) if rnd() < 0.7 else round(rnd() * 2, 2)
            )
    if rnd() < 0.1:
        body["n"] = 1 + int(rnd() * 3)
    if rnd() < 0.15:
        x = rnd()
        if x < 0.3:
            body["response_format"] = {"type": "text"}
        elif x < 0.6:
            body["response_format"] = {"type": "json_object"}
            # the API requires the word "JSON" somewhere in the messages for json_object
            msgs.insert(0, {"role": "system", "content": "Always answer with a single JSON object."})
        else:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": "answer",
                    "strict": True,
                    "schema": {
                        "type": "object",
                        "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
                        "required": ["answer", "confidence"],
                        "additionalProperties": False,
                    },
                },
            }
    return body


# ---------------------------------------------------------------------------
# Anthropic Messages
# ---------------------------------------------------------------------------


class _ABudget:
    """Per-record counter: the API allows at most 4 cache_control breakpoints."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = 4

    def take(self, rnd: Rnd, p: float) -> bool:
        if self.left and rnd() < p:
            self.left -= 1
            return True
        return False


def _a_text_block(rnd: Rnd, cc: _ABudget, lo: int = 20, hi: int = 600, *, trailing_ws: bool = True) -> Json:
    b: Json = {"type": "text", "text": _atext(rnd, lo, hi, trailing_ws=trailing_ws)}
    if cc.take(rnd, 0.06):
        b["cache_control"] = {"type": "ephemeral"} if rnd() < 0.7 else {"type": "ephemeral", "ttl": "1h"}
    if rnd() < 0.08:
        b["citations"] = None
    return b


def _a_image(rnd: Rnd) -> Json:
    if rnd() < 0.55:
        mt, data = _pick(rnd, _IMAGES_B64)
        return {"type": "image", "source": {"type": "base64", "media_type": mt, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": _pick(rnd, _IMAGE_URLS)}}


def _a_user_content(rnd: Rnd, cc: _ABudget) -> str | list[Json]:
    if rnd() < 0.5:
        return _atext(rnd)
    blocks = [_a_text_block(rnd, cc)]
    if rnd() < 0.2:
        blocks.insert(int(rnd() * 2), _a_image(rnd))
    if rnd() < 0.15:
        blocks.append(_a_text_block(rnd, cc, 20, 200))
    return blocks


def _a_thinking(rnd: Rnd, bits: Callable[[int], int]) -> Json:
    if rnd() < 0.12:
        return {"type": "redacted_thinking", "data": "EmwKAhgBEgy" + _b64(bits, 200, 800)}
    return {
        "type": "thinking",
        "thinking": _text(rnd, 40, 600),
        "signature": "ErUBCkYIBxgCIkB" + _b64(bits, 200, 500),
    }


def _gen_anthropic(rng: random.Random) -> Json:
    rnd = rng.random
    bits = rng.getrandbits
    cc = _ABudget()
    body: Json = {"model": _pick(rnd, _ANTHROPIC_MODELS)}
    x = rnd()
    thinking: Json | None = None
    if x < 0.35:
        budget = 1024 * (1 + int(rnd() * 16))
        thinking = {"type": "enabled", "budget_tokens": budget}
        body["max_tokens"] = budget + 1024 * (1 + int(rnd() * 16))
    else:
        body["max_tokens"] = _pick(rnd, (256, 1024, 2048, 4096, 8192, 64000))
        if x < 0.45:
            thinking = {"type": "adaptive"}
        elif x < 0.5:
            thinking = {"type": "disabled"}
    thinks = thinking is not None and thinking["type"] != "disabled"
    y = rnd()
    if y < 0.4:
        body["system"] = _atext(rnd)
    elif y < 0.7:
        sys_blocks = [_a_text_block(rnd, cc) for _ in range(1 + int(rnd() * 2.5))]
        if "cache_control" not in sys_blocks[-1] and cc.take(rnd, 0.5):
            sys_blocks[-1]["cache_control"] = {"type": "ephemeral"}
        body["system"] = sys_blocks
    tk = _Toolkit(rnd, allow_ns=False, allow_custom=False, allow_hosted=True) if rnd() < 0.6 else None
    server_search = tk is not None and rnd() < 0.25
    msgs: list[Json] = []
    turns = 1 + int(rnd() * rnd() * 5)
    for t in range(turns):
        pending_results: list[Json] = []
        msgs.append({"role": "user", "content": _a_user_content(rnd, cc)})
        last = t == turns - 1
        if last and (tk is None or rnd() < 0.6):
            break
        rounds = 0
        if tk is not None:
            rounds = 0 if rnd() < 0.3 else (1 if rnd() < 0.6 else 2)
            if last:
                rounds = max(rounds, 1)
        for _r in range(rounds):
            blocks: list[Json] = []
            if thinks:
                blocks.append(_a_thinking(rnd, bits))
                if rnd() < 0.08:
                    blocks.append(_a_thinking(rnd, bits))
            if rnd() < 0.4:
                blocks.append(_a_text_block(rnd, cc, 20, 300))
            if server_search and rnd() < 0.5:
                sid = "srvtoolu_01" + _b62(rnd, 22)
                q = _short(rnd)
                blocks.append(
                    {"type": "server_tool_use", "id": sid, "name": "web_search", "input": {"query": q}}
                )
                results: Any
                if rnd() < 0.8:
                    results = []
                    for _ in range(1 + int(rnd() * 3)):
                        ui = int(rnd() * len(_URLS))
                        res: Json = {
                            "type": "web_search_result",
                            "url": _URLS[ui],
                            "title": _TITLES[ui],
                            "encrypted_content": "Eo8B" + _b64(bits, 100, 400),
                        }
                        if rnd() < 0.6:
                            res["page_age"] = None if rnd() < 0.3 else "2 days ago"
                        results.append(res)
                else:
                    results = {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}
                blocks.append({"type": "web_search_tool_result", "tool_use_id": sid, "content": results})
                blocks.append(_a_text_block(rnd, cc, 20, 300))
            n = 1 if rnd() < 0.72 else 2 + int(rnd() * 2)
            for _ in range(n):
                idx = _pick(rnd, tk.fns) if tk is not None else 0
                name, _d, params = _FUNCTIONS[idx]
                tid = "toolu_01" + _b62(rnd, 22)
                tu: Json = {"type": "tool_use", "id": tid, "name": name, "input": _args(rnd, params)}
                blocks.append(tu)
                tr: Json = {"type": "tool_result", "tool_use_id": tid}
                z = rnd()
                if z < 0.6:
                    tr["content"] = _tool_output_text(rnd, name).strip() or "(no output)"
                elif z < 0.9:
                    tr["content"] = [_a_text_block(rnd, cc, 20, 300)]
                if rnd() < 0.1:
                    tr["is_error"] = True
                    tr["content"] = "Error: upstream service unavailable"
                elif rnd() < 0.05:
                    tr["is_error"] = False
                pending_results.append(tr)
            msgs.append({"role": "assistant", "content": blocks})
            if len(pending_results) > 1 and rnd() < 0.3:
                pending_results.reverse()
            user_blocks: list[Json] = list(pending_results)
            pending_results = []
            if rnd() < 0.2:
                user_blocks.append(_a_text_block(rnd, cc, 20, 200))
            msgs.append({"role": "user", "content": user_blocks})
        if last:
            break
        if rnd() < 0.4 and not thinks:
            msgs.append({"role": "assistant", "content": _atext(rnd)})
        else:
            blocks = []
            if thinks and rnd() < 0.7:
                blocks.append(_a_thinking(rnd, bits))
            blocks.append(_a_text_block(rnd, cc))
            if rnd() < 0.1:
                blocks.append(_a_text_block(rnd, cc, 20, 200))
            msgs.append({"role": "assistant", "content": blocks})
    if not thinks and msgs[-1]["role"] == "user" and rnd() < 0.06:
        # assistant prefill: the API rejects a final assistant turn ending in whitespace
        msgs.append(
            {
                "role": "assistant",
                "content": _pick(rnd, ("{", "Here is the summary:", "```json", "The answer is (")),
            }
        )
    body["messages"] = msgs
    if tk is not None:
        tools = [_thaw(_A_TOOLS[i]) for i in tk.fns]
        if server_search:
            ws: Json = {"type": "web_search_20250305", "name": "web_search"}
            if rnd() < 0.5:
                ws["max_uses"] = 5
            tools.append(ws)
        if cc.take(rnd, 0.2):
            tools[-1]["cache_control"] = {"type": "ephemeral"}
        body["tools"] = tools
        if rnd() < 0.4:
            x = rnd()
            if x < 0.5 or thinks:
                tc: Json = {"type": "auto"} if x < 0.8 or not thinks else {"type": "none"}
            elif x < 0.7:
                tc = {"type": "any"}
            elif x < 0.9:
                tc = {"type": "tool", "name": _FUNCTIONS[tk.fns[0]][0]}
            else:
                tc = {"type": "none"}
            if tc["type"] != "none" and rnd() < 0.3:
                tc["disable_parallel_tool_use"] = rnd() < 0.7
            body["tool_choice"] = tc
    if thinking is not None:
        if thinking["type"] == "enabled" and rnd() < 0.2:
            thinking["display"] = "summarized" if rnd() < 0.5 else "omitted"
        body["thinking"] = thinking
    # No ``temperature``: anthropic 2.14 removed it from MessageCreateParams, and
    # the strict SDK validation rejects it as an unknown key.
    if rnd() < 0.25:
        body["metadata"] = {"user_id": _hex(bits, 32) if rnd() < 0.8 else None}
    return body


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------

_GENERATORS: dict[str, Callable[[random.Random], Json]] = {
    "responses": _gen_responses,
    "chat": _gen_chat,
    "anthropic": _gen_anthropic,
}


def generate(fmt: str, n: int, seed: int = 0, *, start: int = 0) -> Iterator[Json]:
    """Yield n request bodies of format fmt; record i is a pure function of (seed, start + i)
    so shards can be generated in parallel and agree with a serial run.

    ``seed`` is used modulo 2**64.  Bad arguments raise ``ValueError`` immediately.
    """
    try:
        gen = _GENERATORS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}") from None
    if n < 0 or start < 0:
        raise ValueError(f"n and start must be >= 0, got n={n}, start={start}")
    return _generate(gen, n, seed, start)


def _generate(gen: Callable[[random.Random], Json], n: int, seed: int, start: int) -> Iterator[Json]:
    rng = random.Random()  # re-seeding one instance == a fresh Random(mix) per record
    for i in range(start, start + n):
        rng.seed(_record_seed(seed, i))
        yield gen(rng)


_CHUNK = 2000


def _chunk_bytes(task: tuple[str, int, int, int]) -> bytes:
    fmt, seed, start, n = task
    dumps = orjson.dumps
    opt = orjson.OPT_APPEND_NEWLINE
    return b"".join(dumps(r, option=opt) for r in generate(fmt, n, seed, start=start))


def write_jsonl(path: str | Path, fmt: str, n: int, seed: int = 0, *, workers: int = 1) -> int:
    """Write n records as JSONL (orjson, one per line, '\\n' terminated). workers>1 splits into
    contiguous ranges generated in a multiprocessing Pool and concatenated in order; output
    identical to workers=1. Returns bytes written."""
    if fmt not in _GENERATORS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    tasks = [(fmt, seed, s, min(_CHUNK, n - s)) for s in range(0, n, _CHUNK)]
    written = 0
    with replacing(Path(path), user=True) as fh:  # never through a link; a failure leaves no half
        if workers <= 1 or len(tasks) <= 1:
            for task in tasks:
                written += fh.write(_chunk_bytes(task))
        else:
            with multiprocessing.get_context().Pool(workers) as pool:
                for chunk in pool.imap(_chunk_bytes, tasks):
                    written += fh.write(chunk)
    return written


# ---------------------------------------------------------------------------
# Request logs (chatlake synth --request-log): conversations cut into per-turn requests
# ---------------------------------------------------------------------------

# A thread is built from up to this many consecutive base conversations (thread j uses base records
# j * _PIECES ... j * _PIECES + _PIECES - 1), so thread j is a pure function of (seed, j).
_PIECES = 12
# Threads generated (and interleaved) together: a log of concurrent conversations.
_LOG_CHUNK = 64
_LOG_SALT = 0x7E9D_1A57  # the request-log choices draw from (seed ^ salt, j): not the base records' stream

_CONTINUED = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)


def _items_key(fmt: str) -> str:
    return "input" if fmt == "responses" else "messages"


def _is_user(fmt: str, it: Json) -> bool:
    return it.get("role") == "user" and (fmt != "responses" or it.get("type") in (None, "message"))


def _is_tool_output(fmt: str, it: Json) -> bool:
    if fmt == "responses":
        return str(it.get("type") or "").endswith("_call_output")
    return fmt == "chat" and it.get("role") == "tool"


def _cut_points(fmt: str, items: list[Json]) -> list[int]:
    """Lengths at which the client calls the model: after a user message or a run of tool outputs
    (never between two of them, never right after an assistant item)."""
    out = []
    for k, it in enumerate(items):
        if not (_is_user(fmt, it) or _is_tool_output(fmt, it)):
            continue
        nxt = items[k + 1] if k + 1 < len(items) else None
        if nxt is not None and (_is_user(fmt, nxt) or _is_tool_output(fmt, nxt)):
            continue
        out.append(k + 1)
    return out


def _user_message(fmt: str, text: str) -> Json:
    return {"role": "user", "content": text}


def _thread_requests(fmt: str, seed: int, j: int, mean_requests: int) -> list[Json]:
    """The requests of thread ``j``, in the order the client sent them: every turn of a long
    conversation, plus retries (exact duplicates), edited last turns (branches) and compactions."""
    rng = random.Random(_record_seed(seed ^ _LOG_SALT, j))
    rnd = rng.random
    want = max(1, int(rng.expovariate(1 / mean_requests)) + 1) if mean_requests > 1 else 1
    key = _items_key(fmt)
    base = list(generate(fmt, _PIECES, seed, start=j * _PIECES))
    head = base[0]
    items: list[Json] = (
        head[key] if isinstance(head.get(key), list) else [_user_message(fmt, str(head.get(key)))]
    )
    items = list(items)
    for piece in base[1:]:  # a long conversation: later pieces continue it from their first user turn
        if len(_cut_points(fmt, items)) >= want:
            break
        more = piece.get(key)
        if not isinstance(more, list):
            continue
        first = next((i for i, it in enumerate(more) if _is_user(fmt, it)), None)
        if first is not None:
            items.extend(more[first:])
    cuts = _cut_points(fmt, items)[:want] or [len(items)]
    items = items[: cuts[-1]]
    requests: list[Json] = []
    compacted_at: int | None = None
    if len(cuts) >= 6 and rnd() < 0.15:
        compacted_at = cuts[len(cuts) // 2]
    window: list[Json] = []  # the replacement history once compacted
    for c in cuts:
        if compacted_at is not None and c > compacted_at:
            if not window:
                if fmt == "responses":
                    kept = [it for it in items[:compacted_at] if _is_user(fmt, it)]
                    window = [
                        *kept,
                        {
                            "type": "compaction",
                            "encrypted_content": "gAAAAA" + _b64(rng.getrandbits, 400, 1200),
                        },
                    ]
                else:
                    window = [_user_message(fmt, _CONTINUED + _otext(rnd))]
            history = window + items[compacted_at:c]
        else:
            history = items[:c]
        body = {**head, key: history}
        requests.append(body)
        x = rnd()
        if x < 0.04:  # a retry of the same call
            requests.append({**head, key: list(history)})
        elif x < 0.09 and _is_user(fmt, history[-1]):  # the user edits the last turn and resends
            requests.append({**head, key: [*history[:-1], _user_message(fmt, "Actually, " + _otext(rnd))]})
    return requests


def _log_chunk(task: tuple[str, int, int, int, int]) -> bytes:
    """Threads ``[start, start + n)`` as JSONL, their requests interleaved (each thread in order)."""
    fmt, seed, start, n, mean_requests = task
    threads = [_thread_requests(fmt, seed, j, mean_requests) for j in range(start, start + n)]
    slots = [t for t, reqs in enumerate(threads) for _ in reqs]
    random.Random(_record_seed(seed ^ _LOG_SALT ^ 1, start)).shuffle(slots)
    pos = [0] * len(threads)
    out = []
    opt = orjson.OPT_APPEND_NEWLINE
    for t in slots:
        out.append(orjson.dumps(threads[t][pos[t]], option=opt))
        pos[t] += 1
    return b"".join(out)


def _log_tasks(fmt: str, threads: int, seed: int, mean_requests: int) -> list[tuple[str, int, int, int, int]]:
    if fmt not in _GENERATORS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    if threads < 0 or mean_requests < 1:
        raise ValueError(f"threads must be >= 0 and mean_requests >= 1, got {threads}, {mean_requests}")
    starts = range(0, threads, _LOG_CHUNK)
    return [(fmt, seed, s, min(_LOG_CHUNK, threads - s), mean_requests) for s in starts]


def request_log(fmt: str, threads: int, seed: int = 0, *, mean_requests: int = 20) -> Iterator[bytes]:
    """The JSONL bytes of :func:`write_request_log`, a chunk of threads at a time."""
    return map(_log_chunk, _log_tasks(fmt, threads, seed, mean_requests))


def write_request_log(
    path: str | Path, fmt: str, threads: int, seed: int = 0, *, mean_requests: int = 20, workers: int = 1
) -> int:
    """Write a synthetic request log of ``threads`` conversations as JSONL; returns the requests written.

    Each conversation is cut into the requests a client sends, one per model call (about
    ``mean_requests`` each, exponentially distributed), each holding the whole history so far;
    about 4 % are sent twice (retries), 5 % are followed by a branch whose last user turn is edited,
    and 15 % of the conversations with six or more requests are compacted halfway (Responses: their
    user turns plus a ``compaction`` item; Chat and Anthropic: a continuation summary message, as
    Claude Code writes). Requests of ``_LOG_CHUNK`` threads at a time are interleaved, each thread's
    in order. Deterministic in ``(fmt, threads, seed, mean_requests)``, whatever ``workers``.
    """
    tasks = _log_tasks(fmt, threads, seed, mean_requests)
    count = 0
    with replacing(Path(path), user=True) as fh:  # never through a link; a failure leaves no half
        if workers <= 1 or len(tasks) <= 1:
            chunks: Iterator[bytes] = map(_log_chunk, tasks)
            for chunk in chunks:
                fh.write(chunk)
                count += chunk.count(b"\n")
        else:
            with multiprocessing.get_context().Pool(workers) as pool:
                for chunk in pool.imap(_log_chunk, tasks):
                    fh.write(chunk)
                    count += chunk.count(b"\n")
    return count
