"""aifactory.topology.slinky_topology against the REAL kube-apiserver: server-side apply of one ConfigMap key."""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._writers import k8s as k8s_writer
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._engines import slinky
from ansible_collections.aifactory.topology.plugins.modules import slinky_topology
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.slinky_topology import FIELD_MANAGER as SLINKY_FIELD_MANAGER
from tests.integration.k8s_support import client, gb200, make_nodes, new_id, node_names, node_state, run_module, written
from tests.unit.conftest_paths import MODELS

pytestmark = pytest.mark.k8s
SLURM_CONF = "ClusterName=test\n"


def configmap(api, namespace, name="slurm-config"):
    return api.request("GET", _k8s.namespaced_path("/api/v1", namespace, "configmaps", name))


def helm_apply(api, namespace, data):
    """What a Helm release with server-side apply does: its own manager, its own keys."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "slurm-config", "namespace": namespace},
            "data": data}
    api.request("PATCH", _k8s.namespaced_path("/api/v1", namespace, "configmaps", "slurm-config"),
                {"fieldManager": "helm", "force": "true"}, body, k8s_writer.APPLY_PATCH)


def slinky_args(k8s, namespace, **extra):
    return dict({"provider": {"name": "simulation", "params": {"model_path": str(MODELS / "large.yaml")}},
                 "kubeconfig": str(k8s.kubeconfig), "namespace": namespace, "configmap_name": "slurm-config",
                 "plugin": "topology/block", "block_sizes": [8, 16, 32], "block_naming": "topograph",
                 "block_name_pattern": {"regexp": "^srv([0-9]{2})", "format": "rack${1}"}}, **extra)


def test_owns_only_its_key_writes_only_on_change_and_survives_helm(k8s, k8s_namespace, monkeypatch):
    api = client(k8s.kubeconfig)
    helm_apply(api, k8s_namespace, {"slurm.conf": SLURM_CONF, "topology.conf": "# chart default\n"})
    args = slinky_args(k8s, k8s_namespace)

    dry = run_module(slinky_topology, args, monkeypatch, check_mode=True, diff=True)
    assert not dry["failed"], dry.get("msg")
    assert dry["changed"] and dry["diff"][0]["before"] == "# chart default\n"
    assert dry["diff"][0]["after"].startswith("# rack11=nvl-1-1\nBlockName=rack11 Nodes=srv[1101-1108]\n")
    assert configmap(api, k8s_namespace)["data"]["topology.conf"] == "# chart default\n"

    first = run_module(slinky_topology, args, monkeypatch)
    stored = configmap(api, k8s_namespace)
    assert first["configmap_changed"] and stored["data"]["topology.conf"] == (
        MODELS / "expected.slinky-dra-block.conf").read_text()
    assert stored["data"]["slurm.conf"] == SLURM_CONF
    annotations = stored["metadata"]["annotations"]
    assert {k: annotations[k] for k in annotations if k != slinky.ANNOTATION_LAST_UPDATED} == {
        "topograph.run/engine": "slinky", "topograph.run/topology-managed-by": "topograph",
        "topograph.run/slurm-namespace": k8s_namespace, "topograph.run/plugin": "topology/block",
        "topograph.run/block-sizes": "8,16,32"}
    ours = next(m for m in stored["metadata"]["managedFields"] if m["manager"] == SLINKY_FIELD_MANAGER)
    assert ours["operation"] == "Apply" and list(ours["fieldsV1"]["f:data"]) == ["f:topology.conf"]

    again = run_module(slinky_topology, args, monkeypatch)
    assert again["changed"] is False
    assert configmap(api, k8s_namespace)["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]

    # A Helm upgrade that applies only its own keys leaves ours alone, and we still report no change.
    helm_apply(api, k8s_namespace, {"slurm.conf": SLURM_CONF + "SlurmctldPort=6817\n"})
    after_helm = configmap(api, k8s_namespace)
    assert after_helm["data"]["topology.conf"] == stored["data"]["topology.conf"]
    assert run_module(slinky_topology, args, monkeypatch)["changed"] is False

    # last-updated moves only with the content.
    api.request("PATCH", _k8s.namespaced_path("/api/v1", k8s_namespace, "configmaps", "slurm-config"),
                body={"metadata": {"annotations": {slinky.ANNOTATION_LAST_UPDATED: "2000-01-01T00:00:00Z"}}},
                content_type=k8s_writer.MERGE_PATCH)
    assert run_module(slinky_topology, args, monkeypatch)["changed"] is False
    tree = run_module(slinky_topology, dict(args, plugin="topology/tree", block_sizes=None, block_name_pattern=None),
                      monkeypatch)
    final = configmap(api, k8s_namespace)
    assert tree["changed"] and final["data"]["topology.conf"].startswith("SwitchName=core Switches=spine-[1-6]\n")
    assert final["metadata"]["annotations"][slinky.ANNOTATION_LAST_UPDATED] > "2000"
    assert final["metadata"]["annotations"][slinky.ANNOTATION_LAST_UPDATED] != "2000-01-01T00:00:00Z"
    assert "topograph.run/block-sizes" not in final["metadata"]["annotations"]  # we owned it: gone with the option
    assert final["data"]["slurm.conf"] == SLURM_CONF + "SlurmctldPort=6817\n"


def test_a_shrinking_topology_is_refused_and_skeleton_drops_nodes(k8s, k8s_namespace, monkeypatch):
    api = client(k8s.kubeconfig)
    prefix = f"t{new_id()}"
    args = {"provider": {"name": "inventory", "params": gb200(prefix, racks=4, per_rack=2)},
            "kubeconfig": str(k8s.kubeconfig), "namespace": k8s_namespace, "configmap_name": "slurm-config"}
    assert run_module(slinky_topology, args, monkeypatch)["changed"]
    half = dict(args, provider={"name": "inventory", "params": gb200(prefix, racks=2, per_rack=2)})
    refused = run_module(slinky_topology, half, monkeypatch)
    assert refused["failed"] and "refusing to drop 4 of 8 nodes" in refused["msg"]
    skeleton = run_module(slinky_topology, dict(args, skeleton_only=True), monkeypatch)
    assert skeleton["changed"] and "Nodes=" not in configmap(api, k8s_namespace)["data"]["topology.conf"]


def test_dynamic_nodes_get_their_spec_through_ready_slurmd_pods(k8s, k8s_namespace, monkeypatch):
    api = client(k8s.kubeconfig)
    test_id = new_id()
    prefix = f"t{test_id}"
    slurm_names = node_names(prefix, 2, 2)
    k8s_names = make_nodes(k8s, [f"k8s-{name}" for name in slurm_names], test_id)
    pods = _k8s.namespaced_path("/api/v1", k8s_namespace, "pods")
    for index, (slurm, node) in enumerate(zip(slurm_names, k8s_names)):
        api.request("POST", pods, body={
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"slurmd-{index}", "labels": {"app": "slurmd", "slurm.node.name": slurm}},
            "spec": {"nodeName": node, "containers": [{"name": "slurmd", "image": "slurmd"}]}})
        if index < 3:  # the last pod never becomes Ready: its node gets no spec
            api.request("PATCH", f"{pods}/slurmd-{index}/status", body={"status": {
                "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
                content_type=k8s_writer.MERGE_PATCH)
    args = {"provider": {"name": "inventory", "params": gb200(prefix, racks=2, per_rack=2)},
            "kubeconfig": str(k8s.kubeconfig), "namespace": k8s_namespace, "configmap_name": "slurm-config",
            "configmap_key": "topology.yaml", "skeleton_only": True, "use_dynamic_nodes": True,
            "pod_selector": {"app": "slurmd"},
            "topologies": {"fabric": {"plugin": "topology/tree", "cluster_default": True},
                           "nvl": {"plugin": "topology/block"}}}
    before = node_state(api, test_id)
    result = run_module(slinky_topology, args, monkeypatch, diff=True)
    assert not result["failed"], result.get("msg")
    assert sorted(result["annotated_nodes"]) == k8s_names[:3]
    state = node_state(api, test_id)
    assert state[k8s_names[0]][2][slinky.SPEC_ANNOTATION] == \
        f"fabric:{prefix}-core:{prefix}-spine01:{prefix}-leaf01,nvl:{prefix}-rack01"
    assert slinky.SPEC_ANNOTATION not in state[k8s_names[3]][2]
    assert "1 Slurm nodes run on no listed Kubernetes node" in " ".join(result["warnings"])
    assert written(before, state) == k8s_names[:3]
    again = run_module(slinky_topology, args, monkeypatch)
    assert again["changed"] is False and written(state, node_state(api, test_id)) == []
