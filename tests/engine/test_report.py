"""The printed run summary (pipeline/engine/report.py): the shards of a run and how many of them were
resumed say what happened in one figure, across both stages of a threads job."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from pipeline import synth
from pipeline.engine import run_job
from pipeline.engine.report import print_summary, shards_text
from pipeline.jobs import load_job
from tests.engine.helpers import write_job


def _printed(summary: dict[str, Any]) -> str:
    out = io.StringIO()
    print_summary(summary, Console(file=out, width=200))
    return out.getvalue()


def test_a_rerun_says_how_many_of_its_shards_were_resumed(tmp_path: Path) -> None:
    synth.write_jsonl(tmp_path / "in.jsonl", "responses", 60, seed=1)
    output = {"path": "run", "target": "chat", "shard_records": 20}
    job = write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "responses"}], output,
                    engine={"workers": 1})  # fmt: skip
    first = _printed(run_job(load_job(job)))
    header, row = [line for line in first.splitlines() if "┃" in line or "│" in line][:2]
    columns = ["read", "written", "rejected", "shards", "seconds"]
    assert [c.strip() for c in header.split("┃")[1:-1]] == columns
    assert [c.strip() for c in row.split("│")[1:-1]][:4] == ["60", "60", "0", "3"]
    again = _printed(run_job(load_job(job)))
    assert "3 (all resumed)" in again and "resumed" not in first


@pytest.mark.parametrize(
    ("counts", "said"),
    [
        ({"shards": 16}, "16"),
        ({"shards": 16, "shards_resumed": 15}, "16 (15 resumed)"),
        ({"shards": 16, "shards_resumed": 16}, "16 (all resumed)"),
        # a threads job: 15 shards read the input (stage 1), then 1 partition is threaded (stage 2)
        ({"shards": 1, "shards_resumed": 0, "stage1_shards": 15, "stage1_resumed": 15}, "16 (15 resumed)"),
        ({"shards": 1, "shards_resumed": 1, "stage1_shards": 15, "stage1_resumed": 15}, "16 (all resumed)"),
    ],
)
def test_shards_text_counts_every_stage(counts: dict[str, int], said: str) -> None:
    assert shards_text(counts) == said
