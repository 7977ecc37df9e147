"""docs/rbac/*.yaml are least privilege, proven on the REAL kube-apiserver.

Each manifest is applied as written, with its subject replaced by a test user (a client
certificate) and its namespace by the test's. The module then runs as that user, in check mode
and for real (every verb it needs is allowed), and a list of other requests is refused with 403.
"""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._writers import k8s as k8s_writer
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.modules import (
    k8s_node_labels,
    k8s_scheduler_topology,
    nfd_topology,
    slinky_topology,
    topology_info,
)
from ansible_collections.aifactory.topology.plugins.module_utils._engines import nfd
from tests.integration.k8s_support import (
    TEST_LABEL,
    apply_rbac,
    client,
    gb200,
    k8s_testbed,
    make_nodes,
    new_id,
    node_names,
    run_module,
)

pytestmark = pytest.mark.k8s


def assert_forbidden(api, requests):
    for method, path, body in requests:
        with pytest.raises(_k8s.K8sError) as info:
            api.request(method, path, body=body,
                        content_type=k8s_writer.MERGE_PATCH if method == "PATCH" else None)
        assert info.value.status == 403, f"{method} {path}: {info.value}"


def test_node_labels_role_allows_the_module_and_nothing_else(k8s, k8s_namespace, monkeypatch):
    test_id = new_id()
    prefix = f"t{test_id}"
    names = make_nodes(k8s, node_names(prefix, 1, 2), test_id)
    kubeconfig = apply_rbac(k8s, "k8s_node_labels.yaml", f"labeler-{test_id}", k8s_namespace, test_id)
    args = {"provider": {"name": "inventory", "params": gb200(prefix, racks=1, per_rack=2)},
            "kubeconfig": str(kubeconfig), "node_selector": {TEST_LABEL: test_id}}
    assert run_module(k8s_node_labels, args, monkeypatch, check_mode=True)["changed"]
    real = run_module(k8s_node_labels, args, monkeypatch)
    assert not real["failed"] and sorted(real["changed_nodes"]) == names
    discovered = run_module(topology_info,
                            {"provider": {"name": "node_labels", "params": {"node_selector": {TEST_LABEL: test_id}},
                                          "creds": {"kubeconfig": str(kubeconfig)}}}, monkeypatch)
    assert discovered["summary"]["nodes"] == 2  # the providers need only get/list
    user = client(kubeconfig)
    node = _k8s.node_path(names[0])
    assert_forbidden(user, [
        ("DELETE", node, None),
        ("POST", _k8s.node_path(), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"x-{test_id}"}}),
        ("PATCH", node + "/status", {"status": {"phase": "Running"}}),
        ("GET", _k8s.namespaced_path("/api/v1", k8s_namespace, "secrets"), None),
        ("GET", _k8s.namespaced_path("/api/v1", k8s_namespace, "configmaps"), None),
        ("GET", _k8s.namespaced_path("/api/v1", k8s_namespace, "pods"), None),
        ("GET", _k8s.namespaced_path(nfd.API, k8s_namespace, "nodefeatures"), None),
    ])


def test_check_mode_needs_patch_because_it_asks_the_server(k8s, k8s_namespace, monkeypatch):
    test_id = new_id()
    prefix = f"t{test_id}"
    make_nodes(k8s, node_names(prefix, 1, 1), test_id)
    reader = f"reader-{test_id}"
    k8s.kubectl.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": reader}, "rules": [{"apiGroups": [""], "resources": ["nodes"],
                                                                "verbs": ["get", "list"]}]})
    k8s.kubectl.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                       "metadata": {"name": reader},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": reader},
                       "subjects": [{"kind": "User", "name": reader, "apiGroup": "rbac.authorization.k8s.io"}]})
    as_user = k8s.kubectl_as(reader)
    k8s_testbed.wait_until(lambda: as_user.can_i("list", "nodes"), timeout=60, what="reader RBAC")
    result = run_module(k8s_node_labels, {
        "provider": {"name": "inventory", "params": gb200(prefix, racks=1, per_rack=1)},
        "kubeconfig": str(k8s.user_kubeconfig(reader)), "node_selector": {TEST_LABEL: test_id}},
        monkeypatch, check_mode=True)
    assert result["failed"] and "HTTP 403" in result["msg"] and "patch" in result["msg"]


RULE = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "x"},
        "spec": {"rules": []}}


def test_nfd_role_allows_the_module_in_its_namespace_only(k8s, k8s_namespace, monkeypatch):
    k8s.install_nfd_crds()
    test_id = new_id()
    kubeconfig = apply_rbac(k8s, "nfd_topology.yaml", f"nfd-{test_id}", k8s_namespace, test_id)
    args = {"provider": {"name": "inventory", "params": gb200(f"t{test_id}", racks=2, per_rack=1)},
            "kubeconfig": str(kubeconfig), "namespace": k8s_namespace}
    assert run_module(nfd_topology, args, monkeypatch, check_mode=True)["changed"]
    assert run_module(nfd_topology, args, monkeypatch)["changed"]
    fewer = dict(args, provider={"name": "inventory", "params": gb200(f"t{test_id}", racks=1, per_rack=1)})
    # delete is allowed (one of two NodeFeatures: within the shrink guard given)
    assert run_module(nfd_topology, dict(fewer, max_node_loss=50), monkeypatch)["deleted"]["NodeFeature"]
    user = client(kubeconfig)
    feature = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature", "metadata": {"name": "x"},
               "spec": {"features": {}}}
    assert_forbidden(user, [
        ("POST", _k8s.namespaced_path(nfd.API, "default", "nodefeatures"), feature),
        ("GET", _k8s.namespaced_path(nfd.API, "default", "nodefeaturegroups"), None),
        ("POST", f"{nfd.API}/nodefeaturerules", RULE),
        ("GET", _k8s.node_path(), None),
        ("GET", _k8s.namespaced_path("/api/v1", k8s_namespace, "configmaps"), None),
        ("GET", _k8s.namespaced_path("/api/v1", k8s_namespace, "secrets"), None),
    ])


def test_slinky_role_allows_one_configmap_and_dynamic_nodes_only(k8s, k8s_namespace, monkeypatch):
    test_id = new_id()
    prefix = f"t{test_id}"
    names = make_nodes(k8s, node_names(prefix, 1, 2), test_id)
    admin = client(k8s.kubeconfig)
    configmaps = _k8s.namespaced_path("/api/v1", k8s_namespace, "configmaps")
    for name in ("slurm-config", "other"):  # the chart made it; create is not granted
        admin.request("POST", configmaps, body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                                "data": {"slurm.conf": "x"}})
    kubeconfig = apply_rbac(k8s, "slinky_topology.yaml", f"slinky-{test_id}", k8s_namespace, test_id,
                            configmap="slurm-config")
    args = {"provider": {"name": "inventory", "params": gb200(prefix, racks=1, per_rack=2)},
            "kubeconfig": str(kubeconfig), "namespace": k8s_namespace, "configmap_name": "slurm-config",
            "use_dynamic_nodes": True}
    assert run_module(slinky_topology, args, monkeypatch, check_mode=True)["changed"]
    result = run_module(slinky_topology, args, monkeypatch)
    assert result["configmap_changed"] and sorted(result["annotated_nodes"]) == names
    user = client(kubeconfig)
    assert_forbidden(user, [
        ("GET", f"{configmaps}/other", None),
        ("PATCH", f"{configmaps}/other", {"data": {"a": "b"}}),
        ("GET", configmaps, None),
        ("DELETE", f"{configmaps}/slurm-config", None),
        ("POST", configmaps, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new"}}),
        ("GET", _k8s.namespaced_path("/api/v1", "default", "configmaps", "slurm-config"), None),
        ("GET", _k8s.namespaced_path("/api/v1", k8s_namespace, "secrets"), None),
        ("GET", _k8s.namespaced_path("/api/v1", "default", "pods"), None),
        ("DELETE", _k8s.node_path(names[0]), None),
    ])


def test_scheduler_topology_role_allows_the_module_and_nothing_else(k8s, k8s_namespace, monkeypatch):
    k8s.install_kueue_crds()
    test_id = new_id()
    prefix = f"t{test_id}"
    make_nodes(k8s, node_names(prefix, 2, 1), test_id)
    kubeconfig = apply_rbac(k8s, "k8s_scheduler_topology.yaml", f"sched-{test_id}", k8s_namespace, test_id)
    params = gb200(prefix, racks=2, per_rack=1)
    args = {"provider": {"name": "inventory", "params": params}, "kubeconfig": str(kubeconfig),
            "node_selector": {TEST_LABEL: test_id}, "consumers": ["kueue"], "name": prefix}
    dry = run_module(k8s_scheduler_topology, args, monkeypatch, check_mode=True)
    assert not dry["failed"], dry.get("msg")
    assert dry["changed"]
    assert run_module(k8s_scheduler_topology, args, monkeypatch)["changed"]
    renamed = run_module(k8s_scheduler_topology, dict(args, flavor_name=f"{prefix}-b"), monkeypatch)
    assert renamed["deleted"] == [f"resourceflavors.kueue.x-k8s.io/{prefix}"]  # delete is allowed
    recreated = run_module(k8s_scheduler_topology, dict(args, flavor_name=f"{prefix}-b", fabric_tiers=1,
                                                        recreate=True), monkeypatch)
    assert recreated["updated"] == [f"topologies.kueue.x-k8s.io/{prefix}"]
    user = client(kubeconfig)
    assert_forbidden(user, [
        ("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", None),
        ("PATCH", _k8s.node_path(f"{prefix}-r01-n01"), {"metadata": {"labels": {"x": "y"}}}),
        ("GET", _k8s.node_path(f"{prefix}-r01-n01"), None),
        ("GET", _k8s.namespaced_path("/api/v1", k8s_namespace, "secrets"), None),
    ])
