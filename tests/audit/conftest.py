"""One fixture run per test session (docs/run-layout.md), shared by the audit, report and export tests."""

from __future__ import annotations

import pytest

from tests.audit.fixture import FixtureRun, build_run


@pytest.fixture(scope="session")
def fixture_run(tmp_path_factory: pytest.TempPathFactory) -> FixtureRun:
    base = tmp_path_factory.mktemp("audit")
    return build_run(base / "run", base / "inputs")
