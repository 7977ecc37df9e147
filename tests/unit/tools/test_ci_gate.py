"""Under CI=true a skipped test fails the run (tests/conftest.py); elsewhere it stays a loud skip.

Each case runs a real pytest in a child process with the project's conftest loaded as a plugin.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

SKIPPING = '''
import pytest

def test_needs_a_test_bed():
    pytest.skip("REAL SLURM TESTS SKIPPED: not root")

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_failure():
    assert False
'''

SKIPPED_MODULE = '''
import pytest
pytest.importorskip("no_such_module_for_the_ci_gate")

def test_never_collected():
    pass
'''


def run_pytest(tmp_path, source, ci):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_case.py").write_text(source)
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
                           "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), "-rA",
                           str(tmp_path / "test_case.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("ci", ["true", "1"])
def test_a_skip_is_a_failure_under_ci(tmp_path, ci):
    done = run_pytest(tmp_path, SKIPPING, ci)
    assert done.returncode == 1, done.stdout
    assert "1 failed, 1 xfailed" in done.stdout
    assert "skipped under CI=true, where every suite must run: REAL SLURM TESTS SKIPPED: not root" in done.stdout


def test_a_module_skipped_at_collection_is_a_failure_under_ci(tmp_path):
    done = run_pytest(tmp_path, SKIPPED_MODULE, "true")
    assert done.returncode != 0, done.stdout
    assert "skipped under CI=true" in done.stdout and "no_such_module_for_the_ci_gate" in done.stdout


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_outside_ci_a_skip_stays_a_skip(tmp_path, ci):
    done = run_pytest(tmp_path, SKIPPING, ci)
    assert done.returncode == 0, done.stdout
    assert "1 skipped, 1 xfailed" in done.stdout
