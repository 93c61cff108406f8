"""The HTML report: static (no script, no external resource), escaped, and it renders in Chromium."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from benchmarks.screenshot_report import chromium, screenshot
from pipeline.audit import open_run
from pipeline.audit.report import build_report
from tests.audit.fixture import FixtureRun
from tests.audit.test_queries import ref_loss_totals_by_kind
from tests.engine.helpers import relist


def test_report_is_one_static_file(fixture_run: FixtureRun) -> None:
    html = build_report(open_run(fixture_run.path))
    assert html.count("<svg") == 4
    assert "<script" not in html
    # no resource is loaded from anywhere: no src/href attributes, no CSS url()
    assert not re.search(r"\s(src|href)=", html)
    assert not re.search(r"url\((?!#)", html)  # only the SVGs' own clip paths (url(#id))
    for r in [r for r in ref_loss_totals_by_kind(fixture_run) if not r["addition"]][:3]:
        assert r["kind"] in html
    assert f"read<b>{fixture_run.read}</b>" in html


def test_report_escapes_data(fixture_run: FixtureRun, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(fixture_run.path, run)
    import pyarrow as pa
    import pyarrow.parquet as pq

    # the first shard with a rejected record (the bundled samples, read first, have none)
    part = next(p for p in sorted((run / "rejected").glob("part-*.parquet")) if pq.read_metadata(p).num_rows)
    t = pq.read_table(part).to_pylist()
    t[0]["reason"] = "<script>alert(1)</script>"
    pq.write_table(pa.Table.from_pylist(t, pq.read_schema(part)), part)
    relist(run)
    html = build_report(open_run(run))
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_report_renders_in_headless_chromium(fixture_run: FixtureRun, tmp_path: Path) -> None:
    if chromium() is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium); the report was not rendered")
    html = tmp_path / "report.html"
    html.write_text(build_report(open_run(fixture_run.path)))
    png = tmp_path / "report.png"
    screenshot(html, png, height=1200)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1200, 1200)
    assert len(data) > 50_000  # a blank page compresses to a few KB; charts and tables do not
