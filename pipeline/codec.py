"""Which exact codec decodes wire formats: the compiled one (``pipeline._native``) or pure Python.

Both give byte-identical tables (tests/native/test_differential.py); the compiled one is faster.
The same switch governs the compiled encoders, Responses / Anthropic -> Chat, Chat / Anthropic ->
Responses, Responses / Chat -> Anthropic, Responses / Chat -> HF and each format back to itself
(:func:`native_encoder`, used by ``pipeline.encoders.encode_rows``; tests/native/test_encode_differential.py,
test_encode_responses_differential.py, test_encode_anthropic_differential.py,
test_encode_anthropic_source_differential.py, test_encode_same_differential.py,
test_encode_hf_differential.py).
It is used when the extension was built (``pip install`` compiles it when a C compiler is there;
wheels ship it) and ``CHATLAKE_NATIVE`` is not ``0``. ``chatlake doctor`` prints :func:`status`.

>>> status().native in (True, False)
True
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

# Wire formats the compiled decoder handles; the others always decode in Python.
NATIVE_FORMATS = frozenset({"responses", "chat", "anthropic"})
ENV = "CHATLAKE_NATIVE"
# The compiled encoders: target -> the extension's functions that encode to it, each with the source
# formats of the rows it takes (every other row it hands back to the per-record encoders). The
# cross-format ones take request bodies; the same-format ones (encode_same.c) request bodies and
# response objects of the target's own format.
NATIVE_ENCODERS: dict[str, tuple[tuple[str, frozenset[str]], ...]] = {
    "chat": (
        ("encode_chat", frozenset({"responses", "anthropic"})),
        ("encode_same_chat", frozenset({"chat"})),
    ),
    "responses": (
        ("encode_responses", frozenset({"chat", "anthropic"})),
        ("encode_same_responses", frozenset({"responses"})),
    ),
    "anthropic": (
        ("encode_anthropic", frozenset({"responses", "chat"})),
        ("encode_same_anthropic", frozenset({"anthropic"})),
    ),
    "hf": (("encode_hf", frozenset({"responses", "chat"})),),
}


@dataclass(frozen=True)
class CodecStatus:
    """The active codec and why, for ``chatlake doctor`` and bug reports."""

    native: bool
    reason: str
    formats: frozenset[str] = frozenset()

    def name(self) -> str:
        """The active codec in a few words, for ``chatlake --version``: no paths, no reasons."""
        if self.native:
            return "compiled (C over yyjson)"
        return "pure Python (`chatlake doctor` says why)"

    def describe(self) -> str:
        if self.native:
            return (
                f"native (compiled) for {', '.join(sorted(self.formats))}; python for the rest: {self.reason}"
            )
        return f"python: {self.reason}"


def _extension() -> tuple[ModuleType | None, str]:
    try:
        from pipeline import _native
    except ImportError as e:
        return None, f"the compiled extension pipeline._native cannot be loaded ({e})"
    # pipeline/_native/ holds the C sources; without the built module it imports as an empty
    # namespace package, so check for the function itself
    if not hasattr(_native, "decode_lines"):
        return None, "the compiled extension pipeline._native is not built (no C compiler at install?)"
    return _native, f"pipeline._native {_native.__file__} (yyjson {_native.YYJSON_VERSION})"


def status() -> CodecStatus:
    """The codec :func:`pipeline.formats.decode_lines` uses now (reads ``CHATLAKE_NATIVE`` each call)."""
    if os.environ.get(ENV, "").strip() == "0":
        return CodecStatus(False, f"{ENV}=0 forces the pure-Python codec")
    module, why = _extension()
    if module is None:
        return CodecStatus(False, why)
    return CodecStatus(True, why, NATIVE_FORMATS)


def native_module(fmt: str) -> ModuleType | None:
    """The compiled extension when it is active and decodes ``fmt``, else None."""
    if fmt not in NATIVE_FORMATS or os.environ.get(ENV, "").strip() == "0":
        return None
    return _extension()[0]


def native_encoder(target: str) -> tuple[tuple[Callable[[Any], Any], frozenset[str]], ...] | None:
    """The compiled encoders to ``target``, each with the source formats it takes, when the extension
    is active and has any (:data:`NATIVE_ENCODERS`), else None."""
    if target not in NATIVE_ENCODERS or os.environ.get(ENV, "").strip() == "0":
        return None
    module = _extension()[0]
    if module is None:
        return None
    found = tuple(
        (getattr(module, name), sources) for name, sources in NATIVE_ENCODERS[target] if hasattr(module, name)
    )
    return found or None


def native_lines() -> ModuleType | None:
    """The compiled extension when it is active and writes JSON Lines out of Arrow columns
    (``lines.c``: ``json_lines``, ``join_lines``), else None (Polars / Arrow write them: the reference)."""
    if os.environ.get(ENV, "").strip() == "0":
        return None
    module = _extension()[0]
    return module if module is not None and hasattr(module, "json_lines") else None


def native_fingerprints() -> ModuleType | None:
    """The compiled extension when it is active and computes item fingerprints (``fingerprint.c``), else
    None (DuckDB computes them: :mod:`pipeline.fingerprint`, the reference)."""
    if os.environ.get(ENV, "").strip() == "0":
        return None
    module = _extension()[0]
    return module if module is not None and hasattr(module, "fingerprints") else None
