"""plugins/module_utils/_events/k8s_watch.py: what one watch event does to the watcher's state."""

from __future__ import annotations

import functools
import json

import kubernetes  # noqa: F401  # pylint: disable=unused-import  # a requirement: its absence fails, never skips
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._events import k8s_watch as _k8s_watch

CLIQUE = "nvidia.com/gpu.clique"


def node(name, version, clique=None, **labels):
    labels = dict(labels, **({CLIQUE: clique} if clique else {}))
    return {"metadata": {"name": name, "resourceVersion": version, "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


@functools.lru_cache(maxsize=1)
def unreachable_client():
    config, _source = _k8s.configuration({"host": "https://127.0.0.1:1", "api_key": "t"})
    return _k8s.K8sClient(config)


def watcher(emitted, kind="node"):
    return _k8s_watch.ResourceWatcher(unreachable_client(), kind, emitted.append, watched_labels=[CLIQUE])


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


# Any JSON at all: what a broken or hostile API server can put in a watch line.
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)
SHAPED = st.fixed_dictionaries({"metadata": st.fixed_dictionaries(
    {}, optional={"name": JSON, "namespace": JSON, "resourceVersion": JSON, "labels": JSON | st.dictionaries(
        st.just(CLIQUE), JSON)})}, optional={"spec": JSON | st.fixed_dictionaries({"nodeName": JSON}),
                                             "status": JSON | st.fixed_dictionaries({"conditions": JSON})})


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["node", "pod"]), event_type=st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]),
       obj=JSON | SHAPED)
def test_any_object_is_handled_or_one_bad_message(kind, event_type, obj):
    emitted = []
    w = watcher(emitted, kind)
    try:
        w.handle({"type": event_type, "object": obj})
    except _eda.BadMessage:
        assert w.known == {} and emitted == []


@settings(max_examples=200, deadline=None)
@given(line=st.text(max_size=60) | JSON.map(json.dumps) | st.fixed_dictionaries(
    {"type": st.sampled_from(["ADDED", "ERROR", "BOOKMARK"]), "object": JSON}).map(json.dumps))
def test_any_line_is_an_event_or_one_bad_message(line):
    event = _k8s_watch._Watch().unmarshal_event(line, None)  # pylint: disable=protected-access
    assert event is None or isinstance(event, _eda.BadMessage) or (
        isinstance(event, dict) and isinstance(event["object"], dict) and event["type"] in _k8s_watch.EVENT_TYPES)
    if isinstance(event, dict) and event["type"] == "ERROR":
        assert isinstance(event["object"]["code"], int) and isinstance(event["object"]["message"], str)
