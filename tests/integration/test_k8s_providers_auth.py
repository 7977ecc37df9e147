"""dra and node_labels providers, and the K8S_AUTH_* path AWX uses, against the REAL kube-apiserver."""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._writers import k8s as k8s_writer
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover
from ansible_collections.aifactory.topology.plugins.modules import k8s_node_labels, nfd_topology, topology_info
from tests.integration.k8s_support import (
    TEST_LABEL,
    apply_rbac,
    client,
    gb200,
    make_nodes,
    new_id,
    node_names,
    run_module,
)

pytestmark = pytest.mark.k8s
CLIQUE = "nvidia.com/gpu.clique"


def test_dra_reads_cliques_and_instance_names(k8s, monkeypatch):
    test_id = new_id()
    names = make_nodes(k8s, [f"k8s-{test_id}-{i}" for i in range(4)], test_id,
                       {f"k8s-{test_id}-0": {CLIQUE: "uuid-a.1"}, f"k8s-{test_id}-1": {CLIQUE: "uuid-a.1"},
                        f"k8s-{test_id}-2": {CLIQUE: "uuid-b.1"}})
    admin = client(k8s.kubeconfig)
    admin.request("PATCH", _k8s.node_path(names[0]), body={"metadata": {"annotations": {
        "topograph.run/instance": f"gpu-{test_id}-0"}}}, content_type=k8s_writer.MERGE_PATCH)
    result = run_module(topology_info, {"provider": {"name": "dra", "params": {"node_selector": {TEST_LABEL: test_id}},
                                                     "creds": {"kubeconfig": str(k8s.kubeconfig)}}}, monkeypatch)
    assert not result["failed"], result.get("msg")
    model = Topology.from_compact(result["topology"])
    assert {n.name: n.domain for n in model.nodes.values()} == {
        f"gpu-{test_id}-0": "uuid-a.1", names[1]: "uuid-a.1", names[2]: "uuid-b.1"}
    assert result["warnings"] == [f"1 nodes have no {CLIQUE} label and are left out: {names[3]}"]
    block = discover("dra", {"node_selector": {TEST_LABEL: test_id}}, {"kubeconfig": str(k8s.kubeconfig)})
    assert sorted(block.domains()) == ["uuid-a.1", "uuid-b.1"]


def test_node_labels_provider_reads_back_what_k8s_node_labels_wrote(k8s, monkeypatch):
    test_id = new_id()
    prefix = f"t{test_id}"
    make_nodes(k8s, node_names(prefix, 4, 3), test_id)
    params = gb200(prefix, racks=4, per_rack=3)
    run_module(k8s_node_labels, {"provider": {"name": "inventory", "params": params},
                                 "kubeconfig": str(k8s.kubeconfig), "node_selector": {TEST_LABEL: test_id}}, monkeypatch)
    read_back = discover("node_labels", {"node_selector": {TEST_LABEL: test_id}}, {"kubeconfig": str(k8s.kubeconfig)})
    original = discover("inventory", params).to_compact()
    original.pop("domain_order")
    assert read_back.to_compact() == original


def test_k8s_auth_variables_as_awx_sets_them_with_a_service_account_token(k8s, k8s_namespace, monkeypatch):
    test_id = new_id()
    prefix = f"t{test_id}"
    make_nodes(k8s, node_names(prefix, 1, 2), test_id)
    account = f"labeler-{test_id}"
    apply_rbac(k8s, "k8s_node_labels.yaml", f"system:serviceaccount:{k8s_namespace}:{account}", k8s_namespace, test_id)
    token = k8s.service_account_token(k8s_namespace, account)
    # The default kubeconfig is the admin's: the explicit token must win over it, and the in-cluster
    # account must never be tried.
    monkeypatch.setenv("KUBECONFIG", str(k8s.kubeconfig))
    monkeypatch.setenv("K8S_AUTH_HOST", k8s.server)
    monkeypatch.setenv("K8S_AUTH_API_KEY", token)
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "true")
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    args = {"provider": {"name": "inventory", "params": gb200(prefix, racks=1, per_rack=2)},
            "node_selector": {TEST_LABEL: test_id}}
    untrusted = run_module(k8s_node_labels, args, monkeypatch)
    assert untrusted["failed"] and "TLS verification of" in untrusted["msg"] and "ca_cert" in untrusted["msg"]
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", str(k8s.ca_file))
    labelled = run_module(k8s_node_labels, args, monkeypatch)
    assert not labelled["failed"] and len(labelled["changed_nodes"]) == 2
    assert token not in str(labelled)
    # The service account may label nodes but not write NFD objects: the admin kubeconfig was not used.
    k8s.install_nfd_crds()
    denied = run_module(nfd_topology, {"provider": args["provider"], "namespace": k8s_namespace}, monkeypatch)
    assert denied["failed"] and "HTTP 403" in denied["msg"] and account in denied["msg"]
