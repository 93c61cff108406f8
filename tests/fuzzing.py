"""The crash fuzzers' harness: seed records per wire format and per source adapter, and the checks
every mutated input must pass (``tests/formats/test_fuzz.py``, ``tests/sources/test_fuzz.py``,
``benchmarks/fuzz_decoders.py``).

What is checked, for every input: no exception escapes; every input line / record is a row or a
rejection with a non-empty reason (``read == written + rejected``); every written row encodes back
with ``pipeline.formats.encode_table`` without raising. A failure is a :class:`Finding` holding the
seed and the input, enough to pin it as an explicit test.
"""

from __future__ import annotations

import io
import random
import tempfile
import traceback
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pipeline import synth
from pipeline.errors import ConfigError
from pipeline.formats import WIRE_FORMATS, decode_lines, encode_table
from pipeline.formats._json import loads_document
from pipeline.sources import detect_source, read_source
from pipeline.sources.detect import detect_input
from tests.cases import CASES
from tests.corpus import CORPUS_DIR, corpus_available, corpus_records
from tests.mutate import mutate

# ---------------------------------------------------------------------------------------------
# Seeds


def wire_seeds(fmt: str, *, synthetic: int = 40, corpus: bool = True) -> list[dict[str, Any]]:
    """Valid records of wire format ``fmt``: the hand-written cases, synthetic records, the corpus."""
    if fmt == "hf":
        from tests.formats.test_hf import HF_CASES

        seeds = [r for _, r in HF_CASES]
    elif fmt == "sharegpt":
        from tests.formats.test_sharegpt import SHAREGPT_CASES

        seeds = [r for _, r in SHAREGPT_CASES]
    else:
        seeds = [r for _, r in CASES[fmt]]
        seeds += list(synth.generate(fmt, synthetic, seed=7))
        if corpus and corpus_available():
            seeds += [c.record for c in corpus_records() if c.format == fmt]
    return seeds


def _j(value: Any) -> bytes:
    return orjson.dumps(value)


_CODEX_MSG = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
_CODEX = [
    {"timestamp": "t0", "type": "session_meta", "payload": {"id": "s1", "instructions": "Be brief."}},
    {"timestamp": "t1", "type": "turn_context", "payload": {"model": "gpt-5"}},
    {"timestamp": "t2", "type": "response_item", "payload": _CODEX_MSG},
    {
        "timestamp": "t3",
        "type": "response_item",
        "payload": {"type": "function_call", "name": "sh", "arguments": '{"cmd": "ls"}', "call_id": "c1"},
    },
    {
        "timestamp": "t4",
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "c1", "output": "a b"},
    },
    {"timestamp": "t5", "type": "event_msg", "payload": {"type": "token_count"}},
    {"timestamp": "t6", "type": "compacted", "payload": {"message": "", "replacement_history": [_CODEX_MSG]}},
    {
        "timestamp": "t7",
        "type": "response_item",
        "payload": {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "enc"},
    },
]
_CLAUDE_A = {
    "type": "assistant",
    "sessionId": "s",
    "uuid": "a1",
    "parentUuid": "u1",
    "timestamp": "t1",
    "message": {
        "id": "m1",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "text", "text": "ok"}],
    },
}
_CLAUDE = [
    {"type": "summary", "summary": "s", "leafUuid": "a2"},
    {
        "type": "user",
        "sessionId": "s",
        "uuid": "u1",
        "parentUuid": None,
        "message": {"role": "user", "content": "hi"},
    },
    _CLAUDE_A,
    {
        **_CLAUDE_A,
        "uuid": "a2",
        "parentUuid": "a1",
        "message": {
            **_CLAUDE_A["message"],
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
    },
    {
        "type": "user",
        "sessionId": "s",
        "uuid": "u2",
        "parentUuid": "a2",
        "toolUseResult": {"stdout": "x"},
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]},
    },
    {
        "type": "user",
        "sessionId": "s",
        "uuid": "u3",
        "parentUuid": "a1",
        "message": {"role": "user", "content": "b"},
    },
    {
        "type": "user",
        "sessionId": "s",
        "uuid": "x",
        "isSidechain": True,
        "agentId": "g",
        "parentUuid": None,
        "message": {"role": "user", "content": "side"},
    },
    {"type": "system", "sessionId": "s", "uuid": "y", "parentUuid": "u3", "content": "note"},
]
_LLAMA = [
    {
        "conversations": [
            {"from": "human", "value": "hi"},
            {"from": "function_call", "value": '{"name": "f"}'},
            {"from": "observation", "value": "1"},
            {"from": "gpt", "value": "ok"},
        ],
        "tools": '[{"name": "f", "parameters": {}}]',
        "system": "s",
    },
    {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        "images": ["a.png"],
    },
    {
        "messages": [
            {"role": "user", "content": [{"type": "text", "value": "weather?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "reasoning", "value": "think"},
                    {"type": "tool_call", "value": '{"name": "w", "arguments": {}}'},
                ],
            },
            {
                "role": "tool",
                "content": [
                    {"type": "text", "value": '[{"tool_call_id": "c", "name": "w", "content": {"t": 1}}]'}
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "value": "sunny"}]},
        ],
        "tools": '[{"type": "function", "function": {"name": "w"}}]',
    },
]
_SHAREGPT = [
    {
        "conversations": [{"from": "human", "value": "x"}, {"from": "gpt", "value": "y"}],
        "system": "s",
        "id": 1,
    },
    {
        "conversations": [
            {"from": "human", "value": "q"},
            {"from": "function_call", "value": "{}"},
            {"from": "observation", "value": "r"},
            {"from": "gpt", "value": "a"},
        ],
        "tools": "[]",
    },
]
_TAU = [
    {
        "task_id": 1,
        "reward": 1.0,
        "info": {"x": 1},
        "trial": 0,
        "traj": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c", "content": "1"},
        ],
    },
    {"task_id": 2, "reward": 0.0, "traj": [{"role": "user", "content": "y"}]},
]
_SWE = {
    "environment": "e",
    "info": {"submission": "diff", "model_stats": {"cost": 1}},
    "trajectory": [{"action": "ls", "observation": "a", "messages": [{"role": "user", "content": "x"}]}],
    "history": [
        {"role": "system", "content": "s", "agent": "main", "message_type": "system_prompt"},
        {"role": "user", "content": [{"type": "text", "text": "fix"}], "agent": "main"},
        {
            "role": "assistant",
            "content": "ok",
            "thought": "t",
            "action": "ls",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
        },
        {"role": "tool", "content": "a", "tool_call_ids": ["c"]},
    ],
}
_KILN_TRACE = [
    {"role": "user", "content": "joke"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "pun", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c", "content": "meow"},
    {"role": "assistant", "content": "purr"},
]
_KILN = [
    {
        "v": 1,
        "id": "r1",
        "created_at": "2025",
        "input": "joke",
        "trace": _KILN_TRACE,
        "output": {
            "output": "purr",
            "source": {"properties": {"model_name": "gpt-4o"}},
            "rating": {"value": 4.0},
        },
    },
    {"id": "r2", "input": "x", "output": {"output": "y"}, "trace": None, "parent_task_run_id": "r1"},
    {"id": "r3", "input": "x", "output": {"output": "y"}, "trace": orjson.dumps(_KILN_TRACE).decode()},
]
_DATA = Path(__file__).parent / "sources" / "data"
_HI = [{"role": "user", "content": "hi"}]
_OUTPUT = [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}]
_CASSETTES = [
    {
        "cassette_name": "chat.yaml",
        "interactions": [
            {
                "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                            "parsed_body": {"model": "gpt-4o", "messages": _HI}},
                "response": {"status": {"code": 200}, "parsed_body": {"id": "c", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "hello"}}]}},
            },
            {
                "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages",
                            "parsed_body": {"model": "claude-x", "max_tokens": 8,
                                            "messages": [{"role": "user", "content": "hi"}]}},
                "response": {"status": {"code": 400}, "parsed_body": {"error": {"message": "no"}}},
            },
        ],
    },
    {
        "interactions": [
            {
                "request": {"uri": "https://api.openai.com/v1/responses", "parsed_body": {"input": "hi"}},
                "response": {"status": {"code": 200}, "parsed_body": {"output": _OUTPUT}},
            }
        ]
    },
]  # fmt: skip


@dataclass(frozen=True)
class SourceSeed:
    """A file an adapter reads: ``layout`` ``jsonl`` (``value`` is the list of lines), ``json`` (one
    document) or ``eval`` (``value`` maps member names to JSON values; ``raw`` holds the members as
    they are)."""

    name: str
    adapter: str
    layout: str
    value: Any
    model_calls: bool = False  # inspect-log's option: also each model event's raw request/response


def _eval_members(path: Path) -> dict[str, Any]:
    from pipeline.sources.inspect_eval import read_member  # zstd members: Python 3.11's zipfile cannot

    with open(path, "rb") as f, zipfile.ZipFile(f) as z:
        return {i.filename: orjson.loads(read_member(z, f, i)) for i in z.infolist()}


def source_seeds(*, corpus: bool = True, corpus_cap: int | None = 40) -> list[SourceSeed]:
    """Seed files for every adapter: hand-written ones, the inspect log pair in ``tests/sources/data``
    and (``corpus``) the shared corpus' files, JSONL cut to ``corpus_cap`` lines / JSON lists to
    ``corpus_cap // 10`` records when a cap is given."""
    inspect_json = orjson.loads((_DATA / "inspect_handwritten.json").read_bytes())
    inspect_eval = _eval_members(_DATA / "inspect_handwritten.eval")
    seeds = [
        SourceSeed("codex", "codex-rollout", "jsonl", _CODEX),
        SourceSeed("claude", "claude-code", "jsonl", _CLAUDE),
        SourceSeed("llama-json", "llamafactory", "json", _LLAMA),
        SourceSeed("llama-jsonl", "llamafactory", "jsonl", _LLAMA),
        SourceSeed("sharegpt-json", "sharegpt", "json", _SHAREGPT),
        SourceSeed("sharegpt-jsonl", "sharegpt", "jsonl", _SHAREGPT),
        SourceSeed("tau", "tau-bench", "json", _TAU),
        SourceSeed("swe", "swe-agent", "json", _SWE),
        SourceSeed("kiln-list", "kiln", "json", _KILN),
        SourceSeed("kiln-one", "kiln", "json", _KILN[0]),
        SourceSeed("inspect-json", "inspect-log", "json", inspect_json),
        SourceSeed("inspect-json-calls", "inspect-log", "json", inspect_json, model_calls=True),
        SourceSeed("inspect-eval", "inspect-log", "eval", inspect_eval),
        SourceSeed("inspect-eval-calls", "inspect-log", "eval", inspect_eval, model_calls=True),
        SourceSeed("cassettes", "http-cassette", "jsonl", _CASSETTES),
    ]
    if not (corpus and corpus_available()):
        return seeds
    cap = corpus_cap
    for rel, adapter in (
        ("agent-sessions-schema-fixtures/codex-rollout-schema-small.jsonl", "codex-rollout"),
        ("codex-rollouts-localpush-sanitized", "codex-rollout"),
        ("codex-rollouts-agentcmd", "codex-rollout"),
        ("agent-sessions-schema-fixtures/claude-code-schema-small.jsonl", "claude-code"),
        ("claude-code-agentcmd/full-session-four.jsonl", "claude-code"),
        ("llama-factory/reason_tool_use_demo_50.jsonl", "llamafactory"),
        ("llama-factory/glaive_toolcall_en_demo.json", "llamafactory"),
        ("llama-factory/mllm_demo.json", "llamafactory"),
        ("tau-bench/gpt-4o-airline.visible-150.json", "tau-bench"),
        ("swe-agent-traj/pydicom-1458.gpt4.traj.json", "swe-agent"),
        ("inspect-ai-logs/2025-05-12T20-28-26-04-00_security-guide.json", "inspect-log"),
        ("pydantic-ai-cassettes/openai-responses.cassettes.jsonl", "http-cassette"),
    ):
        path = CORPUS_DIR / rel
        if path.is_dir():
            path = next(iter(sorted(path.glob("rollout-*.jsonl"))), path)
        if not path.is_file():
            continue
        if path.suffix == ".jsonl":
            lines = [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
            seeds.append(SourceSeed(rel, adapter, "jsonl", lines[:cap] if cap else lines))
        else:
            value = orjson.loads(path.read_bytes())
            if type(value) is list and cap:
                value = value[: max(2, cap // 10)]
            seeds.append(SourceSeed(rel, adapter, "json", value))
    return seeds


# ---------------------------------------------------------------------------------------------
# Checks


@dataclass
class Finding:
    """One input that broke a rule: where (target, seed, index), what, and the input itself."""

    target: str
    seed: int
    index: int
    problem: str
    data: bytes

    def __str__(self) -> str:
        head = self.data[:300]
        more = f" ... ({len(self.data)} bytes)" if len(self.data) > 300 else ""
        return f"{self.target} seed={self.seed} #{self.index}: {self.problem}\n  input: {head!r}{more}"


@dataclass
class Stats:
    """Counts of one fuzzing target."""

    tried: int = 0
    written: int = 0
    rejected: int = 0
    findings: list[Finding] = field(default_factory=list)

    def add(self, other: Stats) -> None:
        self.tried += other.tried
        self.written += other.written
        self.rejected += other.rejected
        self.findings += other.findings


def _encode_back(table: pa.Table) -> None:
    """Every written row encodes back with the codec of its source format (raises if not)."""
    for fmt in pc.unique(table.column("source_format")).to_pylist():
        encode_table(table.filter(pc.equal(table.column("source_format"), fmt)), fmt)


def _error(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f" at {tb[-1].filename.rsplit('/', 2)[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(e).__name__}: {e}"[:300] + where


def check_wire_lines(fmt: str, lines: list[bytes]) -> tuple[int, int, str | None]:
    """Decode ``lines`` of ``fmt`` and check the rules: (written, rejected, problem or None)."""
    try:
        res = decode_lines(lines, fmt)
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        return 0, 0, f"decode_lines raised {_error(e)}"
    written, rejected = res.table.num_rows, len(res.rejected)
    if written + rejected + res.blank_lines != len(lines):
        return written, rejected, f"read {len(lines)} != written {written} + rejected {rejected} + blank"
    bad = [r for r in res.rejected if not r.error]
    if bad:
        return written, rejected, f"rejection without a reason at line {bad[0].line}"
    lines_out = set(res.table.column("source_line").to_pylist()) | {r.line for r in res.rejected}
    if len(lines_out) != written + rejected:
        return written, rejected, "a line is both written and rejected (or twice)"
    try:
        _encode_back(res.table)
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        return written, rejected, f"encode_table raised {_error(e)}"
    return written, rejected, None


def fuzz_wire(fmt: str, seeds: list[dict[str, Any]], n: int, seed: int, batch: int = 100) -> Stats:
    """``n`` mutated records of ``fmt``, decoded ``batch`` at a time; a failing batch is re-run line
    by line so each finding names its one input."""
    rng = random.Random(seed)
    stats = Stats()
    for start in range(0, n, batch):
        lines = [mutate(rng.choice(seeds), rng) for _ in range(min(batch, n - start))]
        # a mutation can produce a newline inside a line (truncation never does; raw bytes do not
        # insert one): keep each input one line, as JSONL readers would split it
        lines = [x.replace(b"\n", b" ") for x in lines]
        written, rejected, problem = check_wire_lines(fmt, lines)
        stats.tried += len(lines)
        stats.written += written
        stats.rejected += rejected
        if problem is None:
            continue
        for i, line in enumerate(lines):
            _, _, one = check_wire_lines(fmt, [line])
            if one is not None:
                stats.findings.append(Finding(fmt, seed, start + i, one, line))
        if not any(f.index >= start for f in stats.findings):  # only the batch as a whole fails
            stats.findings.append(Finding(fmt, seed, start, f"batch: {problem}", b"\n".join(lines)))
    return stats


def _mutated_file(s: SourceSeed, rng: random.Random) -> tuple[str, bytes]:
    """A file for ``s.adapter``: (suffix, bytes) with one to three mutated lines / one mutated
    document / one mutated archive member."""
    if s.layout == "jsonl":
        lines = [_j(x) for x in s.value]
        for _ in range(rng.choice((1, 1, 2, 3))):
            i = rng.randrange(len(lines))
            lines[i] = mutate(s.value[i], rng).replace(b"\n", b" ")
        return ".jsonl", b"\n".join(lines) + b"\n"
    if s.layout == "json":
        return ".json", mutate(s.value, rng)
    names = list(s.value)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        hit = rng.choice(names)
        for name in names:
            data = mutate(s.value[name], rng) if name == hit else _j(s.value[name])
            z.writestr(name, data)
        if rng.random() < 0.2:  # a second member of the same name
            z.writestr(hit, _j(s.value[hit]))
    return ".eval", buf.getvalue()


def _records_in(adapter: str, data: bytes) -> int | None:
    """How many records a row-per-record adapter must account for (None: the file itself is one
    rejection), judged as the adapters read: sharegpt / llamafactory files not starting with ``[``
    are JSON Lines, anything else one JSON document (an empty file is not JSON)."""
    if adapter in ("sharegpt", "llamafactory") and not data[:64].lstrip().startswith(b"["):
        return sum(1 for x in data.split(b"\n") if x.strip())
    try:
        value, _ = loads_document(data)  # a bad record is still a record (rejected by number)
    except ValueError:
        return None
    return len(value) if type(value) is list else 1 if type(value) is dict else None


def _sample_members(path: Path) -> int:
    """Sample members of an ``.eval`` archive, every copy of a repeated name included (0: no zip)."""
    from pipeline.sources.inspect_eval import _is_sample

    try:
        with zipfile.ZipFile(path) as z:
            return sum(1 for i in z.infolist() if _is_sample(i.filename))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return 0


# Adapters whose every record (JSON list element or JSONL line) is one conversation or one rejection.
ROW_ADAPTERS = frozenset(("sharegpt", "llamafactory", "tau-bench", "kiln"))
# Adapters whose JSONL lines are accounted as line types, rejections and blank lines.
LINE_ADAPTERS = frozenset(("codex-rollout", "claude-code"))


def check_source_file(
    adapter: str, path: Path, layout: str, model_calls: bool = False
) -> tuple[int, int, str | None]:
    """Read ``path`` with ``adapter`` and check the rules: (written, rejected, problem or None)."""
    try:
        detect_source(path)  # what --from auto runs first: any answer, but no exception
        detect_input(path)  # (a ConfigError is an answer: a compressed agent log)
    except ConfigError:
        pass
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        return 0, 0, f"detect_source raised {_error(e)}"
    try:
        results = list(read_source(path, adapter, **({"model_calls": True} if model_calls else {})))
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        return 0, 0, f"read_source raised {_error(e)}"
    rejected = [x for r in results for x in r.rejected]
    written = sum(r.table.num_rows for r in results)
    counts = results[-1].counts
    problem = None
    if any(not r.error or r.line < 1 or r.file != str(path) for r in rejected):
        problem = "rejection without reason, line or file"
    elif counts.get("conversations", 0) != written or counts.get("rejected", 0) != len(rejected):
        problem = f"counts {counts} disagree with {written} rows and {len(rejected)} rejections"
    elif adapter in LINE_ADAPTERS:
        typed = sum(v for k, v in counts.items() if k.startswith("line_types:"))
        if typed + len(rejected) + counts.get("blank_lines", 0) != counts.get("lines_read", 0):
            problem = f"lines: {typed} typed + {len(rejected)} rejected + blank != read, counts {counts}"
    elif adapter in ROW_ADAPTERS:
        expected = _records_in(adapter, path.read_bytes())
        if expected is None:
            if written != 0 or len(rejected) != 1:
                problem = f"unreadable file gave {written} rows and {len(rejected)} rejections, not 0 and 1"
        elif written + len(rejected) != expected:
            problem = f"read {expected} records != written {written} + rejected {len(rejected)}"
    elif written + len(rejected) == 0 and not any(k.startswith("skipped:") for k in counts):
        problem = "nothing written, rejected or counted as skipped"
    elif layout == "eval" and counts.get("samples_read", 0) != _sample_members(path):
        problem = f"{_sample_members(path)} sample members but samples_read {counts.get('samples_read', 0)}"
    if problem is None:
        try:
            for r in results:
                _encode_back(r.table)
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            problem = f"encode_table raised {_error(e)}"
    return written, len(rejected), problem


def fuzz_source(seeds: list[SourceSeed], n: int, seed: int, workdir: Path | None = None) -> dict[str, Stats]:
    """``n`` mutated files per seed, read by their adapter; stats per adapter."""
    out: dict[str, Stats] = {}
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for k, s in enumerate(seeds):
            rng = random.Random(seed * 1000 + k)
            stats = out.setdefault(s.adapter, Stats())
            for i in range(n):
                suffix, data = _mutated_file(s, rng)
                path = Path(tmp) / f"in{suffix}"
                path.write_bytes(data)
                written, rejected, problem = check_source_file(s.adapter, path, s.layout, s.model_calls)
                stats.tried += 1
                stats.written += written
                stats.rejected += rejected
                if problem is not None:
                    stats.findings.append(Finding(f"{s.adapter}:{s.name}", seed * 1000 + k, i, problem, data))
    return out


def iter_findings(stats: dict[str, Stats] | Stats) -> Iterator[Finding]:
    """Every finding of one or several targets."""
    for s in stats.values() if isinstance(stats, dict) else (stats,):
        yield from s.findings


__all__ = [
    "WIRE_FORMATS",
    "Finding",
    "SourceSeed",
    "Stats",
    "check_source_file",
    "check_wire_lines",
    "fuzz_source",
    "fuzz_wire",
    "iter_findings",
    "source_seeds",
    "wire_seeds",
]
