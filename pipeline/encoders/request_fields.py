"""Top-level request fields across providers: the user's ``--set FIELD=VALUE`` and the model check.

Both work on the canonical table, column at a time, before or beside the encoders, so the
per-record encoders and the compiled ones see the same table and report the same thing:

* :func:`apply_sets` writes the values a user set (``--set max_tokens=4096``, a job's ``[set]``
  table) into the canonical columns every encoder already reads (``model``; the source format's
  own token-limit key in ``extra_json``), for request rows, and returns one ``set`` addition per
  row and field. :func:`check_sets` says, before any work, which fields a target takes.
* :func:`model_provider_losses` reports a request whose ``model`` names another provider's model
  than the target's (``claude-…`` sent to OpenAI, ``gpt-…`` / ``o1…`` to Anthropic):
  ``model_provider``, a loss, so ``--on-loss reject`` can refuse it and ``--set model=`` fix it.
  ``convert_table`` and ``encode_rows`` both call it.

>>> check_sets({"max_tokens": "4096"}, "anthropic")
{'max_tokens': 4096}
>>> parse_sets(["model=claude-sonnet-4-5", 'max_tokens=4096'])
{'model': 'claude-sonnet-4-5', 'max_tokens': 4096}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa

from pipeline.errors import ConfigError

ROW_LOSSES = pa.schema(
    [pa.field("row", pa.int64()), pa.field("path", pa.string()), pa.field("kind", pa.string()),
     pa.field("detail", pa.string())]
)  # fmt: skip
"""Losses as columns: the row of the batch they belong to, then ``Loss``'s fields."""

# The fields --set takes, per target: the model, and the target's own name for the output token limit.
TOKEN_LIMIT = {"anthropic": "max_tokens", "chat": "max_completion_tokens", "responses": "max_output_tokens"}
SETTABLE: dict[str, tuple[str, ...]] = {target: ("model", key) for target, key in TOKEN_LIMIT.items()}
# Where a source record keeps its token limit: the key every encoder reads (and renames for its
# target: to_chat / to_responses RENAMED_KEYS, to_anthropic TOKEN_KEYS). HF/ShareGPT rows have
# none of their own; a top-level max_tokens is what the encoders read there.
SOURCE_TOKEN_KEY = {
    "responses": "max_output_tokens",
    "chat": "max_completion_tokens",
    "anthropic": "max_tokens",
    "hf": "max_tokens",
    "sharegpt": "max_tokens",
}
TOKEN_NAMES = frozenset(SOURCE_TOKEN_KEY.values())

# Whose model a name is, by prefix; the target formats' providers (HF/ShareGPT rows carry no model).
MODEL_PREFIXES = {
    "OpenAI": r"^(gpt-|chatgpt-|o[1-9]|codex-|computer-use-|davinci|babbage|ft:gpt-)",
    "Anthropic": r"^claude-",
}
TARGET_PROVIDER = {"anthropic": "Anthropic", "chat": "OpenAI", "responses": "OpenAI"}


def parse_value(text: str) -> Any:
    """A ``--set`` value: a JSON scalar (``4096`` an int, ``0.5`` a float, ``true``, ``"x"``), else the
    text itself as a string (``model=gpt-5`` needs no quotes). Objects, lists and null are refused."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    if value is None or isinstance(value, (dict, list)):
        raise ConfigError(f"--set value {text!r} is not a scalar: give a number, true/false or a string")
    return value


def parse_sets(pairs: Sequence[str]) -> dict[str, Any]:
    """``FIELD=VALUE`` strings (``--set``, repeatable) as a mapping; ConfigError on a malformed one."""
    out: dict[str, Any] = {}
    for pair in pairs:
        field, eq, text = pair.partition("=")
        field = field.strip()
        if not eq or not field:
            raise ConfigError(f"--set {pair!r}: write FIELD=VALUE, e.g. --set max_tokens=4096")
        if field in out:
            raise ConfigError(f"--set {field} is given twice; give it once")
        out[field] = parse_value(text)
    return out


def check_sets(sets: Mapping[str, Any], target: str) -> dict[str, Any]:
    """The values to set for ``target``, checked (strings that are JSON scalars parsed): a field the
    target does not take or a value of the wrong type is a ConfigError saying what to write."""
    if not sets:
        return {}
    if target not in SETTABLE:
        raise ConfigError(
            f"set: {target!r} records have no request fields to set; --set works for the "
            f"{', '.join(sorted(SETTABLE))} targets"
        )
    out: dict[str, Any] = {}
    for field, raw in sets.items():
        if not isinstance(raw, (str, int, float, bool)):
            raise ConfigError(f"set: {field} must be a number, true/false or a string, not {raw!r}")
        value = parse_value(raw) if isinstance(raw, str) and field != "model" else raw
        if field not in SETTABLE[target]:
            hint = f" (its token limit is {TOKEN_LIMIT[target]})" if field in TOKEN_NAMES else ""
            raise ConfigError(
                f"set: the {target} target takes {' and '.join(SETTABLE[target])}, not {field!r}{hint}"
            )
        if field == "model" and not (isinstance(value, str) and value):
            raise ConfigError(f"set: model must be a non-empty string, not {raw!r}")
        if field != "model" and not (type(value) is int and value >= 1):
            raise ConfigError(f"set: {field} must be a whole number of tokens >= 1, not {raw!r}")
        out[field] = value
    return out


def apply_sets(table: pa.Table, sets: Mapping[str, Any], target: str) -> tuple[pa.Table, pa.Table]:
    """``table`` with the checked values of :func:`check_sets` written into every request row, and
    one ``set`` addition per row and field (``ROW_LOSSES``), in ``sets`` order.

    ``model`` replaces the ``model`` column; the token limit goes into ``extra_json`` under the row's
    source format's own key (:data:`SOURCE_TOKEN_KEY`), and any other token-limit key of the row is
    removed (else an encoder could carry that one instead). Response objects are left as they are.
    """
    if not sets:
        return table, ROW_LOSSES.empty_table()
    df = pl.from_arrow(table.select(["source_format", "record_kind", "model", "extra_json", "null_fields"]))
    assert isinstance(df, pl.DataFrame)
    request = (df["record_kind"] == "request").to_numpy()
    rows = np.flatnonzero(request)
    added: list[pl.DataFrame] = []
    columns: dict[str, pa.Array] = {}
    nulls = df["null_fields"]
    for field, value in sets.items():
        text = orjson.dumps(value).decode()
        if field == "model":
            old = df["model"]
            df = df.with_columns(pl.when(pl.Series(request)).then(pl.lit(value)).otherwise(pl.col("model"))
                                 .alias("model"))  # fmt: skip
            columns["model"] = df["model"].to_arrow().cast(pa.string())
            had = old.is_not_null() | nulls.list.contains("model").fill_null(False)
            paths = pl.Series(["/model"] * len(df))
            dropped = ["model"]
        else:
            extra, had, keys = _set_token_limit(df, request, text)
            df = df.with_columns(extra.alias("extra_json"))
            columns["extra_json"] = extra.to_arrow().cast(pa.string())
            paths = "/" + keys
            dropped = sorted(TOKEN_NAMES)
        # an explicit null of a field that is now set is gone (null_fields must not name a set key)
        kept = nulls.list.eval(pl.element().filter(~pl.element().is_in(dropped)))
        kept = pl.select(pl.when(kept.list.len() > 0).then(kept)).to_series()  # none left: null, as decoded
        nulls = pl.select(pl.when(pl.Series(request)).then(kept).otherwise(nulls)).to_series()
        detail = pl.select(
            pl.concat_str(pl.lit(f"{field} set to {text} (--set / [set])"),
                          pl.when(had).then(pl.lit(", replacing the source's value")).otherwise(pl.lit("")))
        ).to_series()  # fmt: skip
        one = {"row": rows, "path": paths.gather(rows), "kind": "set", "detail": detail.gather(rows)}
        added.append(pl.DataFrame(one).with_columns(pl.lit(len(added)).alias("field")))
    columns["null_fields"] = nulls.to_arrow().cast(table.schema.field("null_fields").type)
    for name, col in columns.items():
        table = table.set_column(table.schema.get_field_index(name), name, col)
    losses = pl.concat(added).sort(["row", "field"]).select("row", "path", "kind", "detail")
    return table, losses.to_arrow().cast(ROW_LOSSES)


# extra_json is compact JSON written by the decoder (orjson's spelling, no duplicate keys). A JSON
# string, a scalar value, and a top-level member with a scalar value, as regular expressions: a
# token-limit member is cut out with them when every member before it is such a member (so the
# match is at the top level, not inside a nested object).
_STR = r'"(?:[^"\\]|\\.)*"'
_SCALAR = rf"(?:{_STR}|-?[0-9][0-9.eE+-]*|true|false|null)"
_MEMBER = rf"{_STR}:{_SCALAR}"
_TOKEN = "\"(?:" + "|".join(sorted(TOKEN_NAMES)) + ")\":"  # never matches inside a string value
_CUT_INNER = rf"^(\{{(?:{_MEMBER},)*){_TOKEN}{_SCALAR},"  # the member and its comma: keep group 1
_CUT_LAST = rf"^(\{{(?:{_MEMBER}(?:,{_MEMBER})*)?),?{_TOKEN}{_SCALAR}\}}$"  # the last member


def set_token_limit_one(raw: str | None, key: str, text: str) -> tuple[str, bool]:
    """One row's ``extra_json`` with every token-limit key removed and ``key`` set to the JSON
    ``text`` (last), and whether it had a token limit: the reference the vectorised path of
    :func:`_set_token_limit` is tested against, and its fallback for irregular rows."""
    d = orjson.loads(raw) if raw is not None else {}
    had = any(k in d for k in TOKEN_NAMES)
    for k in TOKEN_NAMES:
        d.pop(k, None)
    d[key] = orjson.loads(text)
    return orjson.dumps(d).decode(), had


def _set_token_limit(
    df: pl.DataFrame, request: np.ndarray, text: str
) -> tuple[pl.Series, pl.Series, pl.Series]:
    """``extra_json`` with the token limit ``text`` set in request rows (under the row's
    :data:`SOURCE_TOKEN_KEY`, last, other token-limit keys removed), whether the row had one (or an
    explicit null one), and the key; as :func:`set_token_limit_one` does it for one row.

    Column at a time: a row without a token-limit key gets the member appended; a row with one
    top-level token-limit member with a scalar value after scalar members only (the shape API
    logs have) gets it cut out first. Other rows (a nested object before it, several token keys)
    are rare and go through :func:`set_token_limit_one`.
    """
    keys = df["source_format"].replace_strict(SOURCE_TOKEN_KEY, default="max_tokens", return_dtype=pl.String)
    req = pl.Series(request)
    extra = df["extra_json"]
    count = extra.str.count_matches(_TOKEN).fill_null(0)
    regular = (count == 1) & (extra.str.contains(_CUT_INNER) | extra.str.contains(_CUT_LAST)).fill_null(False)
    cut = extra.str.replace(_CUT_INNER, "${1}").str.replace(_CUT_LAST, "${1}}")
    base = pl.select(pl.when(regular).then(cut).otherwise(extra)).to_series()
    appended = pl.select(
        pl.when(base.is_null() | (base == "{}"))
        .then(pl.concat_str(pl.lit('{"'), keys, pl.lit(f'":{text}}}')))
        .otherwise(pl.concat_str(base.str.head(-1), pl.lit(',"'), keys, pl.lit(f'":{text}}}')))
    ).to_series()
    out = pl.select(pl.when(req).then(appended).otherwise(extra)).to_series()
    had = regular & req
    irregular = np.flatnonzero(((count > 0) & ~regular & req).to_numpy())
    if len(irregular):
        pairs = zip(extra.gather(irregular).to_list(), keys.gather(irregular).to_list(), strict=True)
        fixed = [set_token_limit_one(raw, key, text) for raw, key in pairs]
        out = out.scatter(irregular, [t for t, _ in fixed])
        had = had.scatter(irregular, [h for _, h in fixed])
    nulls = df["null_fields"].list.eval(pl.element().is_in(sorted(TOKEN_NAMES))).list.any().fill_null(False)
    return out, had | (nulls & req), keys


def model_provider_losses(table: pa.Table, target: str) -> pa.Table:
    """One ``model_provider`` loss (``ROW_LOSSES``) per request row converted to ``target`` whose
    model is another provider's (:data:`MODEL_PREFIXES`) than the target's (:data:`TARGET_PROVIDER`).

    Same-format rows are written as they came (nothing is carried anywhere new); HF/ShareGPT
    targets carry no model; a model no prefix names (a local or third-party model) is not reported.
    """
    provider = TARGET_PROVIDER.get(target)
    if provider is None or table.num_rows == 0:
        return ROW_LOSSES.empty_table()
    df = pl.from_arrow(table.select(["source_format", "record_kind", "model"]))
    assert isinstance(df, pl.DataFrame)
    model = pl.col("model")
    others = [(name, pattern) for name, pattern in MODEL_PREFIXES.items() if name != provider]
    owner = pl.coalesce([pl.when(model.str.contains(p)).then(pl.lit(name)) for name, p in others])
    out = (
        df.with_row_index("row")
        .filter(
            (pl.col("record_kind") == "request") & (pl.col("source_format") != target) & owner.is_not_null()
        )
        .select(
            pl.col("row").cast(pl.Int64),
            pl.lit("/model").alias("path"),
            pl.lit("model_provider").alias("kind"),
            pl.concat_str(pl.lit("'"), model, pl.lit("' is an "), owner,
                          pl.lit(f" model: the {provider} API will likely refuse it; replace it with "
                                 "--set model=NAME")).alias("detail"),
        )
    )  # fmt: skip
    return out.to_arrow().cast(ROW_LOSSES)
