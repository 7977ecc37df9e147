"""dra and node_labels through the registry: one Node's unusable label value or instance annotation quarantines
that node (``invalid_nodes: fail`` fails naming it); the listed Nodes stand in for the API server."""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover
from ansible_collections.aifactory.topology.plugins.module_utils._transport.k8s import K8sError

from tests.unit.helpers import ServedNodes

CLIQUE, INSTANCE, TIER0, TIER1 = ("nvidia.com/gpu.clique", "topograph.run/instance", "fabric.topograph.run/tier-0",
                                  "fabric.topograph.run/tier-1")
DOMAIN = "accelerator.topograph.run/domain"


class FailingList(ServedNodes):
    def list(self, path, label_selector=None, metadata_only=False):
        raise K8sError("GET /api/v1/nodes: 503 Service Unavailable", status=503)


def run(provider, nodes, **params):
    warnings = []
    return discover(provider, params, warn=warnings.append, k8s_client=ServedNodes(*nodes)), warnings


def dra_nodes(bad_labels=None, bad_annotations=None):
    """Three nodes of clique uuid.1 and k8s-3 of uuid.2; k8s-1 gets ``bad_labels`` and ``bad_annotations``."""
    nodes = [(f"k8s-{n}", {CLIQUE: "uuid.2" if n == 3 else "uuid.1"}, {INSTANCE: f"gpu0{n}"}) for n in range(4)]
    nodes[1] = ("k8s-1", dict(nodes[1][1], **(bad_labels or {})), dict(nodes[1][2], **(bad_annotations or {})))
    return nodes


def tree_nodes(bad_annotations):
    """gpu00 and gpu02 under leaf-a, k8s-1 alone under leaf-b, all under spine; k8s-1 gets ``bad_annotations``."""
    return [(f"k8s-{n}", {TIER0: "leaf-b" if n == 1 else "leaf-a", TIER1: "spine", DOMAIN: "nvl1"},
             dict({INSTANCE: f"gpu0{n}"}, **(bad_annotations if n == 1 else {}))) for n in range(3)]


@pytest.mark.parametrize("clique, shown", [("a,b", "'a,b' contains ','"),
                                           ("uuid\nBlockName=x", "'uuid\\nBlockName=x' contains white space")])
def test_dra_a_clique_the_name_rule_refuses_quarantines_that_node_alone(clique, shown):
    topology, warnings = run("dra", dra_nodes({CLIQUE: clique}))
    assert {name: node.domain for name, node in topology.nodes.items()} == {
        "gpu00": "uuid.1", "gpu02": "uuid.1", "gpu03": "uuid.2"}
    assert topology.domains() == {"uuid.1": ["gpu00", "gpu02"], "uuid.2": ["gpu03"]}
    (record,) = topology.quarantine_report()
    assert (record["node"], record["source"], record["kind"]) == ("gpu01", "dra", "invalid")
    assert record["reason"].startswith(f"node gpu01 label {CLIQUE}: {shown}") and "\n" not in record["reason"]
    assert warnings == [f"1 nodes quarantined (left out of the map): gpu01 ({record['reason']})"]


def test_dra_with_invalid_nodes_fail_a_bad_clique_fails_naming_node_and_label():
    with pytest.raises(TopologyError, match=r"^provider dra: 1 nodes have unusable data \(params.invalid_nodes is "
                                            rf"fail\): gpu01 \(node gpu01 label {CLIQUE}: 'a,b' contains ','"):
        run("dra", dra_nodes({CLIQUE: "a,b"}), invalid_nodes="fail")


def test_dra_an_instance_annotation_that_is_no_name_quarantines_that_node_under_its_raw_value():
    topology, warnings = run("dra", dra_nodes(bad_annotations={INSTANCE: "x y"}))
    assert sorted(topology.nodes) == ["gpu00", "gpu02", "gpu03"] and topology.nodes["gpu00"].domain == "uuid.1"
    (record,) = topology.quarantine_report()
    # The name itself is the problem: no node, the raw value clipped and escaped; the reason names the Node.
    assert (record["node"], record["identifier"], record["source"]) == (None, "'x y'", "dra")
    assert record["reason"] == (f"node k8s-1 annotation {INSTANCE}: 'x y' contains white space or a control "
                                "character (' ')")
    assert warnings == [f"1 nodes quarantined (left out of the map): 'x y' ({record['reason']})"]
    with pytest.raises(TopologyError, match=rf"invalid_nodes is fail\): 'x y' \(node k8s-1 annotation {INSTANCE}: "):
        run("dra", dra_nodes(bad_annotations={INSTANCE: "x y"}), invalid_nodes="fail")


def test_dra_a_node_without_the_label_is_left_out_under_its_kubernetes_name_whatever_its_annotation():
    nodes = dra_nodes() + [("cpu-0", {}, {INSTANCE: "cpu 0\nevil"})]
    topology, warnings = run("dra", nodes, invalid_nodes="fail")  # not in the map: its name does not matter
    assert len(topology.nodes) == 4 and not topology.quarantined
    assert warnings == [f"1 nodes have no {CLIQUE} label and are left out: cpu-0"]


def test_dra_when_every_labelled_node_is_quarantined_the_run_fails_naming_them():
    with pytest.raises(TopologyError, match=rf"^every node was quarantined \(1\), so nothing is left to map: gpu00 "
                                            rf"\(node gpu00 label {CLIQUE}: 'a,b'"):
        run("dra", [("k8s-0", {CLIQUE: "a,b"}, {INSTANCE: "gpu00"}), ("cpu-0", {}, {})])


def test_node_labels_an_instance_annotation_that_is_no_name_quarantines_that_node_under_no_switch():
    topology, warnings = run("node_labels", tree_nodes({INSTANCE: "x,y"}))
    assert {name: (node.switch, node.domain) for name, node in topology.nodes.items()} == {
        "gpu00": ("leaf-a", "nvl1"), "gpu02": ("leaf-a", "nvl1")}
    assert {sid: switch.parent for sid, switch in topology.switches.items()} == {"leaf-a": "spine", "spine": None}
    (record,) = topology.quarantine_report()
    assert (record["node"], record["identifier"], record["source"]) == (None, "'x,y'", "node_labels")
    assert record["reason"].startswith(f"node k8s-1 annotation {INSTANCE}: 'x,y' contains ','")
    assert warnings == [f"1 nodes quarantined (left out of the map): 'x,y' ({record['reason']})"]


def test_node_labels_with_invalid_nodes_fail_a_bad_instance_annotation_fails_naming_node_and_annotation():
    with pytest.raises(TopologyError, match=r"^provider node_labels: 1 nodes have unusable data \(params.invalid_nodes "
                                            rf"is fail\): 'x y' \(node k8s-1 annotation {INSTANCE}: 'x y' contains"):
        run("node_labels", tree_nodes({INSTANCE: "x y"}), invalid_nodes="fail")


def test_node_labels_when_every_node_is_quarantined_the_run_fails_naming_them():
    with pytest.raises(TopologyError, match=rf"^every node was quarantined \(1\), so nothing is left to map: n1 "
                                            rf"\(node n1: has {TIER1} but no {TIER0}"):
        run("node_labels", [("n1", {TIER1: "s"}, {})])


def test_node_labels_nodes_left_out_are_named_by_their_kubernetes_name_when_the_annotation_is_no_name():
    deleting = {"metadata": {"name": "gone-0", "labels": {TIER0: "leaf-a"}, "annotations": {INSTANCE: "g,0"},
                             "deletionTimestamp": "2026-12-01T00:00:00Z"}}
    nodes = tree_nodes({}) + [("cpu-0", {}, {INSTANCE: "cpu 0"}), deleting]
    topology, warnings = run("node_labels", nodes, invalid_nodes="fail")
    assert sorted(topology.nodes) == ["gpu00", "gpu01", "gpu02"] and not topology.quarantined
    assert warnings == ["1 nodes are being deleted and are left out: gone-0",
                        "1 nodes have no topology labels and are left out: cpu-0"]


@pytest.mark.parametrize("provider", ["dra", "node_labels"])
def test_whole_input_problems_stay_fatal(provider):
    with pytest.raises(K8sError, match="503 Service Unavailable"):
        discover(provider, {}, k8s_client=FailingList())
    with pytest.raises(TopologyError, match="nodes 'k8s-0' and 'k8s-1' both map to 'gpu00'"):
        run(provider, [("k8s-0", {CLIQUE: "u.1", TIER0: "l"}, {INSTANCE: "gpu00"}),
                       ("k8s-1", {CLIQUE: "u.1", TIER0: "l"}, {INSTANCE: "gpu00"})])
