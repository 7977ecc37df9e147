"""segment_capacity equals a REAL slurmctld 26.05 (tools/slurm_testbed.py).

For several block ladders and drain/down patterns, the topology.conf that slurm_topology's engine
renders is loaded into slurmctld, nodes are drained or downed with ``scontrol update``, and the
``aifactory.topology.segment_capacity`` module runs as its own process with ``scontrol_path``
pointing at a wrapper that runs the chroot's scontrol: the states it sees are Slurm's own. Then:

* for every segment size s: ``sbatch --test-only -N <largest_job_nodes> --segment=s`` is accepted
  and ``-N <largest_job_nodes + s> --segment=s`` is refused;
* every -N from 1 to the node count + 1 is tried without --segment: accepted exactly when it lies
  in ``unsegmented_feasible``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import slurm_testbed as testbed  # tools/ is on sys.path (tests/conftest.py)

from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from tests.integration.slurm_support import scontrol_wrapper

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slurm

MODULE = "ansible_collections.aifactory.topology.plugins.modules.segment_capacity"


def example_cluster():
    """inventories/example's GPU racks: 8 NVL72 racks, rack05 with 17 trays, rack07 a placeholder."""
    racks = {f"rack{r:02d}": [f"gb200-r{r:02d}-n{i:02d}" for i in range(1, 19)] for r in range(1, 9)}
    racks["rack05"].remove("gb200-r05-n13")
    racks["rack07"] = []
    return racks


def uniform(racks, per_rack, prefix="n"):
    return {f"r{r:02d}": [f"{prefix}{r:02d}x{i:02d}" for i in range(1, per_rack + 1)] for r in range(1, racks + 1)}


def compact(racks):
    topology = Topology()
    for rack, nodes in racks.items():
        topology.declare_domain(rack)
        for node in nodes:
            topology.add_node(node, domain=rack)
    return topology.validate().to_compact()


# name, racks, block sizes, {node: state to set with scontrol}
CASES = [
    # The issue's cluster: 109 of 125 nodes idle (16 out across four racks).
    ("example-4-levels", example_cluster(), [18, 36, 72, 144], {
        **{f"gb200-r01-n{i:02d}": "drain" for i in (3, 9)},
        **{f"gb200-r02-n{i:02d}": "down" for i in (1, 2, 3, 4, 5)},
        **{f"gb200-r04-n{i:02d}": "drain" for i in (7, 8)},
        "gb200-r05-n01": "drain",
        **{f"gb200-r06-n{i:02d}": "down" for i in (2, 4, 6, 8, 10, 12)},
    }),
    ("example-base-only", example_cluster(), [18], {
        "gb200-r03-n01": "drain", "gb200-r03-n18": "down", "gb200-r08-n05": "drain",
    }),
    ("sparse-ladder-rack-down", uniform(6, 18), [18, 72], {
        **{f"n02x{i:02d}": "down" for i in range(1, 19)},
        "n05x07": "drain", "n05x08": "drain", "n06x01": "down",
    }),
    ("small-racks-trailing-group", uniform(5, 4), [4, 8], {"n01x01": "drain", "n03x02": "down", "n05x04": "drain"}),
    ("racks-larger-than-base", uniform(4, 18), [16, 32], {"n01x05": "drain", "n04x01": "down", "n04x02": "down"}),
    # An empty rack inside a 4-rack group opened too early stalls Slurm's pass (refused) ...
    ("stall-on-empty-rack", uniform(10, 4), [4, 16], {
        **{f"n04x{i:02d}": "drain" for i in range(1, 5)}, "n07x01": "down", "n07x02": "down",
        **{f"n08x{i:02d}": "down" for i in range(1, 5)},
    }),
    # ... and the retries that drop one node at a time from the failed attempt rescue some sizes.
    ("stall-rescued-by-retries", uniform(10, 4), [4, 16], {
        **{f"n04x{i:02d}": "drain" for i in range(1, 5)}, "n05x01": "drain", "n06x01": "drain", "n07x01": "drain",
        "n08x01": "down", "n08x02": "down",
    }),
]


def run_module(args, tmp_path):
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-m", MODULE, str(args_file)], capture_output=True, text=True,
                          env=env, check=False, timeout=300)
    result = json.loads(done.stdout)
    assert not result.get("failed"), result.get("msg")
    return result


REFUSALS = ("Requested node configuration is not available", "Requested topology configuration is not available",
            "does not fit the job size", "Node count specification invalid")


def accepted(ctld, *args):
    """True/False for Slurm's placement answer; anything else (an auth or connection error) fails the test."""
    result = ctld.test_only(*args)
    if result.returncode == 0 and "to start at" in result.stderr:
        return True, result.stderr.strip()
    if any(words in result.stderr for words in REFUSALS):
        return False, result.stderr.strip()
    raise AssertionError(f"sbatch --test-only {' '.join(args)} gave no placement answer: {result.stderr.strip()}")


def in_ranges(value, ranges):
    return any(low <= value <= high for low, high in ranges)


@pytest.mark.parametrize("name, racks, sizes, states", CASES, ids=[case[0] for case in CASES])
def test_module_matches_slurm(slurm_root, tmp_path, name, racks, sizes, states):
    model = compact(racks)
    topology = Topology.from_compact(model)
    conf = slurm.render_block_conf(topology, slurm.BlockOptions(sizes, list(racks)))
    nodes = [node for members in racks.values() for node in members]
    files = {"slurm.conf": testbed.slurm_conf(nodes, plugin="topology/block"), "topology.conf": conf}
    with testbed.slurmctld(slurm_root, files) as ctld:
        for node, state in states.items():
            ctld.scontrol("update", f"nodename={node}", f"state={state}", "reason=capacity-test")
        result = run_module({"model": model, "block_sizes": sizes, "domain_order": list(racks),
                             "scontrol_path": str(scontrol_wrapper(ctld, tmp_path))}, tmp_path)
        assert result["state_source"] == "scontrol"
        assert result["summary"]["nodes"] == len(nodes)
        assert result["summary"]["idle"] == len(nodes) - len(states)
        assert [b["name"] for b in result["blocks"]] == list(racks)
        assert [b["placeholder"] for b in result["blocks"]] == [not members for members in racks.values()]

        mismatches = []
        for entry in result["segments"]:
            size, largest = entry["size"], entry["largest_job_nodes"]
            if largest:
                ok, said = accepted(ctld, "-N", str(largest), f"--segment={size}")
                if not ok:
                    mismatches.append(f"--segment={size} -N{largest} refused: {said}")
            ok, said = accepted(ctld, "-N", str(largest + size), f"--segment={size}")
            if ok:
                mismatches.append(f"--segment={size} -N{largest + size} accepted: {said}")

        feasible = result["unsegmented_feasible"]
        for count in range(1, len(nodes) + 2):
            ok, said = accepted(ctld, "-N", str(count))
            if ok != in_ranges(count, feasible):
                mismatches.append(f"-N{count}: slurm {'accepted' if ok else 'refused'}, module ranges {feasible}")
        assert not mismatches, f"{name}: module and slurmctld disagree:\n" + "\n".join(mismatches)
        # Without running jobs, what is available once jobs end is what is idle now.
        assert result["unsegmented_feasible_available"] == feasible


def test_issue_example_is_reproduced(slurm_root, tmp_path):
    """The numbers quoted in the issue: -N34 yes, -N35/36 no, -N50-52 yes, -N66-72 no, -N84-90 yes."""
    name, racks, sizes, states = CASES[0]
    model = compact(racks)
    args = {"model": model, "block_sizes": sizes, "domain_order": list(racks), "node_states": states}
    feasible = run_module(args, tmp_path)["unsegmented_feasible"]
    for count in (34, 50, 51, 52, 84, 90):
        assert in_ranges(count, feasible), (count, feasible)
    for count in (35, 36, *range(66, 73)):
        assert not in_ranges(count, feasible), (count, feasible)
