"""The one reader of Slurm node states against a REAL slurmctld 26.05 (tools/slurm_testbed.py).

Nodes are driven with ``scontrol update`` / ``reboot`` / ``create`` into every state this
slurmctld can reach without a slurmd: UNKNOWN (never registered), DOWN, FAIL, DRAIN,
NOT_RESPONDING (a RESUME that asks an absent slurmd to register), REBOOT_ISSUED and
REBOOT_REQUESTED, POWERING_UP, POWERING_DOWN, POWER_DOWN (with the JSON's POWER_DOWN_FORCE),
POWER_DOWN_ASAP's drain, reservations (RESERVED, MAINTENANCE), EXTERNAL and dynamic nodes. Then:

* every word slurmctld prints is one the table knows, and each node has the class expected;
* every state sinfo prints for those nodes (long and compact) is a word the table knows;
* the drain engine sees exactly the drained nodes, with Slurm's reasons;
* the ``slurm_nodes`` event source's poll agrees with the class, and its running loop sends one
  event per node that leaves service (drain, FAIL, POWERING_DOWN, REBOOT_ISSUED, NOT_RESPONDING)
  and one when it returns, and none for a node that only moves from UNKNOWN to DOWN.

The states slurmctld cannot reach here (ERROR, INVALID_REG, ALLOCATED, ...) are tested on recorded
output in tests/unit/plugins/module_utils/test_slurm_states.py. Waits poll slurmctld with a bound.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import slurm_testbed as testbed  # tools/ is on sys.path (tests/conftest.py)

from ansible_collections.aifactory.topology.extensions.eda.plugins.event_source import slurm_nodes
from ansible_collections.aifactory.topology.plugins.module_utils._base import slurm_states
from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm_drain
from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda

pytestmark = pytest.mark.slurm

WAIT = 60  # seconds: a bound on every wait for slurmctld, never a measure
CLOUD = [f"c{i}" for i in range(1, 6)]
# Power transitions that last, and pings only for nodes that never answered (SlurmdTimeout=0): the
# states below stay until changed. slurmctld pings a regular node without slurmd and marks it
# NOT_RESPONDING whenever that ping fails, so states that must stay in service are set on EXTERNAL
# nodes (x1-x6), which slurmctld never pings; the regular nodes r1-r4 show UNKNOWN and what a
# missing slurmd does.
SETTINGS = ["SuspendTimeout=600", "ResumeTimeout=600", "SlurmdTimeout=0", "RebootProgram=/bin/true",
            "MaxNodeCount=64"]

# node -> (words its JSON state must hold, its class)
EXPECTED = {
    "x1": ({"IDLE", "EXTERNAL"}, "idle"),
    "x2": ({"IDLE", "EXTERNAL", "DRAIN"}, "drained"),
    "x3": ({"IDLE", "EXTERNAL", "FAIL"}, "down"),
    "x4": ({"DOWN", "EXTERNAL", "NOT_RESPONDING", "REBOOT_ISSUED"}, "down"),
    "x5": ({"IDLE", "EXTERNAL", "POWERING_DOWN"}, "down"),
    "x6": ({"IDLE", "EXTERNAL", "POWERED_DOWN"}, "idle"),
    "r1": ({"DOWN"}, "down"),
    "r2": ({"UNKNOWN"}, "down"),
    "r3": ({"IDLE", "NOT_RESPONDING"}, "down"),
    "r4": ({"IDLE", "NOT_RESPONDING", "REBOOT_REQUESTED"}, "down"),
    "c1": ({"IDLE", "CLOUD", "POWERED_DOWN"}, "idle"),
    "c2": ({"IDLE", "CLOUD", "NOT_RESPONDING", "POWERING_UP"}, "down"),
    "c3": ({"IDLE", "CLOUD", "POWERED_DOWN", "RESERVED", "MAINTENANCE"}, "idle"),
    "c4": ({"IDLE", "CLOUD", "POWERED_DOWN", "RESERVED"}, "idle"),
    "c5": ({"IDLE", "CLOUD", "DRAIN", "POWERED_DOWN"}, "drained"),
    "d1": ({"IDLE", "CLOUD", "POWERED_DOWN", "DYNAMIC_NORM"}, "idle"),
}


def slurm_conf():
    """Cloud nodes c1-c5 (powered down), EXTERNAL nodes x1-x6, regular nodes r1-r4 without a slurmd."""
    base = testbed.slurm_conf(CLOUD)
    lines = [line for line in base.splitlines() if not line.startswith("PartitionName=")]
    lines += [*SETTINGS, "NodeName=x[1-6] NodeAddr=127.0.0.1 CPUs=1 State=EXTERNAL",
              "NodeName=r[1-4] NodeAddr=127.0.0.1 CPUs=1", "PartitionName=all Nodes=ALL Default=YES"]
    return "\n".join(lines) + "\n"


def nodes_json(ctld):
    return ctld.scontrol("show", "nodes", "--json")


def words(ctld):
    return {node["name"]: set(node["state"]) for node in json.loads(nodes_json(ctld))["nodes"]}


def wait_for(ctld, wanted):
    """Poll slurmctld until each node of ``wanted`` (node -> words) shows at least those words."""
    end = time.monotonic() + WAIT
    while True:
        current = words(ctld)
        missing = {node: sorted(want - current.get(node, set())) for node, want in wanted.items()
                   if not want <= current.get(node, set())}
        if not missing:
            return current
        if time.monotonic() > end:
            raise AssertionError(f"slurmctld did not reach the states within {WAIT} s; missing {missing}; "
                                 f"it shows {current}\n{ctld.log()[-3000:]}")
        time.sleep(0.2)


def update(ctld, nodes, *settings):
    ctld.scontrol("update", f"nodename={nodes}", *settings)


def drive(ctld):
    """Every state of EXPECTED, on a fresh controller; returns ``scontrol show nodes --json``'s text."""
    update(ctld, "x2", "state=DRAIN", "reason=admin: new DIMMs")
    update(ctld, "x3", "state=FAIL", "reason=fans")
    ctld.scontrol("reboot", "x4")            # the reboot RPC finds no slurmd: REBOOT_ISSUED, DOWN
    update(ctld, "x[5-6]", "state=POWER_DOWN_FORCE")
    wait_for(ctld, {"x6": {"POWERING_DOWN"}})
    update(ctld, "x6", "state=RESUME")       # ends POWERING_DOWN: powered down, back in service
    update(ctld, "r1", "state=DOWN", "reason=cable")
    update(ctld, "r[3-4]", "state=DOWN", "reason=test")
    update(ctld, "r[3-4]", "state=RESUME")   # asks the absent slurmd to register: NOT_RESPONDING
    ctld.scontrol("reboot", "r4")            # not responding: the reboot waits (REBOOT_REQUESTED)
    update(ctld, "c2", "state=POWER_UP")
    ctld.scontrol("create", "reservation", "reservationname=maint", "starttime=now", "duration=600", "nodes=c3",
                  "flags=maint", "users=root")
    ctld.scontrol("create", "reservation", "reservationname=plain", "starttime=now", "duration=600", "nodes=c4",
                  "users=root")
    update(ctld, "c5", "state=DRAIN", "reason=aifactory.topology unhealthy")
    ctld.scontrol("create", "nodename=d1", "state=CLOUD", "CPUs=1", "NodeAddr=127.0.0.1")
    wait_for(ctld, {node: want for node, (want, _category) in EXPECTED.items()})
    return nodes_json(ctld)


def test_every_state_slurmctld_prints_is_known_and_classified_as_expected(slurm_root):
    with testbed.slurmctld(slurm_root, {"slurm.conf": slurm_conf()}) as ctld:
        text = drive(ctld)
        sinfo = ctld.run("sinfo", "-N", "-h", "-o", "%N|%t|%T")
    nodes = slurm_states.read_nodes(text)
    assert {node.name: node.state.unknown for node in nodes} == {node: () for node in EXPECTED}
    assert {node.name: node.state.category for node in nodes} == {node: cat for node, (_w, cat) in EXPECTED.items()}
    # Each word of every state, as scontrol names it (not one the table only guessed).
    printed = {word for node in json.loads(text)["nodes"] for word in node["state"]}
    assert printed <= {entry.word for entry in slurm_states.WORDS}
    # sinfo's words (long and compact, with their suffixes) are all in the table: what an operator
    # copies from sinfo into segment_capacity's node_states is read, not refused.
    assert sinfo.returncode == 0, sinfo.stderr
    for line in sinfo.stdout.splitlines():
        name, compact, long = line.split("|")
        for state in (compact, long):
            slurm_states.classify(state, f"sinfo: {name}", strict=True)
    # The drain engine reads the same states: the drained nodes with Slurm's reasons.
    drained, known = slurm_drain.drained_nodes(text)
    assert drained == {"x2": "admin: new DIMMs", "c5": "aifactory.topology unhealthy"}
    assert known == set(EXPECTED)


def source_args(ctld, **extra):
    return _eda.source_args(slurm_nodes.SOURCE, dict({
        "scontrol": ["chroot", str(ctld.root), "scontrol"], "slurm_conf": f"{ctld.conf_dir}/slurm.conf",
        "interval": 0.2, "delay": 0.01, "max_wait": 0.01, "initial_sync": False}, **extra), slurm_nodes.SPEC)


def test_the_event_source_polls_the_same_classes(slurm_root):
    with testbed.slurmctld(slurm_root, {"slurm.conf": slurm_conf()}) as ctld:
        drive(ctld)
        polled = asyncio.run(slurm_nodes.poll(source_args(ctld)))
    assert polled == {node: _eda.AVAILABILITY[category] for node, (_w, category) in EXPECTED.items()}


# (what to do, the change records it must cause: (node, change, previous))
STEPS = [
    (("update", "nodename=x1", "state=DRAIN", "reason=test"), [("x1", "drain", "up")]),
    (("update", "nodename=x1", "state=IDLE"), [("x1", "resume", "drain")]),
    (("update", "nodename=x1", "state=FAIL", "reason=test"), [("x1", "down", "up")]),
    (("update", "nodename=x1", "state=IDLE"), [("x1", "up", "down")]),
    (("update", "nodename=x1", "state=DOWN", "reason=test"), [("x1", "down", "up")]),
    (("update", "nodename=x1", "state=RESUME"), [("x1", "up", "down")]),
    # The source used to call POWERING_DOWN up: no event when a node left service to power down.
    (("update", "nodename=x2", "state=POWER_DOWN_FORCE"), [("x2", "down", "up")]),
    (("update", "nodename=x2", "state=RESUME"), [("x2", "up", "down")]),  # IDLE+POWERED_DOWN: in service
    (("reboot", "x3"), [("x3", "down", "up")]),                               # REBOOT_ISSUED
    (("update", "nodename=x4", "state=NoResp"), [("x4", "down", "up")]),
]


def test_the_event_source_sends_one_event_per_node_leaving_service_and_one_per_return(slurm_root):
    with testbed.slurmctld(slurm_root, {"slurm.conf": slurm_conf()}) as ctld:
        seen = asyncio.run(run_steps(ctld))
    assert seen == [changes for _step, changes in STEPS]


async def run_steps(ctld):
    """Run the source; after each step, the node changes of the events it caused."""
    queue = asyncio.Queue()
    source = asyncio.ensure_future(slurm_nodes.main(queue, source_args(ctld, initial_sync=True)))
    seen = []
    try:
        # The first poll is done (what the steps change is compared with it) when the start-up event comes.
        started = await asyncio.wait_for(queue.get(), WAIT)
        assert [c["change"] for c in started[_eda.EVENT_KEY]["changes"]] == ["started"]
        for step, expected in STEPS:
            await asyncio.to_thread(ctld.scontrol, *step)
            changes = []
            while len(changes) < len(expected):
                try:
                    event = await asyncio.wait_for(queue.get(), WAIT)
                except asyncio.TimeoutError:
                    raise AssertionError(f"no event within {WAIT} s after {step}; events so far {seen + [changes]}; "
                                         f"slurmctld shows {words(ctld)}") from None
                changes += [(c["name"], c["change"], c["previous"])
                            for c in event[_eda.EVENT_KEY]["changes"] if c["kind"] == "slurm_node"]
            seen.append(changes)
    finally:
        source.cancel()
        await asyncio.gather(source, return_exceptions=True)
    return seen
