"""Baselines the codec benchmark compares against, each run as its own process.

python benchmarks/floor.py orjson FILE.jsonl      # orjson loads + dumps per line: the JSON floor
python benchmarks/floor.py pydantic FILE.jsonl [N] # per-record pydantic decode (openai SDK models),
                                                   # the first N lines only when N is given
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


if __name__ == "__main__":
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "pydantic":
        print(pydantic_baseline(path, int(sys.argv[3]) if len(sys.argv) > 3 else None))
    else:
        print(orjson_floor(path))
