"""k8s_node_labels with a Kubernetes node provider lists the nodes once when both read through one connection.

The provider (``dra``) and the writer both need every Node; when the provider's creds and timeout resolve to
the module's own connection they share one list (``K8sClient.sharing_lists``). Credentials that differ, even
by the token alone, keep two lists: the provider must see what its own identity may see. A local API server
stand-in on 127.0.0.1 (tests/fault_k8s.py) counts the list requests.
"""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.modules import k8s_node_labels
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s

from tests.fault_k8s import FakeApiServer, node_list

from .module_runner import run_module

CLIQUE = "nvidia.com/gpu.clique"
DOMAIN = "accelerator.topograph.run/domain"


def node(name, clique):
    # Already carrying the label the module wants: a no-change run sends no write to this stand-in.
    return {"metadata": {"name": name, "resourceVersion": "7", "labels": {CLIQUE: clique, DOMAIN: clique}}}


@pytest.fixture
def api():
    with FakeApiServer() as server:
        server.lists = lambda query: node_list([node("gpu-1", "c1"), node("gpu-2", "c1"), node("gpu-3", "c2")])
        yield server


def args(api, creds, **extra):
    return dict({"provider": {"name": "dra", "params": {"node_selector": {"pool": "gpu"}}, "creds": creds},
                 "host": api.url(), "api_key": "module-t0ken", "node_selector": {"pool": "gpu"}}, **extra)


def test_the_provider_and_the_writer_share_one_list_on_one_connection(api, monkeypatch):
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    result = run_module(k8s_node_labels, args(api, {"host": api.url(), "api_key": "module-t0ken"}),
                        monkeypatch=monkeypatch)
    assert not result["failed"], result.get("msg")
    assert (result["changed"], result["summary"]["nodes_listed"], result["summary"]["nodes_in_topology"]) == (False, 3, 3)
    assert [query.get("labelSelector") for query in api.list_requests()] == ["pool=gpu"]


def test_other_credentials_or_another_selector_list_again(api, monkeypatch):
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    result = run_module(k8s_node_labels, args(api, {"host": api.url(), "api_key": "provider-t0ken"}),
                        monkeypatch=monkeypatch)
    assert not result["failed"], result.get("msg")
    assert len(api.list_requests()) == 2
    assert sorted(api.authorizations) == ["Bearer module-t0ken", "Bearer provider-t0ken"]

    api.calls.clear()
    result = run_module(k8s_node_labels, dict(args(api, {"host": api.url(), "api_key": "module-t0ken"}),
                                              node_selector={"pool": "gpu", "zone": "a"}), monkeypatch=monkeypatch)
    assert [query.get("labelSelector") for query in api.list_requests()] == ["pool=gpu", "pool=gpu,zone=a"]


def test_a_shared_list_is_answered_once_per_query_and_only_inside_the_block(api):
    client = _k8s.K8sClient.from_auth({"host": api.url(), "api_key": "t"})
    assert client.serves({"host": api.url(), "api_key": "t"}, 60.0)
    assert not client.serves({"host": api.url(), "api_key": "other"}, 60.0)
    assert not client.serves({"host": api.url(), "api_key": "t"}, 30.0)
    assert not client.serves({"token": "unknown key"}, 60.0)
    with client.sharing_lists():
        first = client.list(_k8s.node_path(), "pool=gpu")
        first.clear()  # a caller's copy: changing it changes nothing shared
        assert len(client.list(_k8s.node_path(), "pool=gpu")) == 3
        client.list(_k8s.node_path())
    client.list(_k8s.node_path(), "pool=gpu")
    assert [query.get("labelSelector") for query in api.list_requests()] == ["pool=gpu", None, "pool=gpu"]
