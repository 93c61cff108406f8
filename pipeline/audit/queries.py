"""The audit queries of ``sql/``: one question per file, loaded with its header, run with bound parameters.

A query file starts with a header comment that the runner reads::

    -- question: Which written records lost the most, and what did they lose?
    -- result: at most $n rows, most losses first: conversation_id VARCHAR, losses BIGINT, ...
    -- params:
    -- param: n INTEGER 0.. = 10: how many records to list

``param`` lines declare each named parameter (``$n`` in the SQL) with a DuckDB type, optionally an
allowed range (``LOW..HIGH``, either side may be left out; an integer is always within its type's
range), a default and a description. Values given on the command line are strings; they are
converted to the declared type here and *bound* by DuckDB (``con.execute(sql, {"n": 10})``),
never formatted into the SQL.

>>> q = load_query("worst_records")                                        # doctest: +SKIP
>>> q.params["n"].default, q.bind({"n": "3"})                              # doctest: +SKIP
(10, {'n': 3})
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from pipeline.bundled import resource_dir
from pipeline.errors import ConfigError, a_or_an

# DuckDB type -> how a command-line string becomes a value of it
_CONVERTERS: dict[str, Any] = {
    "INTEGER": int,
    "BIGINT": int,
    "DOUBLE": float,
    "VARCHAR": str,
    "BOOLEAN": lambda s: {"true": True, "false": False}[s.lower()],
}
# the range DuckDB can bind for each integer type; a declared range (``n INTEGER 0.. = 10``) narrows it
_INT_RANGES = {"INTEGER": (-(2**31), 2**31 - 1), "BIGINT": (-(2**63), 2**63 - 1)}
_PARAM = re.compile(r"^param:\s*(\w+)\s+(\w+)(?:\s+(-?\d*)\.\.(-?\d*))?\s*=\s*(.*?):\s*(.*)$")


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: Any
    description: str
    low: int | None = None  # the allowed range of an integer parameter (inclusive)
    high: int | None = None

    def convert(self, text: str) -> Any:
        try:
            value = _CONVERTERS[self.type](text)
        except (ValueError, KeyError):
            raise ConfigError(f"--param {self.name}={text!r}: expected {a_or_an(self.type)} value") from None
        if self.type in _INT_RANGES:
            low, high = _INT_RANGES[self.type]
            low, high = max(low, self.low if self.low is not None else low), min(
                high, self.high if self.high is not None else high)  # fmt: skip
            if not low <= value <= high:
                raise ConfigError(
                    f"--param {self.name}={text}: out of range; {self.name} is {a_or_an(self.type)} "
                    f"from {low} to {high}"
                )
        return value


@dataclass(frozen=True)
class Query:
    """One ``sql/NAME.sql`` file: its name, header and text."""

    name: str
    question: str
    result: str
    sql: str
    params: dict[str, Param] = field(default_factory=dict)

    @property
    def is_audit(self) -> bool:
        """An audit query returns offending rows: no rows means healthy."""
        return "an audit" in self.question

    def bind(self, given: dict[str, str] | None = None) -> dict[str, Any]:
        """Values for every declared parameter: the given strings converted, else the defaults."""
        given = dict(given or {})
        unknown = sorted(set(given) - set(self.params))
        if unknown:
            known = ", ".join(self.params) or "none"
            raise ConfigError(
                f"query {self.name!r} has no parameter {unknown[0]!r} (its parameters: {known})"
            )
        return {n: p.convert(given[n]) if n in given else p.default for n, p in self.params.items()}

    def run(self, con: duckdb.DuckDBPyConnection, params: dict[str, str] | None = None) -> pa.Table:
        """Run on a connection with the run's views defined; the result as an Arrow table."""
        values = self.bind(params)
        return con.sql(self.sql, params=values or None).to_arrow_table()


def run_queries(
    con: duckdb.DuckDBPyConnection, run: Path, queries: list[Query], params: dict[str, str] | None = None
) -> tuple[dict[str, pa.Table], dict[str, str]]:
    """Run ``queries`` on the views of ``run``: their results, and, by name, why each query that
    needs a view this run cannot have did not run (a single-file output in a wire format has no
    canonical table: pipeline/audit/views.py, :func:`~pipeline.audit.views.not_available`)."""
    from pipeline.audit.views import not_available

    given = params or {}
    results: dict[str, pa.Table] = {}
    missing: dict[str, str] = {}
    for q in queries:
        try:
            results[q.name] = q.run(con, {k: v for k, v in given.items() if k in q.params})
        except duckdb.CatalogException as e:
            why = not_available(run, e)
            if why is None:
                raise
            missing[q.name] = why
    return results, missing


def parse_query(name: str, text: str) -> Query:
    """Read the header comment of a query file (see the module docstring)."""
    sections: dict[str, list[str]] = {"question": [], "result": []}
    params: dict[str, Param] = {}
    current: str | None = None
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        body = line[2:].strip()
        if m := _PARAM.match(body):
            pname, ptype, lo, hi, default, desc = m.groups()
            if ptype not in _CONVERTERS:
                raise ValueError(f"sql/{name}.sql: parameter {pname} has unsupported type {ptype}")
            if (lo or hi) and ptype not in _INT_RANGES:
                raise ValueError(f"sql/{name}.sql: parameter {pname}: a range needs an integer type")
            bounds = (int(lo) if lo else None, int(hi) if hi else None)
            proto = Param(pname, ptype, None, desc, *bounds)
            params[pname] = Param(pname, ptype, proto.convert(default), desc, *bounds)
            current = None
        elif (key := body.split(":", 1)[0]) in sections and ":" in body:
            current = key
            sections[key].append(body.split(":", 1)[1].strip())
        elif key == "params":
            current = None
        elif current is not None:
            sections[current].append(body)
    if not sections["question"] or not sections["result"]:
        raise ValueError(f"sql/{name}.sql: the header must have '-- question:' and '-- result:' lines")
    return Query(name, " ".join(sections["question"]), " ".join(sections["result"]), text, params)


def load_query(name: str, sql_dir: Path | None = None) -> Query:
    """The query ``sql_dir/NAME.sql`` (default: chatlake's own ``sql/``, :mod:`pipeline.bundled`);
    ConfigError listing the known names when there is none."""
    sql_dir = sql_dir or resource_dir("sql")
    # Only the names of sql_dir's files: a name with a separator or '..' would read any .sql file.
    if name not in query_names(sql_dir):
        raise ConfigError(f"no audit query {name!r}; known queries: {', '.join(query_names(sql_dir))}")
    path = sql_dir / f"{name}.sql"
    return parse_query(name, path.read_text())


def query_names(sql_dir: Path | None = None) -> list[str]:
    """Every query in ``sql_dir`` (default: chatlake's own), sorted by name."""
    return sorted(p.stem for p in (sql_dir or resource_dir("sql")).glob("*.sql"))


def load_queries(names: list[str] | None = None, sql_dir: Path | None = None) -> list[Query]:
    """The named queries (all of them when ``names`` is empty), in the order given or by name.

    An empty folder is an error, not an empty audit: an audit that runs no query would report a
    healthy run it never looked at.
    """
    sql_dir = sql_dir or resource_dir("sql")
    names = names or query_names(sql_dir)
    if not names:
        raise FileNotFoundError(f"no audit queries (*.sql) in {sql_dir}: reinstall chatlake")
    return [load_query(n, sql_dir) for n in names]
