"""Files chatlake ships beside its code: the ``sql/`` audit queries and the quick start's job and data.

In the repository they live at its top level (``sql/``, ``jobs/sample.toml``, ``data/sample-*.jsonl``),
the one copy anybody edits. A built wheel carries them as package data under ``pipeline/_bundled/``
(``setup.py``'s build step copies them there; nothing is copied in the repository). This module finds
them in either place, the package's own copy first, so an installed chatlake never reads a
stranger's ``sql/`` folder that happens to sit beside it in site-packages.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
BUNDLED = PACKAGE / "_bundled"  # what a wheel holds (gitignored in the repository)
CHECKOUT = PACKAGE.parent  # a source checkout or an editable install: the repository's top level

# name inside _bundled/ -> (path in the repository, glob of the files it holds); setup.py copies these
RESOURCES: dict[str, tuple[str, str]] = {
    "sql": ("sql", "*.sql"),
    "jobs": ("jobs", "sample.toml"),
    "data": ("data", "sample-*.jsonl"),
}


def resource_dir(name: str) -> Path:
    """The folder of bundled resource ``name`` (a key of :data:`RESOURCES`).

    The wheel's copy when the package has one, else the repository's folder. Raises
    FileNotFoundError naming both places when neither exists (a broken install), so a command
    never goes on as if there were nothing to read.
    """
    installed = BUNDLED / name
    if installed.is_dir():
        return installed
    source = CHECKOUT / RESOURCES[name][0]
    if source.is_dir() and (CHECKOUT / "pyproject.toml").is_file():
        return source
    raise FileNotFoundError(
        f"chatlake's {name}/ files are missing: neither {installed} nor {source} exists; "
        "reinstall chatlake (pip install --force-reinstall chatlake)"
    )


def resource_files(name: str) -> list[Path]:
    """The files of bundled resource ``name``, sorted by name."""
    return sorted(resource_dir(name).glob(RESOURCES[name][1]))
