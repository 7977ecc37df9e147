"""Tests of the REAL Kubernetes test bed (tools/k8s_testbed.py), and proof that topology labels work.

What is proved here:

* the harness: kube-apiserver v1.36 answers with its stamped version; Nodes made from a topology
  model exist, Ready, untainted, with the allocatable we asked for; the NFD CRDs taken from the NFD
  Go module are Established and serve NodeFeature / NodeFeatureGroup objects (status included);
  a client certificate of a non-admin user gets 403 until RBAC allows it, and still 403 for what
  RBAC does not allow (the pattern of the modules' RBAC tests); a service-account bearer token
  authenticates; the command line starts, reports and stops only its own processes.
* the labels do their job (issue 4, deliverable 7): with ``fabric.topograph.run/tier-N`` labels
  set from a model as aifactory.topology.k8s_node_labels writes them (tier 0 = leaf switch ID,
  then its parents), the real kube-scheduler packs pods with preferred podAffinity on tier-0 into
  one leaf, and keeps a KAI-style gang (required podAffinity on tier-1, preferred on tier-0) inside
  one tier-1 domain, filling the first leaf before spilling into its sibling. The same pods on an
  identical pool without the labels spread out, so the assertions can fail.

Waits are conditions (a watch on the pod's ``spec.nodeName``), never sleeps; bound pods are deleted
with grace period 0 (no kubelet). Every test uses its own node pool (a unique label that its pods
select) and unique switch IDs, so tests and other suites sharing the session control plane do not
interact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest
from kubernetes.dynamic.exceptions import DynamicApiError

import k8s_testbed  # tools/ is on sys.path through conftest.py

from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology

pytestmark = pytest.mark.k8s

TOOL = Path(k8s_testbed.__file__)
POOL_LABEL = "testbed.aifactory.topology/pool"
TIER = "fabric.topograph.run/tier-{}"
BIND_TIMEOUT = 120.0  # bounds a hung scheduler on a loaded machine; binding is watched
# Small nodes for the scheduling tests: two pods fill one, and each 100m/64Mi pod moves the
# least-allocated score by 10 points, so without affinity the scheduler strictly prefers empty
# nodes (on large nodes the integer scores tie and placement would be random).
SMALL_NODE = {"cpu": "1", "memory": "1Gi", "pods": "2"}


# -- a small fabric model and its labels -------------------------------------------------------

def fabric_model(tag: str) -> Topology:
    """core -> 2 spines (tier 1) -> 2 leaves each (tier 0) -> 2 nodes each: 8 nodes."""
    topo = Topology()
    topo.add_switch(f"{tag}-core")
    for spine in (1, 2):
        topo.add_switch(f"{tag}-spine{spine}", parent=f"{tag}-core")
        for leaf in (1, 2):
            leaf_id = f"{tag}-leaf{spine}{leaf}"
            topo.add_switch(leaf_id, parent=f"{tag}-spine{spine}")
            for index in (1, 2):
                topo.add_node(f"{tag}-node{spine}{leaf}{index}", switch=leaf_id)
    return topo.validate()


def tier_labels(topo: Topology, node: str) -> dict:
    """The fabric labels k8s_node_labels writes (docs/kubernetes.md, node labels): raw switch IDs."""
    return {TIER.format(i): switch for i, switch in enumerate(topo.path(topo.nodes[node].switch))}


@pytest.fixture
def pool(k8s):
    """Create node pools (each with its own pool label) and delete their nodes after the test."""
    created = []

    def make(topo, labels=None, allocatable=None):
        name = f"pool-{uuid.uuid4().hex[:8]}"

        def node_labels(node):
            return {POOL_LABEL: name, **((labels or {}).get(node, {}))}

        created.extend(k8s.create_nodes(topo, labels=node_labels, allocatable=allocatable))
        return name

    yield make
    k8s.delete_nodes(created)


def pod_manifest(name, namespace, pool_name, group, affinity=None, node_name=None):
    spec = {
        "nodeSelector": {POOL_LABEL: pool_name},
        "containers": [{"name": "c", "image": "registry.invalid/never-pulled:0",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
        "terminationGracePeriodSeconds": 0,
    }
    if affinity:
        spec["affinity"] = affinity
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"group": group}}, "spec": spec}


def affinity_to_group(group, preferred_key=None, required_key=None):
    selector = {"matchLabels": {"group": group}}
    affinity = {}
    if preferred_key:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": 100, "podAffinityTerm": {"labelSelector": selector, "topologyKey": preferred_key}}]
    if required_key:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = [
            {"labelSelector": selector, "topologyKey": required_key}]
    return {"podAffinity": affinity}


def schedule_one_by_one(k8s, namespace, pool_name, group, count, affinity) -> list[str]:
    """Create pods one at a time, each after the previous is bound; returns their nodes in order."""
    nodes = []
    for index in range(count):
        name = f"{group}-{index}"
        k8s.kubectl.create(pod_manifest(name, namespace, pool_name, group, affinity))
        bound = k8s.kubectl.wait_for("Pod", name, lambda pod: pod["spec"].get("nodeName"),
                                     namespace=namespace, timeout=BIND_TIMEOUT)
        nodes.append(bound["spec"]["nodeName"])
    return nodes


def leaf_of(topo: Topology, node: str) -> str:
    return topo.nodes[node].switch


def spine_of(topo: Topology, node: str) -> str:
    return topo.path(topo.nodes[node].switch)[1]


# -- the harness -------------------------------------------------------------------------------

def test_api_server_answers_with_its_version(k8s):
    from kubernetes import client

    version = client.VersionApi(k8s.kubectl.api).get_code()
    assert version.git_version == k8s_testbed.K8S_VERSION
    assert k8s.server.startswith("https://127.0.0.1:")
    namespaces = {ns["metadata"]["name"] for ns in k8s.kubectl.list("Namespace")}
    assert {"default", "kube-system"} <= namespaces
    assert k8s.kubectl.can_i("patch", "nodes"), "the admin kubeconfig must be cluster-admin (system:masters)"


def test_nodes_from_a_model_exist_with_allocatable(k8s, pool):
    topo = fabric_model(f"t{uuid.uuid4().hex[:6]}")
    pool_name = pool(topo, allocatable={"cpu": "8", "memory": "64Gi", "pods": "4"})
    nodes = {n["metadata"]["name"]: n for n in k8s.kubectl.list("Node", label_selector=f"{POOL_LABEL}={pool_name}")}
    assert set(nodes) == set(topo.nodes)
    for name, node in nodes.items():
        assert node["status"]["allocatable"] == {"cpu": "8", "memory": "64Gi", "pods": "4"}, name
        assert node["status"]["capacity"] == node["status"]["allocatable"], name
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", name
        # TaintNodesByCondition is disabled: nothing would lift a not-ready taint without KCM.
        assert not node["spec"].get("taints"), f"{name} is tainted: {node['spec'].get('taints')}"
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == name
        # As a kubelet registers it: with an annotation (a JSON patch of /metadata/annotations/<key> needs the map).
        assert node["metadata"]["annotations"] == {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}


def test_nfd_crds_from_the_go_module_are_established_and_serve_objects(k8s, k8s_namespace):
    names = k8s.install_nfd_crds()
    assert set(names) == {"nodefeatures.nfd.k8s-sigs.io", "nodefeaturegroups.nfd.k8s-sigs.io",
                          "nodefeaturerules.nfd.k8s-sigs.io"}
    for name in names:
        crd = k8s.kubectl.get("CustomResourceDefinition", name, api_version="apiextensions.k8s.io/v1")
        assert k8s_testbed.crd_established(crd), name

    api = "nfd.k8s-sigs.io/v1alpha1"
    k8s.kubectl.create({
        "apiVersion": api, "kind": "NodeFeature",
        "metadata": {"name": "topograph-node-a", "namespace": k8s_namespace,
                     "labels": {"nfd.node.kubernetes.io/node-name": "node-a"}},
        "spec": {"features": {"attributes": {"topograph.network": {"elements": {"fabric-tier-0": "leaf-1"}}}}},
    })
    k8s.kubectl.create({
        "apiVersion": api, "kind": "NodeFeatureGroup",
        "metadata": {"name": "topograph-fabric-tier-0-leaf-1", "namespace": k8s_namespace},
        "spec": {"featureGroupRules": [{"name": "fabric-tier-0 equals leaf-1", "matchFeatures": [
            {"feature": "topograph.network",
             "matchExpressions": {"fabric-tier-0": {"op": "In", "value": ["leaf-1"]}}}]}]},
    })
    # status.nodes is nfd-master's: the real one writes it in tests/integration/test_k8s_nfd.py.
    feature = k8s.kubectl.get("NodeFeature", "topograph-node-a", namespace=k8s_namespace, api_version=api)
    assert feature["spec"]["features"]["attributes"]["topograph.network"]["elements"] == {"fabric-tier-0": "leaf-1"}
    # The schema is enforced (a real CRD, not a schemaless stand-in): featureGroupRules is required.
    with pytest.raises(DynamicApiError) as refused:
        k8s.kubectl.create({"apiVersion": api, "kind": "NodeFeatureGroup",
                            "metadata": {"name": "no-rules", "namespace": k8s_namespace}, "spec": {}})
    assert refused.value.status == 422, refused.value


def test_non_admin_certificate_gets_403_until_rbac_allows(k8s):
    tag = uuid.uuid4().hex[:8]
    user, group = f"alice-{tag}", f"aifactory:node-readers-{tag}"
    alice = k8s.kubectl_as(user, groups=[group])
    with pytest.raises(DynamicApiError) as denied:
        alice.list("Node")
    assert denied.value.status == 403, denied.value
    assert not alice.can_i("list", "nodes")

    role = f"node-reader-{tag}"
    k8s.kubectl.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                        "metadata": {"name": role},
                        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]})
    k8s.kubectl.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                        "metadata": {"name": role},
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]})
    try:
        # The binding reaches the authorizer through an informer: wait for it to take effect.
        k8s_testbed.wait_until(lambda: alice.can_i("list", "nodes"), what=f"RBAC allows {user} to list nodes")
        alice.list("Node")
        with pytest.raises(DynamicApiError) as still_denied:
            alice.patch("Node", "any-node", {"metadata": {"labels": {"x": "y"}}})
        assert still_denied.value.status == 403, still_denied.value
        assert not alice.can_i("patch", "nodes")
    finally:
        k8s.kubectl.delete("ClusterRoleBinding", role, api_version="rbac.authorization.k8s.io/v1")
        k8s.kubectl.delete("ClusterRole", role, api_version="rbac.authorization.k8s.io/v1")


def test_service_account_token_authenticates(k8s, k8s_namespace):
    from kubernetes import client

    token = k8s.service_account_token(k8s_namespace, "labeller")
    configuration = client.Configuration()
    configuration.host = k8s.server
    configuration.ssl_ca_cert = str(k8s.ca_file)
    configuration.api_key = {"authorization": f"Bearer {token}"}
    review = client.AuthenticationV1Api(client.ApiClient(configuration)).create_self_subject_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert review.status.user_info.username == f"system:serviceaccount:{k8s_namespace}:labeller"
    with pytest.raises(client.ApiException) as denied:
        client.CoreV1Api(client.ApiClient(configuration)).list_node()
    assert denied.value.status == 403


def test_command_line_starts_reports_and_stops_only_its_own_processes(k8s, tmp_path):
    run_dir = tmp_path / "run"

    def tool(*args):
        return subprocess.run([sys.executable, str(TOOL), *args, "--dir", str(run_dir)],
                              capture_output=True, text=True, check=False, env=os.environ.copy())

    try:
        started = tool("start")
        assert started.returncode == 0, started.stderr
        kubeconfig = Path(started.stdout.strip().splitlines()[-1])
        assert kubeconfig == run_dir / "admin.kubeconfig" and kubeconfig.is_file()
        state = tool("status")
        assert state.returncode == 0, state.stdout + state.stderr
        assert json.loads(state.stdout)["components"] == {"etcd": True, "kube-apiserver": True, "kube-scheduler": False}
        assert "Serving securely on 127.0.0.1:" in k8s_testbed.ControlPlane.load(run_dir).log()

        user_config = tool("kubeconfig", "bob", "--group", "team-b")
        assert user_config.returncode == 0, user_config.stderr
        bob = k8s_testbed.Kubectl(k8s.api_client(user_config.stdout.strip()))
        assert not bob.can_i("list", "nodes")
    finally:
        stopped = tool("stop")
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped kube-apiserver, etcd" in stopped.stderr
    after = tool("status")
    assert after.returncode == 1 and not json.loads(after.stdout)["running"]
    # The session's control plane (another run directory) is untouched.
    assert k8s_testbed.status(k8s.dir)["ready"]


# -- the labels do their job (deliverable 7) ----------------------------------------------------

def test_preferred_tier0_affinity_packs_pods_into_one_leaf(k8s_scheduler, k8s_namespace, pool):
    k8s = k8s_scheduler
    topo = fabric_model(f"t{uuid.uuid4().hex[:6]}")
    # Two pods per node: a leaf (two nodes) holds exactly the four pods of the group.
    labelled = pool(topo, labels={n: tier_labels(topo, n) for n in topo.nodes}, allocatable=SMALL_NODE)
    affinity = affinity_to_group("packed", preferred_key=TIER.format(0))
    nodes = schedule_one_by_one(k8s, k8s_namespace, labelled, "packed", 4, affinity)
    leaves = Counter(leaf_of(topo, n) for n in nodes)
    assert len(leaves) == 1, f"pods spread over leaves {dict(leaves)} (nodes {nodes})"
    # As bound: the scheduler read the leaf from the Node label, which is what we set.
    node = k8s.kubectl.get("Node", nodes[0])
    assert node["metadata"]["labels"][TIER.format(0)] == leaf_of(topo, nodes[0])

    # Control: the same pods on an identical pool WITHOUT the labels go to empty nodes first, so
    # four pods take four nodes, which no single leaf has.
    unlabelled_topo = fabric_model(f"t{uuid.uuid4().hex[:6]}")
    unlabelled = pool(unlabelled_topo, allocatable=SMALL_NODE)
    spread = schedule_one_by_one(k8s, k8s_namespace, unlabelled, "control", 4,
                                 affinity_to_group("control", preferred_key=TIER.format(0)))
    assert len(set(spread)) == 4 and len({leaf_of(unlabelled_topo, n) for n in spread}) > 1, f"without labels: {spread}"


def test_kai_style_gang_stays_in_one_tier1_domain_and_fills_a_leaf_first(k8s_scheduler, k8s_namespace, pool):
    k8s = k8s_scheduler
    topo = fabric_model(f"t{uuid.uuid4().hex[:6]}")
    labelled = pool(topo, labels={n: tier_labels(topo, n) for n in topo.nodes}, allocatable=SMALL_NODE)
    # KAI-style: a required tier-1 boundary and a preferred tier-0 (leaf) packing.
    affinity = affinity_to_group("gang", preferred_key=TIER.format(0), required_key=TIER.format(1))
    nodes = schedule_one_by_one(k8s, k8s_namespace, labelled, "gang", 6, affinity)

    first_four = Counter(leaf_of(topo, n) for n in nodes[:4])
    assert len(first_four) == 1, f"the first four pods spread over leaves {dict(first_four)}"
    spines = {spine_of(topo, n) for n in nodes}
    assert len(spines) == 1, f"the gang crossed the tier-1 boundary: {nodes}"
    # The first leaf is full (2 nodes x 2 pods): the last two pods go to the sibling leaf of the
    # same spine, never to the other spine's free nodes.
    leaves = Counter(leaf_of(topo, n) for n in nodes)
    assert sorted(leaves.values()) == [2, 4], dict(leaves)
