"""`make setup` and `make test` as one graph of make targets, each started as soon as what it needs is ready.

    python tools/run_steps.py setup    # the builds only (the Go builds, the Slurm root, images, venvs)
    python tools/run_steps.py test     # the builds and every test step

On the 2-core reference machine the run is bound by CPU (cold, the steps' own processes use well over
100 CPU-minutes, containers not counted): one step after another it took 55 minutes cold; with every
ready step started at once, 68; with integration and Molecule side by side beside the Go build, 63
minutes before it had run all its steps. Side by side, each of those two took two and a half times
as long as alone. So the steps in the foreground share the cores: each says how many it keeps busy
(``cores``; integration, Molecule, units and compat keep both busy, and so run alone), and together
they never ask for more than the machine has. The Go builds of the Kubernetes test bed (about 33
CPU-minutes, needed only by the Kubernetes integration tests) run in the background under
``nice -n 19``: they start at once and take what the foreground leaves idle (downloads, dpkg, a test
waiting on a daemon). Every step is a make target of the Makefile (the one place that says how it
runs); this file only says what needs what, how many cores it uses, and in which order ready steps
are preferred.

Each step's output goes to ``tests/output/<step>.run.log`` (a pytest step also writes its own
``<step>.log``, which the summary reads); the terminal gets one line per start and end, a line every
two minutes naming what still runs, the tail of a failed step's output, and the summary (per step:
status, wall time, the CPU time of its own processes, what it ran). After the
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
    test: bool = False  # part of `make test` only; the others are `make setup`
    cores: int = 1  # how many cores it keeps busy while it runs (CORES: it alone fills the machine)
    background: bool = False  # runs at the lowest CPU priority and does not count against the cores


CORES = os.cpu_count() or 1

# In the order ready steps are preferred: the longest chain first (.venv and the Slurm root, the
# images, the EE image, then integration and Molecule), the Kubernetes tests as soon as the Go builds
# are done, then the shorter steps, which fill the gaps at the end.
GRAPH: tuple[Step, ...] = (
    Step("venv"),
    Step("testbed"),
    Step("k8s-testbed", background=True),
    Step("images"),
    Step("ee-image", ("venv", "images")),
    Step("integration-k8s", ("venv", "k8s-testbed", "testbed"), test=True, cores=CORES),
    Step("integration", ("venv", "testbed", "ee-image"), test=True, cores=CORES),
    Step("molecule", ("venv", "images"), test=True, cores=CORES),
    Step("units", ("venv",), test=True, cores=CORES),
    Step("compat-venvs"),
    Step("sanity-venvs", ("venv", "compat-venvs")),
    Step("compat", ("compat-venvs", "sanity-venvs"), test=True, cores=CORES),
    Step("sanity", ("venv", "sanity-venvs"), test=True),
    Step("lint", ("venv",), test=True),
    Step("build", ("venv",), test=True),
)


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
    cpu_seconds: float = 0.0


def minutes(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s"


class Runner:
    """Runs a graph of steps with ``start(step) -> process`` (``poll()``, ``returncode``, ``cpu_seconds``)."""

    def __init__(self, steps: tuple[Step, ...], start: Callable[[Step], "StepProcess"],
                 say: Callable[[str], None], cores: int = CORES,
                 clock: Callable[[], float] = time.monotonic, wait: Callable[[], None] | None = None,
                 on_failure: Callable[[Step], None] | None = None):
        check_graph(steps)
        self.steps = steps
        self.start = start
        self.say = say
        self.cores = cores
        self.clock = clock
        self.wait = wait or (lambda: time.sleep(0.5))
        self.on_failure = on_failure or (lambda step: None)
        self.outcomes: dict[str, Outcome] = {}

    def ready(self, running: dict) -> list[Step]:
        """The steps to start now: their needs passed and, in the foreground, their cores are free.

        A step that asks for more cores than are free waits (a later, smaller one may go first);
        one that asks for more than the machine has runs when the foreground is empty."""
        busy = sum(step.cores for step in running if not step.background)
        chosen = []
        for step in self.steps:
            if step.name in self.outcomes or step in running:
                continue
            if not all(self.outcomes.get(need, Outcome("")).status == "passed" for need in step.needs):
                continue
            if not step.background:
                if busy and busy + step.cores > self.cores:
                    continue
                busy += step.cores
            chosen.append(step)
        return chosen

    def run(self) -> bool:
        running: dict[Step, tuple[StepProcess, float]] = {}
        failed = False
        started = self.clock()
        last_beat = started
        while True:
            for step, (process, since) in list(running.items()):
                if process.poll() is None:
                    continue
                del running[step]
                elapsed = self.clock() - since
                status = "passed" if process.returncode == 0 else "FAILED"
                self.outcomes[step.name] = Outcome(status, elapsed, process.cpu_seconds)
                if status == "passed":
                    self.say(f"steps: {step.name} passed ({minutes(elapsed)})")
                else:
                    self.say(f"steps: {step.name} FAILED (exit {process.returncode}, {minutes(elapsed)})")
                    self.on_failure(step)
                    failed = True
            if not failed:
                for step in self.ready(running):
                    self.say(f"steps: started {step.name}" + (" (in the background)" if step.background else ""))
                    running[step] = (self.start(step), self.clock())
            if not running:
                break
            now = self.clock()
            if running and now - last_beat >= HEARTBEAT_SECONDS:
                last_beat = now
                names = ", ".join(f"{step.name} ({minutes(now - since)})" for step, (_process, since) in running.items())
                self.say(f"steps: {minutes(now - started)} in; still running: {names}")
            self.wait()
        for step in self.steps:
            self.outcomes.setdefault(step.name, Outcome("not run"))
        return not failed


def run_log(step: Step) -> Path:
    return OUTPUT / f"{step.name}.run.log"


class StepProcess:
    """A started make target; ``poll()`` reaps it with wait4(2), which also gives its CPU time."""

    def __init__(self, popen: subprocess.Popen):
        self.popen = popen
        self.returncode: int | None = None
        self.cpu_seconds = 0.0

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status, usage = os.wait4(self.popen.pid, os.WNOHANG)
            if pid:
                # The CPU of make and every process it waited for (a container's, reparented to
                # podman's conmon, is not in it).
                self.cpu_seconds = usage.ru_utime + usage.ru_stime
                self.returncode = self.popen.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def start_make(step: Step) -> StepProcess:
    command = ["make", "-C", str(ROOT), step.name]
    if step.background:
        command = ["nice", "-n", "19", *command]
    with open(run_log(step), "wb") as log:
        return StepProcess(subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT))


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
        lines.append(f"{step.name:<16} {outcome.status:<7} {int(outcome.seconds):5d}s  "
                     f"cpu {int(outcome.cpu_seconds):5d}s  {detail[:100]}")
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
