"""Helpers for the tests of the Kubernetes modules against the real API server (tests/integration/conftest.py).

Nodes are cluster-scoped and the control plane is shared by the whole session, so every test makes
its own nodes (names with a unique prefix, and a label ``aifactory-test=<id>`` that the modules'
``node_selector`` uses) and never sees another test's nodes.
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

import k8s_testbed  # tools/ is on sys.path (tests/conftest.py)
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from tests.unit.plugins.modules import module_runner

TEST_LABEL = "aifactory-test"
RBAC = Path(__file__).resolve().parents[2] / "docs" / "rbac"


def run_module(module, args, monkeypatch, check_mode=False, diff=False):
    """The unit tests' in-process module runner (result dict with ``failed`` and ``warnings``)."""
    return module_runner.run_module(module, args, check_mode=check_mode, diff=diff, monkeypatch=monkeypatch)


def new_id():
    return uuid.uuid4().hex[:8]


def client(kubeconfig, **kwargs):
    """Our own client (what the modules use), for reading state and for requests as a given user."""
    return _k8s.K8sClient.from_auth({"kubeconfig": str(kubeconfig)}, environ={}, **kwargs)


def gb200(prefix, racks=4, per_rack=18, racks_per_leaf=2, leaf_of=None):
    """Inventory-provider params: racks of ``per_rack`` nodes, two racks per leaf, leaves under one spine."""
    leaf_of = leaf_of or {}
    leaves = sorted({leaf_of.get(r, f"{prefix}-leaf{(r - 1) // racks_per_leaf + 1:02d}") for r in range(1, racks + 1)})
    return {
        "switches": dict({f"{prefix}-core": None, f"{prefix}-spine01": f"{prefix}-core"},
                         **{leaf: f"{prefix}-spine01" for leaf in leaves}),
        "domains": [{"name": f"{prefix}-rack{r:02d}", "nodes": f"{prefix}-r{r:02d}-n[01-{per_rack:02d}]",
                     "switch": leaf_of.get(r, f"{prefix}-leaf{(r - 1) // racks_per_leaf + 1:02d}")}
                    for r in range(1, racks + 1)],
    }


def playbook_inventory(directory, k8s, prefix, test_id, **variables):
    """An inventory for playbooks/k8s.yml: localhost in k8s_topology, a 2 x 3 GB200 topology of ``prefix``, the
    test bed's kubeconfig, the nodes of ``test_id`` only, plus ``variables``; returns its directory."""
    inventory = Path(directory) / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"k8s_topology": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}}}))
    (inventory / "group_vars" / "all.yml").write_text(yaml.safe_dump({
        "topology_provider": {"name": "inventory", "params": gb200(prefix, racks=2, per_rack=3)},
        "k8s_topology_auth": {"kubeconfig": str(k8s.kubeconfig)},
        "k8s_topology_node_selector": {TEST_LABEL: test_id},
        **variables,
    }))
    return inventory


@contextlib.contextmanager
def fresh_namespace(plane, prefix="test"):
    """A new namespace; after the block its pods are deleted with grace period 0 (no kubelet confirms)
    and the namespace itself (it stays Terminating without kube-controller-manager, harmlessly)."""
    name = f"{prefix}-{new_id()}"
    plane.kubectl.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield name
    finally:
        for pod in plane.kubectl.list("Pod", namespace=name):
            plane.kubectl.delete("Pod", pod["metadata"]["name"], namespace=name, grace_period=0)
        plane.kubectl.delete("Namespace", name, grace_period=None)


def node_names(prefix, racks, per_rack=18):
    return [f"{prefix}-r{r:02d}-n{n:02d}" for r in range(1, racks + 1) for n in range(1, per_rack + 1)]


def make_nodes(plane, names, test_id, labels=None):
    extra = labels or {}
    plane.create_nodes(names, labels=lambda name: dict({TEST_LABEL: test_id}, **extra.get(name, {})))
    return names


def node_state(api, test_id):
    """name -> (resourceVersion, labels, annotations) of this test's nodes, from one list."""
    return {item["metadata"]["name"]: (item["metadata"]["resourceVersion"], item["metadata"].get("labels") or {},
                                       item["metadata"].get("annotations") or {})
            for item in api.list(_k8s.node_path(), f"{TEST_LABEL}={test_id}")}


def written(before, after):
    """Names whose resourceVersion changed: what the API server stored a write for."""
    return sorted(name for name in after if name in before and before[name][0] != after[name][0])


def topology_labels(labels):
    return {k: v for k, v in labels.items() if k.startswith(("fabric.topograph.run/", "accelerator.topograph.run/"))}


class RequestLog:
    """Wraps a real client and records (method, path, status) of every request it forwards."""

    def __init__(self, real):
        self.real = real
        self.calls = []

    def request(self, method, path, query=None, body=None, content_type=None, accept="application/json"):
        try:
            result = self.real.request(method, path, query, body, content_type, accept)
        except _k8s.K8sError as exc:
            self.calls.append((method, path, exc.status))
            raise
        self.calls.append((method, path, 200))
        return result

    def list(self, path, label_selector=None, field_selector=None, metadata_only=False):
        self.calls.append(("LIST", path, 200))
        return self.real.list(path, label_selector, field_selector, metadata_only)


def apply_rbac(k8s, manifest, user, namespace, suffix, configmap=None):
    """Apply docs/rbac/<manifest> for ``user``; returns the user's kubeconfig once RBAC allows it."""
    rules = []
    manifest_list = yaml.safe_load((RBAC / manifest).read_text())
    assert manifest_list["kind"] == "List"  # one YAML document: `kubectl apply -f` takes it as is
    for doc in manifest_list["items"]:
        doc["metadata"]["name"] += f"-{suffix}"
        if "namespace" in doc["metadata"]:
            doc["metadata"]["namespace"] = namespace
        if doc["kind"].endswith("Binding"):
            doc["roleRef"]["name"] += f"-{suffix}"
            assert [s["kind"] for s in doc["subjects"]] == ["ServiceAccount"]
            doc["subjects"] = [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]
        for rule in doc.get("rules", []):
            if configmap and rule.get("resourceNames"):
                rule["resourceNames"] = [configmap]
            rules.append((doc["metadata"].get("namespace"), rule))
        k8s.kubectl.apply(doc)
    kubeconfig = k8s.user_kubeconfig(user)
    as_user = k8s.kubectl_as(user)
    for rule_namespace, rule in rules:  # bindings reach the authorizer's cache asynchronously
        k8s_testbed.wait_until(lambda r=rule, n=rule_namespace: as_user.can_i(
            r["verbs"][-1], r["resources"][-1], namespace=n, group=r["apiGroups"][0],
            name=(r.get("resourceNames") or [None])[0]), timeout=60, what=f"RBAC of {manifest} for {user}")
    return kubeconfig
