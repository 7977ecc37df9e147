"""`make setup` and `make test` as a graph of make targets (tools/run_steps.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools"))
import run_steps  # noqa: E402
from run_steps import Runner, Step  # noqa: E402


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def tick(self):
        self.now += 1.0


class FakeProcess:
    """Finishes with ``returncode`` once the fake clock reaches ``done_at``."""

    def __init__(self, clock, seconds, returncode):
        self.clock, self.done_at, self.code, self.returncode = clock, clock.now + seconds, returncode, None
        self.cpu_seconds = seconds / 2

    def poll(self):
        if self.clock.now >= self.done_at:
            self.returncode = self.code
        return self.returncode


def run(steps, durations, failing=(), cores=2):
    """Run ``steps`` with fake processes; returns the runner and the log of (time, event) it said."""
    clock = FakeClock()
    said = []

    def start(step):
        return FakeProcess(clock, durations.get(step.name, 1), 1 if step.name in failing else 0)

    runner = Runner(tuple(steps), start, lambda line: said.append((clock.now, line)),
                    cores=cores, clock=clock, wait=clock.tick)
    return runner, runner.run(), said


def started_at(said, name):
    return next(when for when, line in said if line.startswith(f"steps: started {name}"))


def test_a_step_starts_once_its_needs_passed_and_not_before():
    steps = [Step("slow-build"), Step("quick-build"), Step("needs-slow", ("slow-build",), test=True),
             Step("needs-quick", ("quick-build",), test=True)]
    runner, passed, said = run(steps, {"slow-build": 10, "quick-build": 2, "needs-slow": 3, "needs-quick": 3})
    assert passed
    assert started_at(said, "needs-quick") == 2
    assert started_at(said, "needs-slow") == 10
    assert {name: outcome.status for name, outcome in runner.outcomes.items()} == dict.fromkeys(
        ("slow-build", "quick-build", "needs-slow", "needs-quick"), "passed")


def test_the_foreground_steps_never_ask_for_more_cores_than_the_machine_has():
    steps = [Step("one-a"), Step("one-b"), Step("all", cores=2, test=True), Step("one-c", test=True)]
    _runner, passed, said = run(steps, {"one-a": 5, "one-b": 3, "all": 2, "one-c": 1})
    assert passed
    assert started_at(said, "one-a") == started_at(said, "one-b") == 0
    # When one-b ends one core is free: the two-core step waits, the later one-core step goes first.
    assert started_at(said, "one-c") == 3
    assert started_at(said, "all") == 5  # once both cores are free, not before


def test_a_step_that_asks_for_more_than_the_machine_has_runs_alone():
    _runner, passed, said = run([Step("huge", cores=8), Step("small")], {"huge": 4}, cores=2)
    assert passed
    assert started_at(said, "huge") == 0 and started_at(said, "small") == 4


def test_a_background_step_starts_when_ready_and_takes_no_cores():
    steps = [Step("go", background=True), Step("a", cores=2), Step("b", ("go",), test=True)]
    _runner, passed, said = run(steps, {"go": 6, "a": 3, "b": 1})
    assert passed
    assert started_at(said, "go") == started_at(said, "a") == 0
    assert (0, "steps: started go (in the background)") in said
    assert started_at(said, "b") == 6


def test_after_a_failure_nothing_new_starts_the_running_steps_finish_and_the_rest_is_not_run():
    steps = [Step("build"), Step("fails", test=True), Step("long", test=True),
             Step("later", test=True), Step("needs-build", ("build",), test=True)]
    runner, passed, said = run(steps, {"build": 2, "fails": 1, "long": 6}, failing={"fails"}, cores=3)
    assert not passed
    statuses = {name: outcome.status for name, outcome in runner.outcomes.items()}
    assert statuses == {"build": "passed", "fails": "FAILED", "long": "passed", "later": "not run",
                        "needs-build": "not run"}
    assert (1, "steps: fails FAILED (exit 1, 0 min 01 s)") in said


def test_a_failed_build_leaves_what_needs_it_not_run():
    steps = [Step("build"), Step("test", ("build",), test=True)]
    runner, passed, _said = run(steps, {}, failing={"build"})
    assert not passed
    assert runner.outcomes["test"].status == "not run"


def test_a_long_run_says_what_still_runs(monkeypatch):
    monkeypatch.setattr(run_steps, "HEARTBEAT_SECONDS", 4.0)
    _runner, _passed, said = run([Step("build"), Step("t", test=True)], {"build": 9, "t": 2})
    beats = [line for _when, line in said if "still running" in line]
    assert beats[0] == "steps: 0 min 04 s in; still running: build (0 min 04 s)"
    assert len(beats) == 2


def test_a_need_that_no_earlier_step_provides_is_refused():
    with pytest.raises(ValueError, match="step a needs b, which no earlier step provides"):
        run_steps.check_graph((Step("a", ("b",)), Step("b")))
    with pytest.raises(ValueError, match="needs missing"):
        run_steps.check_graph((Step("a", ("missing",)),))


def test_the_project_graph_is_valid_and_every_step_is_a_make_target():
    run_steps.check_graph(run_steps.GRAPH)
    targets = set(re.findall(r"^([a-z0-9-]+):", (REPO / "Makefile").read_text(encoding="utf-8"), re.MULTILINE))
    assert {step.name for step in run_steps.GRAPH} <= targets


def test_setup_is_the_builds_and_test_is_everything():
    setup = run_steps.plan(run_steps.GRAPH, "setup")
    assert setup and not any(step.test for step in setup)
    assert {"venv", "k8s-testbed", "testbed", "images", "ee-image"} <= {step.name for step in setup}
    assert run_steps.plan(run_steps.GRAPH, "test") == run_steps.GRAPH
    with pytest.raises(ValueError, match="unknown goal"):
        run_steps.plan(run_steps.GRAPH, "deploy")


def test_only_the_kubernetes_tests_wait_for_the_kubernetes_build():
    waiting = {step.name for step in run_steps.GRAPH if "k8s-testbed" in step.needs}
    assert waiting == {"integration-k8s"}


def test_the_summary_names_each_step_its_status_and_what_it_ran(tmp_path, monkeypatch):
    monkeypatch.setattr(run_steps, "OUTPUT", tmp_path)
    (tmp_path / "units.log").write_text("==== 7 passed, 1 skipped in 2.00s ====\n", encoding="utf-8")
    steps = [Step("venv"), Step("units", ("venv",), test=True), Step("lint", ("venv",), test=True)]
    runner, _passed, _said = run(steps, {"venv": 4, "units": 2}, failing={"units"}, cores=1)
    lines = run_steps.summary(runner, 65)
    assert lines[0].split() == ["venv", "passed", "4s", "cpu", "2s", "built", "or", "up", "to", "date"]
    assert lines[1].split()[:5] == ["units", "FAILED", "2s", "cpu", "1s"]
    assert lines[1].endswith("ran 7: 7 passed, 0 failed, 1 skipped")
    assert lines[2].split() == ["lint", "not", "run"]
    assert lines[-2:] == ["total: 7 passed, 0 failed, 1 skipped", "wall time: 1 min 05 s"]


def test_a_step_process_reports_its_exit_code_and_the_cpu_it_used():
    burn = "import sys, time\nend = time.process_time() + 0.2\nwhile time.process_time() < end: pass\nsys.exit(3)"
    process = run_steps.StepProcess(subprocess.Popen([sys.executable, "-c", burn]))
    while process.poll() is None:
        os.waitid(os.P_PID, process.popen.pid, os.WEXITED | os.WNOWAIT)
    assert process.returncode == 3
    assert process.cpu_seconds >= 0.2
