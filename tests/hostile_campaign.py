# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a hostile case of docs/security.md is registered, run in its own process and judged.

tests/hostile_cases.py registers the cases with ``@case(klass, name, expect, secret)`` and
prints the campaign's table; tests/integration/test_hostile_campaign.py asserts each case. Both
run a case with ``run_in_child(script, name, limit)``: ``python script --case NAME`` (the
script calls ``run_case(name)``, which prints one JSON line: ``error`` with the message, ``ok``,
``crash`` with the exception type), killed with its process group after ``limit`` seconds, its
peak memory read from ``wait4``. The verdict:

  clear error      the collection raised its own error (or a module failed with a message)
                   that quotes no secret and no more than 600 characters; for a case that
                   must pass (expect="ok"), the right result
  unhandled        any other exception, a module traceback, a message that is too long
  wrong output     the case was accepted although it must fail (or failed although it must pass)
  hang             not decided within the limit
  data lost        a file the case must not touch was changed or removed
  secret printed   a credential of the case appears in any output
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, NamedTuple, Optional

REPO = Path(__file__).resolve().parents[1]
MAX_MESSAGE = 600
VERDICTS = ["clear error", "unhandled", "wrong output", "hang", "data lost", "secret printed"]
# Every case decided as documented gets this verdict, whether it must fail or pass.
GOOD_VERDICT = "clear error"


class Case(NamedTuple):
    klass: str
    name: str
    expect: str  # "error": must fail with a clear error; "ok": must pass
    secret: Optional[str]  # must appear in no output
    needs_root: bool  # mounts, device nodes, chattr
    run: Callable  # run(tmp: Path); returns (accepted) or raises


CASES: dict[str, Case] = {}


class ModuleFailed(Exception):
    """A module run as Ansible runs it failed with this message (an error of the collection)."""


class DataLost(Exception):
    """The case changed or removed a file it must not touch."""


class WrongOutput(Exception):
    """The case's result is not the one it must give."""


def case(klass, name, expect="error", secret=None, needs_root=False):
    """Register ``fn(tmp)``: returns normally (accepted) or raises; ``expect`` is error|ok."""
    def register(fn):
        if name in CASES:  # a second case of the same name would silently replace the first
            raise ValueError(f"hostile case {name!r} is registered twice")
        CASES[name] = Case(klass, name, expect, secret, needs_root, fn)
        return fn
    return register


def make_collection_importable():
    """Make ansible_collections.aifactory.topology importable here and in child processes."""
    try:
        import ansible_collections.aifactory.topology  # noqa: F401  # pylint: disable=unused-import
    except ImportError:
        root = Path(tempfile.mkdtemp(prefix="aifactory-hostile-"))
        (root / "ansible_collections" / "aifactory").mkdir(parents=True)
        os.symlink(REPO, root / "ansible_collections" / "aifactory" / "topology")
        sys.path.insert(0, str(root))
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))


def run_case(name):
    """In the child: run one case, print its outcome as JSON."""
    make_collection_importable()
    from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import AifactoryTopologyError
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        try:
            CASES[name].run(Path(tmp))
            outcome = {"result": "ok"}
        except (AifactoryTopologyError, ModuleFailed) as exc:
            outcome = {"result": "error", "message": str(exc)}
        except DataLost as exc:
            outcome = {"result": "data lost", "message": str(exc)}
        except WrongOutput as exc:
            outcome = {"result": "wrong", "message": str(exc)}
        except BaseException as exc:  # what the user would see as "Module failed: <python error>"
            outcome = {"result": "crash", "message": f"{type(exc).__name__}: {str(exc)[:300]}"}
    print(json.dumps(outcome))


def classify(expect, secret, outcome, stdout, stderr):
    if secret and (secret in stdout or secret in stderr):
        return "secret printed"
    result = outcome["result"]
    if result == "data lost":
        return "data lost"
    if result == "crash":
        return "unhandled"
    if result == "error":
        if len(outcome["message"]) > MAX_MESSAGE:
            return "unhandled"
        return GOOD_VERDICT if expect == "error" else "wrong output"
    if result == "wrong":
        return "wrong output"
    return GOOD_VERDICT if expect == "ok" else "wrong output"


class _MeasuredPopen(subprocess.Popen):
    """Popen that keeps the child's peak memory (and its children's) from wait4."""

    peak_mb = 0.0

    def _try_wait(self, wait_flags):
        try:
            pid, status, usage = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return (self.pid, 0)
        if pid:
            self.peak_mb = usage.ru_maxrss / 1024.0
        return (pid, status)


class Result(NamedTuple):
    verdict: str
    message: str
    seconds: float
    peak_mb: float


def run_in_child(script, name, limit):
    """Run case ``name`` as ``python script --case NAME`` and judge it; killed after ``limit`` seconds."""
    hostile = CASES[name]
    started = time.monotonic()
    # env= a private copy: without it the vfork'ed child reads the process's environ array,
    # which pytest reallocates from the main thread (PYTEST_CURRENT_TEST is set and removed
    # around every test) while this pool thread spawns; execve then fails with EFAULT.
    proc = _MeasuredPopen([sys.executable, str(script), "--case", name], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, start_new_session=True,
                          env=dict(os.environ))
    try:
        stdout, stderr = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        # The whole group: a hung case may have started module processes of its own.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Result("hang", f"not decided within {limit:g} s", time.monotonic() - started, proc.peak_mb)
    try:
        outcome = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        outcome = {"result": "crash", "message": stderr[-300:]}
    verdict = classify(hostile.expect, hostile.secret, outcome, stdout, stderr)
    return Result(verdict, outcome.get("message", ""), time.monotonic() - started, proc.peak_mb)
