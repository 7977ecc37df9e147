"""The writers' Kubernetes rules (plugins/module_utils/_base/labels.py) against the REAL kube-apiserver's validation.

Every key, value and name is sent as a dry run (``dryRun=All``: validated, never stored) and the
server's verdict must be the collection's: what the writers refuse before any request is exactly
what the server would refuse, and nothing the server takes is refused.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import MERGE_PATCH
from tests.integration.k8s_support import client, make_nodes, new_id

pytestmark = pytest.mark.k8s
DRY_RUN = {"dryRun": "All", "fieldManager": "aifactory-test"}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
TRICKY = ["a", "A", "a-b", "a_b", "a.b", "-a", "a-", "_a", "a b", "a\n", "\na", "a\r", "a\x00b", "a/b", "a/b/c", "/a",
          "Example.com/a", "example.com/a", "example.com/A", "e_x.com/a", "x" * 63, "x" * 64, "p" * 253 + "/a",
          "p" * 254 + "/a", "é", "a\u2028", ""]
WORDS = st.one_of(st.sampled_from(TRICKY), st.text(st.sampled_from("aZ09-_./ \n\té"), max_size=70))


@pytest.fixture(scope="module")
def admin(k8s):
    api = client(k8s.kubeconfig)
    yield api
    api.close()


@pytest.fixture(scope="module")
def node(k8s, admin):
    name = f"v{new_id()}"
    make_nodes(k8s, [name], new_id())
    return name


def server_takes(call):
    """True when the API server validates the request; False when it refuses it as invalid."""
    try:
        call()
    except _k8s.K8sError as exc:
        assert exc.status in (400, 422), exc
        return False
    return True


def refused_here(check):
    try:
        check()
    except TopologyError:
        return True
    return False


@given(key=WORDS, value=WORDS)
@example(key="a", value="rack1\n")  # taken here before fullmatch: "$" matches before a trailing newline
@example(key="example.com/a\n", value="a")
@SETTINGS
def test_label_keys_and_values(admin, node, key, value):
    taken = server_takes(lambda: admin.request("PATCH", _k8s.node_path(node), DRY_RUN,
                                               {"metadata": {"labels": {key: value}}}, MERGE_PATCH))
    assert taken == (_labels.qualified_name_problem(key) is None and _labels.is_valid_label_value(value)), (key, value)


@given(key=WORDS)
@SETTINGS
def test_annotation_keys(admin, node, key):
    taken = server_takes(lambda: admin.request("PATCH", _k8s.node_path(node), DRY_RUN,
                                               {"metadata": {"annotations": {key: "v"}}}, MERGE_PATCH))
    assert taken == (not refused_here(lambda: _labels.check_annotations({key: "v"}, "node"))), key


@pytest.mark.parametrize("extra", [-1, 0, 1, 2])
@pytest.mark.parametrize("char", ["v", "é"])
def test_the_annotation_total_is_counted_as_the_server_counts_it(admin, node, extra, char):
    existing = (admin.request("GET", _k8s.node_path(node))["metadata"].get("annotations") or {})
    key = "example.com/big"
    room = _labels.MAX_ANNOTATIONS_BYTES - _labels.annotations_size(existing) - len(key)
    value = "v" * (room + extra) if char == "v" else "é" * ((room + extra) // 2) + "v" * ((room + extra) % 2)
    after = dict(existing, **{key: value})
    taken = server_takes(lambda: admin.request("PATCH", _k8s.node_path(node), DRY_RUN,
                                               {"metadata": {"annotations": {key: value}}}, MERGE_PATCH))
    assert taken == (_labels.annotations_size(after) <= _labels.MAX_ANNOTATIONS_BYTES) == (extra <= 0)


@given(name=st.one_of(WORDS, st.just("n" * 253), st.just("n" * 254), st.just("a." * 126 + "a")))
@example(name="gpu01\n")
@example(name="GPU01")
@SETTINGS
def test_node_names(admin, name):
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    taken = server_takes(lambda: admin.request("POST", _k8s.node_path(), DRY_RUN, body))
    assert taken == (_labels.dns_subdomain_problem(name) is None), name


@given(name=WORDS)
@SETTINGS
def test_namespace_and_configmap_names_and_keys(admin, k8s_namespace, name):
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    taken = server_takes(lambda: admin.request("POST", "/api/v1/namespaces", DRY_RUN, namespace))
    assert taken == (not refused_here(lambda: _labels.check_object_name(name, "namespace", dns_label=True))), name
    configmaps = _k8s.namespaced_path("/api/v1", k8s_namespace, "configmaps")
    named = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    taken = server_takes(lambda: admin.request("POST", configmaps, DRY_RUN, named))
    assert taken == (not refused_here(lambda: _labels.check_object_name(name, "configmap_name"))), name
    keyed = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keyed"}, "data": {name: "v"}}
    taken = server_takes(lambda: admin.request("POST", configmaps, DRY_RUN, keyed))
    assert taken == (not refused_here(lambda: _labels.check_configmap_key(name, "configmap_key"))), name


@pytest.mark.parametrize("extra", [0, 1])
def test_the_configmap_data_limit(admin, k8s_namespace, extra):
    data = {"a.conf": "x" * (_labels.MAX_CONFIGMAP_DATA_BYTES // 2),
            "b.conf": "y" * (_labels.MAX_CONFIGMAP_DATA_BYTES - _labels.MAX_CONFIGMAP_DATA_BYTES // 2 + extra)}
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": data}
    taken = server_takes(lambda: admin.request(
        "POST", _k8s.namespaced_path("/api/v1", k8s_namespace, "configmaps"), DRY_RUN, body))
    assert taken == (extra == 0)
