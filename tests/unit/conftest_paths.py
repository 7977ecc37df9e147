"""Paths of the reference data the unit tests read."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Topograph's models and fixtures, copied unchanged (Apache-2.0, see the README there).
MODELS = FIXTURES = REPO / "tests" / "fixtures" / "topograph"
GOLDEN = REPO / "tests" / "golden"
