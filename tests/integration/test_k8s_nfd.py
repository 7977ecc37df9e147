"""aifactory.topology.nfd_topology against the REAL kube-apiserver with NFD's own CRDs (from the NFD Go module),
and the objects consumed by the REAL nfd-master (built with the test bed from the same module version).

nfd-master is the consumer: it writes each NodeFeatureGroup's ``status.nodes`` and, through the
NodeFeatureRule the collection ships (files/nfd/topograph-labels.nodefeaturerule.yaml), the node labels.
Every wait is a watch or a bounded poll of the state nfd-master writes.
"""

from __future__ import annotations

import k8s_testbed  # tools/ is on sys.path (tests/conftest.py)
import pytest
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._engines import nfd
from ansible_collections.aifactory.topology.plugins.modules import k8s_node_labels, nfd_topology
from tests.ansible_run import REPO
from tests.integration.k8s_support import (
    TEST_LABEL,
    client,
    fresh_namespace,
    gb200,
    make_nodes,
    new_id,
    node_names,
    node_state,
    run_module,
    topology_labels,
    written,
)

pytestmark = pytest.mark.k8s
LABELS_RULE = REPO / "files" / "nfd" / "topograph-labels.nodefeaturerule.yaml"
WAIT = 120.0  # bounds each wait for nfd-master on a loaded 2-core machine; the condition is what ends it


@pytest.fixture(scope="module")
def nfd_crds(k8s):
    k8s.install_nfd_crds()
    return k8s


def objects(api, namespace, resource):
    path = _k8s.namespaced_path(nfd.API, namespace, resource)
    return {item["metadata"]["name"]: item for item in api.list(path)}


def versions(api, namespace):
    return {(resource, name): item["metadata"]["resourceVersion"]
            for resource in ("nodefeatures", "nodefeaturegroups")
            for name, item in objects(api, namespace, resource).items()}


def test_nfd_objects_are_created_kept_cleaned_and_never_emptied(nfd_crds, k8s_namespace, monkeypatch):
    api = client(nfd_crds.kubeconfig)
    prefix = f"t{new_id()}"
    args = {"provider": {"name": "inventory", "params": gb200(prefix, racks=4, per_rack=2)},
            "kubeconfig": str(nfd_crds.kubeconfig), "namespace": k8s_namespace}

    dry = run_module(nfd_topology, args, monkeypatch, check_mode=True, diff=True)
    assert not dry["failed"], dry.get("msg")
    assert dry["changed"] and len(dry["created"]["NodeFeature"]) == 8 and versions(api, k8s_namespace) == {}

    first = run_module(nfd_topology, args, monkeypatch)
    # 4 racks + 2 leaves + 1 spine + 1 core
    assert (first["changed"], first["node_features"], first["node_feature_groups"]) == (True, 8, 8)
    features = objects(api, k8s_namespace, "nodefeatures")
    name = nfd.stable_object_name("topograph-node", f"{prefix}-r01-n01")
    assert features[name]["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] == f"{prefix}-r01-n01"
    assert features[name]["spec"]["features"]["attributes"]["topograph.network"]["elements"] == {
        "accelerator-domain": f"{prefix}-rack01", "fabric-tier-0": f"{prefix}-leaf01",
        "fabric-tier-1": f"{prefix}-spine01", "fabric-tier-2": f"{prefix}-core"}
    groups = objects(api, k8s_namespace, "nodefeaturegroups")
    group = groups[nfd.stable_object_name("topograph-fabric-tier-0", f"{prefix}-leaf01")]
    assert group["spec"]["featureGroupRules"][0]["matchFeatures"][0]["matchExpressions"] == {
        "fabric-tier-0": {"op": "In", "value": [f"{prefix}-leaf01"]}}

    stored = versions(api, k8s_namespace)
    again = run_module(nfd_topology, args, monkeypatch)
    assert again["changed"] is False and versions(api, k8s_namespace) == stored

    # Rack 4 leaves: its 2 NodeFeatures and its domain group go; leaf02 stays (rack 3 is still on it).
    smaller = dict(args, provider={"name": "inventory", "params": gb200(prefix, racks=3, per_rack=2)})
    # 2 of 8 NodeFeatures to delete is beyond the shrink guard's default 10 %: refused after the list, unwritten.
    refused = run_module(nfd_topology, smaller, monkeypatch)
    assert refused["failed"] and refused["msg"].startswith(
        "refusing to delete 2 of 8 listed NodeFeature objects, of quarantined nodes or nodes gone from the topology "
        "(25.0% > max_node_loss 10%)"), refused["msg"]
    third = run_module(nfd_topology, dict(smaller, max_node_loss=25), monkeypatch, diff=True)
    assert sorted(third["deleted"]["NodeFeature"]) == sorted(
        nfd.stable_object_name("topograph-node", f"{prefix}-r04-n0{i}") for i in (1, 2))
    assert third["deleted"]["NodeFeatureGroup"] == [nfd.stable_object_name("topograph-accelerator-domain",
                                                                           f"{prefix}-rack04")]
    assert len(objects(api, k8s_namespace, "nodefeatures")) == 6

    # An empty generation is refused and the last good objects stay.
    empty = dict(args, provider={"name": "inventory", "params": {"nodes": [{"nodes": f"{prefix}-cpu01"}]}})
    refused = run_module(nfd_topology, empty, monkeypatch)
    assert refused["failed"] and "refusing to go on" in refused["msg"]
    assert len(objects(api, k8s_namespace, "nodefeatures")) == 6


def test_a_mass_quarantine_deletes_no_node_feature_unless_forced(nfd_crds, k8s_namespace, monkeypatch):
    api = client(nfd_crds.kubeconfig)
    prefix = f"t{new_id()}"
    params = gb200(prefix, racks=4, per_rack=2)
    args = {"provider": {"name": "inventory", "params": params}, "kubeconfig": str(nfd_crds.kubeconfig),
            "namespace": k8s_namespace}
    assert run_module(nfd_topology, args, monkeypatch)["changed"]
    stored = versions(api, k8s_namespace)
    # Three racks' domains become values the API server refuses as labels: their 6 nodes are quarantined.
    for domain in params["domains"][:3]:
        domain["name"] = domain["name"].replace("rack", "rack:")
    refused = run_module(nfd_topology, args, monkeypatch)
    assert refused["failed"] and refused["msg"].startswith(
        f"refusing to delete 6 of 8 listed NodeFeature objects, of quarantined nodes or nodes gone from the topology (75.0% > max_node_loss 10%): "
        f"{prefix}-r01-n[01-02],{prefix}-r02-n[01-02],{prefix}-r03-n[01-02]")
    assert versions(api, k8s_namespace) == stored
    forced = run_module(nfd_topology, dict(args, force=True), monkeypatch)
    assert not forced["failed"], forced.get("msg")
    assert len(forced["deleted"]["NodeFeature"]) == 6 and len(objects(api, k8s_namespace, "nodefeatures")) == 2
    assert [record["source"] for record in forced["quarantined"]] == ["kubernetes labels"] * 6


def test_stale_attributes_are_removed_and_unlabelled_objects_taken_over(nfd_crds, k8s_namespace, monkeypatch):
    api = client(nfd_crds.kubeconfig)
    prefix = f"t{new_id()}"
    args = {"provider": {"name": "inventory", "params": gb200(prefix, racks=1, per_rack=1)},
            "kubeconfig": str(nfd_crds.kubeconfig), "namespace": k8s_namespace}
    node = f"{prefix}-r01-n01"
    name = nfd.stable_object_name("topograph-node", node)
    # Someone made the object before, without our labels and with an attribute we no longer give.
    api.request("POST", _k8s.namespaced_path(nfd.API, k8s_namespace, "nodefeatures"), body={
        "apiVersion": nfd.API_VERSION, "kind": "NodeFeature", "metadata": {"name": name},
        "spec": {"features": {"attributes": {"topograph.network": {"elements": {"fabric-tier-5": "old"}}}}}})
    result = run_module(nfd_topology, args, monkeypatch)
    assert result["created"]["NodeFeature"] == [name]
    stored = objects(api, k8s_namespace, "nodefeatures")[name]
    assert "fabric-tier-5" not in stored["spec"]["features"]["attributes"]["topograph.network"]["elements"]
    assert stored["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "topograph"
    assert run_module(nfd_topology, args, monkeypatch)["changed"] is False


# -- the real nfd-master ------------------------------------------------------------------------

@pytest.fixture
def nfd_master(k8s, k8s_namespace):
    """nfd-master with KUBERNETES_NAMESPACE = this test's namespace, and the shipped NodeFeatureRule
    (cluster-scoped: renamed for this test, deleted after it)."""
    master = k8s_testbed.start_nfd_master(k8s, k8s_namespace)
    rule = yaml.safe_load(LABELS_RULE.read_text(encoding="utf-8"))
    rule["metadata"]["name"] += f"-{new_id()}"
    k8s.kubectl.create(rule)
    try:
        yield master
    finally:
        k8s.kubectl.delete("NodeFeatureRule", rule["metadata"]["name"], api_version=nfd.API_VERSION,
                           grace_period=None)
        master.stop()


def with_trays(prefix, params):
    """``params`` (gb200) with rack 1's two nodes in two sub-domains (trays) of their own."""
    rack = params["domains"][0]
    rack.pop("nodes")
    rack["sub_domains"] = [{"name": f"{prefix}-rack01-tray{n}", "nodes": f"{prefix}-r01-n0{n}"} for n in (1, 2)]
    return params


def expected_labels(prefix, racks, per_rack, leaf_of=None):
    """node -> the topology labels of with_trays(gb200(prefix, racks, per_rack, leaf_of=leaf_of)), by hand."""
    leaf_of = leaf_of or {}
    tier, domain = _labels.FABRIC_PREFIX, _labels.ACCELERATOR_LABEL
    labels = {f"{prefix}-r{r:02d}-n{n:02d}": {
        f"{tier}0": leaf_of.get(r, f"{prefix}-leaf{(r - 1) // 2 + 1:02d}"), f"{tier}1": f"{prefix}-spine01",
        f"{tier}2": f"{prefix}-core", domain: f"{prefix}-rack{r:02d}"}
        for r in range(1, racks + 1) for n in range(1, per_rack + 1)}
    for n in (1, 2):
        labels[f"{prefix}-r01-n0{n}"][_labels.SUB_DOMAIN_LABEL] = f"{prefix}-rack01-tray{n}"
    return labels


def expected_groups(labels):
    """NodeFeatureGroup name -> the sorted node names nfd-master must list in its status."""
    groups = {}
    for node, node_labels in labels.items():
        for key, value in node_labels.items():
            groups.setdefault(nfd.stable_object_name("topograph-" + nfd.attribute_kind(key), value), []).append(node)
    return {name: sorted(nodes) for name, nodes in groups.items()}


def group_members(group):
    return sorted(node["name"] for node in (group.get("status") or {}).get("nodes") or [])


def wait_for_nfd_master(k8s, api, namespace, test_id, labels):
    """Until every group of ``namespace`` lists exactly its nodes and every node has exactly ``labels``."""
    groups = expected_groups(labels)
    assert set(objects(api, namespace, "nodefeaturegroups")) == set(groups)
    for name, nodes in groups.items():
        k8s.kubectl.wait_for("NodeFeatureGroup", name, lambda g, n=nodes: group_members(g) == n,
                             namespace=namespace, api_version=nfd.API_VERSION, timeout=WAIT)

    def labelled():
        return {node: topology_labels(state[1]) for node, state in node_state(api, test_id).items()} == labels
    k8s_testbed.wait_until(labelled, timeout=WAIT, what="nfd-master labels the nodes from the NodeFeatureRule")


def test_real_nfd_master_fills_every_group_labels_the_nodes_and_follows_a_rewire(
        k8s, k8s_namespace, nfd_master, monkeypatch):
    api = client(k8s.kubeconfig)
    test_id = new_id()
    prefix = f"t{test_id}"
    make_nodes(k8s, node_names(prefix, racks=4, per_rack=2), test_id)
    args = {"provider": {"name": "inventory", "params": with_trays(prefix, gb200(prefix, racks=4, per_rack=2))},
            "kubeconfig": str(k8s.kubeconfig), "namespace": k8s_namespace}
    labels_args = {"provider": args["provider"], "kubeconfig": str(k8s.kubeconfig),
                   "node_selector": {TEST_LABEL: test_id}}

    first = run_module(nfd_topology, args, monkeypatch)
    assert (first["failed"], first["node_features"], first["node_feature_groups"]) == (False, 8, 10), first.get("msg")
    # 4 racks, 2 trays, 2 leaves, 1 spine, 1 core: each group lists exactly its nodes; each node gets the labels.
    wait_for_nfd_master(k8s, api, k8s_namespace, test_id, expected_labels(prefix, 4, 2))
    # Exactly what k8s_node_labels writes for the same model: it would change nothing.
    same = run_module(k8s_node_labels, labels_args, monkeypatch, check_mode=True)
    assert (same["failed"], same["changed"]) == (False, False), same.get("msg") or same.get("changed_nodes")

    # Rewire: rack 3 moves under leaf01, so leaf01 has racks 1-3 and leaf02 rack 4 alone.
    rewired = dict(args, provider={"name": "inventory", "params": with_trays(
        prefix, gb200(prefix, racks=4, per_rack=2, leaf_of={3: f"{prefix}-leaf01"}))})
    second = run_module(nfd_topology, rewired, monkeypatch)
    assert second["changed"] and sorted(second["updated"]["NodeFeature"]) == sorted(
        nfd.stable_object_name("topograph-node", f"{prefix}-r03-n0{i}") for i in (1, 2))
    labels = expected_labels(prefix, 4, 2, leaf_of={3: f"{prefix}-leaf01"})
    wait_for_nfd_master(k8s, api, k8s_namespace, test_id, labels)
    same = run_module(k8s_node_labels, dict(labels_args, provider=rewired["provider"]), monkeypatch, check_mode=True)
    assert (same["failed"], same["changed"]) == (False, False), same.get("msg") or same.get("changed_nodes")

    # An unchanged rerun writes nothing, so nfd-master has nothing to do and writes nothing either.
    stored, nodes = versions(api, k8s_namespace), node_state(api, test_id)
    again = run_module(nfd_topology, rewired, monkeypatch)
    assert again["changed"] is False and versions(api, k8s_namespace) == stored
    assert written(nodes, node_state(api, test_id)) == []


def test_real_nfd_master_writes_the_status_of_groups_in_its_own_namespace_only(k8s, nfd_master, monkeypatch):
    api = client(k8s.kubeconfig)
    test_id = new_id()
    prefix = f"t{test_id}"
    make_nodes(k8s, node_names(prefix, racks=1, per_rack=2), test_id)
    params = gb200(prefix, racks=1, per_rack=2)
    with fresh_namespace(k8s, "other") as other:
        result = run_module(nfd_topology, {"provider": {"name": "inventory", "params": params},
                                           "kubeconfig": str(k8s.kubeconfig), "namespace": other}, monkeypatch)
        assert not result["failed"], result.get("msg")
        group = nfd.stable_object_name("topograph-accelerator-domain", f"{prefix}-rack01")

        def skipped():
            return any("NodeFeatureGroup not found, skip update" in line and f'"{group}"' in line
                       for line in nfd_master.log().splitlines())

        # nfd-master sees the group of another namespace, looks for it by name in its own namespace
        # (KUBERNETES_NAMESPACE), finds none and skips it: its status is never written.
        k8s_testbed.wait_until(skipped, timeout=WAIT, what=f"nfd-master skips {other}/{group}")
        assert group_members(objects(api, other, "nodefeaturegroups")[group]) == []
        # The NodeFeatures of any namespace are read: the nodes are labelled all the same.
        k8s_testbed.wait_until(lambda: all(topology_labels(state[1]) for state in node_state(api, test_id).values()),
                               timeout=WAIT, what="nfd-master labels the nodes from another namespace's NodeFeatures")
