"""Kubernetes modules in-process, without an API server: every input error is reported before any request.

The server points at a closed loopback port, so a module that tried to connect would fail with
"cannot reach the API server" instead of the input error asserted here.
"""

from __future__ import annotations

import json
import socket

import pytest

from ansible_collections.aifactory.topology.plugins.modules import (
    k8s_node_labels,
    k8s_scheduler_topology,
    nfd_topology,
    slinky_topology,
)

from .module_runner import run_module

TOKEN = "s3cr3t-token-value"


@pytest.fixture
def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def run(monkeypatch, closed_port):
    for name in ("K8S_AUTH_KUBECONFIG", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)

    def runner(module, args, **kwargs):
        args = dict({"host": f"https://127.0.0.1:{closed_port}", "api_key": TOKEN, "request_timeout": 5}, **args)
        return run_module(module, args, monkeypatch=monkeypatch, **kwargs)
    return runner


def model(**group):
    return {"format": "aifactory.topology/v1", "switches": {"leaf1": None}, "nodes": [dict({"nodes": "n[1-2]"}, **group)]}


def test_bad_label_keys_and_values_fail_before_any_request(run):
    result = run(k8s_node_labels, {"model": model(switch="leaf1"), "accelerator_label": "Not Valid"})
    assert result["failed"] and "accelerator_label: 'Not Valid' is not a valid Kubernetes label key" in result["msg"]
    bad_value = {"format": "aifactory.topology/v1", "switches": {"leaf:1": None},
                 "nodes": [{"nodes": "n[1-2]", "switch": "leaf:1"}]}
    result = run(k8s_node_labels, {"model": bad_value})
    # Each node with a value the server refuses is quarantined; with every node so, nothing is left: an error.
    assert result["failed"] and result["msg"].startswith(
        "every node was quarantined (2), so nothing is left to map: n1 (label fabric.topograph.run/tier-0 (the tier 0 "
        "switch): 'leaf:1' is not a valid Kubernetes label value")
    result = run(k8s_node_labels, {"model": model(switch="leaf1"), "node_selector": {"a": "b c"}})
    assert result["failed"] and "node_selector['a']" in result["msg"]


def test_unreachable_server_is_named_and_the_token_never_shows(run, closed_port):
    result = run(k8s_node_labels, {"model": model(switch="leaf1")})
    assert result["failed"]
    assert f"GET /api/v1/nodes: cannot reach the API server https://127.0.0.1:{closed_port}" in result["msg"]
    assert TOKEN not in json.dumps(result)


def test_nfd_and_slinky_input_errors(run):
    result = run(nfd_topology, {"model": {"format": "aifactory.topology/v1", "switches": {}, "nodes": [{"nodes": "n1"}]},
                                "namespace": "nfd"})
    assert result["failed"] and "gives no node a fabric tier or accelerator domain" in result["msg"]
    result = run(slinky_topology, {"model": model(switch="leaf1"), "namespace": "slurm", "configmap_name": "slurm",
                                   "topologies": {"gpu": {"plugin": "topology/tree", "partition": "gpu",
                                                          "cluster_default": True}}})
    assert result["failed"] and "cannot run scontrol" in result["msg"]
    result = run(slinky_topology, {"model": model(switch="leaf1"), "namespace": "slurm", "configmap_name": "slurm",
                                   "plugin": "topology/block"})
    assert result["failed"] and "topology/block needs nodes with an accelerator domain" in result["msg"]
    result = run(slinky_topology, {"model": model(switch="leaf1"), "namespace": "slurm", "configmap_name": "slurm",
                                   "plugin": "topology/tree", "topologies": {}})
    assert result["failed"] and "mutually exclusive" in result["msg"]


def test_scheduler_topology_input_errors_come_before_any_request(run):
    result = run(k8s_scheduler_topology, {"model": model(switch="leaf1"), "consumers": ["kueue", "volcano"],
                                          "node_selector": {"gpu": "true"}})
    assert result["failed"] and "consumers: unknown 'volcano'; known: kueue, kai" in result["msg"]
    result = run(k8s_scheduler_topology, {"model": model(switch="leaf1"), "consumers": ["kueue"]})
    assert result["failed"] and "set flavor_node_labels or node_selector" in result["msg"]
    result = run(k8s_scheduler_topology, {"model": model(switch="leaf1"), "consumers": ["kai"], "fabric_tiers": -1})
    assert result["failed"] and "fabric_tiers must be a whole number" in result["msg"]
    result = run(k8s_scheduler_topology, {"model": model(switch="leaf1"), "consumers": ["kai"]})
    assert result["failed"] and "cannot reach the API server" in result["msg"] and TOKEN not in json.dumps(result)
