"""nvidia-smi fabric rows as NVLink domains, on top of every tree provider."""

from __future__ import annotations

import re

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _nvidia_smi
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import NodeDataError, NodeUnhealthy, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers._nvidia_smi import apply_nvidia_smi_domains
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover

from ...conftest_paths import FIXTURES, REPO
from ....nvidia_smi_shapes import node_domain, node_fabric

NVIDIA_SMI = REPO / "tests" / "fixtures" / "nvidia-smi"

UUID_A = "6a4f2e1c-93b7-4d0e-8f51-2c7d9e0a1b34"
UUID_B = "0c9e7d2a-5f41-4b8e-a3d6-71e2f0c4b958"


def rows(uuid, clique, gpus=4):
    return f"{uuid}, {clique}\n" * gpus


def test_identical_per_gpu_rows_are_one_domain():
    assert node_domain("n1", rows(UUID_A, 32766)) == f"{UUID_A}.32766"
    assert node_domain("n1", f"  {UUID_A} ,32766\r\n\n{UUID_A}, 32766") == f"{UUID_A}.32766"


@pytest.mark.parametrize("text, message", [
    (rows(UUID_A, 32766, 2) + rows(UUID_B, 32766, 2),
     rf"gpu7: its GPUs are in different NVLink domains: {UUID_A}.32766 \(row 1\), {UUID_B}.32766 \(row 3\)"),
    (rows(UUID_A, 1, 1) + rows(UUID_A, 2, 1), r"gpu7: its GPUs are in different NVLink domains"),
    (f"{UUID_A}\n",
     r"gpu7, row 1: expected one of 17, 11, 10, 4, 2 columns, got 1: '6a4f.*other columns need a header: --format=csv"),
    (f"{UUID_A}, 1, Completed\n", r"gpu7, row 1: expected one of 17, 11, 10, 4, 2 columns, got 3"),
    # An extra column is never folded into the status: without a header, a count that is no layout is refused.
    (f"{UUID_A}, 1, Completed, Insufficient Resources, retry\n", r"gpu7, row 1: expected one of .* got 5"),
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
    apply_nvidia_smi_domains(topology, {"gpu1": rows(UUID_A, 1), "gpu2": fixture("fabric-in-progress.csv")})
    assert topology.nodes["gpu1"].domain == f"{UUID_A}.1" and "gpu2" not in topology.nodes
    record = topology.quarantined["gpu2"]
    assert record.unhealthy and record.reason.startswith("nvidia-smi output of gpu2, row 1: fabric.state is 'In Progress'")
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
    apply_nvidia_smi_domains(topology, {"gpu1": fixture("fabric-in-progress.csv")})
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
    with pytest.raises(TopologyError, match="provider inventory: params.accelerator has unknown keys: nvidiaSmi; known: "
                                            "nvidia_smi, rack_escalation, rack_from_name, rack_trays, require_domain, source"):
        discover("inventory", dict(inventory, accelerator={"source": "nvidia_smi", "nvidiaSmi": {}}))
    with pytest.raises(TopologyError, match="accelerator.nvidia_smi must map each node"):
        discover("inventory", dict(inventory, accelerator={"source": "nvidia_smi"}))


# -- fabric registration and health (issue 18): one fixture per state, in nvidia-smi's own formats --------

def fixture(name):
    return (NVIDIA_SMI / name).read_text()


def test_the_query_uses_the_documented_property_names():
    assert _nvidia_smi.QUERY == (
        "nvidia-smi --query-gpu=fabric.clusterUuid,fabric.cliqueId,fabric.state,fabric.status,"
        "fabric.health.summary,fabric.health.bandwidth,fabric.health.route_recovery_in_progress,"
        "fabric.health.route_unhealthy,fabric.health.access_timeout_recovery,fabric.health.incorrect_configuration,"
        "fabric.health.partition_assigned,platform.chassis_serial_number,platform.slot_number,platform.tray_index,"
        "platform.host_id,platform.peer_type,platform.module_id --format=csv,noheader")


@pytest.mark.parametrize("name", ["fabric-completed.csv", "fabric-healthy.q.txt"])
def test_a_completed_successful_healthy_tray_is_its_domain(name):
    facts = node_fabric("gpu7", fixture(name))
    assert {key: facts[key] for key in ("cluster_uuid", "clique_id", "domain", "gpus", "state", "status", "fabric")} == {
        "cluster_uuid": UUID_A, "clique_id": "32766", "domain": f"{UUID_A}.32766", "gpus": 4,
        "state": "Completed", "status": "Success", "fabric": "domain"}
    assert "unhealthy" not in facts


def test_the_older_two_column_output_is_still_read_without_a_registration():
    assert node_fabric("gpu7", fixture("fabric-legacy-two-columns.csv")) == {
        "cluster_uuid": UUID_A, "clique_id": "32766", "domain": f"{UUID_A}.32766", "gpus": 4, "fabric": "domain"}


@pytest.mark.parametrize("name, kind, message", [
    ("fabric-in-progress.csv", NodeUnhealthy,
     "nvidia-smi output of gpu7, row 1: fabric.state is 'In Progress', not 'Completed'; the GPU has not finished "
     "registering with the NVLink fabric"),
    ("fabric-not-started.csv", NodeUnhealthy, "nvidia-smi output of gpu7, row 1: fabric.state is 'Not Started', not 'Completed'"),
    ("fabric-failure.csv", NodeUnhealthy,
     "nvidia-smi output of gpu7, row 1: fabric.status is 'Unknown Error', not 'Success'; the GPU's registration "
     "with the NVLink fabric failed"),
    ("fabric-degraded-bandwidth.q.txt", NodeUnhealthy,
     "nvidia-smi output of gpu7, line 30: fabric.health.bandwidth is 'Degraded', not 'Full'; the GPU's NVLink "
     "fabric is degraded"),
    ("fabric-mixed.csv", NodeUnhealthy, "nvidia-smi output of gpu7, row 3: fabric.state is 'In Progress'"),
], ids=["in-progress", "not-started", "failure-status", "degraded-bandwidth", "mixed-rows"])
def test_a_tray_not_registered_or_degraded_is_unhealthy_naming_node_row_field_and_value(name, kind, message):
    with pytest.raises(kind) as info:
        node_fabric("gpu7", fixture(name))
    assert str(info.value).startswith(message)
    assert isinstance(info.value, NodeUnhealthy)  # what the quarantine (and the opt-in drain) acts on


@pytest.mark.parametrize("text, message", [
    (f"{UUID_A}, 1, completed, success\n", None),  # nvidia-smi's words, whatever the case
    (f"{UUID_A}, 1, Completed, Insufficient Resources\n", "fabric.status is 'Insufficient Resources', not 'Success'"),
    (f"{UUID_A}, 1, Completed, \n", "fabric.status is 'empty', not 'Success'"),
    (f"{UUID_A}, 1, {'S' * 5000}, Success\n", r"fabric.state is 'SSSS"),
])
def test_registration_values(text, message):
    if message is None:
        assert node_domain("gpu7", text) == f"{UUID_A}.1"
        return
    with pytest.raises(NodeUnhealthy) as info:
        node_domain("gpu7", text)
    assert message in str(info.value) and len(str(info.value)) < 300  # a long value is clipped


def full_query(state="Completed", status="Success", **health):
    rows = {"Summary": "Healthy", "Bandwidth": "Full", "Route Recovery in progress": "False",
            "Route Unhealthy": "False", "Access Timeout Recovery": "False", "Incorrect Configuration": "None"}
    rows.update((key.replace("_", " "), value) for key, value in health.items())
    lines = "".join(f"            {key:<30}: {value}\n" for key, value in rows.items())
    return (f"GPU 00000008:01:00.0\n    Fabric\n        State      : {state}\n        Status     : {status}\n"
            f"        CliqueId   : 7\n        ClusterUUID : {UUID_A}\n        Health\n{lines}    Processes : None\n")


@pytest.mark.parametrize("health, message", [
    ({"Summary": "Unhealthy"}, "fabric.health.summary is 'Unhealthy', not 'Healthy'"),
    ({"Summary": "Limited Capacity", "Bandwidth": "Degraded"}, "fabric.health.bandwidth is 'Degraded'"),
    ({"Summary": "Limited Capacity"}, "fabric.health.summary is 'Limited Capacity'"),
    ({"Route_Unhealthy": "True"}, "fabric.health.route_unhealthy is 'True', not 'False'"),
    ({"Route_Recovery_in_progress": "True"}, "fabric.health.route_recovery_in_progress is 'True'"),
    ({"Access_Timeout_Recovery": "True"}, "fabric.health.access_timeout_recovery is 'True'"),
    ({"Incorrect_Configuration": "Insufficient Nvlinks"}, "fabric.health.incorrect_configuration is 'Insufficient"),
    ({"Partition_Assigned": "False"}, "fabric.health.partition_assigned is 'False', not 'True'; the GPU is in no NVLink "
                                      "partition"),
    ({"Partition_Assigned": "True"}, None),
    ({"Summary": "N/A", "Bandwidth": "Not Supported"}, None),  # not reported: nothing to judge
])
def test_each_health_row_of_the_full_query(health, message):
    text = full_query(**health)
    if message is None:
        assert node_domain("gpu7", text) == f"{UUID_A}.7"
        return
    with pytest.raises(NodeUnhealthy, match="nvidia-smi output of gpu7, line 1: " + message):
        node_domain("gpu7", text)


def test_the_full_query_registration_is_checked_like_the_csv_one():
    with pytest.raises(NodeUnhealthy, match="line 1: fabric.state is 'In Progress'"):
        node_domain("gpu7", full_query(state="In Progress", status="N/A"))
    with pytest.raises(NodeDataError, match="line 1: fabric.cliqueId: '7 x' contains white space"):
        node_domain("gpu7", full_query().replace("CliqueId   : 7", "CliqueId   : 7 x"))


def test_a_registered_result_of_bytes_that_were_not_utf8_is_refused():
    # A decoder with errors=replace leaves U+FFFD for such bytes; the name rule alone would let it through.
    topology = Topology()
    apply_nvidia_smi_domains(topology, {"gpu1": {"stdout": f"{UUID_A}, 3\ufffd, Completed, Success", "rc": 0}})
    assert not topology.quarantined["gpu1"].unhealthy
    assert re.search(r"gpu1, row 1: fabric.cliqueId '3\ufffd' holds U\+FFFD", topology.quarantined["gpu1"].reason)


@pytest.mark.parametrize("text, message", [
    ("x" * (_nvidia_smi.MAX_OUTPUT_CHARS + 1), "has 1048577 characters, more than 1048576"),
    (f"{UUID_A}, 1, Completed, Success\n" * (_nvidia_smi.MAX_ROWS + 1), "has more than 4096 GPU rows"),
    ("    Fabric\n        State : N/A\n" * (_nvidia_smi.MAX_ROWS + 1), "has more than 4096 GPU sections"),
])
def test_the_output_of_one_node_is_bounded(text, message):
    with pytest.raises(NodeDataError, match=message):
        node_domain("gpu7", text)


# -- the provider input path: params.accelerator.nvidia_smi -----------------------------------------

@pytest.mark.parametrize("output", [
    fixture("fabric-in-progress.csv"),
    {"stdout": fixture("fabric-failure.csv"), "rc": 0},
    fixture("fabric-degraded-bandwidth.q.txt"),
    {"nvlink": {"gpus": 4, "unhealthy": "nvidia-smi output of gpu1, row 3: fabric.state is 'In Progress'"}},
    {"nvlink": {"cluster_uuid": UUID_A, "clique_id": "1", "state": "Not Started", "status": "N/A"}},
], ids=["output", "registered-result", "full-query", "gathered-unhealthy", "gathered-state"])
def test_the_provider_input_quarantines_the_unhealthy_node_naming_it(output):
    topology = discover("inventory", {"hosts": {"gpu1": {}, "gpu2": {}},
                                      "accelerator": {"nvidia_smi": {"gpu1": output,
                                                                     "gpu2": fixture("fabric-completed.csv")}}})
    assert list(topology.nodes) == ["gpu2"] and topology.quarantined["gpu1"].unhealthy
    assert "gpu1" in topology.quarantined["gpu1"].reason
    with pytest.raises(TopologyError, match="1 nodes have unusable data .*gpu1"):
        discover("inventory", {"hosts": {"gpu1": {}, "gpu2": {}}, "invalid_nodes": "fail",
                               "accelerator": {"nvidia_smi": {"gpu1": output, "gpu2": fixture("fabric-completed.csv")}}})


@pytest.mark.parametrize("output", [
    fixture("fabric-completed.csv"), fixture("fabric-legacy-two-columns.csv"), fixture("fabric-healthy.q.txt"),
    {"stdout": fixture("fabric-completed.csv"), "rc": 0},
    {"nvlink": {"cluster_uuid": UUID_A, "clique_id": "32766"}},  # facts of an older topology_facts
    {"nvlink": {"cluster_uuid": UUID_A, "clique_id": 32766, "state": "Completed", "status": "Success",
                "health_checked": True}},
], ids=["csv", "legacy-csv", "full-query", "registered-result", "old-facts", "facts"])
def test_the_provider_input_takes_every_healthy_form(output):
    topology = discover("inventory", {"hosts": {"gpu1": {}}, "accelerator": {"nvidia_smi": {"gpu1": output}}})
    assert topology.nodes["gpu1"].domain == f"{UUID_A}.32766"
