"""tools/ci_mode.py: one reading of CI for the preflight, the tests and (the same rule) the Makefile."""

from __future__ import annotations

import subprocess
from pathlib import Path

import ci_mode
import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("value", ["true", "TRUE", "1", "yes", "on", "github"])
def test_set_means_ci(value):
    assert ci_mode.under_ci({"CI": value})


@pytest.mark.parametrize("value", ["", "0", "false", "False", "NO", " no "])
def test_unset_empty_or_false_is_not_ci(value):
    assert not ci_mode.under_ci({"CI": value})
    assert not ci_mode.under_ci({})


@pytest.mark.parametrize("value, fails", [("true", True), ("On", True), ("FALSE", False), ("no", False), ("", False)])
def test_the_makefile_reads_ci_the_same_way(value, fails):
    shown = subprocess.run(["make", "-s", "-f", str(REPO / "Makefile"), "--eval", "show-ci: ; @$(SKIP_OR_FAIL)",
                            "show-ci", f"CI={value}"], capture_output=True, text=True, check=False, timeout=60)
    assert (shown.returncode != 0) is fails, shown
    assert ci_mode.under_ci({"CI": value}) is fails
