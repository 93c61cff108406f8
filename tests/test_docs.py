"""Docs that run: every shell command and Python example in README.md and docs/*.md is executed.

A command is a line (``\\``-continued lines joined) of a fenced block tagged ``bash``, ``sh`` or
``shell``. Each runs with ``bash -c`` in its own copy of a sandbox (:func:`sandbox`): the repository's
``data/``, ``jobs/``, ``sql/``, a fresh HOME (so the user's catalog and Hugging Face login are never
touched), the venv's ``chatlake`` and ``python`` first on PATH, and the files the docs' placeholder
names stand for (:data:`FIXTURES`: ``RUN``, ``lake.parquet``, ``logs.jsonl``, ...). It must exit 0,
or the code an ``<!-- exit: N -->`` marker before the block states, and print no traceback.

Inline commands run too: every code span outside a fenced block whose text starts with ``chatlake ``
or ``python benchmarks/`` (a span wrapped onto the next line is joined; a table row with several
spans, e.g. joined with `` · ``, gives one command per span), with the markers on the lines right
before its paragraph or table, and stdin from ``stdin.jsonl`` (every command gets that, so ``-``
reads a fixture, never the terminal). Two kinds of span are not commands and are not run; they are
skipped one test each, so the run reports how many, after checking that the subcommand, script and
options they name exist (:func:`_names_missing`):

* a *synopsis*: it holds ``[``, ``]``, ``|``, ``…`` or ``...``, or a placeholder in capitals that
  :data:`FIXTURES` does not define (``IN``, ``FILE``, ``JOB.toml``, ``N``);
* a *mention*: a subcommand or option named in prose (``chatlake run``, ``chatlake convert --to
  chat``), i.e. it leaves out an argument or option the subcommand requires (Click says which).

A ``python benchmarks/`` span is skipped as slow (benchmarks run minutes) once its script is found.

A ``python`` block runs whole, the same way, after :data:`PY_PRELUDE` (the names the examples take
as given: ``table``, ``path``, ``pl``), in a sandbox that also holds an export in ``OUT_DIR``.

Markers (HTML comments on the lines right before a block; CONTRIBUTING.md, "Docs that run"):

* ``<!-- needs-network: why -->``: skipped, with the reason shown (pip installs, the Hub, a Ray
  cluster);
* ``<!-- slow: why -->``: a benchmark that runs minutes: skipped, with the reason shown (the
  benchmark scripts have tests of their own where they do);
* ``<!-- needs: PROGRAM -->``: skipped, saying so, when PROGRAM is not on PATH (``duckdb``,
  ``chromium``);
* ``<!-- exit: N -->``: every command of the block is expected to exit N.

The same markers before a paragraph or table apply to its inline commands.

An untagged block that starts like a command (``chatlake``, ``python``, ...) fails
:func:`test_command_blocks_are_tagged`: a command nobody runs is how docs rot.
"""

from __future__ import annotations

import gzip
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest

from tests.corpus import CORPUS_DIR, corpus_available

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = frozenset(("bash", "sh", "shell"))
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*(needs-network|slow|needs|exit)\s*(?::\s*(.*?))?\s*-->\s*$")
COMMAND_START = re.compile(r"^\s*(chatlake|python3?|duckdb|ray|pip|\.venv/bin/)\b")
BIN = Path(sys.executable).parent
SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
INLINE_START = re.compile(r"^(chatlake [a-z]|python3? benchmarks/)")
# A synopsis, not a command: optional parts, alternatives, an elided query ...
SYNOPSIS = re.compile(r"[\[\]|…]|\.\.\.")
# ... or a placeholder in capitals that FIXTURES does not define (IN, OUT, FILE, JOB.toml, N).
OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")
PLACEHOLDER = re.compile(r"(?<![\w.=/-])([A-Z][A-Z_]*)(?![\w=-])")

# Placeholder names the docs use, and what they are in the sandbox. A new name in a doc command
# goes here. Corpus-backed ones need ../shared/corpus (their commands skip, saying so, without it).
FIXTURES = {
    "RUN": "runs/r1, a run of jobs/sample.toml's job (`latest` in the sandbox catalog)",
    "lake.parquet": "canonical Parquet of data/sample-responses.jsonl",
    "logs.jsonl": "data/sample-chat.jsonl",
    "logs/": "logs/sample.jsonl (Responses) and logs/*.json (inspect_ai logs from the corpus)",
    "traj/": "traj/*.traj.json (SWE-agent trajectories from the corpus)",
    "session.jsonl": "a Claude Code transcript from the corpus",
    "~/.codex/sessions/": "a Codex rollout from the corpus",
    "views.sql": "the CREATE VIEW block of docs/audit.md, as that page says to save it",
    "job.toml": "jobs/sample.toml's job, into runs/job",
    "requests.jsonl": "a synthetic Responses request log (`chatlake synth --request-log`, 20 conversations)",
    "THREADS_RUN": "runs/threads, a run of requests.jsonl with the threads step (target parquet)",
    "OUT_DIR": "(Python examples only) an export-hf of RUN",
    "logs/run.eval": "an inspect_ai .eval archive (tests/sources/data/inspect_handwritten.eval)",
    "api.json.gz": "a gzipped JSON array of the Anthropic requests of data/sample-anthropic.jsonl",
    "rollout.jsonl": "a Codex rollout from the corpus",
    "-": "stdin of every command: data/sample-responses.jsonl (as stdin.jsonl in the sandbox)",
}
STDIN = "stdin.jsonl"
CORPUS_NAMES = ("session.jsonl", "~/.codex", "logs/*.json ", "traj/", "read_source(path", "rollout.jsonl")


# What the Python examples take as given (a table they transform, an agent log they read).
PY_PRELUDE = """\
import glob
import orjson
import polars as pl
from pipeline import decode_records
table = decode_records([orjson.loads(x) for x in open("data/sample-responses.jsonl") if x.strip()],
                       "responses").table
path = (sorted(glob.glob("logs/*.json")) or ["needs ../shared/corpus"])[0]
"""


@dataclass
class Command:
    doc: str  # path relative to the repository
    line: int
    text: str
    markers: dict[str, str] = field(default_factory=dict)
    python: bool = False
    inline: bool = False  # a code span in prose or a table, not a fenced block
    toml: bool = False  # a whole job file (a ``toml`` block with [[inputs]] and [output]): run it

    @property
    def id(self) -> str:
        if self.inline:  # a table row can hold several spans: the text tells them apart
            return f"{self.doc}:{self.line}:`{self.text}`"
        return f"{self.doc}:{self.line}"


def _markers_above(lines: list[str], i: int) -> dict[str, str]:
    """The markers on the lines right before line index ``i`` (a fence, or a paragraph's first line)."""
    markers: dict[str, str] = {}
    k = i - 1
    while k >= 0 and (mk := MARKER.match(lines[k])):
        markers[mk.group(1)] = mk.group(2) or ""
        k -= 1
    return markers


def _blocks(path: Path) -> list[tuple[int, str, list[tuple[int, str]], dict[str, str]]]:
    """Fenced blocks of a Markdown file: (line of the fence, tag, [(line, text)], markers)."""
    out = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        markers = _markers_above(lines, i)
        start, tag, body = i + 1, m.group(2), []
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append((i + 1, lines[i]))
            i += 1
        out.append((start, tag, body, markers))
        i += 1
    return out


def _paragraphs(path: Path) -> list[tuple[list[tuple[int, str]], dict[str, str]]]:
    """Text outside fenced blocks, split at blank lines and markers: ([(line, text)], markers above)."""
    lines = path.read_text().splitlines()
    out: list[tuple[list[tuple[int, str]], dict[str, str]]] = []
    current: list[tuple[int, str]] = []
    fenced = False
    for i, text in enumerate(lines):
        if FENCE.match(text):
            fenced = not fenced
        if fenced or FENCE.match(text) or not text.strip() or MARKER.match(text):
            if current:
                out.append((current, _markers_above(lines, current[0][0] - 1)))
            current = []
            continue
        current.append((i + 1, text))
    if current:
        out.append((current, _markers_above(lines, current[0][0] - 1)))
    return out


def _is_mention(text: str) -> bool:
    """A span naming a subcommand or an option in prose (``chatlake run``, ``chatlake convert --to
    chat``, ``chatlake synth --request-log``): it leaves out an argument or option the subcommand
    requires, so it is not a command to run."""
    from pipeline.cli import cli

    words = shlex.split(text)
    command = cli.commands.get(words[1]) if len(words) > 1 else None
    if command is None:
        return False  # an unknown subcommand is run, and fails: a misspelt command is rot
    ctx = command.make_context(words[1], words[2:], resilient_parsing=True)
    return any(p.required and ctx.params.get(p.name) in (None, ()) for p in command.params)


def inline_spans() -> tuple[list[Command], dict[str, list[str]]]:
    """Inline code spans outside fenced blocks that start with ``chatlake `` or ``python benchmarks/``:
    the commands to run, and the ones left out by kind (``synopsis``, ``mention``) with where they are."""
    commands: list[Command] = []
    left_out: dict[str, list[str]] = {"synopsis": [], "mention": []}
    for path in DOCS:
        doc = str(path.relative_to(ROOT))
        for lines, markers in _paragraphs(path):
            joined, starts = "", []
            for n, text in lines:  # a span may wrap onto the next line: Markdown joins them with a space
                starts.append((len(joined), n))
                joined += text + " "
            for m in SPAN.finditer(joined):
                text = " ".join(m.group(2).replace("\\|", "|").split())
                if not INLINE_START.match(text):
                    continue
                line = max(n for offset, n in starts if offset <= m.start())
                where = f"{doc}:{line}: {text}"
                if SYNOPSIS.search(text) or any(w not in FIXTURES for w in PLACEHOLDER.findall(text)):
                    left_out["synopsis"].append(where)
                elif text.startswith("chatlake ") and _is_mention(text):
                    left_out["mention"].append(where)
                else:
                    commands.append(Command(doc, line, text, markers, inline=True))
    return commands, left_out


def doc_commands() -> list[Command]:
    """Every shell command of the docs, in order."""
    commands = []
    for path in DOCS:
        for start, tag, body, markers in _blocks(path):
            if tag == "python":
                text = "".join(t + "\n" for _, t in body)
                commands.append(Command(str(path.relative_to(ROOT)), start, text, markers, python=True))
            if tag == "toml" and _is_job(body):
                text = "".join(t + "\n" for _, t in body)
                commands.append(Command(str(path.relative_to(ROOT)), start, text, markers, toml=True))
            if tag not in SHELL:
                continue
            pending: tuple[int, str] | None = None
            for n, text in body:
                if pending is not None:
                    n, text = pending[0], pending[1] + " " + text.strip()
                    pending = None
                if text.rstrip().endswith("\\"):
                    pending = (n, text.rstrip()[:-1])
                    continue
                if text.strip() and not text.lstrip().startswith("#"):
                    commands.append(Command(str(path.relative_to(ROOT)), n, text.strip(), markers))
    return commands + inline_spans()[0]


def _is_job(body: list[tuple[int, str]]) -> bool:
    """Whether a ``toml`` block is a whole job file (else a fragment, checked as TOML only)."""
    heads = {t.split("#", 1)[0].strip() for _, t in body}  # a table header may carry a comment
    return "[[inputs]]" in heads and "[output]" in heads


def test_toml_blocks_are_valid_toml() -> None:
    """Every ``toml`` block parses; the whole job files among them also run (as ``chatlake run``)."""
    import tomllib

    found = 0
    for path in DOCS:
        for start, tag, body, _ in _blocks(path):
            if tag == "toml":
                found += 1
                try:
                    tomllib.loads("".join(t + "\n" for _, t in body))
                except tomllib.TOMLDecodeError as e:
                    raise AssertionError(f"{path.relative_to(ROOT)}:{start}: {e}") from None
    assert found >= 2


def test_command_blocks_are_tagged() -> None:
    """A block whose first line is a command is tagged ``bash`` (run here) or holds no command."""
    untagged = [
        f"{p.relative_to(ROOT)}:{start}"
        for p in DOCS
        for start, tag, body, _ in _blocks(p)
        if tag == "" and body and COMMAND_START.match(body[0][1])
    ]
    assert untagged == [], f"tag these blocks ```bash so tests/test_docs.py runs them: {untagged}"


def test_markers_are_known_and_commands_were_found() -> None:
    """A misspelt marker would silently run (or skip) a block; finding no commands would test nothing."""
    for p in DOCS:
        for n, line in enumerate(p.read_text().splitlines(), 1):
            if re.match(r"^\s*<!--\s*(needs|slow|exit|skip)", line):
                assert MARKER.match(line), f"{p.relative_to(ROOT)}:{n}: unknown marker {line.strip()!r}"
    commands = doc_commands()
    assert len(commands) >= 20
    assert {c.doc for c in commands} >= {"README.md", "docs/audit.md", "docs/jobs.md", "docs/transforms.md"}


def _names_missing(text: str) -> list[str]:
    """The subcommand, benchmark script or options a span names that do not exist."""
    from pipeline.cli import cli

    words = text.split()
    if words[0] != "chatlake":
        return [] if (ROOT / words[1]).is_file() else [words[1]]
    command = cli.commands.get(words[1])
    if command is None:
        return [f"chatlake {words[1]}"]
    known = {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | {"-h", "--help"}
    return [o for o in OPTION.findall(text) if o not in known]


LEFT_OUT = [(kind, where) for kind, spans in inline_spans()[1].items() for where in spans]


@pytest.mark.parametrize(("kind", "where"), LEFT_OUT, ids=[w for _, w in LEFT_OUT])
def test_inline_span_left_out_names_what_exists(kind: str, where: str) -> None:
    """A synopsis or a mention is not run (the module docstring says which spans are), but the
    subcommand, script and options it names must exist; then it is skipped, so the run counts them."""
    text = where.split(": ", 1)[1]
    assert _names_missing(text) == [], f"{where}: names what chatlake does not have"
    pytest.skip(f"inline {kind}, not a complete command")


def test_inline_commands_were_found() -> None:
    """The inline collector finds the Using-it table's commands, splits rows joined with `` · ``,
    and leaves synopses out; finding none would test nothing."""
    commands, left_out = inline_spans()
    texts = {c.text for c in commands}
    assert {"chatlake runs", "chatlake run job.toml", "chatlake verify RUN",
            "chatlake convert logs/run.eval --from auto --to chat -o chat.jsonl"} <= texts  # fmt: skip
    assert not any(SYNOPSIS.search(t) for t in texts)
    assert any(w.startswith("README.md:") and "[--query NAME]" in w for w in left_out["synopsis"])
    assert any(w.endswith(": chatlake synth --request-log") for w in left_out["mention"])


def _env(home: Path) -> dict[str, str]:
    """A fresh HOME: the user's catalog, XDG dirs and Hugging Face login are not seen (nor changed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CHATLAKE_", "HF_", "HUGGING"))}
    return {**env, "HOME": str(home), "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            "HF_HUB_OFFLINE": "1", "COLUMNS": "100", "NO_COLOR": "1"}  # fmt: skip


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    res = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, f"{args}: {res.stdout}\n{res.stderr}"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory every command's copy starts from (FIXTURES)."""
    base = tmp_path_factory.mktemp("docs") / "repo"
    base.mkdir()
    for name in ("data", "jobs", "sql", "benchmarks"):
        shutil.copytree(ROOT / name, base / name)
    home = base / "home"
    home.mkdir()
    env = _env(home)
    chatlake = str(BIN / "chatlake")
    # not runs/sample: a job's fingerprint names its inputs' real paths, so jobs/sample.toml run in
    # a copy of the sandbox would find another job's run there
    sample = (ROOT / "jobs" / "sample.toml").read_text()
    for old, new in (("../data/", "data/"), ("../runs/sample", "runs/r1"), ('"sample-to-chat"', '"r1"')):
        assert old in sample, old
        sample = sample.replace(old, new)
    (base / "r1.toml").write_text(sample)
    _run([chatlake, "run", "r1.toml", "-q"], base, env)
    (base / "RUN").symlink_to("runs/r1")
    (base / "job.toml").write_text(sample.replace("runs/r1", "runs/job").replace('"r1"', '"job"'))
    _run([chatlake, "convert", "data/sample-responses.jsonl", "--from", "responses", "--to", "parquet",
          "-o", "lake.parquet", "-q"], base, env)  # fmt: skip
    shutil.copy(ROOT / "data" / "sample-chat.jsonl", base / "logs.jsonl")
    _run([chatlake, "synth", "--format", "responses", "--n", "20", "--request-log", "-o", "requests.jsonl"],
         base, env)  # fmt: skip
    (base / "threads.toml").write_text(
        'name = "threads"\n[[inputs]]\npath = "requests.jsonl"\nformat = "responses"\n'
        '[[steps]]\nname = "threads"\n[output]\npath = "runs/threads"\ntarget = "parquet"\n'
    )
    _run([chatlake, "run", "threads.toml", "-q"], base, env)
    (base / "THREADS_RUN").symlink_to("runs/threads")
    [views] = [b for _, tag, b, _ in _blocks(ROOT / "docs" / "audit.md")
               if tag == "sql" and b[0][1].startswith("-- views.sql")]  # fmt: skip
    (base / "views.sql").write_text("".join(text + "\n" for _, text in views))
    (base / "logs").mkdir()
    shutil.copy(ROOT / "data" / "sample-responses.jsonl", base / "logs" / "sample.jsonl")
    shutil.copy(ROOT / "tests" / "sources" / "data" / "inspect_handwritten.eval", base / "logs" / "run.eval")
    shutil.copy(ROOT / "data" / "sample-responses.jsonl", base / STDIN)
    anthropic = [orjson.loads(x) for x in (ROOT / "data" / "sample-anthropic.jsonl").read_bytes().splitlines()
                 if x.strip()]  # fmt: skip
    (base / "api.json.gz").write_bytes(gzip.compress(orjson.dumps(anthropic)))
    if corpus_available():
        for p in sorted((CORPUS_DIR / "inspect-ai-logs").glob("*.json"))[:2]:
            shutil.copy(p, base / "logs" / p.name)
        (base / "traj").mkdir()
        for p in sorted((CORPUS_DIR / "swe-agent-traj").glob("*.traj.json"))[:1]:
            shutil.copy(p, base / "traj" / p.name)
        shutil.copy(next((CORPUS_DIR / "claude-code-agentcmd").glob("*.jsonl")), base / "session.jsonl")
        codex = home / ".codex" / "sessions" / "2025" / "09" / "24"
        codex.mkdir(parents=True)
        for p in sorted((CORPUS_DIR / "codex-rollouts-agentcmd").glob("rollout-*.jsonl"))[:1]:
            shutil.copy(p, codex / p.name)
            shutil.copy(p, base / "rollout.jsonl")
    return base


@pytest.fixture(scope="module")
def py_sandbox(sandbox: Path) -> Path:
    """The sandbox plus an export in OUT_DIR, for the Python examples that read one."""
    base = sandbox.parent / "py-repo"
    shutil.copytree(sandbox, base, symlinks=True)
    _run([str(BIN / "chatlake"), "export-hf", "RUN", "OUT_DIR"], base, _env(base / "home"))
    return base


@pytest.mark.parametrize("cmd", doc_commands(), ids=lambda c: c.id)
def test_doc_command_runs_as_written(cmd: Command, sandbox: Path, tmp_path: Path,
                                     request: pytest.FixtureRequest) -> None:  # fmt: skip
    if "needs-network" in cmd.markers:
        pytest.skip(f"needs a network: {cmd.markers['needs-network'] or 'marked needs-network'}")
    if "slow" in cmd.markers:
        pytest.skip(f"slow: {cmd.markers['slow'] or 'marked slow'}")
    if cmd.inline and cmd.text.split()[1].startswith("benchmarks/"):
        script = cmd.text.split()[1]
        assert (ROOT / script).is_file(), f"{cmd.id}: {script} does not exist"
        pytest.skip(f"slow: a benchmark run ({script} has tests of its own where it does)")
    if (program := cmd.markers.get("needs")) and shutil.which(program) is None:
        pytest.skip(f"{program} is not installed")
    if not corpus_available() and any(name in cmd.text + " " for name in CORPUS_NAMES):
        pytest.skip("needs ../shared/corpus for its input files")
    where = tmp_path / "repo"  # the catalog in HOME names the sandbox's runs: copy, do not move
    base = request.getfixturevalue("py_sandbox") if cmd.python else sandbox
    shutil.copytree(base, where, symlinks=True)
    if cmd.python:
        (where / "example.py").write_text(PY_PRELUDE + cmd.text)
    args = [str(BIN / "python"), "example.py"] if cmd.python else ["bash", "-c", cmd.text]
    if cmd.toml:  # a job file as written, run beside the sandbox's data/
        (where / "example.toml").write_text(cmd.text)
        args = [str(BIN / "chatlake"), "run", "example.toml", "-q", "--no-catalog"]
    with open(where / STDIN) as stdin:  # a command reading `-` gets a fixture, never the terminal
        res = subprocess.run(args, cwd=where, env=_env(where / "home"), stdin=stdin, capture_output=True,
                             text=True, timeout=300, check=False)  # fmt: skip
    expected = int(cmd.markers.get("exit") or 0)
    said = f"{cmd.id}: {cmd.text}\nstdout:\n{res.stdout[-3000:]}\nstderr:\n{res.stderr[-3000:]}"
    assert res.returncode == expected, said
    assert "Traceback" not in res.stderr + res.stdout, said
