"""The ``chatlake`` command: one thin function per command over the library.

Exit codes: 0 success (some rejected records do not fail a job: see the report), 1 a job that failed
while running or rejected every record it read (or more than its max_rejected_share; the run is
still written), 2 a bad command line or job configuration (nothing was done), 130 a job
interrupted by Ctrl-C (finished shards are kept: run it again to resume). No user error is a
traceback: an ``OSError`` (read-only output, full disk, ...) becomes one line (:class:`_Commands`).
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import orjson

from pipeline.engine.heap import keep_heap
from pipeline.errors import ConfigError
from pipeline.formats import WIRE_FORMATS
from pipeline.losses import LossPolicy
from pipeline.sources import SOURCES

PARQUET = "parquet"
FORMATS = (*WIRE_FORMATS, PARQUET)
# --from also takes a source adapter (read per file) or "auto" (the source detected per file)
INPUT_FORMATS = (*FORMATS, *SOURCES, "auto")
# Input records per shard of convert/transform -o FILE: enough shards to keep 2 workers busy on
# a few tens of MB, few enough that per-shard start-up stays small (README: convert timing).
SINGLE_FILE_SHARD_RECORDS = 5_000


class _PathOrURL(click.ParamType):
    """An output path, or a URL of an object store or the Hub (docs/storage.md): a Path when local,
    the URL string when remote (a Path would fold ``s3://`` into ``s3:/``)."""

    name = "path"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> object:
        from pipeline.storage import as_path

        return value if isinstance(value, Path) else as_path(str(value))


PATH_OR_URL = _PathOrURL()


class _Failed(click.ClickException):
    """A one-line error with its exit code (1: failed while working, 2: fix the command line)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class _Commands(click.Group):
    """The command group: an OSError of any command becomes one line and its exit code.

    A read-only or missing output path exits 2 (nothing to do but fix the path), a full disk or a
    file size limit exits 1 (docs: pipeline/oserrors.py). This holds for every command, including
    the ones that write files directly (convert -o, transform, export-hf, audit --html).
    """

    def invoke(self, ctx: click.Context) -> object:
        from pipeline.oserrors import describe, exit_code
        from pipeline.storage import StorageError

        try:
            return super().invoke(ctx)
        except OSError as e:
            if e.errno == errno.EPIPE:  # piping into head: main() ends quietly
                raise
            raise _Failed(describe(e), exit_code(e)) from None
        except StorageError as e:  # a URL that cannot be used, found while working
            raise _Failed(str(e), 2) from None
        except RuntimeError as e:  # pathlib's resolve() on a loop of links: a path to fix, not a bug
            if not str(e).startswith("Symlink loop from "):
                raise
            where = str(e).removeprefix("Symlink loop from ")
            raise _Failed(f"{where}: a loop of symbolic links", 2) from None


def _after_failure(e: Exception) -> str:
    """What to do after a failed job: a resume can get past a failure of the machine (a full disk,
    a lost connection); one that comes from the input or the code fails the same way every time."""
    if getattr(e, "transient", False):
        return "; run the command again to resume"
    return " (running it again fails the same way: the input or chatlake itself caused it)"


def _usage_error(e: ConfigError) -> click.ClickException:
    """A ConfigError of a command line: a usage error, or one line for a URL that cannot be used
    (a missing driver, an unreachable store: nothing about the command's usage to show)."""
    from pipeline.engine.atomic import PathError
    from pipeline.storage import StorageError

    return _BadConfig(str(e)) if isinstance(e, StorageError | PathError) else click.UsageError(str(e))


def _bad_usage(e: ConfigError) -> click.ClickException:
    """A ConfigError of a command that reads a run: a usage error, or one line for a damaged run."""
    from pipeline.audit.views import RunDamaged
    from pipeline.engine.atomic import PathError
    from pipeline.engine.output_file import OutputFileError

    one_line = isinstance(e, RunDamaged | PathError | OutputFileError)
    return _Failed(str(e), 2) if one_line else click.UsageError(str(e))


def _check_hashes(run: Path, folders: tuple[str, ...]) -> None:
    """Exit 1 naming the first file of ``folders`` whose sha256 is not the manifest's.

    For a command that publishes what it reads (export-hf): a flipped bit that still decodes would
    otherwise be exported without a word.
    """
    from pipeline.engine.output_file import damaged, open_output
    from pipeline.engine.verify import damaged_files

    damaged = damaged(open_output(run)) if run.is_file() else damaged_files(run, folders)
    if damaged:
        more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
        raise _Failed(
            f"{run} is damaged: {damaged[0]}{more}; run `chatlake verify {run}` for the list, and run the "
            + ("command again to rewrite the files" if run.is_file()
               else "job again to redo the damaged shards")
        )


@contextmanager
def _reading(run: Path) -> Iterator[None]:
    """Reading a run's shards: a damaged file is one line naming it (exit 1), not a traceback.

    The error DuckDB or Arrow raises does not always name the file (a bit flip inside a zstd page),
    so on an error the listed files are checked against the manifest's sha256 to name it.
    """
    import duckdb
    import pyarrow as pa

    from pipeline.engine.writers import FOLDERS

    try:
        yield
    except (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException):
        raise  # the query's fault, not the data's: no need to hash the whole run
    except (duckdb.Error, pa.ArrowException, OSError):
        _check_hashes(run, FOLDERS)
        raise


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: the installed version and which codec is active (a bug report needs both)."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import version

    from pipeline.codec import status

    click.echo(f"chatlake {version('chatlake')}, codec: {status().name()}")
    ctx.exit()


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and which codec is active (compiled or pure Python), then exit.",
)
def cli() -> None:
    """chatlake: exact, vectorized processing of LLM conversation datasets."""


@cli.command()
def doctor() -> None:
    """Say which codec decodes wire formats (compiled or pure Python) and why."""
    from pipeline.codec import status

    click.echo(f"codec: {status().describe()}")


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path), default=".")
def quickstart(directory: Path) -> None:
    """Write the quick start's job and sample data into DIRECTORY (default: the current directory).

    They come with chatlake (an installed wheel has them too): jobs/sample.toml and
    data/sample-*.jsonl. A file already there with other contents is never overwritten (exit 2).

    \b
    chatlake quickstart demo && cd demo && chatlake run jobs/sample.toml && chatlake audit runs/sample
    """
    from pipeline.bundled import resource_files
    from pipeline.engine.atomic import write_atomic

    copies = [(f, directory / name / f.name) for name in ("jobs", "data") for f in resource_files(name)]
    # a link planted in DIR (jobs/, data/ or a file) would take the writes elsewhere: refused, as
    # every write of chatlake is (DIR itself is the user's to name)
    for place in (directory / "jobs", directory / "data", *(dst for _, dst in copies)):
        if os.path.islink(place):
            raise _Failed(f"{place} is a symbolic link; chatlake does not write through links: remove it", 2)
    for src, dst in copies:
        if dst.exists() and (not dst.is_file() or dst.read_bytes() != src.read_bytes()):
            raise _Failed(f"{dst} exists with other contents; choose another directory", 2)
    for src, dst in copies:
        if dst.exists():  # the same bytes: nothing to write
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        # created exclusively beside it and renamed into place: a link planted at the name since
        # the check is replaced, never written through
        write_atomic(dst, src.read_bytes(), user=True)
    where = "" if directory == Path(".") else f"cd {directory} && "
    click.echo(f"wrote {len(copies)} files into {directory}; next: {where}chatlake run jobs/sample.toml "
               "&& chatlake audit runs/sample")  # fmt: skip


def _strict_inputs_option(f: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--strict-inputs", is_flag=True,
        help="Exit 2 naming a file no reader recognises (empty, unknown, chatlake's own output) instead "
        "of rejecting it whole (stage detect) and converting the others.",
    )(f)  # fmt: skip


@cli.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path())
@click.option(
    "--from",
    "source",
    required=True,
    type=click.Choice(INPUT_FORMATS),
    help="Format of the inputs: a wire format, parquet, a source (codex-rollout, claude-code, ...; "
    "docs/sources.md) or auto (the source per file, API records per record: docs/sources.md#auto).",
)
@click.option("--to", "target", required=True, type=click.Choice(FORMATS), help="Format to write.")
@click.option("--output", "-o", type=PATH_OR_URL, help="Output file (or URL: docs/storage.md).")
@click.option(
    "--run-dir",
    type=PATH_OR_URL,
    help="Instead of --output: run as a one-step job into this run directory (docs/run-layout.md).",
)
@click.option("--report", type=click.Path(path_type=Path), help="Write the JSON summary here.")
@click.option("--workers", type=int, default=None, help="Workers: threads of one process (default: up to 2).")
@click.option(
    "--on-loss",
    type=click.Choice(("allow", "reject")),
    default="allow",
    show_default=True,
    help="allow: convert and record losses; reject: send lossy records to the rejected file.",
)
@click.option(
    "--allow-loss", default="", help="Comma-separated loss kinds to accept (implies --on-loss reject)."
)
@click.option(
    "--set", "set_fields", multiple=True, metavar="FIELD=VALUE",
    help="Set a top-level request field in every record (repeatable): model, and the target's token "
    "limit (max_tokens / max_completion_tokens / max_output_tokens). VALUE is a JSON scalar or text.",
)  # fmt: skip
@click.option(
    "--losses", "losses_format", type=click.Choice(("parquet", "jsonl")), default=None,
    help="With -o and a wire target: write the losses as OUTPUT.losses.parquet (the default: one row per "
    "loss, a fraction of the bytes, read by DuckDB, audit and sql) or OUTPUT.losses.jsonl (the same rows "
    "as JSON lines). A --run-dir always has losses/ in Parquet.",
)  # fmt: skip
@_strict_inputs_option
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
def convert(
    inputs: tuple[str, ...],
    source: str,
    target: str,
    output: Path | str | None,
    run_dir: Path | str | None,
    report: Path | None,
    workers: int | None,
    on_loss: str,
    allow_loss: str,
    set_fields: tuple[str, ...],
    losses_format: str | None,
    strict_inputs: bool,
    quiet: bool,
) -> None:
    """Convert conversations: JSONL, a JSON array or document, compressed, a directory, - (stdin), or Parquet.

    Bad records go to OUTPUT.rejected.jsonl (OUTPUT.rejected.parquet beside --to parquet) with the
    reason and the original input; the job goes on. Converting between formats writes one line per
    lost detail to OUTPUT.losses.parquet (or, with --losses jsonl, one line to OUTPUT.losses.jsonl). The
    work is staged in OUTPUT.partial/ and resumes there when
    interrupted; the files appear only when complete (docs/run-layout.md).

    \b
    chatlake convert data/sample-responses.jsonl --from responses --to parquet -o out/c.parquet
    chatlake convert logs.jsonl --from responses --to chat -o chat.jsonl --allow-loss item_id,status
    chatlake convert logs/*.jsonl --from responses --to chat --run-dir runs/chat   # sharded, resumable
    chatlake convert chat.jsonl --from chat --to anthropic -o a.jsonl --set max_tokens=1024
    """
    allowed = frozenset(k.strip() for k in allow_loss.split(",") if k.strip())
    try:
        policy = LossPolicy("reject" if allowed else on_loss, allowed)
    except ValueError as e:
        raise click.UsageError(f"--allow-loss: {e}") from None
    if (output is None) == (run_dir is None):
        raise click.UsageError("give either --output FILE or --run-dir DIR")
    if losses_format is not None and (run_dir is not None or target == PARQUET):
        raise click.UsageError(
            "--losses goes with -o FILE and a wire target (a --run-dir's losses/ are Parquet "
            "already; --to parquet reports no losses)"
        )
    from pipeline.encoders.request_fields import check_sets, parse_sets

    try:
        sets = check_sets(parse_sets(set_fields), target)
    except ConfigError as e:
        raise _usage_error(e) from None
    if workers is not None and workers < 1:
        raise click.UsageError("--workers must be at least 1")
    if source in FORMATS and PARQUET not in (source, target):
        from pipeline.encoders import supported

        if not supported(source, target):
            raise click.UsageError(
                f"converting {source} to {target} is not supported yet; convert to parquet, or to {source}"
            )
    names = [str(p) for p in inputs]
    try:
        _check_inputs(names)
    except ConfigError as e:
        raise _usage_error(e) from None
    if run_dir is not None:
        from pipeline.jobs import convert_job

        try:
            _check_report(report, names, run_dir)
            job = convert_job(
                names, source, target, str(run_dir), on_loss=policy.on_loss,
                allow=sorted(policy.allowed), workers=workers or 2, sets=sets, strict_inputs=strict_inputs,
            )  # fmt: skip
        except ConfigError as e:
            raise _usage_error(e) from None
        _run_job(job, catalog=None, quiet=quiet, as_json=False, fresh=False, report=report,
                 auto=source == "auto")  # fmt: skip
        return
    assert output is not None
    summary, verdict = _single_file(
        names, source, target, output, report, policy=policy, workers=workers, quiet=quiet, sets=sets,
        losses_format=losses_format or "parquet", strict_inputs=strict_inputs,
    )  # fmt: skip
    summary.update({"from": source, "to": target})
    _write_report(report, summary)
    if not quiet:
        from pipeline.engine.report import console, print_summary

        print_summary(summary, console())
    _say_auto(summary, source == "auto" and not quiet)
    if verdict is not None:
        raise click.ClickException(verdict)


def _check_inputs(inputs: list[str]) -> None:
    """An input that is a loop of symbolic links or cannot be read: one line, exit 2, before any
    work (a glob, a URL or ``-`` is checked where it is expanded)."""
    from pipeline.engine.atomic import PathError
    from pipeline.oserrors import describe

    for name in inputs:
        if name == "-" or "://" in name:
            continue
        try:
            os.stat(name)
        except FileNotFoundError:
            continue  # a glob pattern, or a missing file the job reports in its own words
        except OSError as e:
            raise PathError(f"input {describe(e)}") from None


def _check_outputs(outputs: dict[str, Path | None], inputs: list[str]) -> None:
    """Every file an option names for writing (``--output``, ``--report``, ``--html``): not an
    input, not another of them, not a link, a loop or in a place that cannot be written
    (ConfigError, before any work; :func:`pipeline.engine.atomic.check_writable`)."""
    from pipeline.engine.atomic import check_writable

    seen: dict[str, str] = {}
    for what, path in outputs.items():
        if path is None:
            continue
        check_writable(path, what)
        r = os.path.realpath(path)
        if r in seen:
            raise ConfigError(f"{what} {str(path)!r} is the same path as {seen[r]}; choose another path")
        seen[r] = what
        for name in inputs:
            if name != "-" and "://" not in name and os.path.realpath(name) == r:
                raise ConfigError(f"{what} {str(path)!r} would overwrite the input {name!r}; choose another")


def _check_report(report: Path | None, inputs: list[str], run_dir: Path | str) -> None:
    """--report may not overwrite an input or a file of the run directory (ConfigError)."""
    if report is None:
        return
    _check_outputs({"--report": report}, inputs)
    r = report.resolve()
    if r in {Path(i).resolve() for i in inputs}:
        raise ConfigError(f"--report {str(report)!r} would overwrite an input; choose another path")
    if isinstance(run_dir, str):  # a URL: never a local report's folder
        return
    if run_dir.resolve() in r.parents or r == run_dir.resolve():
        raise ConfigError(f"--report {str(report)!r} is inside the run directory; choose another path")


def _write_report(report: Path | None, summary: dict[str, object]) -> None:
    """``--report``: the summary, written atomically (a full disk leaves the old file or none)."""
    if report is not None:
        from pipeline.engine.atomic import write_atomic

        report.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(report, orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n", user=True)


def _single_file(
    inputs: list[str], source: str, target: str, output: Path | str, report: Path | None, *,
    policy: LossPolicy | None = None, workers: int | None = None, steps: list[str] | None = None,
    quiet: bool = False, sets: dict[str, object] | None = None, losses_format: str = "parquet",
    strict_inputs: bool = False,
) -> tuple[dict[str, object], str | None]:  # fmt: skip
    """Run convert/transform -o FILE on the engine (single-file layout, docs/run-layout.md).

    Returns the summary and, when the run rejected too many records (engine/verdict.py), the
    verdict's one line: the files are in place all the same, and the caller exits 1 with it after
    its usual report.
    """
    from pipeline.engine import JobFailed, TooManyRejected
    from pipeline.engine.remote import local_output, publish_single_file
    from pipeline.engine.single_file import check_paths, prepare, run_single_file, staging_dir
    from pipeline.engine.writers import SINGLE_FILE
    from pipeline.jobs import convert_job
    from pipeline.storage import check_output

    policy = policy or LossPolicy()
    url = output if isinstance(output, str) else None
    try:
        if url is not None:  # built in the URL's local working directory, uploaded when complete
            check_output(url)
            if url.endswith("/") or "/" not in url.split("://", 1)[1]:
                raise ConfigError(f"--output {url!r} names no object; give a file URL (s3://bucket/out.jsonl)")
            if any(i == url or i.startswith(url + ".") for i in inputs):  # FILE or a side file
                raise ConfigError(f"--output {url!r} would overwrite an input; choose another URL")
            output = local_output(url)
        _check_inputs(inputs)
        _check_outputs({"--output": output, "--report": report}, inputs)
        check_paths(output, target, inputs, report, losses_format=losses_format)
        job = convert_job(
            inputs, source, target, str(staging_dir(output)), on_loss=policy.on_loss,
            allow=sorted(policy.allowed), workers=workers or 2, steps=steps, layout=SINGLE_FILE,
            shard_records=SINGLE_FILE_SHARD_RECORDS, sets=sets, losses_format=losses_format,
            strict_inputs=strict_inputs,
        )  # fmt: skip
        if job.grouping:  # a threads job writes FILE.dropped.parquet too: check it as well
            check_paths(output, target, inputs, report, grouping=True)
        if workers is None and sum(f.size for f in job.files) < job.chunk_bytes:
            job.workers = 1  # one small batch: starting a worker pool would cost more than it saves
        prepare(job)
    except ConfigError as e:
        raise _usage_error(e) from None
    verdict: str | None = None
    try:
        summary = run_single_file(job, output, progress=not quiet)
    except KeyboardInterrupt:  # Ctrl-C: click would print a bare "Aborted!" and exit 1
        raise _Failed(
            f"interrupted: the finished shards are kept in {job.run_dir}; run the same command again to "
            f"resume (nothing is written to {url or output} until the run is complete)",
            130,  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
        ) from None
    except TooManyRejected as e:  # its files are in place all the same
        summary, verdict = e.summary, str(e)
    except ConfigError as e:
        raise _BadConfig(str(e)) from None
    except JobFailed as e:
        raise click.ClickException(f"the job failed: {e}{_after_failure(e)}") from None
    if url is not None:
        summary = publish_single_file(summary, output, url)
    return summary, verdict


@cli.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--as", "target", required=True, type=click.Choice(("chat", "responses", "anthropic", "hf")),
    help="The API (or HF/TRL row) whose rules the records must obey; they are read as that format.",
)  # fmt: skip
@click.option("--examples", type=click.IntRange(min=0), default=10, show_default=True,
              help="How many offending records to list.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def check(inputs: tuple[Path, ...], target: str, examples: int, as_json: bool) -> None:
    """Check records against what the target API accepts (docs/target-rules.md): exit 1 if any fails.

    Counts the violations of each rule, lists the first offending records (file:line, rule, JSON
    pointer), and exits 0 when every record passes, 1 when any fails (a record the format cannot
    even decode counts under "types"), 2 for bad usage. Reads like convert --from FORMAT.

    \b
    chatlake check data/sample-chat.jsonl --as chat
    chatlake check out/chat.jsonl --as chat --json
    """
    from pipeline.engine.check import check_files

    try:
        result = check_files([str(p) for p in inputs], target, examples=examples)
    except ConfigError as e:
        raise click.UsageError(str(e)) from None
    if as_json:
        click.echo(orjson.dumps(result.to_json()).decode())
    else:
        click.echo(
            f"{result.records:,} records checked as {target}: {result.records - result.failing:,} pass, "
            f"{result.failing:,} fail ({result.seconds:.2f} s)"
        )
        for rule, n in sorted(result.violations.items(), key=lambda kv: (-kv[1], kv[0])):
            click.echo(f"  {rule}: {n:,} violations in {result.records_by_rule[rule]:,} records")
        for ex in result.examples:
            click.echo(f"  {ex['file']}:{ex['line']}: {ex['rule']} at {ex['path'] or '/'}: {ex['detail']}")
    if result.failing:
        sys.exit(1)


@cli.command()
@click.option("--format", "fmt", required=True, type=click.Choice(("responses", "chat", "anthropic")))
@click.option("--n", "n", type=click.IntRange(min=0), default=1000, show_default=True, help="Conversations.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None, help="File (default: stdout).")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--request-log",
    is_flag=True,
    help="Write a request log instead: N conversations cut into per-turn requests (retries, edited "
    "branches, compactions), interleaved.",
)
@click.option(
    "--requests-per-thread",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="With --request-log: mean requests per conversation.",
)
def synth(
    fmt: str, n: int, seed: int, output: Path | None, workers: int, request_log: bool,
    requests_per_thread: int,
) -> None:  # fmt: skip
    """Write N realistic synthetic conversations as JSONL request bodies.

    Record i depends only on (seed, i): the same command always writes the same bytes.

    \b
    chatlake synth --format responses --n 1000 --seed 1 -o data/synth.jsonl
    chatlake synth --format responses --n 50000 --request-log -o data/log.jsonl   # ~1M requests
    """
    try:
        _synth(fmt, n, seed, output, workers, request_log, requests_per_thread)
    except ConfigError as e:  # a link, a loop or a read-only place at -o: one line, exit 2
        raise _usage_error(e) from None


def _synth(
    fmt: str, n: int, seed: int, output: Path | None, workers: int, request_log: bool,
    requests_per_thread: int,
) -> None:  # fmt: skip
    """``chatlake synth``: -o checked before any work, then written by temp file and rename (a link
    planted at -o is refused, never written through; an error leaves the old file whole)."""
    from pipeline import synth as gen

    if output is not None:
        _check_outputs({"--output": output}, [])
    if request_log:
        if output is None:
            for chunk in gen.request_log(fmt, n, seed, mean_requests=requests_per_thread):
                sys.stdout.buffer.write(chunk)
            return
        output.parent.mkdir(parents=True, exist_ok=True)
        mean = requests_per_thread
        count = gen.write_request_log(output, fmt, n, seed, mean_requests=mean, workers=workers)
        click.echo(f"wrote {count} {fmt} requests from {n} conversations to {output}", err=True)
        return
    if output is None:
        out = sys.stdout.buffer
        for rec in gen.generate(fmt, n, seed):
            out.write(orjson.dumps(rec) + b"\n")
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    gen.write_jsonl(output, fmt, n, seed, workers=workers)
    click.echo(f"wrote {n} {fmt} conversations to {output}", err=True)


@cli.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path())
@click.option("--step", "specs", multiple=True, required=True, help="NAME[:k=v,...], repeatable, in order.")
@click.option(
    "--output", "-o", required=True, type=PATH_OR_URL, help="Output Parquet file (or URL: docs/storage.md)."
)
@click.option(
    "--from",
    "source",
    default="parquet",
    show_default=True,
    type=click.Choice(INPUT_FORMATS),
    help="Format of the inputs, as for convert: parquet, a wire format, a source or auto.",
)
@click.option(
    "--strict", is_flag=True, help="Exit 1 naming the first rejected record (checked after the run)."
)
@_strict_inputs_option
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
def transform(
    inputs: tuple[str, ...], specs: tuple[str, ...], output: Path, source: str, strict: bool,
    strict_inputs: bool, quiet: bool,
) -> None:
    """Run transform steps over canonical Parquet (or any input convert reads) into one Parquet file.

    Rejected records go to OUTPUT.rejected.parquet (OUTPUT + ".rejected.parquet"). The work is staged
    in OUTPUT.partial/ and resumes there when interrupted (docs/run-layout.md). Steps and their
    parameters: docs/transforms.md.

    \b
    chatlake transform lake.parquet --step role_swap --step turns --step compaction -o swapped.parquet
    chatlake transform logs.jsonl --from chat --step window:last_turns=3 -o windowed.parquet
    """
    from pipeline.engine.single_file import first_rejected
    from pipeline.transforms import parse_step

    try:
        for s in specs:
            parse_step(s)
    except ConfigError as e:
        raise _usage_error(e) from None
    names = [str(p) for p in inputs]
    summary, verdict = _single_file(
        names, source, PARQUET, output, None, steps=list(specs), quiet=quiet, strict_inputs=strict_inputs
    )
    if strict and summary["rejected"]:
        first = first_rejected(summary) or {}
        raise click.ClickException(
            f"record {first.get('conversation_id')} ({first.get('source_file')}:{first.get('source_line')}) "
            f"rejected: {first.get('reason')} (all {summary['rejected']} in {summary['rejected_file']})"
        )
    if not quiet:
        from pipeline.engine.report import rejection_lines

        # a threads step drops the records its leaves contain: counted, so read adds up at a glance
        dropped = f" dropped {summary['dropped']} (in their leaves)" if summary.get("dropped") else ""
        click.echo(
            f"read {summary['read']} written {summary['written']} rejected {summary['rejected']}{dropped} "
            f"({dict(summary['timings_s'])['total']} s) -> {summary['output']}"  # type: ignore[call-overload]
        )
        for line in rejection_lines(summary):
            click.echo(line)
    _say_auto(summary, source == "auto" and not quiet)
    if verdict is not None:
        raise click.ClickException(verdict)


class _BadConfig(click.ClickException):
    exit_code = 2


def _run_job(job: object, *, catalog: str | None, quiet: bool, as_json: bool, fresh: bool,
             report: Path | None = None, auto: bool = False) -> None:  # fmt: skip
    from pipeline.engine import JobFailed, TooManyRejected, run_job
    from pipeline.engine.report import console, print_summary

    rejected: TooManyRejected | None = None
    try:
        summary = run_job(job, catalog=catalog, progress=not (quiet or as_json), fresh=fresh)  # type: ignore[arg-type]
    except ConfigError as e:
        raise _BadConfig(str(e)) from None
    except TooManyRejected as e:  # the run is written: report it as usual, then exit 1 saying why
        rejected, summary = e, e.summary
    except KeyboardInterrupt:  # Ctrl-C: click would print a bare "Aborted!"
        again = "the same command again without --fresh" if fresh else "the same command again"
        where = getattr(job, "run_url", None) or job.run_dir  # type: ignore[attr-defined]
        raise _Failed(
            f"interrupted: the finished shards are kept in {where}; run {again} to resume",
            130,  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
        ) from None
    except JobFailed as e:
        raise click.ClickException(f"the job failed: {e}{_after_failure(e)}") from None
    _write_report(report, summary)
    if as_json:
        click.echo(orjson.dumps(summary).decode())
    elif not quiet:
        print_summary(summary, console())
    _say_auto(summary, auto and not (quiet or as_json))
    if rejected is not None:
        raise _Failed(str(rejected), 1)


def _say_auto(summary: dict[str, object], auto: bool) -> None:
    """--from auto: one line on stderr saying what was chosen for each input."""
    if auto:
        from pipeline.engine.report import auto_choices

        click.echo(auto_choices(summary), err=True)


@cli.command()
@click.argument("job_file", type=click.Path(path_type=Path))
@click.option(
    "--catalog",
    default=None,
    help="DuckDB run catalog to register the run in (env CHATLAKE_CATALOG; default: "
    "$XDG_DATA_HOME/chatlake/catalog.duckdb, i.e. ~/.local/share/chatlake/catalog.duckdb).",
)
@click.option("--no-catalog", is_flag=True, help="Do not register the run.")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Override engine.workers.")
@click.option("--engine", type=click.Choice(("local", "ray")), default=None, help="Override engine.kind.")
@click.option(
    "--max-rejected-share",
    type=click.FloatRange(0, 1),
    default=None,
    help="Exit 1 when more than this share of the records read is rejected (overrides "
    "loss.max_rejected_share; default: only when every record read is rejected).",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="Delete the files chatlake wrote in the run directory and start over (refused, exit 2, for a "
    "directory that is not a chatlake run).",
)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as one JSON line (no progress).")
def run(
    job_file: Path,
    catalog: str | None,
    no_catalog: bool,
    workers: int | None,
    engine: str | None,
    max_rejected_share: float | None,
    fresh: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Run the job in JOB_FILE (TOML; see docs/jobs.md) into its run directory.

    A killed run resumes where it stopped when started again: finished shards are kept. Exit codes:
    0 done (rejected records are counted), 1 the job failed while running or rejected every record
    read (or more than --max-rejected-share of them; the run is still written), 2 the job file is
    wrong (nothing was done).

    \b
    chatlake run jobs/sample.toml
    chatlake run jobs/sample.toml --json --quiet > summary.json
    """
    from pipeline.jobs import load_job

    try:
        overrides = {"engine.workers": workers, "engine.kind": engine}
        job = load_job(job_file, {**overrides, "loss.max_rejected_share": max_rejected_share})
    except ConfigError as e:
        raise _BadConfig(str(e)) from None
    from pipeline.catalog import default_catalog

    where = None if no_catalog else str(catalog or default_catalog())
    auto = any(f.format == "auto" for f in job.files)  # records whose format is chosen as they are read
    _run_job(job, catalog=where, quiet=quiet, as_json=as_json, fresh=fresh, auto=auto)


def _catalog_option(f: Callable[..., None]) -> Callable[..., None]:
    """``--catalog``: the run catalog to read (env CHATLAKE_CATALOG, else the per-user default)."""
    return click.option(
        "--catalog",
        default=None,
        help="Run catalog (env CHATLAKE_CATALOG; default: ~/.local/share/chatlake/catalog.duckdb, "
        "under $XDG_DATA_HOME when set).",
    )(f)


# a run read from a URL: its local read copy -> the URL (what messages name)
_RUN_URLS: dict[Path, str] = {}


def _run_path(run: str, catalog: str | None) -> Path:
    """RUN as given: a run directory, or a run id (or ``latest``) looked up in the catalog (exit 2
    for a name that is neither; docs: :func:`pipeline.audit.locate.resolve_run`); a run at a URL
    (given, or as the catalog has it) is downloaded into a read copy removed when the command ends."""
    from pipeline.audit.locate import resolve_run
    from pipeline.storage import is_url

    try:
        found = run if is_url(run) else resolve_run(run, catalog)
    except ConfigError as e:
        raise _usage_error(e) from None
    return _fetch_run(found) if isinstance(found, str) else found


def _fetch_run(url: str) -> Path:
    """Download the run directory at ``url`` (every object under it: verify reads every byte, and
    reports stray ones) into a fresh folder of chatlake's cache, deleted when the command ends."""
    import shutil
    import tempfile

    from pipeline.storage import StorageError, cache_root, download_tree, read_bytes

    root = cache_root() / "reads"
    root.mkdir(parents=True, exist_ok=True)
    local = Path(tempfile.mkdtemp(dir=root))
    click.get_current_context().call_on_close(lambda: shutil.rmtree(local, ignore_errors=True))
    url = url.rstrip("/")
    try:
        from pipeline.engine.output_file import MANIFEST_SUFFIX

        manifest = read_bytes(url + MANIFEST_SUFFIX)
        if manifest is not None:  # the FILE of a single-file output: it and its listed side files
            file = _fetch_output(url, manifest, local)
            _RUN_URLS[file] = url
            return file
        download_tree(url, local)
    except StorageError as e:
        raise _BadConfig(str(e)) from None
    _RUN_URLS[local] = url
    return local


def _fetch_output(url: str, manifest: bytes, local: Path) -> Path:
    """Download a single-file output at ``url`` (FILE, then the files its manifest lists beside it,
    those that are there: verify names the missing ones) into ``local``; the local FILE."""
    from pipeline.engine.output_file import MANIFEST_SUFFIX, OutputFileError, listed_names
    from pipeline.storage import download, exists

    name = url.rsplit("/", 1)[-1]
    (local / (name + MANIFEST_SUFFIX)).write_bytes(manifest)
    try:
        names = listed_names(orjson.loads(manifest), name)
    except (OutputFileError, orjson.JSONDecodeError) as e:
        raise _Failed(f"{url}{MANIFEST_SUFFIX} is not a single-file manifest of chatlake ({e})", 2) from None
    base = url.rsplit("/", 1)[0]
    for n in names:  # checked: plain names beside FILE, never a path
        if exists(f"{base}/{n}"):
            download(f"{base}/{n}", local / n)
    return local / name


def _shown(run: Path, text: str) -> str:
    """``text`` naming a run read from a URL by its URL rather than by its read copy."""
    url = _RUN_URLS.get(run)
    return text.replace(str(run), url) if url is not None else text


def _output_files(run: Path) -> set[Path]:
    """A single-file output's files (FILE, its side files and manifest), resolved: what a command
    reading it must not write over."""
    from pipeline.engine.output_file import open_output

    out = open_output(run)
    return {out.manifest.resolve(), *(p.resolve() for p in map(out.file, out.files) if p is not None)}


@cli.command()
@_catalog_option
@click.option("--job", default=None, help="Only the runs of this job.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run.")
def runs(catalog: str | None, job: str | None, limit: int, as_json: bool) -> None:
    """List past runs, latest first: id, run directory, started, read / written / rejected, status.

    Their ids (or ``latest``) can stand for the run directory in audit, sql, export-hf and verify.

    \b
    chatlake runs --limit 5
    """
    from rich.console import Console

    from pipeline.catalog import Catalog
    from pipeline.engine.report import print_runs

    cat = Catalog(catalog)
    rows = cat.runs(limit=limit, job=job)
    if as_json:
        for r in rows:
            click.echo(orjson.dumps(r).decode())
    elif not rows:  # an empty table says nothing about where chatlake looked
        which = f" of job {job!r}" if job else ""
        click.echo(f"no runs{which} in the catalog {cat.path} (`chatlake run JOB.toml` registers one)")
    else:
        print_runs(rows, Console())


def _params(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.UsageError(f"--param {pair!r}: write it as NAME=VALUE")
        out[key] = value
    return out


@cli.command()
@click.argument("run_arg", metavar="RUN")
@_catalog_option
@click.option("--query", "-Q", "names", multiple=True, help="Query from sql/ (repeatable; default all).")
@click.option("--format", "fmt", type=click.Choice(("table", "csv", "json", "markdown")), default="table")
@click.option("--param", "-p", "params", multiple=True, help="NAME=VALUE, bound by DuckDB (e.g. n=20).")
@click.option("--html", "html_out", type=click.Path(path_type=Path), help="Also write the HTML report here.")
def audit(
    run_arg: str,
    catalog: str | None,
    names: tuple[str, ...],
    fmt: str,
    params: tuple[str, ...],
    html_out: Path | None,
) -> None:
    """Run the sql/ audit queries over a run (a directory, a run id from `chatlake runs`, `latest`,
    or the FILE of `convert -o` / `transform -o`; see docs/audit.md).

    \b
    chatlake audit runs/r1 --query worst_records --param n=20 --format markdown
    chatlake audit runs/r1 --html report.html
    """
    from pipeline.audit import load_queries, open_run
    from pipeline.audit.queries import run_queries
    from pipeline.audit.render import render_csv, render_json, render_markdown, render_table

    given = _params(params)
    run = _run_path(run_arg, catalog)
    try:
        if html_out is not None:  # a link, a loop, a read-only place: before any query runs
            _check_outputs({"--html": html_out}, [])
            if run.resolve() in html_out.resolve().parents:
                raise ConfigError(f"--html {str(html_out)!r} is inside the run directory; choose another")
            if run.is_file() and html_out.resolve() in _output_files(run):
                raise ConfigError(f"--html {str(html_out)!r} would overwrite a file of {run}; choose another")
        queries = load_queries(list(names))
        for q in queries:  # a parameter no selected query declares is a typo
            q.bind({k: v for k, v in given.items() if k in q.params})
        unknown = sorted(set(given) - {p for q in queries for p in q.params})
        if unknown:
            raise ConfigError(f"--param {unknown[0]}: no selected query has this parameter")
        with _reading(run):
            con = open_run(run)
    except ConfigError as e:
        raise _bad_usage(e) from None
    with _reading(run):
        results, missing = run_queries(con, run, queries, given)
    if not results:  # every query asked for needs what this run cannot have
        name, why = next(iter(missing.items()))
        raise _Failed(f"{name}: {why}", 2)
    if fmt == "json":
        click.echo(render_json(results))
        for name, why in missing.items():
            click.echo(f"{name}: {why}", err=True)
    for q in queries if fmt != "json" else ():
        if q.name in missing:  # one line where its result would be (on stderr beside machine formats)
            click.echo(f"{q.name}: {missing[q.name]}", err=fmt == "csv")
            continue
        t = results[q.name]
        if fmt == "csv":
            click.echo(f"# {q.name}\n{render_csv(t)}" if len(queries) > 1 else render_csv(t), nl=False)
        elif fmt == "markdown":
            click.echo(render_markdown(q.name, q.question, t))
        else:
            click.echo(render_table(q.name, q.question, t), nl=False)
    if html_out is not None:
        from pipeline.audit.report import build_report

        with _reading(run):
            html = build_report(con, title=f"chatlake audit: {run.name}", run=run)
        from pipeline.engine.atomic import write_atomic

        write_atomic(html_out, html.encode(), user=True)  # a full disk leaves the old report whole
        click.echo(f"wrote {html_out}", err=True)


@cli.command()
@click.argument("run_arg", metavar="RUN")
@click.argument("query")
@_catalog_option
@click.option("--format", "fmt", type=click.Choice(("table", "csv", "json", "markdown")), default="table")
def sql(run_arg: str, query: str, catalog: str | None, fmt: str) -> None:
    """Run ad-hoc SQL over a run (a directory, a run id from `chatlake runs`, `latest`, or the FILE
    of `convert -o` / `transform -o`), with
    the conversations/items/losses/rejected/summary views and the audit facts (records,
    top_losses, record_counts, item_counts, phase_counts, loss_counts).

    \b
    chatlake sql runs/r1 "SELECT kind, count(*) FROM losses GROUP BY ALL"
    chatlake sql runs/r1 "SELECT ai_turns, count(*) FROM records GROUP BY ALL ORDER BY 1"
    """
    import duckdb

    from pipeline.audit import open_run
    from pipeline.audit.render import render_csv, render_json, render_markdown, render_table
    from pipeline.audit.views import not_available

    run = _run_path(run_arg, catalog)
    try:
        with _reading(run):
            con = open_run(run)
    except ConfigError as e:
        raise _bad_usage(e) from None
    try:
        with _reading(run):
            t = con.sql(query).to_arrow_table()
    except duckdb.Error as e:
        why = not_available(run, e)
        if why is not None:  # a view a single-file output in a wire format cannot have
            raise _Failed(f"SQL error: {why}", 2) from None
        raise click.UsageError(f"SQL error: {e}") from None
    text = {"csv": render_csv, "json": lambda t: render_json({"result": t})}.get(fmt)
    if text is not None:
        click.echo(text(t), nl=False)
    elif fmt == "markdown":
        click.echo(render_markdown("result", query, t))
    else:
        click.echo(render_table("", "", t), nl=False)


@cli.command("export-hf")
@click.argument("run_arg", metavar="RUN")
@click.argument("out_dir", type=PATH_OR_URL)
@_catalog_option
@click.option("--style", type=click.Choice(("trl", "openai")), default="trl", show_default=True)
@click.option("--split-by", help="A conversations column whose values name the splits (default: train).")
@click.option("--shard-rows", type=int, default=100_000, show_default=True, help="Rows per Parquet shard.")
@click.option("--push", "repo_id", help="Upload to this Hub dataset repo (needs a configured token).")
@click.option("--dry-run", is_flag=True, help="With --push: check the token and list, upload nothing.")
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace an earlier export in OUT_DIR (only one export-hf wrote and nobody changed since).",
)
@click.option(
    "--columns", default="", metavar="NAME,...",
    help="Metadata columns to carry into the dataset (and its card's features): conversations columns "
    "(model, source_file, source_format, ...) or provenance fields (source, session_id, sample_id, score; "
    "reward = the score, e.g. tau-bench's reward).",
)  # fmt: skip
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes converting the records: this one and N - 1 more (default: 1 with the "
              "compiled codec, else up to 2, one a core; each ~450 MB; docs/benchmarks.md).")  # fmt: skip
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def export_hf(
    run_arg: str,
    out_dir: Path | str,
    catalog: str | None,
    style: str,
    split_by: str | None,
    shard_rows: int,
    repo_id: str | None,
    dry_run: bool,
    overwrite: bool,
    columns: str,
    workers: int | None,
    quiet: bool,
) -> None:
    """Export a run's written records (RUN: a directory, a run id from `chatlake runs`, `latest`, or
    the Parquet FILE of `convert --to parquet -o` / `transform -o`) as a Hugging Face dataset (see
    docs/export.md).

    \b
    chatlake export-hf runs/r1 out/hf --split-by source_format
    """
    from pipeline.audit.views import check_run_files
    from pipeline.sinks.hf_dataset import ExportConfig, check_token, default_workers, export, push

    if dry_run and repo_id is None:  # a dry run of nothing would write the export for real
        raise click.UsageError("--dry-run checks an upload: give it with --push REPO")
    run = _run_path(run_arg, catalog)
    url = out_dir if isinstance(out_dir, str) else None
    if url is not None:  # exported into a local folder, then uploaded (docs/storage.md#outputs)
        out_dir = _export_dir(url, overwrite)
    carried = tuple(c.strip() for c in columns.split(",") if c.strip())
    cfg = ExportConfig(run, out_dir, style, split_by, shard_rows, repo_id, overwrite and url is None,
                       columns=carried, workers=workers or default_workers(),
                       progress=not quiet)  # fmt: skip
    try:
        cfg.validate()
        if run.is_file():  # a single-file output: its files as FILE.manifest.json lists them
            from pipeline.audit.views import check_output
            from pipeline.engine.output_file import open_output

            check_output(open_output(run))
        else:
            check_run_files(run)
        _check_hashes(run, ("conversations",))
        if repo_id is not None:  # a bad token or no network: say so before writing anything
            try:
                user = check_token(repo_id)
            except RuntimeError as e:
                raise click.ClickException(str(e)) from None
            click.echo(f"token checked: Hugging Face account {user!r}", err=True)
        with _reading(run):
            report = export(cfg)
    except ConfigError as e:
        raise _bad_usage(e) from None
    except KeyboardInterrupt:  # click would print a bare "Aborted!"; export() removed its files
        again = "run the same command again"
        raise _Failed(f"interrupted: nothing was kept in {out_dir}; {again}", 130) from None
    r = report.to_json()
    if report.left:
        more = f" and {len(report.left) - 3} more" if len(report.left) > 3 else ""
        click.echo(f"--overwrite left alone what the old report listed outside {out_dir} or not as "
                   f"written: {', '.join(report.left[:3])}{more}", err=True)  # fmt: skip
    if url is not None:
        _upload_export(out_dir, url)
    repaired = f"; repaired {r['repaired']} (repairs.jsonl)" if r["repaired"] else ""
    click.echo(
        f"exported {r['exported']} rows {r['splits']} to {url or out_dir}; excluded {r['excluded']}{repaired}"
    )
    if repo_id is not None:
        try:
            click.echo(push(out_dir, repo_id, dry_run=dry_run))
        except ConfigError as e:
            raise _usage_error(e) from None
        except RuntimeError as e:
            raise click.ClickException(str(e)) from None


def _export_dir(url: str, overwrite: bool) -> Path:
    """Check the export's URL before any work, as export-hf checks a local OUT_DIR (empty, or with
    --overwrite an earlier export: nothing but the files its report lists), and give the empty
    local folder the export is written into (removed when the command ends)."""
    import shutil

    from pipeline.sinks.hf_dataset import not_our_export_at
    from pipeline.storage import StorageError, check_output, listing, work_dir

    url = url.rstrip("/")
    try:
        check_output(url)
        if listing(url):
            # as for a local OUT_DIR: every object the report's, with its size and sha256 (re-read)
            if (why := not_our_export_at(url)) is not None:
                raise ConfigError(
                    f"output directory {url!r} is not empty and not an export of chatlake ({why}); "
                    "choose a new directory"
                )
            if not overwrite:
                raise ConfigError(
                    f"output directory {url!r} holds an earlier chatlake export; pass --overwrite to "
                    "replace it, or choose a new directory"
                )
    except StorageError as e:
        raise _BadConfig(str(e)) from None
    except (ConfigError, orjson.JSONDecodeError) as e:
        raise click.UsageError(str(e)) from None
    local = work_dir(url, "exports")
    shutil.rmtree(local, ignore_errors=True)  # chatlake's own folder: a killed export's leftovers
    local.mkdir(parents=True)
    click.get_current_context().call_on_close(lambda: shutil.rmtree(local, ignore_errors=True))
    return local


def _upload_export(local: Path, url: str) -> None:
    """Upload a finished export: the data files, then the dataset card, then ``export_report.json``
    (last: it lists the rest); then delete what an earlier export left that this one did not write,
    only objects its report listed with their size and sha256 unchanged (the others are named)."""
    from pipeline.sinks.hf_dataset import CARD, REPORT, clear_at, listed_files
    from pipeline.storage import join, read_bytes, upload_tree

    url = url.rstrip("/")
    earlier = listed_files(read_bytes(join(url, REPORT))) or {}  # before the new report replaces it
    written = set(upload_tree(local, url, last=(CARD, REPORT)))
    left = clear_at(url, earlier, written)
    if left:
        more = f" and {len(left) - 3} more" if len(left) > 3 else ""
        click.echo(f"--overwrite left alone what the old report did not list or that changed since: "
                   f"{', '.join(left[:3])}{more}", err=True)  # fmt: skip


@cli.command()
@click.argument("run_arg", metavar="RUN")
@_catalog_option
def verify(run_arg: str, catalog: str | None) -> None:
    """Check a run (a directory, a run id from `chatlake runs`, or `latest`) end to end
    (docs/run-layout.md): every shard listed and complete, rows, bytes and sha256 as listed, no
    stray files, read == written + rejected per shard and in total, every loss and output line
    belonging to a written record of its shard.

    RUN may be the FILE of `convert -o` / `transform -o`: checked against FILE.manifest.json (every
    file's rows, bytes and sha256; read == written + rejected).

    Exit 0 with one OK line, 1 with the list of what is wrong, 2 when RUN is not a directory
    (nor a run id in the catalog, nor a FILE chatlake wrote).

    \b
    chatlake verify runs/r1
    """
    from pipeline.engine.verify import ok_line
    from pipeline.engine.verify import verify as check

    run = _run_path(run_arg, catalog)
    if run.is_file():  # the FILE of convert/transform -o: checked against FILE.manifest.json
        from pipeline.engine import output_file

        try:
            out = output_file.open_output(run)
        except ConfigError as e:
            raise _Failed(_shown(run, str(e)), 2) from None
        problems, ok = output_file.verify(out), output_file.ok_line(out)
    elif not run.is_dir():
        raise _Failed(f"run directory {str(run)!r} does not exist", 2)
    else:
        problems, ok = check(run), ok_line(run)
    if problems:
        click.echo(_shown(run, f"{run}: {len(problems)} problem{'s' if len(problems) > 1 else ''}"))
        for p in problems:
            click.echo(_shown(run, f"  {p}"))
        sys.exit(1)
    click.echo(_shown(run, ok))


def main() -> None:
    """Console-script entry point."""
    keep_heap()  # before anything allocates: the heap is kept from the first batch on
    try:
        cli(standalone_mode=True)
    except BrokenPipeError:  # piping into head
        sys.exit(0)


__all__ = ["cli", "main"]
