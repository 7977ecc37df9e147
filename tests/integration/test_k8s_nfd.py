"""aifactory.topology.nfd_topology against the REAL kube-apiserver with NFD's own CRDs (from the NFD Go module)."""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._engines import nfd
from ansible_collections.aifactory.topology.plugins.modules import nfd_topology
from tests.integration.k8s_support import client, gb200, new_id, run_module

pytestmark = pytest.mark.k8s


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
    third = run_module(nfd_topology, smaller, monkeypatch, diff=True)
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
        f"refusing to delete 6 of 8 listed NodeFeature objects, of quarantined nodes (75.0% > max_node_loss 10%): "
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
