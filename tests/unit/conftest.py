"""Fixtures shared by unit tests in several directories."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._engines import capacity, slurm
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._segment_capacity import fabric


@pytest.fixture(scope="session")
def segment_capacity_result():
    """A factory of fresh segment_capacity results: two racks of 4 under one leaf, a placeholder between."""
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
