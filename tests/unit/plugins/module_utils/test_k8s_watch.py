"""plugins/module_utils/_k8s_watch.py: what one watch event does to the watcher's state."""

from __future__ import annotations

import kubernetes  # noqa: F401  # pylint: disable=unused-import  # a requirement: its absence fails, never skips
import pytest

from ansible_collections.aifactory.topology.plugins.module_utils import _k8s, _k8s_watch

CLIQUE = "nvidia.com/gpu.clique"


def node(name, version, clique=None, **labels):
    labels = dict(labels, **({CLIQUE: clique} if clique else {}))
    return {"metadata": {"name": name, "resourceVersion": version, "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def watcher(emitted):
    config, _source = _k8s.configuration({"host": "https://127.0.0.1:1", "api_key": "t"})
    return _k8s_watch.ResourceWatcher(_k8s.K8sClient(config), "node", emitted.append, watched_labels=[CLIQUE])


def test_events_bookmarks_and_heartbeats():
    emitted = []
    w = watcher(emitted)
    w.known, w.resource_version = {"n1": {CLIQUE: "a.1"}}, "10"
    w.handle({"type": "MODIFIED", "object": node("n1", "11", "a.1", heartbeat="x")})  # status/other labels only
    w.handle({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}})
    assert emitted == [] and w.resource_version == "15"
    w.handle({"type": "ADDED", "object": node("n2", "16", "a.2")})
    w.handle({"type": "MODIFIED", "object": node("n1", "17", "a.3")})
    w.handle({"type": "DELETED", "object": node("n2", "18", "a.2")})
    assert [(c["name"], c["change"]) for c in emitted] == [("n2", "added"), ("n1", "modified"), ("n2", "removed")]
    assert w.known == {"n1": {CLIQUE: "a.3"}} and w.resource_version == "18"


def test_unreachable_server_is_a_clear_error_after_the_timeout():
    config, _source = _k8s.configuration({"host": "https://127.0.0.1:1", "api_key": "secret-token"})
    with pytest.raises(_k8s_watch.RemoteAPIError, match=r"https://127.0.0.1:1 is not ready after 0.5 s") as info:
        _k8s_watch.wait_ready(_k8s.K8sClient(config), 0.5)
    assert "secret-token" not in str(info.value)
