"""aifactory.topology.k8s_node_annotations against the REAL kube-apiserver of tools/k8s_testbed.py.

Facts as topology_facts returns them are published as Topograph's broker annotations; the ``dra``
provider then names the nodes by the published host name. Writes are counted from the server's
side (a node's resourceVersion changes exactly when a write is stored).
"""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover
from ansible_collections.aifactory.topology.plugins.modules import k8s_node_annotations
from tests.integration.k8s_support import TEST_LABEL, client, make_nodes, new_id, node_state, run_module, written

pytestmark = pytest.mark.k8s
UUID = "6a4f2e1c-93b7-4d0e-8f51-2c7d9e0a1b34"


def facts(hostname, clique=None):
    nvlink = {"cluster_uuid": UUID, "clique_id": clique, "domain": f"{UUID}.{clique}", "gpus": 4} if clique else {}
    return {"hostname": hostname, "infiniband": [], "nvlink": nvlink}


def test_facts_become_broker_annotations_once_and_the_dra_provider_names_nodes_by_them(k8s, monkeypatch):
    test_id = new_id()
    api = client(k8s.kubeconfig)
    names = make_nodes(k8s, [f"k-{test_id}-a", f"k-{test_id}-b", f"k-{test_id}-c"], test_id,
                       labels={f"k-{test_id}-a": {"nvidia.com/gpu.clique": f"{UUID}.7"}})
    node_facts = {names[0]: facts(f"gb200-{test_id}-n01", "7"), names[1]: facts(f"cpu-{test_id}-01"),
                  f"k-{test_id}-gone": facts("gone")}
    args = {"kubeconfig": str(k8s.kubeconfig), "node_facts": node_facts}
    before = node_state(api, test_id)

    check = run_module(k8s_node_annotations, args, monkeypatch, check_mode=True, diff=True)
    assert not check["failed"] and check["changed"] and check["changed_nodes"] == names[:2]
    assert check["diff"]["after"][names[0]]["topograph.run/cluster-id"] == f"{UUID}.7"
    assert written(before, node_state(api, test_id)) == []  # dry run: nothing stored

    first = run_module(k8s_node_annotations, args, monkeypatch)
    assert not first["failed"] and first["changed_nodes"] == names[:2]
    assert first["summary"] == {"nodes_given": 3, "nodes_changed": 2, "nodes_missing": 1}
    assert first["warnings"] == [f"1 nodes with facts are not in the cluster: k-{test_id}-gone"]
    state = node_state(api, test_id)
    assert written(before, state) == names[:2]
    assert {k: v for k, v in state[names[0]][2].items() if k.startswith("topograph.run/")} == {
        "topograph.run/instance": f"gb200-{test_id}-n01", "topograph.run/region": "local",
        "topograph.run/cluster-id": f"{UUID}.7"}
    assert "topograph.run/cluster-id" not in state[names[1]][2]

    second = run_module(k8s_node_annotations, args, monkeypatch)
    assert not second["failed"] and not second["changed"]
    assert written(state, node_state(api, test_id)) == []

    # The node lost its clique: cluster-id goes, the rest stays.
    node_facts[names[0]] = facts(f"gb200-{test_id}-n01")
    third = run_module(k8s_node_annotations, args, monkeypatch)
    assert third["changed_nodes"] == [names[0]]
    assert "topograph.run/cluster-id" not in node_state(api, test_id)[names[0]][2]

    # The Kubernetes-side provider reads the published host name as the node's name.
    topology = discover("dra", {"node_selector": {TEST_LABEL: test_id}}, {"kubeconfig": str(k8s.kubeconfig)})
    assert list(topology.nodes) == [f"gb200-{test_id}-n01"]
    assert topology.nodes[f"gb200-{test_id}-n01"].domain == f"{UUID}.7"
    api.close()


def test_facts_that_are_not_topology_node_facts_fail_before_any_write(k8s, monkeypatch):
    result = run_module(k8s_node_annotations, {"kubeconfig": str(k8s.kubeconfig), "node_facts": {"n1": {"x": 1}}},
                        monkeypatch)
    assert result["failed"] and "node_facts.n1: node facts must be the topology_node fact" in result["msg"]
