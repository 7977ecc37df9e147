"""node_labels: the Crusoe preset and what Topograph's ``kubernetes`` provider does (require-ready, missing
labels, its tier ids). The real API server is in the integration tests; here the listed Node objects."""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover, kubernetes_nodes

from tests.unit.helpers import ListedNodes as Nodes

POD, PARTITION, CLIQUE = "crusoe.ai/pod.id", "crusoe.ai/ib.partition.id", "nvidia.com/gpu.clique"
PARTITION_A, PARTITION_B = "0cf47922-9f9e-4a2e-b187-5c51697e7739", "1d0e8b3a-2c47-4f16-9a55-7be3d9c4f082"
POD_A1, POD_A2, POD_B1 = ("9b1c7d54-3e08-4a92-8f61-2d5a4c7b0e13", "4f6a2e91-8d75-4c30-b1e8-6a9c3f5d7b24",
                          "7c3d9f68-5b21-4e84-a0f3-9e1b8d2c6a57")
CLIQUE_A = "29d9a0b8-948d-4a61-8b9e-fbbbf06c521b.32766"


def node(name, labels, ready="True", deleting=False, annotations=None):
    metadata = {"name": name, "labels": labels, "annotations": annotations or {}}
    if deleting:
        metadata["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    conditions = [{"type": "MemoryPressure", "status": "False"}] + ([{"type": "Ready", "status": ready}] if ready else [])
    return {"metadata": metadata, "status": {"conditions": conditions}}


def run(params, *nodes):
    warnings = []
    client = Nodes(*nodes)
    return kubernetes_nodes.discover_node_labels(params, {}, warnings.append, client), warnings


def discover_with(monkeypatch, params, *nodes):
    """Through the registry (spec validation, quarantine report), the listed nodes standing in for the API."""
    original = kubernetes_nodes.discover_node_labels
    monkeypatch.setattr(kubernetes_nodes, "discover_node_labels",
                        lambda p, c, w, client=None: original(p, c, w, Nodes(*nodes)))
    warnings = []
    return discover("node_labels", params, warn=warnings.append), warnings


def crusoe(name, partition, pod, clique=None):
    labels = {PARTITION: partition, POD: pod}
    if clique:
        labels[CLIQUE] = clique
    return node(name, labels)


def test_the_crusoe_preset_reads_pod_partition_and_the_clique_verbatim():
    topology, warnings = run({"preset": "crusoe"},
                             crusoe("gpu-01", PARTITION_A, POD_A1, CLIQUE_A), crusoe("gpu-02", PARTITION_A, POD_A1, CLIQUE_A),
                             crusoe("gpu-03", PARTITION_A, POD_A2), crusoe("gpu-04", PARTITION_B, POD_B1),
                             node("gb200-no-ib", {CLIQUE: CLIQUE_A}), node("cpu-01", {}))
    assert {sid: sw.parent for sid, sw in topology.switches.items()} == {
        POD_A1: PARTITION_A, POD_A2: PARTITION_A, PARTITION_A: None, POD_B1: PARTITION_B, PARTITION_B: None}
    assert topology.nodes["gpu-01"].switch == POD_A1 and topology.nodes["gpu-01"].domain == CLIQUE_A
    # The partition is not a stand-in domain; a GB200 without InfiniBand still has its clique.
    assert topology.nodes["gpu-03"].domain is None
    assert (topology.nodes["gb200-no-ib"].switch, topology.nodes["gb200-no-ib"].domain) == (None, CLIQUE_A)
    assert warnings == ["1 nodes have no topology labels and are left out: cpu-01"]
    tree = slurm.render_tree_conf(topology)
    assert f"SwitchName={PARTITION_A} Switches={POD_A2},{POD_A1}\n" in tree
    assert f"SwitchName={POD_A1} Nodes=gpu-[01-02]\n" in tree


def test_the_preset_through_the_registry_and_its_conflicts(monkeypatch):
    with pytest.raises(TopologyError, match="value of preset must be one of: crusoe, got: lambda"):
        discover("node_labels", {"preset": "lambda"}, warn=print)
    # The conflicts are the spec's checks (_specs.NODE_LABELS_PARAMS): refused before any node is read.
    with pytest.raises(TopologyError, match="^provider node_labels: params.preset crusoe sets fabric_labels; leave it out"):
        discover_with(monkeypatch, {"preset": "crusoe", "fabric_labels": ["example.com/leaf"]},
                      crusoe("gpu-01", PARTITION_A, POD_A1))
    with pytest.raises(TopologyError, match="^provider node_labels: params.preset crusoe sets fabric_labels and "
                                            "accelerator_label; leave them"):
        discover_with(monkeypatch, {"preset": "crusoe", "fabric_labels": ["a.b/c"], "accelerator_label": "a.b/d"})


FULL = crusoe("gpu-01", PARTITION_A, POD_A1)
HALF = node("half", {PARTITION: PARTITION_A})  # a partition without a pod: a gap
POD_ONLY = node("pod-only", {POD: POD_A2})  # a pod without its partition


def test_on_missing_label_partial_keeps_the_tiers_up_to_the_first_missing_one_and_quarantines_a_gap(monkeypatch):
    topology, _warnings = run({"preset": "crusoe"}, FULL, POD_ONLY)
    assert topology.nodes["pod-only"].switch == POD_A2 and topology.switches[POD_A2].parent is None
    gapped, _warnings = run({"preset": "crusoe"}, FULL, HALF)
    assert list(gapped.nodes) == ["gpu-01"]
    assert gapped.quarantined["half"].reason == f"node half: has {PARTITION} but no {POD}; tiers must start at tier 0 with no gap"
    # Through the registry: quarantined and reported, or fatal with invalid_nodes: fail.
    with pytest.raises(TopologyError, match=r"provider node_labels: 1 nodes have unusable data \(params.invalid_nodes is fail\)"):
        discover_with(monkeypatch, {"preset": "crusoe", "invalid_nodes": "fail"}, FULL, HALF)
    reported, warnings = discover_with(monkeypatch, {"preset": "crusoe"}, FULL, HALF)
    assert list(reported.nodes) == ["gpu-01"] and warnings[-1].startswith("1 nodes quarantined (left out of the map): ")


def test_on_missing_label_skip_leaves_both_out_with_a_warning():
    topology, warnings = run({"preset": "crusoe", "on_missing_label": "skip"}, FULL, HALF, POD_ONLY)
    assert list(topology.nodes) == ["gpu-01"]
    assert warnings == [f"2 nodes miss one of the tier labels {POD}, {PARTITION} and are left out "
                        "(on_missing_label: skip): half,pod-only"]


def test_on_missing_label_fail_names_the_node_and_the_label():
    params = {"preset": "crusoe", "on_missing_label": "fail"}
    with pytest.raises(TopologyError, match=f"node half: has {PARTITION} but no {POD} \\(on_missing_label: fail\\)"):
        run(params, FULL, HALF)
    with pytest.raises(TopologyError, match=f"node pod-only: has no {PARTITION} label \\(it has {POD}\\) "
                                            r"\(on_missing_label: fail\)"):
        run(params, FULL, POD_ONLY)


def test_fail_also_refuses_a_node_with_no_tier_label_at_all():
    with pytest.raises(TopologyError, match=f"node cpu-01: has no {POD} label \\(on_missing_label: fail\\)"):
        run({"preset": "crusoe", "on_missing_label": "fail"}, crusoe("gpu-01", PARTITION_A, POD_A1), node("cpu-01", {}))


def test_require_ready_leaves_out_nodes_not_ready_and_nodes_being_deleted_are_always_left_out():
    labels = {"example.com/rack": "r1"}
    nodes = (node("a", labels), node("b", labels, ready="False"), node("c", labels, ready="Unknown"),
             node("d", labels, ready=None), node("e", labels, deleting=True))
    every, warnings = run({"fabric_labels": ["example.com/rack"]}, *nodes)
    assert sorted(every.nodes) == ["a", "b", "c", "d"]
    assert warnings == ["1 nodes are being deleted and are left out: e"]
    ready, warnings = run({"fabric_labels": ["example.com/rack"], "require_ready": True}, *nodes)
    assert sorted(ready.nodes) == ["a"]
    assert warnings == ["1 nodes are being deleted and are left out: e",
                        "3 nodes are not Ready and are left out (require_ready): b,c,d"]
    with pytest.raises(TopologyError, match=r"no listed node has topology labels \(2 nodes listed, 1 being deleted, "
                                            r"1 not Ready\)"):
        run({"require_ready": True, "fabric_labels": ["example.com/rack"]}, nodes[1], nodes[4])


# Expected ids computed outside Python: printf '<path>' | sha256sum, first 32 hex digits.
@pytest.mark.parametrize("values, expected", [
    (["region"], "region"),
    (["rack-1", "east"], "rack-1-26960ebb8d5d3c9f0dd3119bd9819ac9"),
    (["east", "region"], "east-da5c8386b9404c0c2978dd511c526975"),
    (["c3d4e5f6-aaaa-bbbb-cccc-ddddeeeeffff", "b2c3d4e5-5555-6666-7777-888899990000"],
     "c3d4e5f6-aaaa-bbbb-cccc-ddddee-74d0d432ada56094ad40edde8207d379"),
    # The first 30 characters end in "-": Topograph drops it before its own "-".
    (["r" * 29 + "-" + "x" * 33, "east", "region"], "r" * 29 + "-afa35486d45eb3f1493f0bf7674fb3cb"),
])
def test_topograph_switch_ids(values, expected):
    assert kubernetes_nodes.topograph_switch_id(values) == expected
    assert len(expected) <= 63


def test_switch_ids_topograph_keeps_equal_values_under_different_parents_apart():
    nodes = (node("a", {"rack": "rack-1", "zone": "east"}), node("b", {"rack": "rack-1", "zone": "east"}),
             node("c", {"rack": "rack-1", "zone": "west"}))
    with pytest.raises(TopologyError, match="switch 'rack-1' has two parents"):
        run({"fabric_labels": ["rack", "zone"]}, *nodes)
    topology, _warnings = run({"fabric_labels": ["rack", "zone"], "switch_ids": "topograph"}, *nodes)
    east = "rack-1-26960ebb8d5d3c9f0dd3119bd9819ac9"
    assert topology.nodes["a"].switch == topology.nodes["b"].switch == east
    assert topology.switches[east].parent == "east"
    assert topology.nodes["c"].switch != east and topology.switches[topology.nodes["c"].switch].parent == "west"
    assert slurm.render_tree_conf(topology).startswith("SwitchName=east Switches=rack-1-26960ebb8d5d3c9f0dd3119bd9819ac9\n")


def test_node_selector_and_the_instance_annotation_as_for_the_other_label_providers():
    client = Nodes(node("k8s-0", {"rack": "r1"}, annotations={"topograph.run/instance": "gpu-01"}))
    topology = kubernetes_nodes.discover_node_labels({"fabric_labels": ["rack"], "node_selector": {"pool": "gpu"}},
                                                     {}, print, client)
    assert list(topology.nodes) == ["gpu-01"] and client.selectors == ["pool=gpu"]
