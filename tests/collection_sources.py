"""The collection's own Python sources, for the guard tests that read them with ast."""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def python_sources(skip):
    """(path relative to the root, text) of every .py under plugins/ and extensions/ but ``skip``."""
    for top in ("plugins", "extensions"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path.relative_to(ROOT).as_posix() != skip:
                yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")
