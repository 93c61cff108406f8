"""The four views every audit query reads, defined over one run directory (docs/run-layout.md).

==================  ==========================================================================
view                one row per
==================  ==========================================================================
``conversations``   written record: ``RUN/conversations/*.parquet`` as it is (canonical columns
                    first, then any columns the steps added)
``items``           item of a written record: the item index ``RUN/items/*.parquet``
                    (``conversation_id``, ``source_*``, ``item_index``, the scalar item fields,
                    sizes in place of nested content: see docs/run-layout.md); computed from
                    ``conversations`` for runs written without it. For text, unnest
                    ``conversations.items``.
``losses``          reported loss: ``RUN/losses/*.parquet``
``rejected``        rejected input record: ``RUN/rejected/*.parquet``
``summary``         the run: one row, ``RUN/summary.json`` (``read``, ``written``, ``target``, ...)
``loss_kinds``      loss kind of this chatlake (``pipeline.losses.LOSS_KINDS``): ``kind``,
                    ``addition`` (true: something added, not lost), ``meaning``
``records``         written or rejected record: the record index ``RUN/records/*.parquet``
                    (turns, compaction, losses per record: pipeline/io/record_index.py)
``top_losses``      each shard's 100 records with the most losses (record-index columns)
``threads``         request of a run with the threads step, written or dropped (``dataset``,
                    ``thread_id``, ``n_items``, ``kept_leaf``, ``status``); no rows otherwise
``record_counts``,  per-shard counts (pipeline/io/shard_counts.py), summed by the queries:
``item_counts``,    ``RUN/<name>/*.parquet``
``phase_counts``,
``loss_counts``
==================  ==========================================================================

The last six are the audit facts the engine writes with each shard. For a run written before
them (or resumed across that change, so that some shards lack them) each is a view computed from
the first four instead (pipeline/audit/derived.py): same columns, same answers, slower.

The file lists are handed to DuckDB's ``read_parquet`` through the relation API, so no path is
ever spliced into SQL text. The views are lazy: a query reads only the columns it names.

>>> con = open_run("runs/2026-01-01")                                     # doctest: +SKIP
>>> con.sql("SELECT type, count(*) FROM items GROUP BY ALL").fetchall()   # doctest: +SKIP
[('message', 12), ('function_call', 3)]
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline.audit.derived import DERIVED
from pipeline.engine.output_file import OutputFile, open_output, quick_check
from pipeline.errors import ConfigError
from pipeline.io.run_tables import LOSSES_SCHEMA, REJECTED_SCHEMA
from pipeline.losses import LOSS_KINDS

FOLDERS = ("conversations", "losses", "rejected")


class RunDamaged(ConfigError):
    """A run whose manifest's shard files are missing, unlisted or of the wrong size (exit 2)."""

# For runs written without an item index (RUN/items/): the same columns, computed by unnesting.
ITEMS_FROM_CONVERSATIONS = """
CREATE OR REPLACE VIEW items AS
SELECT conversation_id, source_format, source_file, source_line, item_index::INTEGER AS item_index,
       it.section, it."group", it.part, it.type, it.native_type, it.role, it.id, it.call_id, it.name,
       it.namespace, it.status, it.phase, it.content_form, it.null_fields,
       len(it.content)::INTEGER AS n_content, len(it.summary)::INTEGER AS n_summary,
       (coalesce(list_sum(list_transform(it.content, lambda b: coalesce(length(b.text), 0))), 0)
        + coalesce(list_sum(list_transform(it.summary, lambda b: coalesce(length(b.text), 0))), 0))::BIGINT
           AS text_chars,
       (coalesce(length(it.arguments), 0) + coalesce(length(it.input), 0))::BIGINT AS arguments_chars,
       coalesce(strlen(it.encrypted_content), 0)::BIGINT AS encrypted_bytes
FROM (
    SELECT conversation_id, source_format, source_file, source_line,
           unnest(items) AS it,
           generate_subscripts(items, 1) - 1 AS item_index  -- zipped with the unnest above
    FROM conversations
)
"""


def shard_files(run: Path, folder: str) -> list[str]:
    """The Parquet shards of one folder of a run, in shard order; ConfigError when there are none."""
    files = sorted(str(p) for p in (run / folder).glob("*.parquet"))
    if not files:
        raise ConfigError(
            f"{run}/{folder}/ has no Parquet shards: is {str(run)!r} a chatlake run directory? "
            "(see docs/run-layout.md)"
        )
    return files


def check_run(run: Path) -> None:
    """Fail before any query, saying what is missing, when ``run`` is not a run directory."""
    if not run.is_dir():
        raise ConfigError(f"run directory {str(run)!r} does not exist")
    for folder in FOLDERS:
        shard_files(run, folder)
    if not (run / "summary.json").is_file():
        raise ConfigError(f"{run}/summary.json is missing: is {str(run)!r} a finished chatlake run?")
    check_run_files(run)


def check_run_files(run: Path) -> None:
    """Fail before any query when the manifest's shards are missing, unlisted or of the wrong size.

    Names and sizes only (the full check is ``chatlake verify``): a shard file that is gone or
    truncated would otherwise surface as a DuckDB error halfway through.
    """
    from pipeline.engine.verify import quick_check

    _refuse_damaged(run, quick_check(run), "running the job again redoes the damaged shards")


def _refuse_damaged(where: Path | str, problems: list[str], remedy: str) -> None:
    """Raise :class:`RunDamaged` naming the first of ``problems`` (if any) and what to do."""
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise RunDamaged(
            f"{where} is incomplete or damaged: {problems[0]}{more}; `chatlake verify {where}` lists "
            f"everything, {remedy}"
        )


def define_views(con: duckdb.DuckDBPyConnection, run: Path) -> None:
    """Create ``conversations``, ``items``, ``losses``, ``rejected``, ``summary``, ``loss_kinds`` and
    the audit facts on ``con``."""
    check_run(run)
    for folder in FOLDERS:
        con.read_parquet(shard_files(run, folder), union_by_name=True).create_view(folder, replace=True)
    con.read_json(str(run / "summary.json"), format="auto").create_view("summary", replace=True)
    define_loss_kinds(con)
    index = sorted(str(p) for p in (run / "items").glob("*.parquet"))
    if index:
        con.read_parquet(index).create_view("items", replace=True)
    else:
        con.execute(ITEMS_FROM_CONVERSATIONS)
    for name in written_facts(run):
        con.read_parquet(shard_files(run, name)).create_view(name, replace=True)
    for name, sql in DERIVED.items():
        if name not in written_facts(run):
            con.execute(sql)
    define_threads(con, run)


# a run with the threads step: every request it read, kept (conversations) or dropped (dropped/)
THREADS_VIEW = """
CREATE OR REPLACE VIEW threads AS
SELECT source_file AS dataset, conversation_id, thread_id, n_items,
       (is_leaf AND duplicate_of IS NULL) AS kept_leaf, 'written' AS status
FROM conversations
{dropped}
"""
THREADS_DROPPED = """
UNION ALL
SELECT d.source_file, d.conversation_id, l.thread_id, d.n_items, false, 'dropped'
FROM dropped AS d
LEFT JOIN (SELECT conversation_id, any_value(thread_id) AS thread_id FROM conversations GROUP BY ALL) AS l
  ON l.conversation_id = d.leaf_id
"""
# any other run: the same columns, no rows (every canned query runs on every run)
NO_THREADS = """
CREATE OR REPLACE VIEW threads AS
SELECT NULL::VARCHAR AS dataset, NULL::VARCHAR AS conversation_id, NULL::VARCHAR AS thread_id,
       NULL::INTEGER AS n_items, NULL::BOOLEAN AS kept_leaf, NULL::VARCHAR AS status
WHERE false
"""


def define_threads(con: duckdb.DuckDBPyConnection, run: Path) -> None:
    """Create ``threads`` (one row per request of a run with the threads step: ``dataset``,
    ``conversation_id``, ``thread_id``, ``n_items``, ``kept_leaf``, ``status`` written/dropped)
    and ``dropped`` (``RUN/dropped/*.parquet``, when the run has it)."""
    columns = {row[0] for row in con.execute("DESCRIBE conversations").fetchall()}
    if not {"thread_id", "is_leaf", "duplicate_of"} <= columns:
        con.execute(NO_THREADS)
        return
    dropped = sorted(str(p) for p in (run / "dropped").glob("*.parquet"))
    if dropped:
        con.read_parquet(dropped, union_by_name=True).create_view("dropped", replace=True)
    con.execute(THREADS_VIEW.format(dropped=THREADS_DROPPED if dropped else ""))


def define_loss_kinds(con: duckdb.DuckDBPyConnection) -> None:
    """Register ``loss_kinds`` (``kind``, ``addition``, ``meaning``) from ``pipeline.losses.LOSS_KINDS``:
    the queries and derived views tell additions from losses with it."""
    kinds = pa.table({"kind": list(LOSS_KINDS), "addition": [k.addition for k in LOSS_KINDS.values()],
                      "meaning": [k.meaning for k in LOSS_KINDS.values()]})  # fmt: skip
    con.register("loss_kinds", kinds)  # the connection holds the table


def written_facts(run: Path) -> list[str]:
    """The audit-fact folders (``records``, ``*_counts``) written for every shard of ``run``.

    A folder counts only when it has exactly the shards of ``conversations/``: a run resumed
    across versions may have the facts for some shards only, and summing those would undercount.
    """
    shards = {p.name for p in (run / "conversations").glob("*.parquet")}
    return [n for n in DERIVED if {p.name for p in (run / n).glob("*.parquet")} == shards]


def open_run(run: str | Path, *, threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB connection with the views of ``run``: a run directory, or the FILE
    of a single-file output (:func:`define_file_views`)."""
    con = duckdb.connect(config={} if threads is None else {"threads": threads})
    if Path(run).is_file():
        define_file_views(con, open_output(Path(run)))
    else:
        define_views(con, Path(run))
    return con


# --- single-file outputs (convert -o FILE, transform -o FILE) ------------------------------------

# the views built from the canonical table: a FILE in a wire format (JSON lines) has none of them
FROM_CANONICAL = ("conversations", "items", "records", "top_losses", "record_counts", "item_counts",
                  "phase_counts", "threads", "dropped")  # fmt: skip
_DUCKDB_TYPES = {pa.string(): "VARCHAR", pa.int64(): "BIGINT"}


def _side_view(con: duckdb.DuckDBPyConnection, out: OutputFile, role: str, schema: pa.Schema) -> None:
    """The view ``role`` (losses, rejected) over FILE's side file, with ``schema``'s columns; no
    rows when the command wrote none (a Parquet target reports no losses)."""
    path, fmt = out.file(role), out.format(role)
    if path is None:
        con.register(role, schema.empty_table())  # the connection holds the table
    elif fmt == "parquet":
        con.read_parquet(str(path)).create_view(role, replace=True)
    else:
        columns = {f.name: _DUCKDB_TYPES[f.type] for f in schema}
        con.read_json(str(path), format="newline_delimited", columns=columns).create_view(role, replace=True)


def check_output(out: OutputFile) -> None:
    """Fail before any query when FILE's listed side files are missing or of the wrong size."""
    _refuse_damaged(out.path, quick_check(out), "running the command again rewrites the files")


def define_file_views(con: duckdb.DuckDBPyConnection, out: OutputFile) -> None:
    """The views of a single-file output: ``losses``, ``rejected``, ``summary`` (from
    FILE.manifest.json), ``loss_kinds`` and ``loss_counts`` always; a Parquet FILE (the canonical
    table) also ``conversations``, ``items``, ``threads`` and the audit facts computed from them
    (pipeline/audit/derived.py), as for a run written without them. A FILE in a wire format holds
    encoded records, not the canonical table: the views of :data:`FROM_CANONICAL` are not defined
    (:func:`not_available` explains a query's failure on one)."""
    check_output(out)
    _side_view(con, out, "losses", LOSSES_SCHEMA)
    _side_view(con, out, "rejected", REJECTED_SCHEMA)
    summary = con.read_json(str(out.manifest), format="auto").select("unnest(summary)")
    summary.create_view("summary", replace=True)
    define_loss_kinds(con)
    if not out.canonical:
        con.execute(DERIVED["loss_counts"])
        return
    con.read_parquet(str(out.path)).create_view("conversations", replace=True)
    con.execute(ITEMS_FROM_CONVERSATIONS)
    for sql in DERIVED.values():
        con.execute(sql)
    columns = {row[0] for row in con.execute("DESCRIBE conversations").fetchall()}
    dropped = out.file("dropped")
    if not {"thread_id", "is_leaf", "duplicate_of"} <= columns:
        con.execute(NO_THREADS)
        return
    if dropped is not None:
        con.read_parquet(str(dropped)).create_view("dropped", replace=True)
    con.execute(THREADS_VIEW.format(dropped=THREADS_DROPPED if dropped is not None else ""))


def not_available(run: Path, error: duckdb.Error) -> str | None:
    """Why a query failed on a single-file output in a wire format, in one line, when it failed for
    a view that such a FILE cannot have (else None: the query's own error)."""
    m = re.search(r"Table with name (\w+) does not exist", str(error))
    if m is None or m.group(1) not in FROM_CANONICAL or not run.is_file():
        return None
    out = open_output(run)
    if out.canonical:
        return None
    return (
        f"not available for a single-file output in a wire format: {run.name} holds encoded "
        f"{out.target} records, not the canonical table `{m.group(1)}` is built from (here: losses, "
        "rejected, summary, loss_counts; `--to parquet -o FILE` or `--run-dir` keeps the canonical table)"
    )
