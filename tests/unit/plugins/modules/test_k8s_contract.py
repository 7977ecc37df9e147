"""One contract, every Kubernetes module: check mode, idempotence, diff only in diff mode, refused RBAC, and a
409, 422 or 500 in the middle of the writes (tests/fault_k8s.FakeCluster; the real API server:
tests/integration/test_k8s_*.py).

Each module runs in-process (``module_runner``) against the fake cluster, one write at a time.
"""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._engines import scheduler_topology
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import WriteOptions
from ansible_collections.aifactory.topology.plugins.modules import (
    k8s_node_annotations,
    k8s_node_labels,
    k8s_scheduler_topology,
    nfd_topology,
    slinky_topology,
)

from tests.fault_k8s import FakeCluster

from .module_runner import run_module

NODES = ("n1", "n2", "n3")
MODEL = {"format": "aifactory.topology/v1", "switches": {"leaf1": None},
         "nodes": [{"nodes": "n[1-3]", "switch": "leaf1"}]}
FACTS = {name: {"hostname": f"host-{name}", "infiniband": [], "nvlink": {}} for name in NODES}

# module, its arguments: each writes at least two objects or nodes on a first run.
CASES = {
    "k8s_node_labels": (k8s_node_labels, {"model": MODEL}),
    "k8s_node_annotations": (k8s_node_annotations, {"node_facts": FACTS}),
    "nfd_topology": (nfd_topology, {"model": MODEL, "namespace": "nfd"}),
    "k8s_scheduler_topology": (k8s_scheduler_topology, {"model": MODEL, "consumers": ["kueue"],
                                                        "flavor_node_labels": {"pool": "gpu"}}),
    "slinky_topology": (slinky_topology, {"model": MODEL, "namespace": "slurm", "configmap_name": "slurm",
                                          "plugin": "topology/tree", "use_dynamic_nodes": True}),
}


@pytest.fixture
def cluster(monkeypatch):
    fake = FakeCluster([(f"/api/v1/nodes/{name}", {"metadata": {"name": name, "labels": {"pool": "gpu"}}})
                        for name in NODES],
                       served={scheduler_topology.KUEUE_API: ["topologies", "resourceflavors"]})

    def connect(module, field_manager="aifactory-topology"):
        return fake, WriteOptions(module.check_mode, concurrency=1, retry_delay=0, field_manager=field_manager)
    monkeypatch.setattr(k8s_module, "connect", connect)
    return fake


@pytest.fixture(params=sorted(CASES))
def run(request, cluster, monkeypatch):
    module, args = CASES[request.param]
    return lambda **kwargs: run_module(module, args, monkeypatch=monkeypatch, **kwargs)


def test_check_mode_sends_every_write_as_a_dry_run_and_stores_nothing(run, cluster):
    before = cluster.snapshot()
    result = run(check_mode=True)
    assert not result["failed"], result["msg"]
    assert result["changed"] is True and "diff" not in result
    assert len(cluster.writes) >= 2 and all(dry for _method, _path, dry in cluster.writes)
    assert cluster.snapshot() == before


def test_a_second_run_writes_nothing_and_the_diff_is_there_only_in_diff_mode(run, cluster):
    first = run()
    assert not first["failed"], first["msg"]
    assert first["changed"] is True and "diff" not in first and len(cluster.stored_writes()) >= 2
    stored = cluster.snapshot()
    again = run(diff=True)
    assert not again["failed"], again["msg"]
    assert again["changed"] is False and "diff" in again
    assert cluster.snapshot() == stored


def test_refused_rbac_on_the_first_write_writes_nothing_and_says_so(run, cluster):
    before = cluster.snapshot()
    cluster.fail_at(0, 403)
    result = run()
    assert result["failed"] and "HTTP 403" in result["msg"] and result["msg"].endswith("(already written: nothing)")
    assert result["changed"] is False and cluster.snapshot() == before


@pytest.mark.parametrize("status", [409, 422, 500])
def test_a_refusal_in_the_middle_fails_naming_what_was_already_written(run, cluster, status):
    cluster.fail_at(1, status)
    result = run(diff=True)
    assert result["failed"] and "HTTP " in result["msg"] and "(already written: " in result["msg"]
    assert status == 409 or f"HTTP {status}" in result["msg"]  # a 409 on a create is read again: it may be a 404
    assert "already written: nothing" not in result["msg"] and result["changed"] is True and "diff" in result
    first = cluster.stored_writes()[0][1].rsplit("/", 1)[1]  # the name of the object written first
    assert first in result["msg"].rsplit("(already written: ", 1)[1]
