"""Render an audit report in headless Chromium and save a PNG screenshot (a look, not a test).

    python benchmarks/screenshot_report.py RUN_DIR --out report.png       # a real run
    python benchmarks/screenshot_report.py --fixture --out report.png     # the test fixture run

Needs Debian's chromium (``apt-get install -y chromium``). The browser runs with a fresh profile,
no sandbox (root in a container), and every background network feature off, so opening the
report proves it renders from the one file alone.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
)


def chromium() -> str | None:
    """The Chromium executable, or None when it is not installed."""
    return next((p for n in ("chromium", "chromium-browser") if (p := shutil.which(n))), None)


def screenshot(html: Path, png: Path, width: int = 1200, height: int = 2400, timeout: float = 120) -> None:
    """Load ``html`` from disk in headless Chromium and write the page to ``png``."""
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium is not installed: apt-get install -y chromium")
    with tempfile.TemporaryDirectory(prefix="chatlake-chromium-") as profile:
        cmd = [
            exe,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={png.resolve()}",
            html.resolve().as_uri(),
        ]
        subprocess.run(cmd, check=True, capture_output=True, timeout=timeout)
    if not png.is_file() or png.stat().st_size == 0:
        raise RuntimeError(f"chromium wrote no screenshot to {png}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", nargs="?", type=Path, help="run directory")
    ap.add_argument("--fixture", action="store_true", help="build the test fixture run and use it")
    ap.add_argument("--out", type=Path, default=Path("report.png"))
    ap.add_argument("--height", type=int, default=2400)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from pipeline.audit import open_run
    from pipeline.audit.report import build_report

    with tempfile.TemporaryDirectory(prefix="chatlake-report-") as tmp:
        run = args.run
        if args.fixture:
            from tests.audit.fixture import build_run

            run = build_run(Path(tmp) / "run", Path(tmp) / "inputs").path
        if run is None:
            ap.error("give a RUN directory or --fixture")
        html = Path(tmp) / "report.html"
        html.write_text(build_report(open_run(run)))
        screenshot(html, args.out, height=args.height)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
