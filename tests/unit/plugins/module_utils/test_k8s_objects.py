"""The NFD objects sync when a write fails part way (the API server itself: tests/integration/test_k8s_nfd.py)."""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._writers import k8s
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.nfd_topology import reconcile as reconcile_nfd

TOPOLOGY = {"switches": {"leaf1": None}, "domains": [{"name": "rack1", "nodes": "gpu[1-2]", "switch": "leaf1"}]}


class FailingClient:
    """An empty namespace whose API server refuses to create NodeFeatureGroup objects."""

    def __init__(self):
        self.requests = []

    def list(self, path, label_selector=None, metadata_only=False):
        return []

    def request(self, method, path, query=None, body=None, content_type=None):
        self.requests.append((method, path))
        if method == "POST" and path.endswith("/nodefeaturegroups"):
            raise _k8s.K8sError(f"{method} {path}: HTTP 500 Internal Server Error", 500)
        return body


def test_a_failed_write_reports_what_was_created_before_it():
    client = FailingClient()
    with pytest.raises(k8s.PartialWrite) as info:
        reconcile_nfd(client, discover("inventory", TOPOLOGY), "nfd", k8s.WriteOptions(concurrency=1), diff=True)
    features = info.value.result["created"]["NodeFeature"]
    assert len(features) == 2 and all(name.startswith("topograph-node-gpu") for name in features)
    assert info.value.result["created"].get("NodeFeatureGroup") == []
    assert info.value.result["changed"] is True
    assert sorted(info.value.result["diff"]["after"]) == sorted(f"NodeFeature/{name}" for name in features)
    message = str(info.value)
    assert message.startswith("POST /apis/nfd.k8s-sigs.io/v1alpha1/namespaces/nfd/nodefeaturegroups: HTTP 500")
    assert message.endswith(f"(already written: created NodeFeature/{features[0]}, NodeFeature/{features[1]})")
