"""Kueue v0.19 Topology Aware Scheduling consumes the labels k8s_node_labels writes, on the REAL test bed.

One Kueue controller manager (tools/k8s_testbed.py ``start_kueue``: built from the Go module proxy,
its CRDs and webhooks from the same module, certificates from the test bed's CA) runs against the
session's kube-apiserver for the whole module. Each test has its own pool: fake Nodes with 4 GPUs
each (Kueue admits against Node allocatable; no kubelet, no pod runs), labelled by the real
``k8s_node_labels`` module, its Topology and ResourceFlavor made by the ``k8s_scheduler_topology``
module, and its own ClusterQueue and LocalQueue. A workload is a batch/v1 Job with
``kueue.x-k8s.io/queue-name``: Kueue's webhook suspends it, its job controller makes the Workload,
its scheduler admits it and writes the ``topologyAssignment`` read here. Every wait polls the API
with a deadline.
"""

from __future__ import annotations

import dataclasses
import os

import k8s_testbed  # tools/ is on sys.path (tests/conftest.py)
import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.modules import k8s_node_labels, k8s_scheduler_topology
from tests.integration.k8s_support import TEST_LABEL, gb200, new_id, node_names, run_module
from tests.nvidia_smi_shapes import UNHEALTHY_TRAY

pytestmark = pytest.mark.k8s
GPU = "nvidia.com/gpu"
HOSTNAME = "kubernetes.io/hostname"
TIER0 = f"{_labels.FABRIC_PREFIX}0"
DOMAIN = _labels.ACCELERATOR_LABEL
KUEUE = "kueue.x-k8s.io/v1beta2"
WAIT = 120.0  # bounds each wait on a loaded 2-core machine; conditions are polled


@pytest.fixture(scope="module")
def kueue(k8s):
    # The k8s fixture has the test bed (Kueue is built with it); Kueue itself also needs root.
    if os.geteuid() != 0:
        pytest.skip("REAL KUEUE TESTS SKIPPED: Kueue is started in a private mount namespace "
                    "(its metrics certificate path is fixed): needs root")
    controller = k8s_testbed.start_kueue(k8s)
    yield controller
    controller.stop()


@dataclasses.dataclass
class Pool:
    """One test's nodes and queues; ``labels(...)`` reruns k8s_node_labels on them."""

    k8s: object
    monkeypatch: object
    test_id: str
    prefix: str
    racks: int
    per_rack: int
    namespace: str
    queue: str

    @property
    def nodes(self):
        return node_names(self.prefix, self.racks, self.per_rack)

    def labels(self, leaf_of=None, accelerator=None, **extra):
        params = gb200(self.prefix, racks=self.racks, per_rack=self.per_rack, leaf_of=leaf_of)
        if accelerator:
            params["accelerator"] = accelerator
        result = run_module(k8s_node_labels, dict({
            "provider": {"name": "inventory", "params": params}, "kubeconfig": str(self.k8s.kubeconfig),
            "node_selector": {TEST_LABEL: self.test_id}}, **extra), self.monkeypatch)
        assert not result["failed"], result.get("msg")
        return result

    def scheduler_topology(self, name):
        """Kueue's Topology and ResourceFlavor for these nodes, from the k8s_scheduler_topology module."""
        params = gb200(self.prefix, racks=self.racks, per_rack=self.per_rack)
        result = run_module(k8s_scheduler_topology, {
            "provider": {"name": "inventory", "params": params}, "kubeconfig": str(self.k8s.kubeconfig),
            "node_selector": {TEST_LABEL: self.test_id}, "consumers": ["kueue"], "name": name}, self.monkeypatch)
        assert not result["failed"], result.get("msg")
        assert result["levels"] == [f"{_labels.FABRIC_PREFIX}{tier}" for tier in (2, 1, 0)] + [DOMAIN, HOSTNAME]
        return result

    def node_labels(self):
        return {node["metadata"]["name"]: node["metadata"]["labels"]
                for node in self.k8s.kubectl.list("Node", label_selector=f"{TEST_LABEL}={self.test_id}")}

    def submit(self, name, pods, annotation):
        """A Job of ``pods`` pods of 4 GPUs (one whole node each) with a TAS annotation ``{key: level}``."""
        self.k8s.kubectl.create({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": self.namespace, "labels": {"kueue.x-k8s.io/queue-name": self.queue}},
            "spec": {"parallelism": pods, "completions": pods, "template": {
                "metadata": {"annotations": annotation},
                "spec": {"restartPolicy": "Never", "containers": [{
                    "name": "main", "image": "registry.invalid/train:1",
                    "resources": {"requests": {GPU: "4"}, "limits": {GPU: "4"}}}]}}},
        })
        job = self.k8s.kubectl.get("Job", name, namespace=self.namespace, api_version="batch/v1")
        assert job["spec"]["suspend"] is True  # Kueue's webhook holds it until admission
        return job["metadata"]["uid"]

    def workload(self, job_uid, predicate, what):
        """The Workload Kueue made for the Job, once ``predicate(workload)`` holds (polled, bounded)."""
        def find():
            for workload in self.k8s.kubectl.list("Workload", namespace=self.namespace, api_version=KUEUE,
                                                  label_selector=f"kueue.x-k8s.io/job-uid={job_uid}"):
                if predicate(workload):
                    return workload
            return None
        return k8s_testbed.wait_until(find, timeout=WAIT, what=what)


def condition(workload, kind):
    return next((c for c in (workload.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


def admitted(workload):
    found = condition(workload, "Admitted")
    return found is not None and found["status"] == "True"


def inadmissible(workload):
    """Kueue tried and found no room: QuotaReserved is False with the scheduler's reason."""
    found = condition(workload, "QuotaReserved")
    return found is not None and found["status"] == "False" and found.get("message")


def placed_hosts(workload):
    """host -> pod count, decoded from the (compressed) topologyAssignment of the only pod set."""
    [assignment] = workload["status"]["admission"]["podSetAssignments"]
    topology = assignment["topologyAssignment"]
    hosts = {}
    for piece in topology["slices"]:
        count = piece["domainCount"]
        columns = []
        for values in piece["valuesPerLevel"]:
            if values.get("universal") is not None:
                columns.append([values["universal"]] * count)
            else:
                individual = values["individual"]
                columns.append([(individual.get("prefix") or "") + root + (individual.get("suffix") or "")
                                for root in individual["roots"]])
        pods = piece["podCounts"]
        counts = [pods["universal"]] * count if pods.get("universal") is not None else pods["individual"]
        host_column = columns[topology["levels"].index(HOSTNAME)]
        for host, pod_count in zip(host_column, counts):
            hosts[host] = hosts.get(host, 0) + pod_count
    return hosts


@pytest.fixture
def pool(k8s, kueue, k8s_namespace, monkeypatch):
    """``pool(racks, per_rack=4)``: nodes of 4 GPUs labelled by k8s_node_labels, Kueue objects for them."""
    del kueue  # the controller runs for the module

    def make(racks, per_rack=4, quota=1000):
        test_id = new_id()
        made = Pool(k8s, monkeypatch, test_id, f"q{test_id}", racks, per_rack, k8s_namespace, f"lq-{test_id}")
        k8s.create_nodes(made.nodes, labels=lambda name: {TEST_LABEL: test_id}, allocatable={GPU: "4"})
        made.labels()
        name = f"tas-{test_id}"
        made.scheduler_topology(name)
        k8s.kubectl.create({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                {"name": name, "resources": [{"name": GPU, "nominalQuota": quota}]}]}]}})
        k8s.kubectl.create({"apiVersion": KUEUE, "kind": "LocalQueue",
                            "metadata": {"name": made.queue, "namespace": k8s_namespace},
                            "spec": {"clusterQueue": name}})
        k8s.kubectl.wait_for("ClusterQueue", name, lambda cq: condition(cq, "Active") and
                             condition(cq, "Active")["status"] == "True", api_version=KUEUE, timeout=WAIT)
        return made
    return make


def test_required_domain_places_four_pods_in_one_nvlink_domain_and_five_stay_pending(pool):
    """Three racks of 4 nodes (one pod per node)."""
    racks = pool(racks=3)
    labels = racks.node_labels()
    four = racks.workload(racks.submit("four", 4, {"kueue.x-k8s.io/podset-required-topology": DOMAIN}),
                          admitted, "the 4-pod workload admitted")
    hosts = placed_hosts(four)
    assert sorted(hosts.values()) == [1, 1, 1, 1]
    assert len({labels[host][DOMAIN] for host in hosts}) == 1  # one NVLink domain (rack) holds all four

    # Within quota and within the pool's free capacity (8 free nodes in two racks), but no domain has 5.
    five = racks.workload(racks.submit("five", 5, {"kueue.x-k8s.io/podset-required-topology": DOMAIN}),
                          inadmissible, "the 5-pod workload found inadmissible")
    assert not admitted(five)
    assert "allows to fit only 4 out of 5 pod(s)" in condition(five, "QuotaReserved")["message"]  # one domain's worth
    # The requirement, not the capacity, holds it: preferred instead of required, five fit in two domains.
    spread = racks.workload(racks.submit("five-preferred", 5, {"kueue.x-k8s.io/podset-preferred-topology": DOMAIN}),
                            admitted, "the 5-pod workload with a preferred domain admitted")
    assert len({labels[host][DOMAIN] for host in placed_hosts(spread)}) == 2


def test_preferred_tier0_packs_a_gang_larger_than_a_rack_under_one_leaf(pool):
    racks = pool(racks=4)  # two leaves of two racks of 4 nodes
    labels = racks.node_labels()
    six = racks.workload(racks.submit("six", 6, {"kueue.x-k8s.io/podset-preferred-topology": TIER0}),
                         admitted, "the 6-pod workload admitted")
    hosts = placed_hosts(six)
    assert sum(hosts.values()) == 6
    assert len({labels[host][TIER0] for host in hosts}) == 1  # one leaf switch
    assert len({labels[host][DOMAIN] for host in hosts}) == 2  # more than a rack: the leaf level did the packing


def test_after_a_rack_is_rewired_and_the_labels_follow_the_next_admission_uses_the_new_map(pool):
    racks = pool(racks=4)  # leaf01: racks 1-2, leaf02: racks 3-4 (8 nodes each)
    twelve = racks.submit("twelve", 12, {"kueue.x-k8s.io/podset-required-topology": TIER0})
    pending = racks.workload(twelve, inadmissible, "the 12-pod workload found inadmissible (no leaf has 12 nodes)")
    assert not admitted(pending)
    assert "allows to fit only 8 out of 12 pod(s)" in condition(pending, "QuotaReserved")["message"]

    rewired = racks.labels(leaf_of={3: f"{racks.prefix}-leaf01"})  # rack 3 moves under leaf01
    assert len(rewired["changed_nodes"]) == 4
    labels = racks.node_labels()
    admitted_now = racks.workload(twelve, admitted, "the 12-pod workload admitted after the rewiring")
    hosts = placed_hosts(admitted_now)
    rack_of = {node: node.rsplit("-n", 1)[0].rsplit("-r", 1)[1] for node in racks.nodes}
    assert sorted({rack_of[host] for host in hosts}) == ["01", "02", "03"]
    assert {labels[host][TIER0] for host in hosts} == {f"{racks.prefix}-leaf01"}


def test_a_node_the_labels_module_quarantined_is_not_used(pool):
    racks = pool(racks=1)  # one NVLink domain of 4 nodes
    sick = racks.nodes[0]
    result = racks.labels(accelerator={"source": "nvidia_smi", "nvidia_smi": {sick: UNHEALTHY_TRAY}}, max_node_loss=50)
    assert result["changed_nodes"] == [sick] and result["quarantined"][0]["node"] == sick
    assert DOMAIN not in racks.node_labels()[sick]  # still selected by the flavor, but without its level labels

    four = racks.workload(racks.submit("four", 4, {"kueue.x-k8s.io/podset-required-topology": DOMAIN}),
                          inadmissible, "the 4-pod workload found inadmissible (3 usable nodes)")
    assert not admitted(four)
    assert "allows to fit only 3 out of 4 pod(s)" in condition(four, "QuotaReserved")["message"]
    three = racks.workload(racks.submit("three", 3, {"kueue.x-k8s.io/podset-required-topology": DOMAIN}),
                           admitted, "the 3-pod workload admitted")
    assert sorted(placed_hosts(three)) == sorted(racks.nodes[1:])
