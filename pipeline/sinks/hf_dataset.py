"""A run's written records as a Hugging Face dataset in Hub layout (``chatlake export-hf``).

::

    OUT_DIR/
      README.md                                dataset card: YAML (configs, features, splits, license
                                               placeholder) + the run's loss summary
      data/train-00000-of-00002.parquet        one or more shards per split (``--split-by COLUMN``
      data/train-00001-of-00002.parquet        names the splits after a conversations column)
      export_report.json                       counts: exported, excluded (with reasons), per split;
                                               the sha256 of every other file (what --overwrite checks)

Rows: ``conversation_id`` (joins the audit views), ``messages`` (TRL conversational format, built
by :mod:`pipeline.encoders.to_hf` -- the same encoder ``convert --to hf`` uses, plus the optional
``reasoning_content`` / ``thinking`` strings chat templates read) and ``tools`` (function schemas,
null when none).

How tool-call arguments are stored. ``--style trl`` (default): ``function.arguments`` is an
*object* (what ``apply_chat_template`` and TRL take), stored with the ``datasets`` ``Json`` feature
(Arrow ``arrow.json`` extension type over JSON text), so ``load_dataset`` gives back each object as
it was, whatever its keys -- no struct of the union of all keys, no ``None``-filled fields. ``tools``
is a ``Json`` column too. ``--style openai``: ``function.arguments`` is a JSON *string* (the OpenAI
fine-tuning format); ``tools`` stays ``Json``.

A record the HF encoder cannot convert, or whose messages carry keys the typed ``messages``
feature has no field for (carried verbatim from an HF/ShareGPT source), is excluded and counted
with its reason in ``export_report.json`` and the card: nothing is dropped silently.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from pipeline.encoders import convert_table
from pipeline.errors import ConfigError
from pipeline.formats.hf import REASONING_KEYS

STYLES = ("trl", "openai")
SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")  # what the Hub accepts as a split name
# Message keys current chat templates read besides the TRL five, stored as optional strings: the
# reasoning keys (hf.REASONING_KEYS).
MESSAGE_KEYS = frozenset(("role", "content", "name", "tool_call_id", "tool_calls", *REASONING_KEYS))
REPORT = "export_report.json"
CARD = "README.md"
CALL_KEYS = frozenset(("id", "type", "function"))
FUNCTION_KEYS = frozenset(("name", "arguments"))


def features(style: str) -> Any:
    """The ``datasets.Features`` of an export (``datasets`` is imported only when exporting)."""
    from datasets import Features, Json, List, Value

    arguments = Json() if style == "trl" else Value("string")
    call = {"id": Value("string"), "type": Value("string"),
            "function": {"name": Value("string"), "arguments": arguments}}  # fmt: skip
    message = {
        "role": Value("string"),
        "content": Value("string"),
        "name": Value("string"),
        "tool_call_id": Value("string"),
        "tool_calls": List(call),
        **{k: Value("string") for k in REASONING_KEYS},
    }
    return Features({"conversation_id": Value("string"), "messages": List(message), "tools": Json()})


@dataclass
class ExportConfig:
    run: Path
    out_dir: Path
    style: str = "trl"
    split_by: str | None = None
    shard_rows: int = 100_000
    push: str | None = None
    overwrite: bool = False

    def validate(self) -> None:
        """Fail before any work, saying what to fix."""
        if self.style not in STYLES:
            raise ConfigError(f"--style {self.style!r}: use one of {', '.join(STYLES)}")
        if not (self.run / "conversations").is_dir() or not any(
            (self.run / "conversations").glob("*.parquet")
        ):
            raise ConfigError(
                f"{self.run}/conversations/ has no Parquet shards: is it a chatlake run directory?"
            )
        if self.out_dir.exists() and any(self.out_dir.iterdir()):
            if (why := not_our_export(self.out_dir)) is not None:
                raise ConfigError(
                    f"output directory {str(self.out_dir)!r} is not empty and not an unchanged export "
                    f"of chatlake ({why}); choose a new directory"
                )
            if not self.overwrite:
                raise ConfigError(
                    f"output directory {str(self.out_dir)!r} holds an earlier chatlake export; pass "
                    "--overwrite to replace it, or choose a new directory"
                )
        if self.shard_rows < 1:
            raise ConfigError("--shard-rows must be at least 1")
        if self.split_by is not None:
            names = pq.read_schema(next(iter(sorted((self.run / "conversations").glob("*.parquet"))))).names
            if self.split_by not in names:
                raise ConfigError(
                    f"--split-by {self.split_by!r} is not a conversations column; columns: {names}"
                )


@dataclass
class ExportReport:
    splits: dict[str, int] = field(default_factory=dict)
    split_bytes: Counter[str] = field(default_factory=Counter)  # Arrow bytes, the card's num_bytes
    excluded: Counter[str] = field(default_factory=Counter)
    files: list[str] = field(default_factory=list)
    sha256: dict[str, str] = field(default_factory=dict)  # every file written but the report itself

    def to_json(self) -> dict[str, Any]:
        return {
            "exported": sum(self.splits.values()),
            "splits": self.splits,
            "excluded": sum(self.excluded.values()),
            "excluded_by_reason": dict(self.excluded.most_common()),
            "files": self.files,
            "sha256": self.sha256,
        }


def _sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def not_our_export(out_dir: Path) -> str | None:
    """Why ``out_dir`` is not an export chatlake wrote and nobody changed since (None when it is).

    Only such a directory may be replaced (``--overwrite``): every file in it is ``export_report.json``
    or listed in its ``sha256`` with that hash, so a hand-edited card (a license set) or a file of
    the user's is never deleted.
    """
    try:
        listed = json.loads((out_dir / REPORT).read_text())["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"no {REPORT} with the sha256 of its files"
    if not isinstance(listed, dict):
        return f"no {REPORT} with the sha256 of its files"
    for p in sorted(out_dir.rglob("*")):
        name = p.relative_to(out_dir).as_posix()
        if p.is_dir() and not p.is_symlink() and name == "data":
            continue
        if name == REPORT:
            continue
        if p.is_symlink() or not p.is_file() or name not in listed:
            return f"{name} was not written by export-hf"
        if _sha256(p) != listed[name]:
            return f"{name} was changed after the export"
    return None


def _clear(out_dir: Path) -> None:
    """Delete an earlier export (checked by :func:`not_our_export` just before)."""
    if not out_dir.exists() or not any(out_dir.iterdir()):
        return
    if (why := not_our_export(out_dir)) is not None:  # checked again: never delete what we did not write
        raise ConfigError(f"output directory {str(out_dir)!r}: {why}; choose a new directory")
    listed = json.loads((out_dir / REPORT).read_text())["sha256"]
    for name in listed:
        (out_dir / name).unlink(missing_ok=True)
    (out_dir / REPORT).unlink()
    if (out_dir / "data").is_dir() and not any((out_dir / "data").iterdir()):
        (out_dir / "data").rmdir()


def _unknown_keys(messages: list[dict[str, Any]]) -> str | None:
    for m in messages:
        if extra := set(m) - MESSAGE_KEYS:
            return f"message key(s) {sorted(extra)} have no field in the dataset features"
        for k in REASONING_KEYS:
            if not isinstance(m.get(k, ""), str | None):
                return f"message key {k!r} is not a string (chat templates read it as text)"
        for c in m.get("tool_calls") or ():
            if (extra := set(c) - CALL_KEYS) or (extra := set(c["function"]) - FUNCTION_KEYS):
                return f"tool call key(s) {sorted(extra)} have no field in the dataset features"
    return None


def _rows(table: pa.Table, style: str, report: ExportReport) -> list[dict[str, Any]]:
    """HF rows of one batch of canonical rows (per-record Python: the encoder's JSON building).

    Arguments become JSON text here: the ``Json`` feature's storage (``trl``) or the string the
    OpenAI format wants (``openai``); orjson writes the object exactly as the encoder built it.
    """
    ids = table.column("conversation_id").to_pylist()
    rows = []
    for cid, c in zip(ids, convert_table(table, "hf"), strict=True):
        if c.error is not None:
            report.excluded[f"encode: {c.error}"] += 1
            continue
        messages = c.record["messages"]
        if (why := _unknown_keys(messages)) is not None:
            report.excluded[why] += 1
            continue
        for m in messages:
            for call in m.get("tool_calls") or ():
                call["function"]["arguments"] = orjson.dumps(call["function"]["arguments"]).decode()
        tools = c.record.get("tools")
        rows.append(
            {
                "conversation_id": cid,
                "messages": messages,
                "tools": None if tools is None else orjson.dumps(tools).decode(),
            }
        )
    return rows


def _storage_schema(style: str) -> pa.Schema:
    """The Arrow schema with JSON text as plain strings (cast to ``arrow.json`` after building)."""
    return pa.schema([(f.name, _json_as_string(f.type)) for f in features(style).arrow_schema])


def _json_as_string(t: pa.DataType) -> pa.DataType:
    if isinstance(t, pa.BaseExtensionType):
        return pa.string()
    if pa.types.is_list(t):
        return pa.list_(_json_as_string(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _json_as_string(f.type)) for f in t])
    return t


def _split_values(cfg: ExportConfig) -> list[str]:
    if cfg.split_by is None:
        return ["train"]
    con = duckdb.connect()
    rel = con.read_parquet(sorted(str(p) for p in (cfg.run / "conversations").glob("*.parquet")))
    values = sorted(
        str(v) for (v,) in rel.select(duckdb.ColumnExpression(cfg.split_by)).distinct().fetchall()
    )
    bad = [v for v in values if not SPLIT_NAME.match(v)]
    if bad:
        raise ConfigError(
            f"--split-by {cfg.split_by}: value(s) {bad[:3]} are not valid split names (\\w+(\\.\\w+)*)"
        )
    return values


def export(cfg: ExportConfig) -> ExportReport:
    """Write the dataset; returns the counts (also written to ``export_report.json``)."""
    cfg.validate()
    splits = _split_values(cfg)
    if cfg.overwrite:
        _clear(cfg.out_dir)
    made = [d for d in (cfg.out_dir, cfg.out_dir / "data") if not d.exists()]
    written: list[Path] = []
    try:
        return _write(cfg, splits, written)
    except BaseException:  # Ctrl-C, a full disk: no half export that --overwrite would then refuse
        for path in written:
            path.unlink(missing_ok=True)
        for d in reversed(made):
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
        raise


def _write(cfg: ExportConfig, splits: list[str], written: list[Path]) -> ExportReport:
    """The export's files, each added to ``written`` before it is created (so it can be undone)."""
    feats = features(cfg.style)
    schema = feats.arrow_schema
    storage = _storage_schema(cfg.style)
    data = cfg.out_dir / "data"
    data.mkdir(parents=True, exist_ok=True)
    report = ExportReport()
    dataset = pads.dataset(sorted(str(p) for p in (cfg.run / "conversations").glob("*.parquet")))
    for split in splits:
        flt = None if cfg.split_by is None else pads.field(cfg.split_by).cast(pa.string()) == split
        parts: list[Path] = []
        pending: list[dict[str, Any]] = []
        n = 0

        def flush(rows: list[dict[str, Any]], split: str = split, parts: list[Path] = parts) -> None:
            table = pa.Table.from_pylist(rows, storage).cast(schema)
            report.split_bytes[split] += table.nbytes
            path = data / f"{split}-{len(parts):05d}.tmp.parquet"
            written.append(path)
            pq.write_table(table, path, compression="zstd")
            parts.append(path)

        for batch in dataset.to_batches(filter=flt, batch_size=5_000):
            pending += _rows(pa.Table.from_batches([batch]), cfg.style, report)
            while len(pending) >= cfg.shard_rows:
                flush(pending[: cfg.shard_rows])
                n += cfg.shard_rows
                pending = pending[cfg.shard_rows :]
        if pending or not parts:
            flush(pending)
            n += len(pending)
        for k, tmp in enumerate(parts):  # the shard count is known only now
            final = data / f"{split}-{k:05d}-of-{len(parts):05d}.parquet"
            written.append(final)
            tmp.rename(final)
            report.files.append(str(final.relative_to(cfg.out_dir)))
            report.sha256[final.relative_to(cfg.out_dir).as_posix()] = _sha256(final)
        report.splits[split] = n
    written += [cfg.out_dir / CARD, cfg.out_dir / REPORT]
    (cfg.out_dir / CARD).write_text(dataset_card(cfg, feats, report))
    report.sha256[CARD] = _sha256(cfg.out_dir / CARD)
    (cfg.out_dir / REPORT).write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return report


def _loss_summary(run: Path) -> str:
    path = run / "summary.json"
    if not path.is_file():
        return "No run summary (summary.json) was found.\n"
    s = json.loads(path.read_text())
    lines = [
        f"Converted by chatlake to `{s.get('target')}`: read {s.get('read')}, written {s.get('written')}, "
        f"rejected {s.get('rejected')}; {s.get('records_with_losses')} written records lost something.",
        "",
        "| loss kind | losses |",
        "|---|---:|",
        *(f"| {k} | {v} |" for k, v in (s.get("losses_by_kind") or {}).items()),
    ]
    return "\n".join(lines) + "\n"


ARGUMENTS_NOTE = {
    "trl": "Tool-call `function.arguments` are objects stored with the `Json` feature.\n\n",
    "openai": "Tool-call `function.arguments` are JSON strings (OpenAI fine-tuning format).\n\n",
}


def dataset_card(cfg: ExportConfig, feats: Any, report: ExportReport) -> str:
    """README.md: YAML metadata the Hub and ``load_dataset`` read, then the human part."""
    import yaml  # comes with datasets

    meta = {
        "license": "other",  # placeholder: set the dataset's real license before publishing
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": s, "path": f"data/{s}-*"} for s in report.splits],
            }
        ],
        "dataset_info": {
            "features": feats._to_yaml_list(),
            "splits": [
                {"name": s, "num_bytes": report.split_bytes[s], "num_examples": n}
                for s, n in report.splits.items()
            ],
        },
        "tags": ["conversational", "chatlake"],
    }
    excluded = "".join(f"- {n} x {why}\n" for why, n in report.excluded.most_common()) or "- none\n"
    return (
        "---\n"
        + yaml.safe_dump(meta, sort_keys=False)
        + "---\n\n"
        + "# Dataset card\n\n"
        + "**License: placeholder (`other`)** -- set the real license before publishing.\n\n"
        + f"Exported by `chatlake export-hf` (style `{cfg.style}`) from a chatlake run. Rows: "
        + "`conversation_id`, `messages` (TRL conversational format), `tools` (JSON). "
        + ARGUMENTS_NOTE[cfg.style]
        + "## Splits\n\n"
        + "".join(f"- `{s}`: {n} rows\n" for s, n in report.splits.items())
        + "\n## Excluded from the export\n\n" + excluded
        + "\n## Conversion losses (the run)\n\n" + _loss_summary(cfg.run)
    )  # fmt: skip


def check_token(repo_id: str) -> str:
    """Check the configured Hugging Face token with the Hub (``whoami``) before anything is written.

    Returns the account name. ConfigError when there is no token or the Hub refuses it (fix the
    login), RuntimeError when the Hub cannot be reached; neither message shows the token.
    """
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError

    if get_token() is None:
        raise ConfigError("--push needs a Hugging Face token: run `hf auth login` or set HF_TOKEN")
    try:
        who = HfApi().whoami()
    except HfHubHTTPError as e:
        status = getattr(e.response, "status_code", None)
        if status in (401, 403):
            raise ConfigError(
                f"the Hugging Face Hub refused the token (HTTP {status}); run `hf auth login` again "
                f"or set HF_TOKEN to a token that can write to datasets/{repo_id}"
            ) from None
        raise RuntimeError(f"could not check the token with the Hugging Face Hub (HTTP {status})") from None
    except Exception as e:  # no network, DNS, proxy, offline mode: many types; the message says which
        raise RuntimeError(
            f"could not reach the Hugging Face Hub to check the token ({type(e).__name__}); nothing "
            "was written: check the network, or export without --push and upload later"
        ) from None
    return str(who.get("name", "?"))


def push(out_dir: Path, repo_id: str, *, dry_run: bool = False) -> str:
    """Upload ``out_dir`` to the Hub dataset ``repo_id``; the token comes from huggingface_hub's config.

    ``dry_run`` checks everything but the upload and returns what would be done. Fails with a
    ConfigError (never printing the token) when no token is configured or the Hub cannot be reached.
    """
    from huggingface_hub import HfApi, get_token

    files = sorted(str(p.relative_to(out_dir)) for p in out_dir.rglob("*") if p.is_file())
    if get_token() is None:
        raise ConfigError("--push needs a Hugging Face token: run `hf auth login` or set HF_TOKEN")
    plan = f"would upload {len(files)} files to datasets/{repo_id}"
    if dry_run:
        return plan
    api = HfApi()
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
        api.upload_folder(folder_path=str(out_dir), repo_id=repo_id, repo_type="dataset")
    except Exception as e:  # network errors come in many types; the message says which
        raise RuntimeError(
            f"upload to datasets/{repo_id} failed ({type(e).__name__}); is the Hub reachable?"
        ) from None
    return f"uploaded {len(files)} files to datasets/{repo_id}"
