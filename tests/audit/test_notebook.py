"""notebooks/audit.ipynb executes end to end on the fixture run (nbclient), so it cannot rot."""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient

from pipeline.catalog import Catalog
from tests.audit.fixture import REPO, FixtureRun

NOTEBOOK = REPO / "notebooks" / "audit.ipynb"


def test_notebook_defines_no_logic() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            tree = ast.parse(cell.source)
            assert not [
                n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.Lambda)
            ]


@pytest.mark.parametrize("how", ["CHATLAKE_RUN", "latest run in the catalog, from notebooks/"])
def test_notebook_executes(
    fixture_run: FixtureRun, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, how: str
) -> None:
    if how == "CHATLAKE_RUN":
        monkeypatch.setenv("CHATLAKE_RUN", str(fixture_run.path))  # the kernel inherits the environment
        where = tmp_path
    else:  # out of the box: opened in notebooks/, nothing set; the per-user catalog is the test's
        monkeypatch.delenv("CHATLAKE_RUN", raising=False)
        Catalog().start("r1", "fixture", str(fixture_run.path), "local", "2026-01-01T00:00:00Z", "")
        where = NOTEBOOK.parent
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # The kernel talks over Unix sockets in a directory of its own, not TCP ports: a free port that
    # jupyter_client picks can be taken by another process (the other xdist worker's servers and
    # connections) before the kernel binds it ("Address already in use", a kernel that never starts).
    with tempfile.TemporaryDirectory(prefix="chatlake-kernel-") as sockets:  # a short path: 107 bytes at most
        km = AsyncKernelManager(kernel_name="python3", transport="ipc", ip=str(Path(sockets) / "k"))
        NotebookClient(nb, km=km, timeout=300, resources={"metadata": {"path": str(where)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(str(o.get("data", {}).get("text/markdown", "")) for o in outputs)
    assert "### worst_records" in text and "### tool_pairing_problems" in text
    assert sum("image/svg+xml" in o.get("data", {}) for o in outputs) == 4
    assert str(fixture_run.path) in str(nb.cells[1].outputs[0]["data"]["text/plain"])  # the run it opened
