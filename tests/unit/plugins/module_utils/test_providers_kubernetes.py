"""dra and node_labels providers: parsing of listed Node objects (the real API server is in the integration tests)."""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import kubernetes_nodes
from tests.unit.helpers import ListedNodes

TIER = "fabric.topograph.run/tier-"


def test_dra_domains_from_the_clique_label_and_names_from_the_instance_annotation():
    client = ListedNodes(("k8s-0", {"nvidia.com/gpu.clique": "uuid.1"}, {"topograph.run/instance": "gpu01"}),
                         ("k8s-1", {"nvidia.com/gpu.clique": " uuid.1 "}, {}),
                         ("k8s-2", {"nvidia.com/gpu.clique": "uuid.2"}, {"topograph.run/instance": ""}),
                         ("cpu-0", {}, {}))
    warnings = []
    topo = kubernetes_nodes.discover_dra({"node_selector": {"pool": "gpu"}}, {}, warnings.append, client)
    assert {n.name: n.domain for n in topo.nodes.values()} == {"gpu01": "uuid.1", "k8s-1": "uuid.1", "k8s-2": "uuid.2"}
    assert not topo.switches and client.selectors == ["pool=gpu"]
    assert client.metadata_only  # labels and annotations only: no Node status crosses the wire
    assert warnings == ["1 nodes have no nvidia.com/gpu.clique label and are left out: cpu-0"]
    custom = kubernetes_nodes.discover_dra({"label": "example.com/rack", "instance_annotation": ""}, {}, warnings.append,
                                           ListedNodes(("k8s-0", {"example.com/rack": "r1"}, {"topograph.run/instance": "x"})))
    assert list(custom.nodes) == ["k8s-0"] and custom.nodes["k8s-0"].domain == "r1"


def test_dra_errors():
    with pytest.raises(TopologyError, match="no listed node has the label 'nvidia.com/gpu.clique' \\(1 nodes listed\\)"):
        kubernetes_nodes.discover_dra({}, {}, print, ListedNodes(("cpu", {}, {})))
    with pytest.raises(TopologyError, match="nodes 'a' and 'b' both map to 'x'"):
        kubernetes_nodes.discover_dra({}, {}, print, ListedNodes(("a", {}, {"topograph.run/instance": "x"}),
                                                                 ("b", {}, {"topograph.run/instance": "x"})))


def test_node_labels_rebuild_the_tree_and_domains():
    labels = {f"{TIER}0": "leaf1", f"{TIER}1": "spine1", f"{TIER}2": "core",
              "accelerator.topograph.run/domain": "nvl1", "accelerator.topograph.run/sub-domain": "rack01"}
    client = ListedNodes(("n1", labels, {}), ("n2", dict(labels, **{f"{TIER}0": "leaf2"}), {}),
                         ("n3", {f"{TIER}0": "leaf3", f"{TIER}1": "spine1", f"{TIER}2": "core"}, {}),
                         ("cpu", {"kubernetes.io/hostname": "cpu"}, {}))
    warnings = []
    topo = kubernetes_nodes.discover_node_labels({}, {}, warnings.append, client)
    assert client.metadata_only
    with pytest.raises(TopologyError, match="4 not Ready"):  # these Nodes have no status
        kubernetes_nodes.discover_node_labels({"require_ready": True}, {}, print, client)
    assert not client.metadata_only  # the Ready condition is in the status
    assert {s.id: s.parent for s in topo.switches.values()} == {
        "leaf1": "spine1", "spine1": "core", "core": None, "leaf2": "spine1", "leaf3": "spine1"}
    assert (topo.nodes["n1"].switch, topo.nodes["n1"].domain, topo.nodes["n1"].sub_domain) == ("leaf1", "nvl1", "rack01")
    assert topo.nodes["n3"].domain is None and "cpu" not in topo.nodes
    assert warnings == ["1 nodes have no topology labels and are left out: cpu"]


def test_node_labels_with_custom_keys_gaps_and_conflicts():
    client = ListedNodes(("n1", {"crusoe.ai/leaf": "l1", "crusoe.ai/spine": "s1", "crusoe.ai/nvl": "d1"}, {}))
    topo = kubernetes_nodes.discover_node_labels(
        {"fabric_labels": ["crusoe.ai/leaf", "crusoe.ai/spine"], "accelerator_label": "crusoe.ai/nvl"}, {}, print, client)
    assert topo.nodes["n1"].switch == "l1" and topo.switches["l1"].parent == "s1" and topo.nodes["n1"].domain == "d1"
    # A gap is that node's problem: it is quarantined, the others go on.
    gapped = kubernetes_nodes.discover_node_labels({}, {}, print, ListedNodes(
        ("n1", {f"{TIER}1": "s"}, {}), ("n2", {f"{TIER}0": "l1"}, {})))
    assert list(gapped.nodes) == ["n2"]
    assert gapped.quarantined["n1"].reason == f"node n1: has {TIER}1 but no {TIER}0; tiers must start at tier 0 with no gap"
    # Every node quarantined: the provider returns them, and the registry fails naming them (see
    # test_providers_kubernetes_quarantine.py); a run with no labelled node at all fails here.
    alone = kubernetes_nodes.discover_node_labels({}, {}, print, ListedNodes(("n1", {f"{TIER}1": "s"}, {})))
    assert not alone.nodes and list(alone.quarantined) == ["n1"]
    with pytest.raises(TopologyError, match=r"no listed node has topology labels \(1 nodes listed\)"):
        kubernetes_nodes.discover_node_labels({}, {}, print, ListedNodes(("n1", {"other": "s"}, {})))
    with pytest.raises(TopologyError, match="switch 'l1' has two parents"):
        kubernetes_nodes.discover_node_labels({}, {}, print, ListedNodes(
            ("n1", {f"{TIER}0": "l1", f"{TIER}1": "s1"}, {}), ("n2", {f"{TIER}0": "l1", f"{TIER}1": "s2"}, {})))


def test_a_label_value_the_name_rule_refuses_quarantines_that_node_naming_the_label():
    # Tenants with node-label rights (or a bad controller) set these; one node's value is that node's problem.
    listed = ListedNodes(("n1", {f"{TIER}0": "leaf 1"}, {}), ("n2", {f"{TIER}0": "l1", "accelerator.topograph.run/domain": "r,1"}, {}),
                         ("n3", {f"{TIER}0": "l1", "accelerator.topograph.run/domain": "r1"}, {}))
    topo = kubernetes_nodes.discover_node_labels({}, {}, print, listed)
    assert list(topo.nodes) == ["n3"] and sorted(topo.quarantined) == ["n1", "n2"]
    assert topo.quarantined["n1"].reason.startswith(f"node n1 label {TIER}0: 'leaf 1' contains white space")
    assert topo.quarantined["n2"].reason.startswith("node n2 label accelerator.topograph.run/domain: 'r,1' contains ','")
