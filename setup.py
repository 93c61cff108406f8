"""Build of chatlake's one compiled piece, ``pipeline._native`` (plain C over the vendored yyjson).

The extension is optional: when it cannot be compiled (no C compiler, no Python headers) the
install still succeeds, with one warning, and chatlake runs its pure-Python codec (see
``pipeline/codec.py`` and ``chatlake doctor``). Wheel builds set ``CHATLAKE_REQUIRE_NATIVE=1`` so a
wheel without the extension is never published by mistake.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

WARNING = (
    "WARNING: chatlake's compiled decoder (pipeline._native) could not be built ({error}); "
    "chatlake is installed with its pure-Python codec, which is exact but slower. "
    "Install a C compiler and the Python headers, or a chatlake wheel, for the fast path."
)


class OptionalBuildExt(build_ext):
    """build_ext that turns a failed compile into a warning unless CHATLAKE_REQUIRE_NATIVE=1."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler at all surfaces here (DistutilsPlatformError, ...)
            self._give_up(e)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # CompileError, LinkError, a compiler that is not there (OSError)
            self._give_up(e)

    def _give_up(self, error: Exception) -> None:
        if os.environ.get("CHATLAKE_REQUIRE_NATIVE") == "1":
            raise error
        # once: after a failed compile, an in-place build also fails to copy the missing module
        if not getattr(self, "_warned", False):
            self._warned = True
            print(WARNING.format(error=f"{type(error).__name__}: {error}"), file=sys.stderr)


# Files a command reads at run time, kept at the repository's top level (the one copy anybody edits) and
# copied into the built package as pipeline/_bundled/NAME/ (pipeline/bundled.py finds them in either
# place). Keep in step with pipeline.bundled.RESOURCES (tests/test_bundled.py checks that they agree).
BUNDLED = {"sql": ("sql", "*.sql"), "jobs": ("jobs", "sample.toml"), "data": ("data", "sample-*.jsonl")}


class BuildPyWithBundled(build_py):
    """build_py that also copies the bundled files into the built package (wheels and plain installs).

    An editable install reads them from the repository itself, so nothing is copied there.
    """

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        root = Path(__file__).resolve().parent
        for name, (folder, pattern) in BUNDLED.items():
            files = sorted((root / folder).glob(pattern))
            if not files:  # an sdist without them would build a wheel whose audit prints nothing
                raise RuntimeError(f"no {folder}/{pattern} to bundle: the source tree is incomplete")
            target = Path(self.build_lib) / "pipeline" / "_bundled" / name
            target.mkdir(parents=True, exist_ok=True)
            for f in files:
                shutil.copyfile(f, target / f.name)


setup(
    ext_modules=[
        Extension(
            "pipeline._native",
            sources=[
                "pipeline/_native/decode.c",
                "pipeline/_native/encode.c",
                "pipeline/_native/encode_responses.c",
                "pipeline/_native/fingerprint.c",
                "pipeline/_native/md5.c",
                "pipeline/_native/encode_anthropic.c",
                "pipeline/_native/encode_same.c",
                "pipeline/_native/encode_hf.c",
                "pipeline/_native/lines.c",
                "pipeline/_native/anthropic_round_trip.c",
                "pipeline/_native/vendor/yyjson/yyjson.c",
            ],
            include_dirs=["pipeline/_native"],
            depends=[
                "pipeline/_native/vendor/yyjson/yyjson.h",
                "pipeline/_native/buf.h",
                "pipeline/_native/orjson_escape.h",
                "pipeline/_native/orjson_number.h",
                "pipeline/_native/encode_common.h",
                "pipeline/_native/anthropic_turns.h",
                "pipeline/_native/anthropic_round_trip.h",
                "pipeline/_native/blake2b.h",
                "pipeline/_native/md5.h",
            ],
            # yyjson's writer, mutable documents and JSON Pointer are not used by the decoder
            define_macros=[("YYJSON_DISABLE_WRITER", "1"), ("YYJSON_DISABLE_UTILS", "1")],
            extra_compile_args=["-O2", "-std=c11"] if os.name != "nt" else [],
            optional=False,  # OptionalBuildExt decides (optional=True would hide the reason)
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyWithBundled},
)
