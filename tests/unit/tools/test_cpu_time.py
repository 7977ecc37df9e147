"""CPU time per test (tests/cpu_time.py, ``--cpu-durations``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import cpu_time
from tests.cpu_time import CpuCost, Stopwatch

REPO = Path(__file__).resolve().parents[3]

# A child that burns CPU until its own clock says it has used 0.2 s: whatever the machine's load,
# the parent's children's rusage grows by at least that much once it is waited for.
BURN = "import time\nwhile time.process_time() < 0.2:\n    pass\n"


def test_a_waited_for_child_process_is_counted():
    watch = Stopwatch()
    subprocess.run([sys.executable, "-c", BURN], check=True)
    cost = watch.cost("t")
    assert cost.cpu >= 0.2
    assert cost.nodeid == "t"


def test_the_stopwatch_subtracts_what_was_used_before_it_started():
    walls, cpus = iter([10.0, 13.5]), iter([100.0, 104.0])
    watch = Stopwatch(clock=lambda: next(walls), cpu=lambda: next(cpus))
    assert watch.cost("t") == CpuCost("t", 4.0, 3.5)


def test_the_report_lists_the_costliest_first_and_the_total():
    costs = [CpuCost("a", 1.0, 9.0), CpuCost("b", 5.0, 2.0), CpuCost("c", 3.0, 3.0)]
    lines = cpu_time.report(costs, 2)
    assert [line.split()[-1] for line in lines[:2]] == ["b", "c"]
    assert lines[0].split()[:4] == ["5.00s", "cpu", "2.00s", "wall"]
    assert lines[-1] == "3 tests used 9.0 CPU seconds; the 2 above 8.0"
    assert cpu_time.report([], 5) == [] and cpu_time.report(costs, 0) == []


def test_pytest_prints_it_for_a_real_run(tmp_path):
    (tmp_path / "test_burn.py").write_text(
        "import subprocess, sys\n"
        f"def test_burns():\n    subprocess.run([sys.executable, '-c', {BURN!r}], check=True)\n"
        "def test_idle():\n    pass\n")
    # The file is outside tests/, so the project's conftest is loaded as a plugin.
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.conftest",
                          "--rootdir", str(tmp_path), "--cpu-durations=1", str(tmp_path / "test_burn.py")],
                         capture_output=True, text=True, cwd=REPO, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    summary = run.stdout.split("most CPU, top 1", 1)[1].splitlines()[1:3]
    assert summary[0].endswith("test_burn.py::test_burns") and float(summary[0].split("s")[0]) >= 0.2, summary
    assert summary[1].startswith("2 tests used "), summary
