"""What the final summary of `make test` says each step ran (tools/step_summary.py)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools"))
import step_summary  # noqa: E402


def lines(text):
    return text.strip("\n").splitlines()


def test_a_pytest_step_gives_pytest_counts_even_coloured():
    log = lines("""
tests/unit/test_x.py ....s
\x1b[32m========== 745 passed, 3 skipped, 2 warnings in 46.12s ==========\x1b[0m
""")
    assert step_summary.describe("units", log) == "ran 745: 745 passed, 0 failed, 3 skipped"


def test_failures_and_errors_are_counted_as_ran():
    log = lines("==== 2 failed, 10 passed, 1 error in 3.00s ====")
    assert step_summary.describe("integration", log) == "ran 13: 10 passed, 2 failed, 0 skipped, 1 errors"


def test_compat_adds_up_each_release_and_counts_its_sanity_tests():
    log = lines("""
==> compat: ansible-core 2.17.14: units
745 passed in 40.0s
Running sanity test "pep8"
Running sanity test 'pylint'
==> compat: ansible-core 2.18.9: units
744 passed, 1 skipped in 41.0s
Running sanity test 'pep8'
""")
    assert step_summary.describe("compat", log) == "ran 1489: 1489 passed, 0 failed, 1 skipped; 3 sanity tests"


def test_the_other_steps():
    assert step_summary.describe("sanity", lines("Running sanity test 'a'\nRunning sanity test 'b'\n")) \
        == "ran 2 ansible-test sanity tests"
    assert step_summary.describe("lint", lines("Passed: 0 failure(s), 0 warning(s) on 210 files.")) \
        == "ansible-lint Passed: 0 failure(s), 0 warning(s) on 210 files."
    assert step_summary.describe("build", lines("build: a\nother\nbuild: b OK\n")) == "2 checks of the built artifact"
    assert step_summary.describe("molecule", lines("molecule: passed: slurm_cluster (500s) imex (120s)")) \
        == "passed: slurm_cluster (500s) imex (120s)"
    assert step_summary.describe("sanity", []) == "no sanity test ran"


def test_the_total_adds_every_pytest_log_in_the_plain_closing_form(tmp_path):
    (tmp_path / "units.log").write_text("==== 10 passed, 1 skipped in 1.0s ====\n")
    (tmp_path / "integration.log").write_text("==== 1 failed, 5 passed, 2 errors in 9.0s ====\n")
    paths = [tmp_path / "units.log", tmp_path / "integration.log", tmp_path / "not-run.log"]
    assert step_summary.total(paths) == "total: 15 passed, 3 failed, 1 skipped"
