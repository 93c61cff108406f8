"""Baselines the codec benchmark compares against, each run as its own process.

python benchmarks/floor.py orjson FILE.jsonl      # orjson loads + dumps per line: the JSON floor
python benchmarks/floor.py pydantic FILE.jsonl [N] # per-record pydantic decode (openai SDK models),
                                                   # the first N lines only when N is given
python benchmarks/floor.py duckdb FILE.jsonl OUT.parquet  # DuckDB read_json -> Parquet (lossy: keys
                                                   # unified across records, a missing key is null)
python benchmarks/floor.py polars FILE.jsonl OUT.parquet  # Polars scan_ndjson -> sink_parquet
"""

from __future__ import annotations

import sys
from typing import Any


def orjson_floor(path: str) -> int:
    import orjson

    n = 0
    with open(path, "rb") as f:
        for line in f:
            orjson.dumps(orjson.loads(line))
            n += 1
    return n


def pydantic_baseline(path: str, limit: int | None = None) -> int:
    """The naive way: one pydantic model tree per record (the official SDK's own models)."""
    from openai.types.responses import ResponseInputItem
    from pydantic import BaseModel, ConfigDict

    class Body(BaseModel):
        model_config = ConfigDict(extra="allow")
        input: str | list[ResponseInputItem]
        instructions: str | None = None

    from pydantic import ValidationError

    n = failed = 0
    validate = Body.model_validate_json
    with open(path, "rb") as f:
        for line in f:
            if limit is not None and n + failed >= limit:
                break
            try:
                body: Any = validate(line)
            except ValidationError:
                failed += 1
                continue
            body.model_dump(exclude_unset=True)  # keeps missing vs null, as a fair decode must
            n += 1
    if failed:
        print(f"pydantic baseline: {failed} records failed validation", file=sys.stderr)
    return n


def duckdb_parquet(path: str, out: str) -> None:
    """What a user would run to get the records into Parquet with DuckDB (its default settings)."""
    import duckdb

    con = duckdb.connect()
    con.execute("COPY (FROM read_json(?)) TO '" + out.replace("'", "''") + "' (FORMAT parquet)", [path])


def polars_parquet(path: str, out: str) -> int:
    """Polars' way; exits 3 (the contender failed) with its error when it cannot read the records."""
    import polars as pl

    try:
        pl.scan_ndjson(path).sink_parquet(out)
    except Exception as e:  # a schema it cannot unify: the contender fails, the benchmark says why
        print(f"polars: {type(e).__name__}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "duckdb":
        duckdb_parquet(path, sys.argv[3])
    elif kind == "polars":
        sys.exit(polars_parquet(path, sys.argv[3]))
    elif kind == "pydantic":
        print(pydantic_baseline(path, int(sys.argv[3]) if len(sys.argv) > 3 else None))
    else:
        print(orjson_floor(path))
