"""Racks named by the hardware, and a rack taken out of NVLink placement, against the REAL slurmctld.

Three GB200 NVL72 racks of 18 trays answer nvidia-smi's one query in the exact shape a 580 driver
prints it (tests/nvidia_smi_shapes.py); in the second rack two trays are unhealthy (one still
registering, one with a degraded NVLink bandwidth). Without escalation that rack keeps 16
schedulable trays and a 16-node segment may land there; with ``rack_escalation: {trays: 2}`` (and the
names witnessing the rack, ``rack_from_name``) the whole rack leaves its block and slurmctld places a
multi-node ``--segment`` job on the other racks only, and cannot place one that needs all three. Every node stays in slurm.conf, as on a real
cluster: only the topology moves them.
"""

from __future__ import annotations

import contextlib

import pytest
import slurm_testbed as testbed  # tools/ is on sys.path (tests/conftest.py)

from ansible_collections.aifactory.topology.plugins.module_utils._base.hostlist import expand
from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover

from tests import nvidia_smi_shapes as shapes

pytestmark = pytest.mark.slurm

UUIDS = ["4b1d9c3e-7a25-4f60-9e8b-d2c5a7f01e36", "0c9e7d2a-5f41-4b8e-a3d6-71e2f0c4b958",
         "7e2a9f10-3c4d-4b5e-8f60-1a2b3c4d5e6f"]
BAD = {4: {"fabric__state": "In Progress"}, 9: {"fabric__health__bandwidth": "Degraded"}}
NAMED = "gb200-r(?P<rack>[0-9]+)-n[0-9]+"


def cluster():
    """node -> GPUs of three racks; the second with two unhealthy trays."""
    nodes = {}
    for number, uuid in enumerate(UUIDS, start=1):
        nodes.update(shapes.rack(f"gb200-r{number:02d}-n", uuid, f"18211240001{number:02d}",
                                 changes=BAD if number == 2 else None))
    return nodes


def discovered(**accelerator):
    nodes = cluster()
    warnings = []
    topology = discover("inventory", {"hosts": {node: {} for node in nodes}, "accelerator": dict(
        {"nvidia_smi": {node: shapes.csv(gpus) for node, gpus in nodes.items()}}, **accelerator)},
        warn=warnings.append)
    return topology, warnings


@contextlib.contextmanager
def controller(root, topology):
    conf = slurm.render_block_conf(topology, slurm.BlockOptions(block_sizes=[18]))
    files = {"slurm.conf": testbed.slurm_conf(cluster(), plugin="topology/block"), "topology.conf": conf}
    with testbed.slurmctld(root, files) as ctld:
        yield ctld, conf


def racks_of(hostlist_text):
    return sorted({node.split("-n")[0] for node in expand(hostlist_text)})


def test_without_escalation_the_degraded_rack_still_takes_a_16_node_segment(slurm_root):
    topology, warnings = discovered()
    assert [len(rack["trays"]) - rack["schedulable"] for rack in topology.summary()["racks"]] == [0, 2, 0]
    assert warnings[-1].startswith("2 nodes quarantined (left out of the map): gb200-r02-n05")
    with controller(slurm_root, topology) as (ctld, _conf):
        assert racks_of(ctld.placement("-N48", "--segment=16")) == ["gb200-r01", "gb200-r02", "gb200-r03"]


def test_an_escalated_rack_is_avoided_by_a_multi_node_segment_job(slurm_root):
    # The operator's names witness the rack (docs/security.md, the witness rule): without them it is only reported.
    topology, warnings = discovered(rack_escalation={"trays": 2}, rack_from_name=NAMED)
    record = topology.quarantined["gb200-r02-n01"]
    assert record.unhealthy and record.reason == (
        f"rack {UUIDS[1]}.32766 (chassis 1821124000102) is taken out of NVLink placement: 2 of 18 trays are "
        "unhealthy or missing (trays 4,9)")
    assert not any(node.startswith("gb200-r02") for node in topology.nodes)
    with controller(slurm_root, topology) as (ctld, conf):
        assert "gb200-r02" not in conf
        assert racks_of(ctld.placement("-N32", "--segment=16")) == ["gb200-r01", "gb200-r03"]
        with pytest.raises(testbed.PlacementRefused):
            ctld.placement("-N48", "--segment=16")
    # The rack recovers: the next run without the fault maps it again.
    healthy = {node: shapes.csv(gpus) for node, gpus in cluster().items()}
    healthy.update({node: shapes.csv(shapes.tray("gb200", uuid=UUIDS[1], chassis="1821124000102",
                                                 slot=10 + index, tray=index))
                    for index, node in ((4, "gb200-r02-n05"), (9, "gb200-r02-n10"))})
    recovered = discover("inventory", {"hosts": {node: {} for node in healthy}, "accelerator": {
        "nvidia_smi": healthy, "rack_escalation": {"trays": 2}, "rack_from_name": NAMED}})
    assert not recovered.quarantined and len(recovered.nodes) == 54
