"""The job file, as written: a TOML document validated by pydantic models (nothing resolved yet).

```toml
name = "eval-to-chat"

[[inputs]]
path = ["data/*.jsonl"]      # paths, globs or fsspec URLs (one string or a list)
format = "responses"         # a wire format, "canonical" (chatlake Parquet), a source name, or "auto"

[[steps]]                    # the transforms, in order: a table with name + parameters ...
name = "role_swap"
# steps = ["role_swap", "turns:max=3"]   # ... or parse_step() strings

[output]
path = "runs/eval-chat"      # the run directory (docs/run-layout.md)
target = "chat"              # a wire format, or "parquet" (conversations/ only)
shard_records = 10000        # input records (lines) per shard

[set]                        # top-level request fields to set in every record (docs/conversion.md)
max_tokens = 4096            # the target's own names: model, and max_tokens (anthropic) /
model = "claude-sonnet-4-5"  # max_completion_tokens (chat) / max_output_tokens (responses)

[loss]
on_loss = "allow"            # or "reject"; allow = ["item_id"] accepts those kinds under reject
max_rejected_share = 0.5     # fail (exit 1) when more than this share of the records is rejected
                             # (unset: fail only when every record read was rejected)
strict_inputs = false        # true: refuse a file no reader recognises (exit 2) instead of
                             # rejecting it whole (stage "detect") and reading the others

[engine]
kind = "local"               # or "ray"
workers = 2
pool = "auto"                # local: "threads", "processes", or auto (threads when the compiled
                             # codec is active, processes on the pure-Python codec)
```
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# JSONL bytes per batch. Each batch pays a fixed cost (Polars planning of the steps, dozens of
# Arrow calls, one Parquet row group per file): 32 MB batches (~6,000 Responses records) cost ~20 %
# less CPU per record than 8 MB ones, for ~300 MB more memory per worker (docs/internals/profile.md).
DEFAULT_CHUNK_BYTES = 32 << 20
# The two-stage (threads) job: stage 1 holds one batch, not its shard, so its shards are made
# ceil(P / STAGE1_SPREAD) times the job's: about STAGE1_SPREAD x (a partition's records /
# shard_records) stage-1 shards, whatever P (engine/partition.py; part of a job's fingerprint).
STAGE1_SPREAD = 8


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputSpec(_Strict):
    """One group of inputs read with the same format and options."""

    path: list[str] = Field(min_length=1)
    format: str
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("path", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class OutputSpec(_Strict):
    path: str
    target: str = "parquet"
    shard_records: int = Field(default=10_000, ge=1)


class LossSpec(_Strict):
    on_loss: Literal["allow", "reject"] = "allow"
    allow: list[str] = Field(default_factory=list)
    max_rejected_share: float | None = Field(default=None, ge=0, le=1)
    # refuse (exit 2) an input file no reader recognises (empty, unknown, chatlake's own output)
    # instead of rejecting it whole (stage detect) and reading the others
    strict_inputs: bool = False


class EngineSpec(_Strict):
    kind: Literal["local", "ray"] = "local"
    workers: int = Field(default=2, ge=1, le=512)
    # what the local engine's workers are: threads of the one process, or spawned processes
    # (docs/internals/profile.md, "Threads vs processes", has the measurement behind the default)
    pool: Literal["auto", "processes", "threads"] = "auto"
    chunk_bytes: int = Field(default=DEFAULT_CHUNK_BYTES, ge=1024)
    batch_rows: int = Field(default=5_000, ge=1)
    ray_address: str | None = None  # None: a local Ray, or RAY_ADDRESS when set


class JobSpec(_Strict):
    """The whole job file."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    inputs: list[InputSpec] = Field(min_length=1)
    steps: list[str | dict[str, Any]] = Field(default_factory=list)
    output: OutputSpec
    # [set]: "set" in the file (an alias: a field named set would shadow the builtin in the class)
    sets: dict[str, Any] = Field(default_factory=dict, alias="set")  # checked in resolve (check_sets)
    loss: LossSpec = Field(default_factory=LossSpec)
    engine: EngineSpec = Field(default_factory=EngineSpec)
