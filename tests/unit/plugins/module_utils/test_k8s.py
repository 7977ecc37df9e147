"""The Kubernetes client layer without a server: auth resolution, selectors, bounded concurrency, 409 retry.

What needs an API server (requests, dry runs, RBAC) is in tests/integration/test_k8s_node_labels.py, test_k8s_rbac.py and the other test_k8s_*.py there.
"""

from __future__ import annotations

import threading

import kubernetes.config
import pytest
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError


def test_options_win_over_k8s_auth_variables_and_both_variable_spellings_work():
    env = {"K8S_AUTH_HOST": "https://env:6443", "K8S_AUTH_API_KEY": "env-token", "K8S_AUTH_VERIFY_SSL": "no",
           "K8S_AUTH_SSL_CA_CERT": "/env/ca.crt", "K8S_AUTH_CERT_FILE": "/env/c.crt", "K8S_AUTH_KEY_FILE": "/env/c.key",
           "K8S_AUTH_CONTEXT": "ctx", "K8S_AUTH_KUBECONFIG": "/env/kubeconfig"}
    auth = _k8s.resolve_auth({"host": "https://option:6443", "api_key": None}, env)
    assert auth == {"kubeconfig": "/env/kubeconfig", "context": "ctx", "host": "https://option:6443",
                    "api_key": "env-token", "validate_certs": False, "ca_cert": "/env/ca.crt",
                    "client_cert": "/env/c.crt", "client_key": "/env/c.key"}
    modern = _k8s.resolve_auth({}, {"K8S_AUTH_VALIDATE_CERTS": "true", "K8S_AUTH_CA_CERT": "/a", "K8S_AUTH_CLIENT_CERT": "/b",
                                    "K8S_AUTH_CLIENT_KEY": "/c"})
    assert (modern["validate_certs"], modern["ca_cert"], modern["client_cert"], modern["client_key"]) == (True, "/a", "/b", "/c")
    for false in ("0", "false", "No", "off"):
        assert _k8s.resolve_auth({}, {"K8S_AUTH_VERIFY_SSL": false})["validate_certs"] is False
    assert _k8s.resolve_auth({"verify_ssl": False, "ssl_ca_cert": "/x"}, {}) == dict(
        dict.fromkeys(_k8s.AUTH_OPTIONS), validate_certs=False, ca_cert="/x")
    with pytest.raises(TopologyError, match="the Kubernetes auth options has unknown keys: token; known: api_key"):
        _k8s.resolve_auth({"token": "x"}, {})


def test_the_argument_spec_marks_the_token_no_log_and_matches_the_options():
    assert _k8s.AUTH_ARG_SPEC["api_key"]["no_log"] is True
    assert set(_k8s.AUTH_ARG_SPEC) == {
        "kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert", "client_key"}


@pytest.fixture
def no_in_cluster(monkeypatch):
    """Fail the test if the in-cluster service account is ever tried."""
    calls = []

    def load_incluster_config(**kwargs):
        calls.append(kwargs)
        raise kubernetes.config.ConfigException("not in a pod")

    monkeypatch.setattr(kubernetes.config, "load_incluster_config", load_incluster_config)
    return calls


def kubeconfig(tmp_path, server="https://kubeconfig:6443", token="kc-token"):
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "main",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": False}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}},
                     {"name": "other", "context": {"cluster": "c", "user": "u", "namespace": "x"}}],
    }))
    return path


def token(config):
    return config.auth_settings()["BearerToken"]["value"]


def test_explicit_credentials_never_use_the_in_cluster_account(tmp_path, no_in_cluster, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    config, source = _k8s.configuration(_k8s.resolve_auth({"host": "https://h:6443/", "api_key": "t"}, {}))
    assert (source, config.host, token(config)) == ("host", "https://h:6443", "Bearer t")
    config, source = _k8s.configuration(_k8s.resolve_auth({"kubeconfig": str(kubeconfig(tmp_path))}, {}))
    assert (source, config.host, token(config)) == ("kubeconfig", "https://kubeconfig:6443", "Bearer kc-token")
    config, source = _k8s.configuration(_k8s.resolve_auth({"kubeconfig": str(kubeconfig(tmp_path)), "api_key": "t2"}, {}))
    assert (source, token(config)) == ("kubeconfig", "Bearer t2")
    # Host without a token: the kubeconfig's credentials, the given server; never the pod's account.
    with pytest.raises(TopologyError, match="no Kubernetes credentials"):
        _k8s.configuration(_k8s.resolve_auth({"host": "https://h:6443"}, {}))
    assert no_in_cluster == []


def test_nothing_given_tries_in_cluster_then_the_default_kubeconfig(tmp_path, no_in_cluster, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path, server="https://default:6443")))
    config, source = _k8s.configuration(_k8s.resolve_auth({}, {}))
    assert (source, config.host) == ("kubeconfig", "https://default:6443") and len(no_in_cluster) == 1
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    with pytest.raises(TopologyError, match="set kubeconfig .*K8S_AUTH_KUBECONFIG"):
        _k8s.configuration(_k8s.resolve_auth({}, {}))


def test_kubeconfig_context_overrides_and_file_errors(tmp_path, no_in_cluster):
    path = kubeconfig(tmp_path)
    ca = tmp_path / "ca.crt"
    ca.write_text("not checked until connecting")
    options = {"kubeconfig": str(path), "context": "other", "ca_cert": str(ca), "validate_certs": False}
    config = _k8s.configuration(_k8s.resolve_auth(options, {}))[0]
    assert (config.ssl_ca_cert, config.verify_ssl) == (str(ca), False)
    with pytest.raises(TopologyError, match="context 'nope'"):
        _k8s.configuration(_k8s.resolve_auth({"kubeconfig": str(path), "context": "nope"}, {}))
    with pytest.raises(TopologyError, match="kubeconfig .*absent does not exist"):
        _k8s.configuration(_k8s.resolve_auth({"kubeconfig": str(tmp_path / "absent")}, {}))
    with pytest.raises(TopologyError, match="ca_cert: file .*missing.crt does not exist"):
        _k8s.configuration(_k8s.resolve_auth({"host": "https://h", "api_key": "t",
                                              "ca_cert": str(tmp_path / "missing.crt")}, {}))


def test_missing_library_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(_k8s, "HAS_KUBERNETES", False)
    with pytest.raises(TopologyError, match="Python library 'kubernetes' is required"):
        _k8s.K8sClient.from_auth({"host": "https://h", "api_key": "t"}, {})


def test_selector_strings():
    assert _k8s.selector_string(None) is None
    assert _k8s.selector_string({"b": "2", "a/x": "1"}) == "a/x=1,b=2"
    with pytest.raises(TopologyError, match="node_selector key: 'bad key'"):
        _k8s.selector_string({"bad key": "1"})
    with pytest.raises(TopologyError, match=r"pod_selector\['a'\]: 'x y' is not a valid label value"):
        _k8s.selector_string({"a": "x y"}, "pod_selector")


def test_run_bounded_keeps_order_and_never_exceeds_the_bound():
    state = {"active": 0, "peak": 0, "done": 0}
    condition = threading.Condition()
    release = threading.Semaphore(0)

    def work(item):
        with condition:
            state["active"] += 1
            state["peak"] = max(state["peak"], state["active"])
            condition.notify_all()
        release.acquire()  # pylint: disable=consider-using-with
        with condition:
            state["active"] -= 1
            state["done"] += 1
            condition.notify_all()
        return item * 10

    outcome = {}
    runner = threading.Thread(target=lambda: outcome.update(result=_k8s.run_bounded(work, range(10), 3)))
    runner.start()
    for finished in range(10):
        with condition:
            assert condition.wait_for(lambda: state["active"] == min(3, 10 - finished), timeout=30)
            assert state["active"] <= 3
        release.release()
        with condition:
            assert condition.wait_for(lambda n=finished: state["done"] == n + 1, timeout=30)
    runner.join(timeout=30)
    assert outcome["result"] == ([i * 10 for i in range(10)], None) and state["peak"] == 3


def test_run_bounded_stops_starting_work_after_an_error():
    started = []

    def work(item):
        started.append(item)
        if item == 0:
            raise _k8s.K8sError("boom", 500)
        return item

    results, error = _k8s.run_bounded(work, range(50), 1)
    assert str(error) == "boom" and started == [0] and results == [None] * 50


def test_conflicts_are_retried_with_the_given_delays_and_other_errors_are_not():
    delays = []
    attempts = []

    def flaky():
        attempts.append(1)
        if len(attempts) < 3:
            raise _k8s.K8sError("conflict", 409)
        return "ok"

    assert _k8s.with_conflict_retry(flaky, retries=5, delay=0.5, sleep=delays.append) == "ok"
    assert delays == [0.5, 1.0]

    def always_conflict():
        raise _k8s.K8sError("conflict", 409)

    delays.clear()
    with pytest.raises(_k8s.K8sError):
        _k8s.with_conflict_retry(always_conflict, retries=2, delay=0, sleep=delays.append)
    assert delays == [0, 0]

    def field_manager_conflict():
        raise _k8s.K8sError("owned", 409, {"details": {"causes": [{"type": "FieldManagerConflict"}]}})

    def forbidden():
        raise _k8s.K8sError("forbidden", 403)

    for attempt in (field_manager_conflict, forbidden):
        delays.clear()
        with pytest.raises(_k8s.K8sError):
            _k8s.with_conflict_retry(attempt, retries=5, delay=0, sleep=delays.append)
        assert delays == []
