"""Compile ``pipeline._native`` straight with gcc into a directory (tests and the fuzzer).

``setup.py`` is the build users get; this is the same sources with flags of one's choosing,
e.g. AddressSanitizer + UndefinedBehaviorSanitizer for ``fuzz_native.py``::

    python tests/native/build_native.py --out /tmp/asan --sanitize

The result is ``<out>/pipeline/_native<EXT_SUFFIX>``; put ``<out>`` before the worktree on
``sys.path`` (with the worktree's ``pipeline`` package) via :func:`overlay_path`.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "pipeline" / "_native"


def setup_sources() -> list[Path]:
    """The extension's C sources, as ``setup.py`` lists them (read from its syntax tree, not run):
    one list, so a new C file cannot be built by pip and missed by the sanitizer build."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "sources":
            return [ROOT / path for path in ast.literal_eval(node.value)]
    raise RuntimeError("setup.py names no sources= for the extension")


SOURCES = setup_sources()
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"]


def build(out: Path, *, sanitize: bool = False, cc: str | None = None) -> Path:
    """Compile the extension into ``out/pipeline/`` and return the path of the shared object."""
    cc = cc or os.environ.get("CC") or shutil.which("gcc") or "cc"
    target = out / "pipeline" / f"_native{sysconfig.get_config_var('EXT_SUFFIX')}"
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = ["-O1", "-g", *SANITIZE] if sanitize else ["-O2"]
    cmd = [
        cc, "-shared", "-fPIC", "-std=c11", "-Wall", "-Wextra", "-Werror=implicit-function-declaration",
        *flags, "-DYYJSON_DISABLE_WRITER=1", "-DYYJSON_DISABLE_UTILS=1",
        f"-I{SRC}", f"-I{sysconfig.get_paths()['include']}",
        *map(str, SOURCES), "-o", str(target),
    ]  # fmt: skip
    subprocess.run(cmd, check=True)
    return target


def libasan() -> str | None:
    """gcc's libasan, to LD_PRELOAD into a Python that loads a sanitized extension (None: absent)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    path = subprocess.run([gcc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="directory to build into")
    ap.add_argument("--sanitize", action="store_true", help="AddressSanitizer + UBSan build")
    args = ap.parse_args()
    print(build(args.out, sanitize=args.sanitize))


if __name__ == "__main__":
    sys.exit(main())
