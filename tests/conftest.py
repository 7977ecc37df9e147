"""What every test shares: import paths.

* ``ansible_collections.aifactory.topology`` is importable from a plain checkout: `make setup`
  links the repository into .collections/ansible_collections/aifactory/topology; when that link
  is missing (a bare pytest run), a temporary one is made, and removed when pytest exits.
* ``tools/`` is on sys.path, so tests import the test beds as ``import slurm_testbed``.
* Ansible's tools are found by ``tests.ansible_run.tool`` (the .venv's, whatever PATH says).
* Under ``CI=true`` a skipped test is a failed one (collection included): a green CI run means
  every suite ran. Outside CI a test bed that cannot be had here (no root, no Go) skips, loudly.
* hypothesis runs with the profile ``aifactory``: no deadline and no too-slow health check, so no
  property fails because the machine is busy (a test that sets its own settings says
  ``deadline=None`` as well).
* ``segment_capacity_result``: fresh segment_capacity results, for the report's unit, hostile and
  browser tests.
* ``--cpu-durations=N`` lists the N tests that used the most CPU, their child processes included
  (tests/cpu_time.py); not with pytest-xdist, whose workers keep their own counts.
"""

from __future__ import annotations

import atexit
import copy
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.cpu_time import Stopwatch, report

# Both are timing thresholds: a loaded 2-core machine would fail a correct property.
settings.register_profile("aifactory", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("aifactory")

REPO = Path(__file__).resolve().parent.parent
TOOLS = str(REPO / "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)


def _collections_root() -> Path:
    linked = REPO / ".collections"
    if (linked / "ansible_collections" / "aifactory" / "topology" / "galaxy.yml").exists():
        return linked
    root = Path(tempfile.mkdtemp(prefix="aifactory-collections-"))
    # rmtree removes the symlink to the checkout, never what it points to.
    atexit.register(shutil.rmtree, root, True)
    target = root / "ansible_collections" / "aifactory"
    target.mkdir(parents=True)
    os.symlink(REPO, target / "topology")
    return root


try:
    FOUND = importlib.util.find_spec("ansible_collections.aifactory.topology") is not None
except ImportError:
    FOUND = False
if not FOUND:
    COLLECTIONS = _collections_root()
    sys.path.insert(0, str(COLLECTIONS))
    os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", str(COLLECTIONS))


# tools/ is on sys.path (above), so ci_mode imports only now.
import ci_mode  # noqa: E402  # pylint: disable=wrong-import-position,wrong-import-order

CI = ci_mode.under_ci()
CI_SKIP = "skipped under CI=true, where every suite must run: "


def _fail_skip_under_ci(report) -> None:
    if CI and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = CI_SKIP + reason.removeprefix("Skipped: ")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # pylint: disable=unused-argument
    outcome = yield
    _fail_skip_under_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):  # pylint: disable=unused-argument
    outcome = yield
    _fail_skip_under_ci(outcome.get_result())


@pytest.fixture(scope="session")
def segment_capacity_result():
    """A factory of fresh segment_capacity results: two racks of 4 under one leaf, a placeholder between."""
    # The collection is importable only once the code above ran.
    # pylint: disable=import-outside-toplevel
    from ansible_collections.aifactory.topology.plugins.module_utils._engines import capacity, slurm
    from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
    from ansible_collections.aifactory.topology.plugins.module_utils._engines.segment_capacity import fabric

    topology = Topology()
    topology.add_switch("spine")
    topology.add_switch("leaf1", parent="spine")
    for rack in ("r1", "r2", "r3"):
        topology.declare_domain(rack)
    for rack in ("r1", "r3"):
        for i in range(1, 5):
            topology.add_node(f"{rack}n{i}", switch="leaf1", domain=rack)
    topology.validate()
    blocks, sizes = slurm.plan_blocks(topology, slurm.BlockOptions([4, 8], ["r1", "r2", "r3"]))
    result = capacity.analyse(blocks, sizes, {"r1n1": "drained", "r3n2": "allocated", "r3n4": "down"})
    result["fabric"] = fabric(topology, blocks)
    result["summary"]["warnings"] = ["a <warning>"]
    return lambda: copy.deepcopy(result)


# -- CPU time per test (tests/cpu_time.py) ----------------------------------------------------------

CPU_COSTS = pytest.StashKey[list]()


def pytest_addoption(parser):
    parser.addoption("--cpu-durations", type=int, default=0, metavar="N",
                     help="list the N tests that used the most CPU (their own and their child processes')")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
    if not item.config.getoption("cpu_durations"):
        yield
        return
    started = Stopwatch()
    yield  # setup, call and teardown
    item.config.stash.setdefault(CPU_COSTS, []).append(started.cost(item.nodeid))


def pytest_terminal_summary(terminalreporter, config):
    count = config.getoption("cpu_durations")
    if count:
        terminalreporter.write_sep("=", f"most CPU, top {count}")
        for line in report(config.stash.get(CPU_COSTS, []), count):
            terminalreporter.write_line(line)
