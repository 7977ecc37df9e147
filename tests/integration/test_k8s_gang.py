"""Kubernetes v1.36 topology-aware gang scheduling (KEP-4671 gang, KEP-5732 topology) on our labels, for REAL.

A control plane of its own (the alpha gates must not change the session's plane): kube-apiserver
and the test bed's kube-scheduler with ``GenericWorkload``, ``GangScheduling`` and
``TopologyAwareWorkloadScheduling`` on, and ``scheduling.k8s.io/v1alpha2`` served. A standalone
PodGroup (gang policy, ``minCount``; one topology constraint on a label key) and its pods
(``spec.schedulingGroup.podGroupName``) are created; the scheduler binds the whole gang in one
domain of that label or none of it. Nodes are fake (4 GPUs each, no kubelet) and labelled by the
real k8s_node_labels module. Waits poll the API with a deadline.
"""

from __future__ import annotations

import k8s_testbed  # tools/ is on sys.path (tests/conftest.py)
import pytest

from ansible_collections.aifactory.topology.plugins.module_utils import _labels
from ansible_collections.aifactory.topology.plugins.modules import k8s_node_labels
from tests.integration.k8s_support import TEST_LABEL, fresh_namespace, gb200, new_id, node_names, run_module

pytestmark = pytest.mark.k8s
GPU = "nvidia.com/gpu"
DOMAIN = _labels.ACCELERATOR_LABEL
SCHEDULING = "scheduling.k8s.io/v1alpha2"
GATES = "--feature-gates=GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
WAIT = 120.0


@pytest.fixture(scope="module")
def gang_plane():
    reason = k8s_testbed.unavailable_reason()
    if reason:
        pytest.skip(f"REAL KUBERNETES TESTS SKIPPED: {reason}")
    with k8s_testbed.control_plane(scheduler=True, apiserver_args=[GATES, f"--runtime-config={SCHEDULING}=true"],
                                   scheduler_args=[GATES]) as plane:
        yield plane


@pytest.fixture
def namespace(gang_plane):
    with fresh_namespace(gang_plane, "gang") as name:
        yield name


def labelled_racks(plane, monkeypatch, racks, per_rack=4):
    test_id = new_id()
    prefix = f"g{test_id}"
    names = node_names(prefix, racks, per_rack)
    plane.create_nodes(names, labels=lambda name: {TEST_LABEL: test_id}, allocatable={GPU: "4"})
    result = run_module(k8s_node_labels, {
        "provider": {"name": "inventory", "params": gb200(prefix, racks=racks, per_rack=per_rack)},
        "kubeconfig": str(plane.kubeconfig), "node_selector": {TEST_LABEL: test_id}}, monkeypatch)
    assert not result["failed"], result.get("msg")
    return {node["metadata"]["name"]: node["metadata"]["labels"]
            for node in plane.kubectl.list("Node", label_selector=f"{TEST_LABEL}={test_id}")}


def submit_gang(plane, namespace, name, pods, topology_key=None):
    """A PodGroup (gang of ``pods``, all in one domain of ``topology_key`` if given) and its pods of 4 GPUs each."""
    spec = {"schedulingPolicy": {"gang": {"minCount": pods}}}
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    plane.kubectl.create({"apiVersion": SCHEDULING, "kind": "PodGroup",
                          "metadata": {"name": name, "namespace": namespace}, "spec": spec})
    for index in range(pods):
        plane.kubectl.create({"apiVersion": "v1", "kind": "Pod",
                              "metadata": {"name": f"{name}-{index}", "namespace": namespace},
                              "spec": {"schedulingGroup": {"podGroupName": name},
                                       "containers": [{"name": "main", "image": "registry.invalid/train:1",
                                                       "resources": {"requests": {GPU: "4"}, "limits": {GPU: "4"}}}]}})
    return [f"{name}-{index}" for index in range(pods)]


def pods_of(plane, namespace, names):
    return [plane.kubectl.get("Pod", name, namespace=namespace) for name in names]


def group_condition(group):
    return next((c for c in (group.get("status") or {}).get("conditions") or [] if c["type"] == "PodGroupScheduled"),
                None)


def group_scheduled(group):
    found = group_condition(group)
    return found and found["status"]


def unschedulable(pod):
    return any(c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable"
               for c in (pod.get("status") or {}).get("conditions") or [])


def wait_all(plane, namespace, names, predicate, what):
    """The pods ``names`` once ``predicate`` holds for every one of them (polled, bounded)."""
    def check():
        pods = pods_of(plane, namespace, names)
        return pods if all(predicate(pod) for pod in pods) else None
    return k8s_testbed.wait_until(check, timeout=WAIT, what=what)


def wait_bound(plane, namespace, names):
    return wait_all(plane, namespace, names, lambda pod: pod["spec"].get("nodeName"),
                    f"all {len(names)} pods of the gang bound")


def test_a_gang_constrained_to_the_domain_label_is_bound_in_one_nvlink_domain(gang_plane, namespace, monkeypatch):
    labels = labelled_racks(gang_plane, monkeypatch, racks=2)
    names = submit_gang(gang_plane, namespace, "four", 4, DOMAIN)
    nodes = [pod["spec"]["nodeName"] for pod in wait_bound(gang_plane, namespace, names)]
    assert len(set(nodes)) == 4  # one pod per node: each takes a node's 4 GPUs
    assert len({labels[node][DOMAIN] for node in nodes}) == 1
    gang_plane.kubectl.wait_for("PodGroup", "four", lambda g: group_scheduled(g) == "True",
                                namespace=namespace, api_version=SCHEDULING, timeout=WAIT)


def test_a_gang_no_domain_can_hold_stays_pending_whole(gang_plane, namespace, monkeypatch):
    labelled_racks(gang_plane, monkeypatch, racks=2)  # 8 free nodes, but 4 per domain
    names = submit_gang(gang_plane, namespace, "five", 5, DOMAIN)
    group = gang_plane.kubectl.wait_for("PodGroup", "five", lambda g: group_scheduled(g) == "False",
                                        namespace=namespace, api_version=SCHEDULING, timeout=WAIT)
    # The topology plugin made one candidate placement per domain value and none holds five.
    assert "placements are available" in group_condition(group)["message"]
    pending = wait_all(gang_plane, namespace, names, unschedulable, "all five pods of the gang unschedulable")
    assert [pod["spec"].get("nodeName") for pod in pending] == [None] * 5
    # The constraint, not the capacity, holds them: the same gang without it fits in the free nodes.
    unconstrained = wait_bound(gang_plane, namespace, submit_gang(gang_plane, namespace, "five-anywhere", 5))
    assert len({pod["spec"]["nodeName"] for pod in unconstrained}) == 5
