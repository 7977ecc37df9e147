"""aifactory.topology.k8s_scheduler_topology against the REAL kube-apiserver with Kueue's own v0.19.2 CRDs.

The CRDs come from the Kueue Go module (tools/k8s_testbed.py kueue_crd_files), so the API server itself validates
the objects against Kueue's v1beta2 schema and its CEL rules (levels immutable, hostname last, a topology flavor
needs nodeLabels). KAI Scheduler's CRD is not installed: its module is not served here, so on this server KAI is
the consumer whose CRD is missing (the KAI object's shape is tested in the unit tests).
"""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._engines import scheduler_topology as st
from ansible_collections.aifactory.topology.plugins.module_utils._base.k8s_desired import Kind
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_scheduler_topology as orchestration
from ansible_collections.aifactory.topology.plugins.modules import k8s_node_labels, k8s_scheduler_topology
from tests.integration.k8s_support import TEST_LABEL, client, gb200, make_nodes, new_id, node_names, run_module
from tests.nvidia_smi_shapes import UNHEALTHY_TRAY

pytestmark = pytest.mark.k8s
TIER = "fabric.topograph.run/tier-"
DOMAIN = "accelerator.topograph.run/domain"


@pytest.fixture(scope="module")
def kueue(k8s):
    k8s.install_kueue_crds()
    return k8s


def object_path(resource, name=None):
    return Kind(st.KUEUE_API, "", resource).path(name)


def stored(api, resource, name):
    try:
        return api.request("GET", object_path(resource, name))
    except _k8s.K8sError as exc:
        assert exc.status == 404, exc
        return None


def version(api, resource, name):
    item = stored(api, resource, name)
    return None if item is None else item["metadata"]["resourceVersion"]


def labelled_cluster(k8s, monkeypatch, racks=4, per_rack=2, params=None):
    test_id = new_id()
    prefix = f"t{test_id}"
    make_nodes(k8s, node_names(prefix, racks, per_rack), test_id)
    params = params or gb200(prefix, racks=racks, per_rack=per_rack)
    labels = run_module(k8s_node_labels, {"provider": {"name": "inventory", "params": params},
                                          "kubeconfig": str(k8s.kubeconfig), "node_selector": {TEST_LABEL: test_id}},
                        monkeypatch)
    assert not labels["failed"], labels.get("msg")
    args = {"provider": {"name": "inventory", "params": params}, "kubeconfig": str(k8s.kubeconfig),
            "node_selector": {TEST_LABEL: test_id}, "consumers": ["kueue"], "name": prefix}
    return test_id, prefix, args


def test_kueue_objects_are_applied_kept_diffed_and_cleaned(kueue, monkeypatch):
    api = client(kueue.kubeconfig)
    test_id, prefix, args = labelled_cluster(kueue, monkeypatch)

    dry = run_module(k8s_scheduler_topology, args, monkeypatch, check_mode=True)
    assert not dry["failed"], dry.get("msg")
    assert dry["changed"] and dry["created"] == [f"topologies.kueue.x-k8s.io/{prefix}",
                                                 f"resourceflavors.kueue.x-k8s.io/{prefix}"]
    assert "diff" not in dry
    assert stored(api, "topologies", prefix) is None and stored(api, "resourceflavors", prefix) is None

    first = run_module(k8s_scheduler_topology, args, monkeypatch)
    assert not first["failed"], first.get("msg")
    assert first["changed"] and first["levels"] == [f"{TIER}2", f"{TIER}1", f"{TIER}0", DOMAIN,
                                                    "kubernetes.io/hostname"]
    topology = stored(api, "topologies", prefix)
    flavor = stored(api, "resourceflavors", prefix)
    assert topology["spec"] == first["objects"][0]["spec"]
    assert flavor["spec"] == {"nodeLabels": {TEST_LABEL: test_id}, "topologyName": prefix}
    assert {entry["manager"] for entry in topology["metadata"]["managedFields"]} == {orchestration.FIELD_MANAGER}
    assert first["findings"]["missing_levels"] == [] and first["findings"]["missing_on_nodes"] == {}
    assert first["summary"]["nodes_listed"] == 8

    before = (version(api, "topologies", prefix), version(api, "resourceflavors", prefix))
    again = run_module(k8s_scheduler_topology, args, monkeypatch, diff=True)
    assert again["changed"] is False and again["diff"] == {"before": {}, "after": {}}
    assert (version(api, "topologies", prefix), version(api, "resourceflavors", prefix)) == before

    # A renamed flavor: the new one is created, the old one (ours, same set) is stale and deleted.
    renamed = run_module(k8s_scheduler_topology, dict(args, flavor_name=f"{prefix}-gpus"), monkeypatch, diff=True)
    assert not renamed["failed"], renamed.get("msg")
    assert renamed["created"] == [f"resourceflavors.kueue.x-k8s.io/{prefix}-gpus"]
    assert renamed["deleted"] == [f"resourceflavors.kueue.x-k8s.io/{prefix}"]
    assert renamed["diff"]["after"][f"resourceflavors.kueue.x-k8s.io/{prefix}-gpus"]["spec"]["topologyName"] == prefix
    assert stored(api, "resourceflavors", prefix) is None
    assert version(api, "topologies", prefix) == before[0]


def test_immutable_levels_are_refused_before_any_write_and_recreated_when_asked(kueue, monkeypatch):
    api = client(kueue.kubeconfig)
    _test_id, prefix, args = labelled_cluster(kueue, monkeypatch)
    assert run_module(k8s_scheduler_topology, args, monkeypatch)["changed"]
    before = (version(api, "topologies", prefix), version(api, "resourceflavors", prefix))

    fewer = dict(args, fabric_tiers=1)
    refused = run_module(k8s_scheduler_topology, fewer, monkeypatch)
    assert refused["failed"] and f"topologies.kueue.x-k8s.io/{prefix} (levels)" in refused["msg"]
    assert "nothing was written" in refused["msg"]
    assert (version(api, "topologies", prefix), version(api, "resourceflavors", prefix)) == before

    dry = run_module(k8s_scheduler_topology, dict(fewer, recreate=True), monkeypatch, check_mode=True)
    assert dry["updated"] == [f"topologies.kueue.x-k8s.io/{prefix}"]
    assert version(api, "topologies", prefix) == before[0]

    recreated = run_module(k8s_scheduler_topology, dict(fewer, recreate=True), monkeypatch)
    assert not recreated["failed"], recreated.get("msg")
    assert [level["nodeLabel"] for level in stored(api, "topologies", prefix)["spec"]["levels"]] == [
        f"{TIER}0", DOMAIN, "kubernetes.io/hostname"]
    assert version(api, "resourceflavors", prefix) == before[1]


def test_a_missing_crd_and_an_unknown_consumer_fail_before_any_write(kueue, monkeypatch):
    api = client(kueue.kubeconfig)
    _test_id, prefix, args = labelled_cluster(kueue, monkeypatch, racks=2)
    missing = run_module(k8s_scheduler_topology, dict(args, consumers=["kueue", "kai"]), monkeypatch)
    assert missing["failed"]
    assert "does not serve kai: topologies.kai.scheduler (kai.scheduler/v1alpha1, kind Topology)" in missing["msg"]
    assert stored(api, "topologies", prefix) is None and stored(api, "resourceflavors", prefix) is None

    unknown = run_module(k8s_scheduler_topology, dict(args, consumers=["kueue", "volcano"]), monkeypatch)
    assert unknown["failed"] and "unknown 'volcano'" in unknown["msg"]
    assert stored(api, "topologies", prefix) is None


def test_quarantined_and_unlabelled_nodes_are_reported_by_name(kueue, monkeypatch):
    test_id = new_id()
    prefix = f"t{test_id}"
    params = gb200(prefix, racks=2, per_rack=2)
    names = make_nodes(kueue, node_names(prefix, 2, 2) + [f"{prefix}-late01"], test_id)
    unhealthy = dict(params, accelerator={"source": "nvidia_smi", "nvidia_smi": {names[0]: UNHEALTHY_TRAY}})
    base = {"provider": {"name": "inventory", "params": unhealthy}, "kubeconfig": str(kueue.kubeconfig),
            "node_selector": {TEST_LABEL: test_id}}
    labels = run_module(k8s_node_labels, dict(base, max_node_loss=50), monkeypatch)
    assert not labels["failed"], labels.get("msg")

    result = run_module(k8s_scheduler_topology, dict(base, consumers=["kueue"], name=prefix), monkeypatch)
    assert not result["failed"], result.get("msg")
    (quarantined,) = result["findings"]["missing_levels"]
    assert quarantined["node"] == names[0] and quarantined["reason"] == "quarantined (unhealthy)"
    # On the server: the quarantined node lost its labels, the node outside the model never had any.
    assert sorted(result["findings"]["missing_on_nodes"]) == sorted([names[0], f"{prefix}-late01"])
    assert result["findings"]["missing_on_nodes"][names[0]] == [f"{TIER}2", f"{TIER}1", f"{TIER}0", DOMAIN]
    assert any(names[0] in warning and "lack a level label" in warning for warning in result["summary"]["warnings"])


def test_an_object_its_scheduler_still_holds_is_never_deleted_for_an_immutable_change(kueue, monkeypatch):
    api = client(kueue.kubeconfig)
    _test_id, prefix, args = labelled_cluster(kueue, monkeypatch, racks=2)
    assert run_module(k8s_scheduler_topology, args, monkeypatch)["changed"]
    path = object_path("topologies", prefix)
    # What Kueue's topology controller does to a Topology a flavor names.
    api.request("PATCH", path, body={"metadata": {"finalizers": ["kueue.x-k8s.io/resource-in-use"]}},
                content_type="application/merge-patch+json")
    before = version(api, "topologies", prefix)
    held = run_module(k8s_scheduler_topology, dict(args, fabric_tiers=1, recreate=True), monkeypatch)
    assert held["failed"] and "finalizers kueue.x-k8s.io/resource-in-use" in held["msg"]
    assert "give the new levels a new name" in held["msg"].lower() and "nothing was written" in held["msg"]
    assert version(api, "topologies", prefix) == before
    api.request("PATCH", path, body={"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")


def test_another_teams_topology_is_refused_by_name_and_label_and_left_as_it_is(kueue, monkeypatch):
    api = client(kueue.kubeconfig)
    _test_id, prefix, args = labelled_cluster(kueue, monkeypatch, racks=2)
    theirs = {"apiVersion": st.KUEUE_API, "kind": "Topology",
              "metadata": {"name": prefix, "labels": {st.LABEL_MANAGED_BY: "platform-team"}},
              "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]}}
    api.request("POST", object_path("topologies"), body=theirs)
    before = version(api, "topologies", prefix)
    refused = run_module(k8s_scheduler_topology, dict(args, recreate=True), monkeypatch)
    assert refused["failed"] and (f"topologies.kueue.x-k8s.io/{prefix} (label {st.LABEL_MANAGED_BY} is "
                                  "'platform-team')") in refused["msg"]
    assert refused["msg"].endswith("nothing was written")
    assert version(api, "topologies", prefix) == before and stored(api, "resourceflavors", prefix) is None
    api.request("DELETE", object_path("topologies", prefix))


def test_a_topology_being_deleted_is_refused_not_reported_unchanged(kueue, monkeypatch):
    api = client(kueue.kubeconfig)
    _test_id, prefix, args = labelled_cluster(kueue, monkeypatch, racks=2)
    assert run_module(k8s_scheduler_topology, args, monkeypatch)["changed"]
    path = object_path("topologies", prefix)
    api.request("PATCH", path, body={"metadata": {"finalizers": ["example.com/hold"]}},
                content_type="application/merge-patch+json")
    api.request("DELETE", path)  # held by the finalizer: the server sets deletionTimestamp and keeps it
    try:
        assert stored(api, "topologies", prefix)["metadata"]["deletionTimestamp"]
        before = version(api, "topologies", prefix)
        held = run_module(k8s_scheduler_topology, args, monkeypatch)
        assert held["failed"] and "these objects are being deleted" in held["msg"]
        assert f"topologies.kueue.x-k8s.io/{prefix} (deletionTimestamp " in held["msg"]
        assert "finalizers example.com/hold" in held["msg"] and held["msg"].endswith("nothing was written")
        assert version(api, "topologies", prefix) == before
    finally:
        api.request("PATCH", path, body={"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json")
