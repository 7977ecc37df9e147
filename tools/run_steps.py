"""`make setup` and `make test` as one graph of make targets, each started as soon as what it needs is ready.

    python tools/run_steps.py setup    # the builds only (the Go builds, the Slurm root, images, venvs)
    python tools/run_steps.py test     # the builds and every test step

On the 2-core reference machine a cold run is dominated by the Go builds of the Kubernetes test bed
(about 15 minutes, both cores) and, warm or cold, by the integration and Molecule steps; run one after
another they took 55 minutes. Here every step starts once its own prerequisites are built: the Go
builds start right after the Debian packages (they need Go, not .venv), the tests that need no
Kubernetes run while Go compiles, and only the Kubernetes integration tests wait for it. Every step
is a make target of the Makefile (the one place that says how it runs); this file only says what
needs what, in which order to prefer ready steps, and how many test steps share the machine at once.

Each step's output goes to ``tests/output/<step>.run.log`` (a pytest step also writes its own
``<step>.log``, which the summary reads); the terminal gets one line per start and end, a line every
two minutes naming what still runs, the tail of a failed step's output, and the summary. After the
first failure no new step starts; the running ones finish, the rest are reported as not run.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import step_summary

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "tests" / "output"
HEARTBEAT_SECONDS = 120.0
FAILED_TAIL_LINES = 60


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    needs: tuple[str, ...] = ()
    # A test step counts against the test-step limit; a build (mostly network or one Go build) does not.
    test: bool = False


# In the order ready steps are preferred: the critical path first (the Go builds, then the tests
# that wait for them), then the longest test steps, so the short ones fill the gaps at the end.
GRAPH: tuple[Step, ...] = (
    Step("venv"),
    Step("k8s-testbed"),
    Step("testbed"),
    Step("images"),
    Step("compat-venvs"),
    Step("ee-image", ("venv", "images")),
    Step("sanity-venvs", ("venv", "compat-venvs")),
    Step("integration-k8s", ("venv", "k8s-testbed", "testbed"), test=True),
    Step("integration", ("venv", "testbed", "ee-image"), test=True),
    Step("molecule", ("venv", "images"), test=True),
    Step("compat", ("compat-venvs", "sanity-venvs"), test=True),
    Step("sanity", ("venv", "sanity-venvs"), test=True),
    Step("units", ("venv",), test=True),
    Step("lint", ("venv",), test=True),
    Step("build", ("venv",), test=True),
)
# Two test steps at once: each keeps about one core busy (one pytest process, one Molecule
# converge), beside a Go build that takes what is left.
TEST_STEPS_AT_ONCE = 2


def plan(graph: tuple[Step, ...], goal: str) -> tuple[Step, ...]:
    """The steps of ``goal``: ``setup`` is every build, ``test`` every step."""
    if goal == "setup":
        return tuple(step for step in graph if not step.test)
    if goal == "test":
        return graph
    raise ValueError(f"unknown goal {goal!r} (expected setup or test)")


def check_graph(graph: tuple[Step, ...]) -> None:
    """Every need names an earlier step (so the graph has no cycle and every step can become ready)."""
    seen: set[str] = set()
    for step in graph:
        unknown = [need for need in step.needs if need not in seen]
        if unknown:
            raise ValueError(f"step {step.name} needs {', '.join(unknown)}, which no earlier step provides")
        seen.add(step.name)


@dataclasses.dataclass
class Outcome:
    status: str  # passed, FAILED, not run
    seconds: float = 0.0


def minutes(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s"


class Runner:
    """Runs a graph of steps with ``start(step) -> Popen-like`` (``poll()``, ``returncode``)."""

    def __init__(self, steps: tuple[Step, ...], start: Callable[[Step], subprocess.Popen],
                 say: Callable[[str], None], tests_at_once: int = TEST_STEPS_AT_ONCE,
                 clock: Callable[[], float] = time.monotonic, wait: Callable[[], None] | None = None,
                 on_failure: Callable[[Step], None] | None = None):
        check_graph(steps)
        self.steps = steps
        self.start = start
        self.say = say
        self.tests_at_once = tests_at_once
        self.clock = clock
        self.wait = wait or (lambda: time.sleep(0.5))
        self.on_failure = on_failure or (lambda step: None)
        self.outcomes: dict[str, Outcome] = {}

    def ready(self, running: dict) -> list[Step]:
        tests_running = sum(1 for step in running if step.test)
        chosen = []
        for step in self.steps:
            if step.name in self.outcomes or step in running:
                continue
            if not all(self.outcomes.get(need, Outcome("")).status == "passed" for need in step.needs):
                continue
            if step.test:
                if tests_running >= self.tests_at_once:
                    continue
                tests_running += 1
            chosen.append(step)
        return chosen

    def run(self) -> bool:
        running: dict[Step, tuple[subprocess.Popen, float]] = {}
        failed = False
        started = self.clock()
        last_beat = started
        while True:
            for step, (process, since) in list(running.items()):
                if process.poll() is None:
                    continue
                del running[step]
                elapsed = self.clock() - since
                if process.returncode == 0:
                    self.outcomes[step.name] = Outcome("passed", elapsed)
                    self.say(f"steps: {step.name} passed ({minutes(elapsed)})")
                else:
                    self.outcomes[step.name] = Outcome("FAILED", elapsed)
                    self.say(f"steps: {step.name} FAILED (exit {process.returncode}, {minutes(elapsed)})")
                    self.on_failure(step)
                    failed = True
            if not failed:
                for step in self.ready(running):
                    self.say(f"steps: started {step.name}")
                    running[step] = (self.start(step), self.clock())
            if not running:
                break
            now = self.clock()
            if running and now - last_beat >= HEARTBEAT_SECONDS:
                last_beat = now
                names = ", ".join(f"{step.name} ({minutes(now - since)})" for step, (_, since) in running.items())
                self.say(f"steps: {minutes(now - started)} in; still running: {names}")
            self.wait()
        for step in self.steps:
            self.outcomes.setdefault(step.name, Outcome("not run"))
        return not failed


def run_log(step: Step) -> Path:
    return OUTPUT / f"{step.name}.run.log"


def start_make(step: Step) -> subprocess.Popen:
    with open(run_log(step), "wb") as log:
        return subprocess.Popen(["make", "-C", str(ROOT), step.name], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT)


def print_tail(step: Step) -> None:
    lines = step_summary.log_lines(run_log(step))
    print(f"---- last {min(len(lines), FAILED_TAIL_LINES)} lines of {run_log(step)} ----")
    print("\n".join(lines[-FAILED_TAIL_LINES:]))
    print("----")


def summary(runner: Runner, total_seconds: float) -> list[str]:
    lines = []
    for step in runner.steps:
        outcome = runner.outcomes[step.name]
        if outcome.status == "not run":
            lines.append(f"{step.name:<16} not run")
            continue
        if step.test:
            detail = step_summary.describe(step.name, step_summary.log_lines(OUTPUT / f"{step.name}.log"))
        else:
            detail = "built or up to date" if outcome.status == "passed" else f"see {run_log(step)}"
        lines.append(f"{step.name:<16} {outcome.status:<7} {int(outcome.seconds):5d}s  {detail[:100]}")
    tests = [OUTPUT / f"{step.name}.log" for step in runner.steps if step.test]
    if tests:
        lines.append(step_summary.total(tests))
    lines.append(f"wall time: {minutes(total_seconds)}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in ("setup", "test"):
        print(f"usage: {argv[0]} setup|test", file=sys.stderr)
        return 2
    goal = argv[1]
    OUTPUT.mkdir(parents=True, exist_ok=True)
    steps = plan(GRAPH, goal)
    for step in steps:
        run_log(step).unlink(missing_ok=True)
        if step.test:
            (OUTPUT / f"{step.name}.log").unlink(missing_ok=True)
    print(f"steps: {goal}: {len(steps)} steps, each as soon as what it needs is ready; "
          f"output in {OUTPUT}/<step>.run.log", flush=True)
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            print(line, flush=True)

    runner = Runner(steps, start_make, say, on_failure=print_tail)
    started = time.monotonic()
    passed = runner.run()
    print()
    print(f"==================== make {goal} summary ====================")
    print("\n".join(summary(runner, time.monotonic() - started)))
    if os.geteuid() != 0:
        print("NOTE: not root: the Slurm test bed and the Molecule scenarios could not run")
    failed = [name for name, outcome in runner.outcomes.items() if outcome.status == "FAILED"]
    print(f"RESULT: FAILED at {', '.join(failed)}" if failed else f"RESULT: all {goal} steps passed")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
