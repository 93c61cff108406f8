"""The Ray Data engine: the same shards and the same :func:`~pipeline.engine.process.run_shard`,
scheduled by ``ray.data`` ``map_batches`` over Arrow batches of shard specs.

Each Ray task reads its shard's input, runs the steps and writes the shard's files into the run
directory, then returns its manifest entry as an Arrow row; the driver writes the manifest. On a
cluster the inputs must be readable from every node (shared storage or fsspec URLs) and the run
directory must be shared storage mounted at the same path on every node; data never passes
through the object store, only shard specs and manifest entries do.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import partial
from typing import Any

import orjson
import pyarrow as pa

from pipeline import codec

from .local import OnDone, OnProgress, Task
from .process import Work, run_shard
from .shards import Shard


def _same_codec(env: str | None) -> None:
    """Make this Ray worker decode with the codec the driver chose (``CHATLAKE_NATIVE``).

    A Ray worker's environment is the cluster's (or that of the driver that started Ray), not the
    driver's now; Ray runs one task at a time per worker process, so setting it per task is safe.
    """
    if env is None:
        os.environ.pop(codec.ENV, None)
    else:
        os.environ[codec.ENV] = env


def _run_batch(batch: pa.Table, work: Work, codec_env: str | None, task: Task = run_shard) -> pa.Table:
    _same_codec(codec_env)
    specs = batch.column("shard").to_pylist()
    entries = [orjson.dumps(task(orjson.loads(spec), work)).decode() for spec in specs]
    return pa.table({"entry": pa.array(entries, pa.string())})


def execute(
    shards: Iterable[Shard],
    work: Work,
    workers: int,
    on_done: OnDone,
    on_progress: OnProgress,
    address: str | None = None,
    task: Task | None = None,
) -> None:
    """Run every shard as a Ray Data task (one shard per block); ``on_done`` as each one finishes.

    ``task`` runs one shard (default :func:`run_shard`; the two-stage job passes its stages')."""
    import ray
    import ray.data

    task = task or run_shard
    specs = [s for s in shards]
    if not specs:
        return
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS")
        if address:  # an existing cluster: its resources, not ours
            ray.init(address=address, log_to_driver=False)
        else:  # a local Ray with as many CPUs as the job has workers
            ray.init(num_cpus=workers, log_to_driver=False, include_dashboard=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    weights = {s.id: s.weight for s in specs}
    items = [{"shard": orjson.dumps(s.to_json()).decode()} for s in specs]
    ds = ray.data.from_items(items, override_num_blocks=len(items))
    run = partial(_run_batch, work=work, codec_env=os.environ.get(codec.ENV), task=task)
    out = ds.map_batches(run, batch_size=1, batch_format="pyarrow", num_cpus=1, zero_copy_batch=True)
    for batch in out.iter_batches(batch_size=None, batch_format="pyarrow"):
        for text in batch.column("entry").to_pylist():
            entry: dict[str, Any] = orjson.loads(text)
            on_progress(entry["read"], weights[entry["id"]])
            on_done(entry)
