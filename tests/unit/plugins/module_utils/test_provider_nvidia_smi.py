"""nvidia-smi fabric rows as NVLink domains, on top of every tree provider."""

from __future__ import annotations

import re

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._nvidia_smi import apply_nvidia_smi_domains, node_domain
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover

from ...conftest_paths import FIXTURES

UUID_A = "6a4f2e1c-93b7-4d0e-8f51-2c7d9e0a1b34"
UUID_B = "0c9e7d2a-5f41-4b8e-a3d6-71e2f0c4b958"


def rows(uuid, clique, gpus=4):
    return f"{uuid}, {clique}\n" * gpus


def test_identical_per_gpu_rows_are_one_domain():
    assert node_domain("n1", rows(UUID_A, 32766)) == f"{UUID_A}.32766"
    assert node_domain("n1", f"  {UUID_A} ,32766\r\n\n{UUID_A}, 32766") == f"{UUID_A}.32766"


@pytest.mark.parametrize("text, message", [
    (f"{UUID_A}, 32766\nN/A, N/A\n", r"nvidia-smi output of gpu7, row 2: fabric.clusterUuid is 'N/A'; the GPU is not in an NVLink fabric"),
    (f"{UUID_A}, [N/A]\n", r"gpu7, row 1: fabric.cliqueId is '\[N/A\]'"),
    (f"{UUID_A}, \n", r"gpu7, row 1: fabric.cliqueId is 'empty'"),
    ("00000000-0000-0000-0000-000000000000, 0\n", r"gpu7, row 1: the cluster UUID is all zeros"),
    (rows(UUID_A, 32766, 2) + rows(UUID_B, 32766, 2),
     rf"gpu7: its GPUs are in different NVLink domains: {UUID_A}.32766 \(row 1\), {UUID_B}.32766 \(row 3\)"),
    (rows(UUID_A, 1, 1) + rows(UUID_A, 2, 1), r"gpu7: its GPUs are in different NVLink domains"),
    (f"{UUID_A}\n", r"gpu7, row 1: expected 'clusterUuid, cliqueId', got '6a4f"),
    ("\n", r"nvidia-smi output of gpu7 has no GPU row"),
])
def test_unusable_rows_fail_naming_the_node(text, message):
    with pytest.raises(TopologyError, match=message):
        node_domain("gpu7", text)


# What the issue measured: a domain with a Slurm record inside, and a 2,000-character one, both accepted.
@pytest.mark.parametrize("uuid, clique, message", [
    ("x BlockName=evil Nodes=victim[01-99]", "7", r"gpu7, row 1: fabric.clusterUuid: 'x BlockName=evil Nodes=victim"
                                                  r"\[01-99\]' contains white space"),
    (UUID_A, "7#comment", r"gpu7, row 1: fabric.cliqueId: '7#comment' contains '#'"),
    (UUID_A, "c" * 2000, r"gpu7, row 1: fabric.cliqueId: 'cccc.*\(2000 characters\) is longer than 253 characters"),
    ("u" * 200, "c" * 100, r"gpu7, row 1: the domain: 'uuuu.*\(301 characters\) is longer than 253 characters"),
    (UUID_A, "3\udcff", r"gpu7, row 1: fabric.cliqueId: .* contains white space or a control character"),
], ids=["slurm-record", "comment", "2000-characters", "joined-too-long", "undecodable-byte"])
def test_clique_and_cluster_ids_follow_the_model_name_rule(uuid, clique, message):
    with pytest.raises(TopologyError, match=message):
        node_domain("gpu7", rows(uuid, clique))


def test_a_node_already_in_the_tree_cannot_get_a_domain_that_is_not_a_name():
    # The tree's nodes get the domain by assignment, past add_node's check: node_domain is where it is checked.
    gathered = {"nvlink": {"cluster_uuid": UUID_A, "clique_id": "c" * 2000}}
    for output in ("x BlockName=evil Nodes=victim[01-99], 7\n", gathered):
        topology = Topology()
        topology.add_node("gpu1", domain="old")
        topology.add_node("gpu2", domain="old")
        apply_nvidia_smi_domains(topology, {"gpu1": output})
        assert list(topology.nodes) == ["gpu2"] and topology.nodes["gpu2"].domain == "old"
        record = topology.quarantined["gpu1"]
        assert (record.node, record.source, record.unhealthy) == ("gpu1", "nvidia_smi", False)
        assert re.search("accelerator.nvidia_smi.gpu1|nvidia-smi output of gpu1, row 1", record.reason)


def test_one_bad_node_is_quarantined_as_unhealthy_and_the_others_get_their_domain():
    topology = Topology()
    topology.add_node("gpu1")
    topology.add_node("gpu2")
    apply_nvidia_smi_domains(topology, {"gpu1": rows(UUID_A, 1), "gpu2": "N/A, N/A\n"})
    assert topology.nodes["gpu1"].domain == f"{UUID_A}.1" and "gpu2" not in topology.nodes
    record = topology.quarantined["gpu2"]
    assert record.unhealthy and record.reason.startswith("nvidia-smi output of gpu2, row 1: fabric.clusterUuid is 'N/A'")
    assert topology.quarantine_report() == [{"node": "gpu2", "identifier": "gpu2", "source": "nvidia_smi",
                                             "reason": record.reason, "kind": "unhealthy"}]


def test_a_node_quarantined_once_stays_out_whatever_a_later_record_says():
    topology = Topology()
    topology.quarantine("gpu1", "nvidia_smi", "its GPUs are in two cliques")
    topology.add_node("gpu1", switch=None, domain="rack1")
    topology.add_nodes(["gpu0", "gpu1", "gpu2"], domain="rack1")
    assert sorted(topology.nodes) == ["gpu0", "gpu2"] and list(topology.quarantined) == ["gpu1"]


def test_every_node_quarantined_is_an_error_of_the_whole_run():
    topology = Topology()
    topology.add_node("gpu1")
    apply_nvidia_smi_domains(topology, {"gpu1": "N/A, N/A\n"})
    with pytest.raises(TopologyError, match=r"every node was quarantined \(1\), so nothing is left to map: gpu1 "
                                            r"\(nvidia-smi output of gpu1, row 1"):
        topology.validate()


def test_nodes_outside_the_tree_are_added_without_a_switch_and_reported():
    topology = Topology()
    topology.add_switch("leaf")
    topology.add_node("gpu1", switch="leaf", domain="old", sub_domain="old.rack")
    warnings = []
    apply_nvidia_smi_domains(topology, {"gpu1": rows(UUID_A, 1), "gpu2": {"stdout": rows(UUID_A, 1), "rc": 0}},
                             warnings.append)
    assert [(n.name, n.switch, n.domain, n.sub_domain) for n in topology.nodes.values()] == [
        ("gpu1", "leaf", f"{UUID_A}.1", None), ("gpu2", None, f"{UUID_A}.1", None)]
    assert warnings == ["1 nodes with nvidia-smi output are not in the 1-node tree and get no switch: gpu2"]


def test_a_failed_nvidia_smi_task_quarantines_that_node_as_unhealthy():
    topology = Topology()
    apply_nvidia_smi_domains(topology, {"gpu1": {"stdout": "", "rc": 9, "stderr": "NVIDIA-SMI has failed"}})
    record = topology.quarantined["gpu1"]
    assert record.unhealthy
    assert record.reason == "accelerator.nvidia_smi.gpu1: the command failed (rc=9): NVIDIA-SMI has failed"


IB = (FIXTURES / "ibnetdiscover-example.out").read_text()


@pytest.mark.parametrize("name, params, node", [
    ("inventory", {"switches": {"leaf1": None}, "hosts": {"gpu1": {"switch": "leaf1"}}}, "gpu1"),
    ("simulation", {"model_path": str(FIXTURES / "small-tree.yaml")}, "I21"),
    ("infiniband", {"ibnetdiscover": {"n": IB}, "nodes": "b05-p1-dgx-05-c[01-18]"}, "b05-p1-dgx-05-c01"),
])
def test_every_tree_provider_takes_nvidia_smi_domains(name, params, node):
    accelerator = {"source": "nvidia_smi", "nvidia_smi": {node: rows(UUID_A, 32766)}}
    topology = discover(name, dict(params, accelerator=accelerator))
    assert topology.nodes[node].domain == f"{UUID_A}.32766"
    assert topology.nodes[node].switch is not None  # the tree is the provider's


def test_accelerator_source_none_and_bad_specs():
    inventory = {"hosts": {"gpu1": {}}}
    assert discover("inventory", dict(inventory, accelerator={"source": "none"})).nodes["gpu1"].domain is None
    with pytest.raises(TopologyError, match="provider inventory: params: value of source must be one of: nvidia_smi, nvidia-smi, none, got: kubernetes-label"):
        discover("inventory", dict(inventory, accelerator={"source": "kubernetes-label"}))
    with pytest.raises(TopologyError, match="provider inventory: params.accelerator has unknown keys: nvidiaSmi; known: nvidia_smi, source"):
        discover("inventory", dict(inventory, accelerator={"source": "nvidia_smi", "nvidiaSmi": {}}))
    with pytest.raises(TopologyError, match="accelerator.nvidia_smi must map each node"):
        discover("inventory", dict(inventory, accelerator={"source": "nvidia_smi"}))
