"""The export tests use the audit tests' fixture run (one run per session)."""

from tests.audit.conftest import fixture_run

__all__ = ["fixture_run"]
