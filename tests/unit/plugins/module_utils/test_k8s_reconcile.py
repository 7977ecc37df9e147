"""The one Kubernetes writer, ``_writers/k8s_reconcile.reconcile``, over every kind of desired state at once
(tests/fault_k8s.FakeCluster; each module through it: tests/unit/plugins/modules/test_k8s_contract.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base import k8s_desired
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._base.labels import ManagedKeys
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.k8s_module import finish
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import PartialWrite, WriteOptions
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s_nodes import UNHEALTHY_TAINT, list_nodes
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s_reconcile import reconcile

from tests.fault_k8s import FakeCluster

WIDGET = k8s_desired.Kind("example.com/v1", "Widget", "widgets", namespace="ns", selector="owner=us",
                          owner_labels={"owner": "us"})
KEYS = ManagedKeys(["rack"])
CONFIGMAP = "/api/v1/namespaces/ns/configmaps/slurm"


class CountingCluster(FakeCluster):
    """A FakeCluster that records the lists asked for."""

    def __init__(self, objects=()):
        super().__init__(objects)
        self.lists = []

    def list(self, path, label_selector=None, field_selector=None, metadata_only=False):
        self.lists.append((path, label_selector))
        return super().list(path, label_selector, field_selector, metadata_only)


def cluster():
    stray = {"metadata": {"name": "old", "labels": {"owner": "us"}}, "spec": {"size": 0}}
    nodes = [(f"/api/v1/nodes/{name}", {"metadata": {"name": name, "labels": {"pool": "gpu"}}, "spec": {}})
             for name in ("n1", "n2", "n3")]
    return CountingCluster(nodes + [(WIDGET.path("old"), stray)])


def desired(guard=None):
    widget = {"apiVersion": "example.com/v1", "kind": "Widget",
              "metadata": {"name": "w1", "namespace": "ns", "labels": {"owner": "us"}}, "spec": {"size": 1}}
    return [
        k8s_desired.Objects([WIDGET], [(WIDGET, widget)]),
        k8s_desired.NodeEntries("labels", KEYS, {"n1": {"rack": "r1"}, "n2": {"rack": "r2"}, "gone": {"rack": "r9"}},
                                selector="pool=gpu"),
        k8s_desired.NodeTaints({"n3"}, selector="pool=gpu"),
        k8s_desired.ConfigMapKey("ns", "slurm", "topology.conf", "SwitchName=s1 Nodes=n[1-3]\n", {"a/b": "c"},
                                 guard=guard),
    ]


def test_every_kind_is_written_in_order_after_one_list_per_resource_and_a_rerun_writes_nothing():
    client = cluster()
    report = reconcile(client, desired(), WriteOptions(concurrency=1))
    assert client.lists == [("/api/v1/nodes", "pool=gpu"), (WIDGET.path(), "owner=us")]
    assert report.done == [("created", "Widget/w1"), ("deleted", "Widget/old"), ("patched", "n1"), ("patched", "n2"),
                           ("tainted", "n3"), ("applied", "configmap/ns/slurm")]
    assert report.written() == ("created Widget/w1; deleted Widget/old; patched nodes n[1-2]; tainted nodes n3; "
                                "applied configmap/ns/slurm")
    assert client.objects["/api/v1/nodes/n2"]["metadata"]["labels"] == {"pool": "gpu", "rack": "r2"}
    assert client.objects["/api/v1/nodes/n3"]["spec"]["taints"] == [UNHEALTHY_TAINT]
    assert client.objects[CONFIGMAP]["data"] == {"topology.conf": "SwitchName=s1 Nodes=n[1-3]\n"}
    writes = len(client.writes)
    again = reconcile(client, desired(), WriteOptions(concurrency=1))
    assert not again.changed and again.error is None and len(client.writes) == writes


def test_check_mode_sends_every_write_as_a_dry_run_and_stores_nothing():
    client = cluster()
    before = client.snapshot()
    report = reconcile(client, desired(), WriteOptions(check_mode=True, concurrency=1))
    assert report.changed and len(report.done) == 6
    assert client.writes and all(dry for _method, _path, dry in client.writes)
    assert client.snapshot() == before


def test_nodes_the_caller_listed_are_not_listed_again():
    client = cluster()
    nodes = list_nodes(client, "pool=gpu")
    reconcile(client, desired()[1:3], WriteOptions(concurrency=1), nodes=nodes)
    assert client.lists == [("/api/v1/nodes", "pool=gpu")]


def test_a_refusal_in_a_later_part_comes_before_any_write():
    def refuse(before, content):
        raise TopologyError("the guard refuses it")

    client = cluster()
    with pytest.raises(TopologyError, match="the guard refuses it"):
        reconcile(client, desired(guard=refuse), WriteOptions(concurrency=1))
    assert client.writes == []


def test_the_node_parts_are_checked_first_so_their_refusal_is_the_one_reported():
    def refuse(before, content):
        raise TopologyError("the guard refuses it")

    client = cluster()
    huge = k8s_desired.NodeEntries("annotations", KEYS, {"n1": {"rack": "x" * 300_000}})
    with pytest.raises(TopologyError, match=r"^1 nodes would carry more annotations than the API server takes"):
        reconcile(client, [desired(guard=refuse)[3], huge], WriteOptions(concurrency=1))
    assert client.writes == []


def test_a_failed_write_stops_the_later_parts_and_finish_says_what_was_written():
    client = cluster()
    client.fail_at(2, 500)  # the patch of n1, after the Widget's create and delete
    report = reconcile(client, desired(), WriteOptions(concurrency=1))
    assert report.done == [("created", "Widget/w1"), ("deleted", "Widget/old")]
    assert [method for method, _path, _dry in client.writes] == ["PATCH", "DELETE", "PATCH"]
    with pytest.raises(PartialWrite) as info:
        finish({}, report, diff=True)
    assert str(info.value) == ("PATCH /api/v1/nodes/n1: HTTP 500 (already written: created Widget/w1; "
                               "deleted Widget/old)")
    assert info.value.result["changed"] is True
    assert sorted(info.value.result["diff"]["after"]) == ["Widget/w1"]


def test_parts_with_headers_make_one_diff_section_each_even_when_not_reached():
    client = cluster()
    client.fail_at(0, 422)
    parts = [desired()[3], k8s_desired.NodeEntries("annotations", KEYS, {"n1": {"rack": "r1"}},
                                                   headers=("node annotations", "node annotations"))]
    report = reconcile(client, parts, WriteOptions(concurrency=1))
    assert report.error is not None and report.done == [] and len(client.writes) == 1
    diff = report.diff()
    assert [section["after_header"] for section in diff] == ["configmap/ns/slurm topology.conf", "node annotations"]
    assert diff[0]["before"] == "" and diff[1] == {"before": {}, "after": {}, "before_header": "node annotations",
                                                   "after_header": "node annotations"}


def test_an_unknown_part_is_a_bug_named_as_such():
    with pytest.raises(TypeError, match="not a desired state of _base/k8s_desired"):
        reconcile(cluster(), [{"kind": "Widget"}], WriteOptions())


# What code outside _writers/ may take from the Kubernetes writer files: the one writer, its options and report,
# and reads (the nodes and pods an orchestration lists to build its desired state, the served resources).
WRITERS = "ansible_collections.aifactory.topology.plugins.module_utils._writers"
OUTSIDE_USES = {"reconcile", "WriteOptions", "PartialWrite", "list_nodes", "check_desired_annotations",
                "ready_pod_nodes", "served_resources"}


def kubernetes_writer_uses(source):
    """The names ``source`` takes from a ``_writers/k8s*`` file: imported by name, or as ``<module>.<name>``."""
    tree = ast.parse(source)
    used, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(WRITERS + ".k8s"):
            used.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == WRITERS:
            modules.update(alias.asname or alias.name for alias in node.names if alias.name.startswith("k8s"))
    used.update(node.attr for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules)
    return used


def test_code_outside_the_writers_writes_kubernetes_only_through_the_one_writer():
    root = Path(__file__).resolve().parents[4]
    sources = [path for folder in ("plugins", "extensions") for path in sorted((root / folder).rglob("*.py"))
               if "_writers" not in path.parts]
    users = {path.relative_to(root).as_posix(): kubernetes_writer_uses(path.read_text(encoding="utf-8"))
             for path in sources}
    assert {path: sorted(used - OUTSIDE_USES) for path, used in users.items() if used - OUTSIDE_USES} == {}
    writing = sorted(path for path, used in users.items() if "reconcile" in used)
    assert [Path(path).stem for path in writing] == ["k8s_node_annotations", "k8s_node_labels",
                                                     "k8s_scheduler_topology", "nfd_topology", "slinky_topology"]


def test_the_check_sees_a_writer_function_called_outside_the_writers():
    source = (f"from {WRITERS} import k8s_nodes\nfrom {WRITERS}.k8s_configmap import prepare\n"
              "k8s_nodes.patch_nodes(client)\n")
    assert kubernetes_writer_uses(source) == {"prepare", "patch_nodes"}
