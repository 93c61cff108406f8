"""From a job file to a runnable :class:`Job`: every check that can fail happens here, before any work.

Globs are expanded, formats and steps resolved, the output checked against the inputs; anything
wrong raises :class:`~pipeline.errors.ConfigError` with a message that says what to fix.
"""

from __future__ import annotations

import hashlib
import importlib
import tomllib
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
from pydantic import ValidationError

from pipeline.encoders.request_fields import check_sets
from pipeline.errors import ConfigError
from pipeline.formats import WIRE_FORMATS
from pipeline.jobs.files import (
    SKIPPED,
    Container,
    container_of,
    dataset_arrow_files,
    expand,
    file_size,
    is_stdin,
    is_stream,
    is_url,
    open_input,
    spool_stdin,
)
from pipeline.jobs.model import DEFAULT_CHUNK_BYTES, STAGE1_SPREAD, JobSpec
from pipeline.losses import LossPolicy
from pipeline.schema import CONVERSATION_SCHEMA, SCHEMA_VERSION
from pipeline.sources import SOURCES
from pipeline.sources._base import check_options
from pipeline.sources.detect import WIRE, detect_input
from pipeline.sources.inputs import MAX_DOCUMENT_BYTES, STDIN_NAME, WIRE_OPTIONS
from pipeline.storage import check_output, work_dir
from pipeline.transforms import GROUPING_STEPS, make_step, parse_step

CANONICAL = "canonical"
PARQUET = "parquet"  # as a target: the canonical table only (conversations/), no output/
FORMAT_ALIASES = {PARQUET: CANONICAL}
TARGETS = (*WIRE_FORMATS, PARQUET)


def chatlake_version() -> str:
    try:
        return version("chatlake")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0+unknown"


@dataclass(frozen=True)
class InputFile:
    """One input file (or HF arrow file) and how to read it.

    ``container``: ``jsonl`` | ``stream`` (compressed, a JSON array or document, stdin: read whole
    by :mod:`pipeline.sources.inputs`) | ``parquet`` | ``arrow`` (a ``save_to_disk`` file) |
    ``source`` (an adapter from :mod:`pipeline.sources` reads the whole file) | ``skipped`` (a file
    rejected whole, stage ``detect``: ``options["reason"]`` says why); ``format``: a wire
    format, ``auto`` (wire records, each one's format decided as it is read), ``canonical`` or a
    source name. ``name``: what provenance calls the file when not its url (``<stdin>``).
    """

    url: str
    container: Container
    format: str
    options: dict[str, Any]
    size: int
    name: str = ""


@dataclass
class Job:
    """A validated job: resolved input files, step specs, target, policy, layout and engine."""

    name: str
    files: list[InputFile]
    step_specs: list[str | dict[str, Any]]
    step_names: list[str]
    target: str
    policy: LossPolicy
    run_dir: Path
    shard_records: int = 10_000
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    batch_rows: int = 5_000
    workers: int = 2
    engine: str = "local"
    pool: str = "auto"  # the local engine's workers: auto, threads or processes (EngineSpec.pool)
    ray_address: str | None = None
    layout: str = "run"  # engine.writers.RUN, or SINGLE_FILE for convert/transform -o FILE
    # the single-file layout's FILE.losses: "jsonl" (one JSON line per loss) or "parquet"
    losses_format: str = "jsonl"
    max_rejected_share: float | None = None  # None: fail only when every record read was rejected
    sets: dict[str, Any] = field(default_factory=dict)  # [set] / --set: request fields, checked
    source_text: str = ""  # the job file as given (kept in the catalog)
    # output.path at a URL: run_dir is its local working copy, mirrored to the store (engine/remote.py)
    run_url: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def grouping(self) -> bool:
        """Whether a step relates records to each other (threads): then the job runs in two stages,
        partition and thread (pipeline/engine/partition.py; docs/transforms.md, "Threads at scale")."""
        return any(name in GROUPING_STEPS for name in self.step_names)

    def fingerprint(self) -> str:
        """What decides the output bytes: a run directory only resumes the job that started it.

        Workers and engine are left out on purpose: they do not change the output.
        """
        doc = {
            "files": [[f.url, f.container, f.format, f.options, f.size, *([f.name] if f.name else [])]
                      for f in self.files],
            "steps": self.step_specs,
            "target": self.target,
            "policy": [self.policy.on_loss, sorted(self.policy.allowed)],
            "shard_records": self.shard_records,
            "chunk_bytes": self.chunk_bytes,
            "batch_rows": self.batch_rows,
            **({"layout": self.layout} if self.layout != "run" else {}),  # run dirs keep their fingerprint
            **({"losses_format": self.losses_format} if self.losses_format != "jsonl" else {}),
            **({"set": self.sets} if self.sets else {}),  # the same: a job without [set] keeps its own
            # a grouping job's stage-1 shards (engine/partition.py, stage1_records): a run directory
            # cut with other stage-1 shards must not resume (its finished shards would not line up)
            **({"stage1_spread": STAGE1_SPREAD} if self.grouping else {}),
            "chatlake": chatlake_version(),
            "schema_version": SCHEMA_VERSION,
        }
        return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()


def build_steps(specs: list[str | dict[str, Any]]) -> list[Any]:
    """The transform steps of a job, built with ``pipeline.transforms`` (ConfigError on a bad one)."""
    if not specs:
        return []
    steps = []
    for i, spec in enumerate(specs):
        try:
            if isinstance(spec, str):
                steps.append(parse_step(spec))
            else:
                params = dict(spec)
                name = params.pop("name", None)
                if not isinstance(name, str):
                    raise ConfigError(f"steps[{i}] has no name; write name = \"role_swap\" (for example)")
                steps.append(make_step(name, **params))
        except ConfigError as e:
            raise ConfigError(f"steps[{i}]: {e}") from None
        except (TypeError, ValueError) as e:
            raise ConfigError(f"steps[{i}]: {e}") from None
    return steps


def step_name(spec: str | dict[str, Any]) -> str:
    if isinstance(spec, dict):
        return str(spec.get("name"))
    return spec.split(":", 1)[0].split("(", 1)[0].strip()


def _format_names() -> list[str]:
    """The input formats, each once (``sharegpt`` is both a wire format and a source adapter)."""
    return list(dict.fromkeys([*WIRE_FORMATS, CANONICAL, *sorted(SOURCES), "auto"]))


def _is_canonical(url: str, container: Container) -> bool:
    """Whether a Parquet file or saved dataset holds chatlake's table (else: rows of wire records)."""
    try:
        if container == "parquet":
            names = _parquet_names(url)
        else:
            import pyarrow as pa

            from pipeline.jobs.files import open_arrow

            first = dataset_arrow_files(url)[:1]
            src = open_arrow(first[0]) if first else None
            names = pa.ipc.open_stream(src).schema.names if src is not None else []
    except (OSError, ValueError) as e:
        raise ConfigError(f"input {url!r} is not readable: {e}") from None
    return all(n in names for n in CONVERSATION_SCHEMA.names)


def _parquet_names(url: str) -> list[str]:
    """The column names of a local or remote Parquet file (its footer only)."""
    if not is_url(url):
        return list(pq.read_schema(url).names)
    with open_input(url) as f:
        return list(pq.ParquetFile(f).schema_arrow.names)


def _resolve_format(
    fmt: str, url: str, container: Container, max_document_bytes: int = MAX_DOCUMENT_BYTES
) -> tuple[str, Container]:
    fmt = FORMAT_ALIASES.get(fmt, fmt)
    if fmt in WIRE_FORMATS or fmt == CANONICAL:
        if fmt == CANONICAL and container == "jsonl":
            raise ConfigError(
                f"input {url!r}: format 'canonical' reads chatlake Parquet or a saved dataset, "
                "not JSONL; give the wire format (e.g. format = \"responses\")"
            )
        return fmt, container
    if fmt == WIRE and container in ("parquet", "dataset"):
        return (CANONICAL if _is_canonical(url, container) else WIRE), container  # else: rows per record
    if fmt == WIRE:
        try:
            detected = detect_input(url, max_document_bytes)
        except ConfigError:
            raise
        except Exception as e:  # a detector that cannot read the file: say which file
            raise _undetected(url, f"{type(e).__name__}: {e}") from None
        if not detected:
            raise _undetected(url)
        if detected == WIRE:
            return WIRE, container
        return _resolve_format(str(detected), url, container)
    if fmt in SOURCES:
        return fmt, "source"
    raise ConfigError(f"unknown format {fmt!r}; use one of {', '.join(_format_names())}")


def _check_source_options(source: str, options: dict[str, Any]) -> None:
    check_options(source, options, SOURCES[source].options)


def _container(url: str, fmt: str, container: Container) -> Container:
    """A wire input's container: ``stream`` for a compressed file, a JSON array or document."""
    if container != "jsonl":
        return container
    try:
        return "stream" if is_stream(url) else "jsonl"
    except OSError as e:
        raise ConfigError(f"input {url!r}: cannot read it ({e.strerror or e})") from None


def _check_canonical(f: InputFile) -> None:
    if f.container != "parquet" or f.format != CANONICAL:
        return
    try:
        names = set(_parquet_names(f.url))
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
        raise ConfigError(f"input {f.url!r} is not a readable Parquet file: {e}") from None
    missing = [n for n in CONVERSATION_SCHEMA.names if n not in names]
    if missing:
        raise ConfigError(
            f"input {f.url!r} is not a chatlake table (missing {missing[:4]}); "
            "give the wire format of its rows instead of 'canonical'"
        )


class _Unreadable(Exception):
    """A file no reader recognises: rejected whole (stage ``detect``), or refused with strict_inputs."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason  # the rejected row's reason (the file is its source_file)


def _undetected(url: str, why: str | None = None) -> _Unreadable:
    """Format auto found nothing in ``url`` (``why``: the detector's error)."""
    if file_size(url) == 0:
        reason = "the file is empty"
    elif why:
        reason = f"format 'auto' cannot read it ({why})"
    else:
        reason = (
            "format 'auto' could not tell what it is (no source's log, and no record is a Responses, "
            "Chat, Anthropic, HF or ShareGPT record: docs/sources.md#auto)"
        )
    fix = "leave the file out" if reason == "the file is empty" else (
        "give its format (format = ... in a job file, --from on the command line), or leave the file out"
    )
    return _Unreadable(reason, f"input {url!r}: {reason}; {fix}")


def resolve(spec: JobSpec, base: Path, source_text: str = "") -> Job:
    """Check a job against the world (files, formats, steps, output) and resolve it.

    A file no reader recognises (format auto finds nothing in it, it is empty, or a directory holds
    it and chatlake wrote it) becomes a :data:`SKIPPED` input, rejected whole when the job runs;
    with ``loss.strict_inputs`` it fails here instead (ConfigError naming it), and so does a job
    whose every file is such.
    """
    files: list[InputFile] = []
    named: set[str] = set()  # a file named by two patterns (or inputs) is read once, the first time
    stdin_read = False
    strict = spec.loss.strict_inputs
    for n, inp in enumerate(spec.inputs):
        if inp.format not in SOURCES:  # wire inputs (and auto) take the reader's options
            check_options(inp.format, inp.options, WIRE_OPTIONS)
        cap = int(inp.options.get("max_document_bytes", MAX_DOCUMENT_BYTES))
        for pattern in inp.path:
            name = ""
            ours: dict[str, str] = {}  # the files of a directory that chatlake wrote -> what they are
            if is_stdin(pattern):
                if stdin_read:
                    raise ConfigError(f"inputs[{n}]: '-' (standard input) is given twice; it is read once")
                stdin_read, name, urls = True, STDIN_NAME, [spool_stdin()]
            else:
                urls = expand(pattern, base, ours)
            if not urls:
                raise ConfigError(f"inputs[{n}]: {pattern!r} matches no file; check the path or glob")
            for url in urls:
                if url in named:
                    continue
                named.add(url)
                try:
                    if url in ours:
                        raise _Unreadable(
                            f"chatlake's own output: {ours[url]}",
                            f"input {url!r} is chatlake's own output ({ours[url]}); move it out of the "
                            "input directory",
                        )
                    files += _input_files(url, inp.format, inp.options, cap, name)
                except _Unreadable as e:
                    if strict:  # --strict-inputs / loss.strict_inputs
                        raise ConfigError(f"{e} (strict inputs: refused, not rejected whole)") from None
                    skipped = {"reason": e.reason}
                    files.append(InputFile(url, SKIPPED, inp.format, skipped, file_size(url), name))
    if files and all(f.container == SKIPPED for f in files):
        listed = "; ".join(f"{f.url}: {f.options['reason']}" for f in files[:3])
        more = f" (and {len(files) - 3} more)" if len(files) > 3 else ""
        raise ConfigError(f"no input can be read: {listed}{more}")
    target = spec.output.target
    if target not in TARGETS:
        raise ConfigError(f"output.target {target!r} is not a format; use one of {', '.join(TARGETS)}")
    try:
        allowed = frozenset(spec.loss.allow)
        policy = LossPolicy("reject" if allowed else spec.loss.on_loss, allowed)
    except ValueError as e:
        raise ConfigError(f"loss: {e}") from None
    sets = check_sets(spec.sets, target)
    steps = build_steps(spec.steps)
    names = [str(getattr(s, "name", "") or step_name(sp)) for s, sp in zip(steps, spec.steps, strict=True)]
    run_url = spec.output.path.rstrip("/") if is_url(spec.output.path) else None
    if run_url is not None:  # docs/storage.md: a local working copy, mirrored to the store
        check_output(run_url)
        run_dir = work_dir(run_url, "runs")
    else:
        run_dir = (base / spec.output.path).resolve()
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"output.path {str(run_dir)!r} is a file; give a directory for the run")
    for f in files:
        if run_url is not None and (f.url == run_url or f.url.startswith(run_url + "/")):
            raise ConfigError(
                f"output.path {run_url!r} would overwrite the input {f.url!r}; choose another output"
            )
        if is_url(f.url):
            continue
        p = Path(f.url).resolve()
        if p == run_dir or run_dir in p.parents:
            raise ConfigError(
                f"output.path {str(run_dir)!r} would overwrite the input {f.url!r}; choose another output"
            )
    if spec.engine.kind == "ray" and "pool" in spec.engine.model_fields_set:
        raise ConfigError(
            "engine.pool is for the local engine (Ray schedules its own workers): "
            "remove it, or set engine.kind = \"local\""
        )
    if spec.engine.kind == "ray":
        try:
            importlib.import_module("ray.data")
        except ImportError:
            raise ConfigError(
                "engine.kind = \"ray\" needs Ray Data: pip install 'chatlake[ray]' (or use kind = \"local\")"
            ) from None
    return Job(
        name=spec.name,
        files=files,
        step_specs=list(spec.steps),
        step_names=names,
        target=target,
        policy=policy,
        run_dir=run_dir,
        shard_records=spec.output.shard_records,
        chunk_bytes=spec.engine.chunk_bytes,
        batch_rows=spec.engine.batch_rows,
        workers=spec.engine.workers,
        engine=spec.engine.kind,
        pool=spec.engine.pool,
        ray_address=spec.engine.ray_address,
        max_rejected_share=spec.loss.max_rejected_share,
        sets=sets,
        source_text=source_text,
        run_url=run_url,
    )


def _input_files(url: str, fmt: str, given: dict[str, Any], cap: int, name: str) -> list[InputFile]:
    """The input files one matched path reads as (a saved dataset: its arrow files), checked;
    raises :class:`_Unreadable` for a file no reader recognises."""
    container = container_of(url)
    read_as, container = _resolve_format(fmt, url, container, cap)
    # auto chose an adapter: the wire reader's options are not the adapter's
    options = {} if read_as in SOURCES and fmt not in SOURCES else dict(given)
    fmt = read_as
    if container == "source":
        _check_source_options(fmt, options)
    else:
        container = _container(url, fmt, container)
    out = []
    for leaf, leaf_container in _leaves(url, container):
        f = InputFile(leaf, leaf_container, fmt, dict(options), file_size(leaf), name)
        _check_canonical(f)
        out.append(f)
    return out


def _leaves(url: str, container: Container) -> list[tuple[str, Container]]:
    """A saved dataset directory becomes its arrow files; anything else is itself."""
    if container != "dataset":
        return [(url, container)]
    try:
        return [(a, "arrow") for a in dataset_arrow_files(url)]
    except (OSError, ValueError) as e:
        raise ConfigError(f"input {url!r}: {e}") from None


def _pydantic_message(e: ValidationError) -> str:
    parts = []
    for err in e.errors():
        where = ".".join(str(x) for x in err["loc"]) or "job"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key (check the spelling; see docs/jobs.md)"
        elif err["type"] == "missing":
            msg = "required key is missing"
        parts.append(f"{where}: {msg}")
    return "; ".join(parts)


def parse_job(text: str, base: Path, overrides: dict[str, Any] | None = None) -> Job:
    """Parse and resolve a job from TOML text; relative paths are relative to ``base``."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"the job file is not valid TOML: {e}") from None
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        section, key = dotted.split(".", 1)
        doc.setdefault(section, {})[key] = value
    try:
        spec = JobSpec.model_validate(doc)
    except ValidationError as e:
        raise ConfigError(f"bad job: {_pydantic_message(e)}") from None
    return resolve(spec, base, text)


def load_job(path: str | Path, overrides: dict[str, Any] | None = None) -> Job:
    """Read, validate and resolve ``JOB.toml`` (ConfigError on anything wrong, before any work)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read the job file {str(p)!r}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"the job file {str(p)!r} is not UTF-8 text (byte {e.object[e.start]:#04x} at offset "
            f"{e.start}); save it as UTF-8"
        ) from None
    return parse_job(text, p.resolve().parent, overrides)


def convert_job(
    inputs: list[str],
    source: str,
    target: str,
    run_dir: str,
    *,
    on_loss: str = "allow",
    allow: list[str] | None = None,
    workers: int = 2,
    base: Path | None = None,
    steps: list[str] | None = None,
    layout: str = "run",
    shard_records: int | None = None,
    max_rejected_share: float | None = None,
    sets: dict[str, Any] | None = None,
    losses_format: str = "jsonl",
    strict_inputs: bool = False,
) -> Job:
    """``chatlake convert`` / ``transform``: a job (steps optional) from command-line flags.

    With the single-file layout (``-o FILE``) inputs keep the spelling the user gave them, as
    ``source_file`` in what is written (a run directory's job records absolute paths).
    """
    doc = {
        "name": "transform" if steps else "convert",
        "inputs": [{"path": list(inputs), "format": source}],
        "steps": list(steps or []),
        "output": {"path": run_dir, "target": target,
                   **({"shard_records": shard_records} if shard_records else {})},
        "loss": {"on_loss": on_loss, "allow": list(allow or []), "max_rejected_share": max_rejected_share,
                 "strict_inputs": strict_inputs},
        "engine": {"workers": workers},
        "set": dict(sets or {}),
    }  # fmt: skip
    try:
        spec = JobSpec.model_validate(doc)
    except ValidationError as e:
        raise ConfigError(_pydantic_message(e)) from None
    job = resolve(spec, base or Path.cwd())
    job.layout = layout
    job.losses_format = losses_format
    if layout != "run":
        given = {str(Path(p).resolve()): p for p in inputs if not is_url(p)}
        job.files = [replace(f, url=given.get(f.url, f.url)) for f in job.files]
    return job
