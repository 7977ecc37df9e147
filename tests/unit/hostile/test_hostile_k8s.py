"""The Kubernetes writers against input the API server must refuse, and a server that drops the connection.

What the server would refuse (a key or value outside Kubernetes' rules, a name that can never be a
node's, a line break in a one-line value, annotations over 256 KiB, ConfigMap data over 1 MiB, a level
key twice) is refused before any request, or, where it depends on what the cluster holds, after the
reads and before the first write, naming the node. A scheduler Topology or flavor that is another
team's, or that is being deleted, is never written; a recreate that fails after its delete says the
object is gone. A connection closed or reset is a connection problem, never
a TLS verification failure. The rules against the real kube-apiserver: tests/integration/test_k8s_validation.py.
"""

from __future__ import annotations

import socket
import ssl
import threading

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover
from ansible_collections.aifactory.topology.plugins.module_utils._writers import k8s as k8s_writer
from ansible_collections.aifactory.topology.plugins.module_utils._base.k8s_desired import Kind
from ansible_collections.aifactory.topology.plugins.module_utils._engines import scheduler_topology as scheduler_engine
from ansible_collections.aifactory.topology.plugins.modules import (
    k8s_node_annotations,
    k8s_node_labels,
    k8s_scheduler_topology,
    nfd_topology,
    slinky_topology,
)
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.k8s_node_annotations import reconcile as reconcile_broker_annotations
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.k8s_scheduler_topology import reconcile as reconcile_scheduler
from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels, nfd
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.k8s_node_labels import reconcile as reconcile_labels
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.nfd_topology import reconcile as reconcile_nfd
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.slinky_topology import reconcile as reconcile_slinky

from tests.tls_certs import self_signed, server_context

from ..conftest_paths import MODELS
from tests.unit.helpers import ServedNodes
from ..plugins.modules.module_runner import run_module
from tests.nvidia_smi_shapes import UNHEALTHY_TRAY

LIMIT = _labels.MAX_ANNOTATIONS_BYTES
LINE_BREAKS = ["\n", "\r", "\x00", "\x1b", "\x7f", "\x85", "\u2028", "\u2029"]
MODEL = {"format": "aifactory.topology/v1", "switches": {"leaf1": None},
         "nodes": [{"nodes": "n[1-2]", "switch": "leaf1"}]}


# -- the rules -------------------------------------------------------------------------------

@given(st.text(max_size=70), st.sampled_from(LINE_BREAKS))
@example("rack1", "\n")  # Python's "$" matched before a trailing newline: "rack1\n" passed as a label value
@settings(max_examples=300, deadline=None)
def test_no_key_value_or_name_with_a_line_break_or_control_character_is_valid(text, control):
    for value in (text + control, control + text, text[:1] + control + text[1:]):
        assert not _labels.is_valid_label_value(value)
        assert _labels.qualified_name_problem(value) is not None
        assert _labels.qualified_name_problem("example.com/" + value) is not None
        assert _labels.dns_subdomain_problem(value) is not None
        assert _labels.one_line_problem(value) is not None
        with pytest.raises(TopologyError):
            _labels.check_object_name(value, "namespace", dns_label=True)
        with pytest.raises(TopologyError):
            _labels.check_configmap_key(value, "configmap_key")


SUBDOMAIN = r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?){0,3}"


@given(st.from_regex(SUBDOMAIN, fullmatch=True))
@settings(max_examples=200, deadline=None)
def test_an_rfc1123_subdomain_is_a_node_name_and_upper_case_or_underscores_are_not(name):
    assert _labels.dns_subdomain_problem(name) is None
    assert (_labels.dns_subdomain_problem(name.upper()) is None) == (name.upper() == name)
    assert _labels.dns_subdomain_problem(name + "_x") is not None
    assert _labels.dns_subdomain_problem(name + "-") is not None


@pytest.mark.parametrize("key, valid", [
    ("example.com/name", True), ("name", True), ("Example.COM/name", True), ("a" * 253 + "/b", True),
    ("a" * 254 + "/b", False), ("x/" + "a" * 64, False), ("/name", False), ("a/b/c", False), ("a b", False),
])
def test_annotation_keys_follow_the_label_key_rule_in_lower_case_as_the_server_checks(key, valid):
    try:
        _labels.check_annotations({key: "v"}, "node n1")
    except TopologyError as exc:
        assert not valid, exc
        assert str(exc).startswith("node n1: ")
    else:
        assert valid


@given(st.integers(min_value=0, max_value=LIMIT + 64), st.sampled_from(["", "é", "\u4e2d"]))
@settings(max_examples=100, deadline=None)
def test_the_annotation_total_counts_utf8_bytes_of_keys_and_values(length, char):
    key = "example.com/big"
    value = char * (length // max(len(char.encode()), 1)) if char else "v" * length
    size = len(key.encode()) + len(value.encode())
    assert _labels.annotations_size({key: value}) == size
    try:
        _labels.check_annotations({key: value}, "node n1")
    except TopologyError as exc:
        assert size > LIMIT and f"the annotations would total {size} bytes" in str(exc)
    else:
        assert size <= LIMIT


# -- modules: refused before any request -------------------------------------------------------

@pytest.fixture
def run(monkeypatch):
    """A module run against a closed port: reaching the network would fail differently from what is asserted."""
    for name in ("K8S_AUTH_KUBECONFIG", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    def runner(module, args):
        args = dict({"host": f"https://127.0.0.1:{port}", "api_key": "token", "request_timeout": 5}, **args)
        result = run_module(module, args, monkeypatch=monkeypatch)
        assert result["failed"] and "cannot reach the API server" not in result["msg"], result["msg"]
        return result["msg"]
    return runner


def facts(hostname="gpu1", domain=None):
    return {"hostname": hostname, "nvlink": {"domain": domain} if domain else {}}


@pytest.mark.parametrize("args, words", [
    ({"node_facts": {"Node_1": facts(), "gpu2": facts("gpu2")}},
     "node_facts: 1 names can never be Kubernetes node names (lower-case RFC 1123 subdomains of at most 253 "
     "characters): 'Node_1'"),
    ({"node_facts": {"gpu1": facts("x" * (300 << 10))}},
     "node_facts.gpu1: the annotations would total 307"),
    ({"node_facts": {"gpu1": facts("gpu1\nevil")}}, "node_facts.gpu1: annotation topograph.run/instance holds the "
                                                    "control character U+000A"),
    ({"node_facts": {"gpu1": facts(domain="uuid.1\r")}}, "annotation topograph.run/cluster-id holds the control"),
    ({"node_facts": {"gpu1": facts()}, "region": "local\n"}, "region holds the control character U+000A"),
])
def test_k8s_node_annotations_refuses_before_any_request(run, args, words):
    assert words in run(k8s_node_annotations, args)


@pytest.mark.parametrize("args, words", [
    ({"model": dict(MODEL, nodes=[{"nodes": "GPU[1-2]", "switch": "leaf1"}])},
     "every node was quarantined (2), so nothing is left to map: GPU1 (node name 'GPU1' can never be a Kubernetes "
     "node name: it is not lower-case letters"),
    ({"model": dict(MODEL, switches={}, nodes=[{"nodes": "n1"}]), "no_topology_value": "none\n"},
     "no_topology_value: 'none\\n' is not a valid Kubernetes label value"),
    ({"model": MODEL, "node_selector": {"team": "a\n"}}, "node_selector['team']"),
    ({"model": MODEL, "accelerator_label": "example.com/domain\n"}, "is not a valid Kubernetes label key"),
    ({"model": MODEL, "fabric_labels": ["a/b/c"]}, "fabric_labels[0]: 'a/b/c' is not a valid Kubernetes label key"),
])
def test_k8s_node_labels_refuses_before_any_request(run, args, words):
    assert words in run(k8s_node_labels, args)


@pytest.mark.parametrize("args, words", [
    ({"namespace": "NFD"}, "namespace: 'NFD' is not at most 63 lower-case letters"),
    ({"namespace": "nfd\n"}, "namespace: 'nfd\\n' is not at most 63"),
    ({"namespace": "n" * 64}, "is not at most 63"),
    ({"namespace": "nfd", "model": dict(MODEL, nodes=[{"nodes": "Gpu1", "switch": "leaf1"}])},
     "every node was quarantined (1), so nothing is left to map: Gpu1 (node name 'Gpu1' can never be"),
])
def test_nfd_topology_refuses_before_any_request(run, args, words):
    assert words in run(nfd_topology, dict({"model": MODEL}, **args))


@pytest.mark.parametrize("args, words", [
    ({"namespace": "Slurm"}, "namespace: 'Slurm' is not at most 63"),
    ({"configmap_name": "slurm config"}, "configmap_name: 'slurm config' is not lower-case letters"),
    ({"configmap_name": "c" * 254}, "configmap_name: 'cccc"),
    ({"configmap_key": "../topology.conf"}, "configmap_key: '../topology.conf' is not a valid ConfigMap key"),
    ({"configmap_key": "topology.conf\n"}, "is not a valid ConfigMap key"),
    ({"use_dynamic_nodes": True, "pod_selector": {"app": "slurmd"}, "slurm_node_name_label": "slurm node"},
     "slurm_node_name_label: 'slurm node' is not a valid Kubernetes label key"),
])
def test_slinky_topology_refuses_before_any_request(run, args, words):
    base = {"model": MODEL, "namespace": "slurm", "configmap_name": "slurm", "plugin": "topology/tree"}
    assert words in run(slinky_topology, dict(base, **args))


# -- writers: refused after the reads, before the first write ------------------------------------

class RecordingClient:
    """Lists the given nodes (and answers a ConfigMap GET); records every request; writes succeed."""

    def __init__(self, annotations_by_node, configmap=None):
        self.nodes = {name: {"metadata": {"name": name, "resourceVersion": "1", "annotations": dict(annotations)}}
                      for name, annotations in annotations_by_node.items()}
        self.configmap = configmap
        self.requests = []

    def list(self, path, label_selector=None, metadata_only=False):
        self.requests.append(("LIST", path))
        return list(self.nodes.values()) if path == _k8s.node_path() else []

    def request(self, method, path, query=None, body=None, content_type=None):
        self.requests.append((method, path))
        if method == "GET" and "/configmaps/" in path:
            if self.configmap is None:
                raise _k8s.K8sError(f"GET {path}: HTTP 404 Not Found", 404)
            return self.configmap
        return body

    def writes(self):
        return [request for request in self.requests if request[0] not in ("LIST", "GET")]


@given(st.lists(st.integers(min_value=0, max_value=LIMIT), min_size=1, max_size=4), st.integers(1, 64 << 10))
@settings(max_examples=100, deadline=None)
def test_annotations_are_written_only_when_every_node_stays_within_the_total(others, hostname_length):
    existing = {f"gpu{i}": {"example.com/other": "o" * size} for i, size in enumerate(others)}
    desired = {name: {_labels.INSTANCE_ANNOTATION: "h" * hostname_length, _labels.REGION_ANNOTATION: "local"}
               for name in existing}
    over = sorted(name for name in existing if _labels.annotations_size({**existing[name], **desired[name]}) > LIMIT)
    client = RecordingClient(existing)
    try:
        reconcile_broker_annotations(client, desired, k8s_writer.WriteOptions(concurrency=1))
    except TopologyError as exc:
        assert over and client.writes() == []
        assert f"{len(over)} nodes would carry more annotations than the API server takes" in str(exc)
        assert all(name in str(exc) for name in over[:10])
    else:
        assert not over and len(client.writes()) == len(existing)


def test_a_managed_annotation_that_is_replaced_is_not_counted_twice():
    big = "h" * (LIMIT // 2)
    client = RecordingClient({"gpu1": {_labels.INSTANCE_ANNOTATION: big}})
    desired = {"gpu1": {_labels.INSTANCE_ANNOTATION: big + "x", _labels.REGION_ANNOTATION: "local"}}
    result = reconcile_broker_annotations(client, desired, k8s_writer.WriteOptions(concurrency=1))
    assert result["changed_nodes"] == ["gpu1"]


def slinky_params(**extra):
    return dict({"namespace": "slurm", "configmap_name": "slurm", "configmap_key": "topology.conf",
                 "plugin": "topology/tree"}, **extra)


def test_slinky_checks_the_node_annotations_before_writing_the_configmap():
    topology = discover("inventory", {"switches": {"leaf1": None}, "nodes": [{"nodes": "n[1-2]", "switch": "leaf1"}]})
    client = RecordingClient({"n1": {}, "n2": {"example.com/other": "o" * LIMIT}})
    with pytest.raises(TopologyError, match=r"1 nodes would carry more annotations .*: n2 \(26"):
        reconcile_slinky(client, topology, slinky_params(use_dynamic_nodes=True), k8s_writer.WriteOptions(concurrency=1))
    assert client.writes() == []


@pytest.mark.parametrize("configmap, words", [
    ({"data": {"other.conf": "x" * ((1 << 20) - 10)}},
     r"its data would total \d+ bytes with topology.conf; .* 1048576"),
    ({"binaryData": {"blob": "eHh4" * ((1 << 20) // 3)}}, r"its data would total \d+ bytes"),
    ({"metadata": {"annotations": {"example.com/other": "o" * LIMIT}}}, r"its annotations would total \d+ bytes"),
])
def test_slinky_refuses_a_configmap_the_server_would_refuse_before_writing_it(configmap, words):
    topology = discover("inventory", {"switches": {"leaf1": None}, "nodes": [{"nodes": "n[1-2]", "switch": "leaf1"}]})
    client = RecordingClient({}, configmap=dict({"metadata": {}, "data": {}}, **configmap))
    with pytest.raises(TopologyError, match="configmap slurm/slurm: " + words):
        reconcile_slinky(client, topology, slinky_params(), k8s_writer.WriteOptions(concurrency=1))
    assert client.writes() == []


# -- the schedulers' objects: another team's, one being deleted, a recreate cut in half ---------------

KUEUE_TOPOLOGY = f"topologies.kueue.x-k8s.io/{'gpus'}"


class SchedulerApi:
    """Serves Kueue's group (not KAI's) and two nodes; keeps objects by path; records every write. ``fail``:
    (method, path) -> the K8sError that request raises."""

    def __init__(self):
        self.objects, self.requests, self.fail = {}, [], {}

    def list(self, path, label_selector=None, metadata_only=False):
        if path == _k8s.node_path():
            return [{"metadata": {"name": name, "labels": {"pool": "gpu"}}} for name in ("n1", "n2")]
        wanted = dict(part.split("=", 1) for part in label_selector.split(",")) if label_selector else {}
        return [item for key, item in self.objects.items() if key.startswith(path + "/")
                and all(item["metadata"].get("labels", {}).get(k) == v for k, v in wanted.items())]

    def request(self, method, path, query=None, body=None, content_type=None):
        self.requests.append((method, path))
        if (method, path) in self.fail:
            raise self.fail[(method, path)]
        if method == "GET" and path.count("/") == 3:  # /apis/<group>/<version>: what it serves
            if path != f"/apis/{scheduler_engine.KUEUE_API}":
                raise _k8s.K8sError(f"GET {path}: HTTP 404 Not Found", 404)
            return {"resources": [{"name": "topologies"}, {"name": "resourceflavors"}]}
        if method in ("GET", "DELETE") and path not in self.objects:
            raise _k8s.K8sError(f"{method} {path}: HTTP 404 Not Found", 404)
        if method == "GET":
            return self.objects[path]
        if (query or {}).get("dryRun"):
            return body
        if method == "DELETE":
            return self.objects.pop(path)
        self.objects[path] = body
        return body

    def writes(self):
        return [request for request in self.requests if request[0] in ("PATCH", "DELETE")]

    def topology(self):
        return self.objects.get(Kind(scheduler_engine.KUEUE_API, "", "topologies").path("gpus"))


def reconcile_gpus(api, check_mode=False, **params):
    topology = discover("inventory", {"switches": {"leaf1": None}, "nodes": [{"nodes": "n[1-2]", "switch": "leaf1"}]})
    options = scheduler_engine.SCHEDULER.build(dict({"consumers": ["kueue"], "name": "gpus", "recreate": True,
                                                     "flavor_node_labels": {"pool": "gpu"}}, **params),
                                               keys=_labels.LabelKeys())
    return reconcile_scheduler(api, topology, options, k8s_writer.WriteOptions(check_mode, concurrency=1))


@pytest.mark.parametrize("labels, shown", [
    ({}, "label app.kubernetes.io/managed-by is not set"),
    ({"app.kubernetes.io/managed-by": "platform-team"}, "label app.kubernetes.io/managed-by is 'platform-team'"),
    ({"app.kubernetes.io/managed-by": "aifactory-topology", "topology.aifactory.dev/scheduler-topology": "other"},
     "label topology.aifactory.dev/scheduler-topology is 'other', another set of this collection"),
])
@pytest.mark.parametrize("check_mode", [False, True], ids=["apply", "check"])
def test_another_teams_topology_is_never_updated_deleted_or_recreated(labels, shown, check_mode):
    api = SchedulerApi()
    path = Kind(scheduler_engine.KUEUE_API, "", "topologies").path("gpus")
    theirs = {"apiVersion": scheduler_engine.KUEUE_API, "kind": "Topology",
              "metadata": {"name": "gpus", "labels": labels}, "spec": {"levels": [{"nodeLabel": "their/rack"}]}}
    api.objects[path] = theirs
    with pytest.raises(TopologyError) as info:
        reconcile_gpus(api, check_mode)
    assert f"{KUEUE_TOPOLOGY} ({shown})" in str(info.value)
    assert "never updated, deleted or recreated" in str(info.value) and str(info.value).endswith("nothing was written")
    assert api.writes() == [] and api.topology() is theirs


def test_a_recreate_that_fails_after_its_delete_reports_the_object_deleted():
    api = SchedulerApi()
    reconcile_gpus(api)
    path = Kind(scheduler_engine.KUEUE_API, "", "topologies").path("gpus")
    api.topology()["spec"]["levels"] = [{"nodeLabel": "old/rack"}, {"nodeLabel": "kubernetes.io/hostname"}]
    api.fail[("PATCH", path)] = _k8s.K8sError(f"PATCH {path}: HTTP 500 Internal Server Error", 500)
    with pytest.raises(k8s_writer.PartialWrite) as info:
        reconcile_gpus(api)
    assert str(info.value) == (f"PATCH {path}: HTTP 500 Internal Server Error (already written: deleted "
                               f"{KUEUE_TOPOLOGY}; {KUEUE_TOPOLOGY} was deleted to be created again and is not there "
                               "now: run again once the cause is fixed)")
    assert info.value.result["deleted"] == [KUEUE_TOPOLOGY] and info.value.result["updated"] == []
    assert api.topology() is None


@pytest.mark.parametrize("check_mode", [False, True], ids=["apply", "check"])
def test_an_object_being_deleted_is_never_written_nor_reported_unchanged(check_mode):
    api = SchedulerApi()
    reconcile_gpus(api)
    api.topology()["metadata"].update(deletionTimestamp="2026-12-04T10:00:00Z",
                                      finalizers=["kueue.x-k8s.io/resource-in-use"])
    written = len(api.writes())
    with pytest.raises(TopologyError) as info:
        reconcile_gpus(api, check_mode)
    assert (f"these objects are being deleted, and what is written into them would go with them (a new one cannot be "
            f"created until they are gone): {KUEUE_TOPOLOGY} (deletionTimestamp 2026-12-04T10:00:00Z; finalizers "
            "kueue.x-k8s.io/resource-in-use)") in str(info.value)
    assert str(info.value).endswith("nothing was written") and len(api.writes()) == written


@pytest.mark.parametrize("keys, where", [
    ({"accelerator_label": "kubernetes.io/hostname"}, "accelerator_label and hostname: true"),
    ({"fabric_labels": ["kubernetes.io/hostname"]}, "fabric_labels[0] and hostname: true"),
])
def test_a_level_key_used_twice_is_refused_before_any_request(run, keys, where):
    message = run(k8s_scheduler_topology, dict({"model": MODEL, "consumers": ["kai"]}, **keys))
    assert message.startswith(f"the level key kubernetes.io/hostname would be a level twice ({where}); Kueue and KAI "
                              "refuse a repeated level key")


# -- one node's value the API server would refuse: that node is quarantined, the others written -----

class LabelledNodes(RecordingClient):
    """RecordingClient whose listed nodes carry ``labels_by_node``; a patch answers with the labels it sets."""

    def __init__(self, labels_by_node):
        super().__init__({name: {} for name in labels_by_node})
        for name, labels in labels_by_node.items():
            self.nodes[name]["metadata"]["labels"] = dict(labels)

    def patched(self):
        return sorted(path.rsplit("/", 1)[1] for method, path in self.requests if method == "PATCH")


def nvl72(nvidia_smi):
    return discover("simulation", {"model_path": str(MODELS / "nvl72.yaml"),
                                   "accelerator": {"source": "nvidia_smi", "nvidia_smi": nvidia_smi}})


def test_one_nvidia_smi_cluster_uuid_with_a_colon_quarantines_that_node_and_the_others_are_labelled():
    # Root on node1101 reports a cluster UUID with ':': a valid name for Slurm, never a Kubernetes label value.
    topology = nvl72({"node1101": "3bd4c4b2:4a2c, 1\n"})
    client = LabelledNodes({name: {} for name in list(topology.nodes)})
    warnings = []
    result = reconcile_labels(client, topology, _labels.LabelKeys(), k8s_writer.WriteOptions(concurrency=1),
                              warn=warnings.append)
    assert client.patched() == sorted(name for name in client.nodes if name != "node1101")
    (record,) = result["quarantined"]
    assert (record["node"], record["source"], record["kind"]) == ("node1101", "kubernetes labels", "invalid")
    assert record["reason"].startswith("label accelerator.topograph.run/domain (the domain): '3bd4c4b2:4a2c.1' is "
                                       "not a valid Kubernetes label value")
    assert result["summary"]["quarantined"] == 1 and result["summary"]["nodes_changed"] == 71
    assert warnings == [f"1 nodes quarantined (left out of the map): node1101 ({record['reason']})"]


def test_a_tier_label_the_server_would_refuse_from_node_labels_quarantines_that_node_only():
    tier0, tier1 = "fabric.topograph.run/tier-0", "fabric.topograph.run/tier-1"
    listed = [("k8s-0", {tier0: "leaf-a", tier1: "spine"}, {}), ("k8s-1", {tier0: "leaf-\u00fc1", tier1: "spine"}, {}),
              ("k8s-2", {tier0: "leaf-a", tier1: "spine"}, {})]
    topology = discover("node_labels", {}, k8s_client=ServedNodes(*listed))
    assert sorted(topology.nodes) == ["k8s-0", "k8s-1", "k8s-2"]  # the name rule takes 'leaf-ü1'
    client = LabelledNodes({name: labels for name, labels, _annotations in listed})
    result = reconcile_labels(client, topology, _labels.LabelKeys(), k8s_writer.WriteOptions(concurrency=1),
                              max_node_loss=50)  # one of three: within the guard
    # k8s-0 and k8s-2 already carry their labels; k8s-1 loses its managed labels, as a quarantined node does.
    assert client.patched() == ["k8s-1"] and result["summary"]["nodes_in_topology"] == 2
    (record,) = result["quarantined"]
    assert record["node"] == "k8s-1" and record["reason"].startswith(
        "label fabric.topograph.run/tier-0 (the tier 0 switch): 'leaf-\u00fc1' is not a valid Kubernetes label value")


def test_values_the_server_would_refuse_on_many_nodes_count_for_the_shrink_guard_before_any_write():
    # A bad cluster UUID on a whole rack (18 of 72 labelled nodes): the guard refuses before any patch.
    topology = nvl72({f"node{1100 + n}": "3bd4c4b2:4a2c, 1\n" for n in range(1, 19)})
    listed = [f"node{rack}{n:02d}" for rack in (11, 12, 21, 22) for n in range(1, 19)]
    assert sorted(listed) == sorted(set(topology.nodes) | {record.node for record in topology.quarantined.values()})
    client = LabelledNodes({name: {"accelerator.topograph.run/domain": "nvl-1"} for name in listed})
    with pytest.raises(TopologyError, match=r"^refusing to remove the topology labels of 18 of 72 labelled nodes, "
                                            r"quarantined or gone from the topology \(25.0% > max_node_loss 10%\): "
                                            r"node\[1101-1118\]"):
        reconcile_labels(client, topology, _labels.LabelKeys(), k8s_writer.WriteOptions(concurrency=1))
    assert client.writes() == []


def test_nodes_gone_from_the_topology_count_for_the_shrink_guard_before_any_write():
    # The provider lost two racks (no quarantine, just fewer nodes): their 36 of 108 labelled nodes keep their labels.
    topology = discover("simulation", {"model_path": str(MODELS / "nvl72.yaml")})
    client = LabelledNodes({name: {"accelerator.topograph.run/domain": "nvl-1"} for name in
                            [f"node{rack}{n:02d}" for rack in (11, 12, 13, 14, 21, 22) for n in range(1, 19)]})
    with pytest.raises(TopologyError, match=r"^refusing to remove the topology labels of 36 of 108 labelled nodes, "
                                            r"quarantined or gone from the topology \(33.3% > max_node_loss 10%\): "
                                            r"node\[1301-1318,1401-1418\]; nothing was written"):
        reconcile_labels(client, topology, _labels.LabelKeys(), k8s_writer.WriteOptions(concurrency=1))
    assert client.writes() == []
    # clean_absent_nodes: false leaves them, and nothing of theirs is counted.
    reconcile_labels(client, topology, _labels.LabelKeys(), k8s_writer.WriteOptions(concurrency=1),
                     clean_absent_nodes=False)
    assert not set(client.patched()) & {f"node{rack}{n:02d}" for rack in (13, 14) for n in range(1, 19)}


class NfdObjects(RecordingClient):
    """Lists ``features`` as the namespace's NodeFeatures (no groups); records every request; writes succeed."""

    def __init__(self, features):
        super().__init__({})
        self.features = features

    def list(self, path, label_selector=None, metadata_only=False):
        self.requests.append(("LIST", path))
        return list(self.features) if path.endswith("/nodefeatures") else []


def test_nfd_topology_deletes_the_node_features_of_a_mass_quarantine_only_within_max_node_loss():
    # A fabric manager restarting: 6 of 10 nodes report no fabric. Before, their 6 NodeFeatures were deleted.
    params = {"switches": {"leaf": None}, "domains": [{"name": "rack1", "nodes": "gpu[01-10]", "switch": "leaf"}]}
    healthy = discover("inventory", params)
    labels = k8s_labels.desired_labels(healthy, _labels.LabelKeys())
    existing, _groups = nfd.build_objects(labels, "nfd")
    outputs = {f"gpu{n:02d}": UNHEALTHY_TRAY if n <= 6 else "3bd4c4b2-4a2c-4b1f-9b4e-7a8b1c2d3e4f, 1\n"
               for n in range(1, 11)}
    params["accelerator"] = {"source": "nvidia_smi", "nvidia_smi": outputs}
    client = NfdObjects(existing)
    with pytest.raises(TopologyError, match=r"^refusing to delete 6 of 10 listed NodeFeature objects, of quarantined "
                                            r"nodes or nodes gone from the topology \(60.0% > max_node_loss 10%\): gpu\[01-06\]; nothing was written"):
        reconcile_nfd(client, discover("inventory", params), "nfd", k8s_writer.WriteOptions(concurrency=1))
    assert client.writes() == []
    warnings = []
    forced = reconcile_nfd(client, discover("inventory", params), "nfd", k8s_writer.WriteOptions(concurrency=1),
                           force=True, warn=warnings.append)
    assert len(forced["deleted"]["NodeFeature"]) == 6 and warnings[0].startswith("force: deleting 6 of 10 listed")


# -- the transport ---------------------------------------------------------------------------

class DroppingServer:
    """127.0.0.1: accepts every connection and closes it at once (``reset``: with an RST), or with ``tls``
    completes a TLS handshake with a self-signed certificate and then closes."""

    def __init__(self, reset=False, tls=None):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.reset, self.tls = reset, tls
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (close alone does not, on Linux)
        self.thread.join()
        self.sock.close()

    def _serve(self):
        while True:
            try:
                conn, _address = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            if self.reset:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            if self.tls is not None:
                try:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                except (ssl.SSLError, OSError):
                    pass  # the client refused our certificate: what the verification test wants
            conn.close()


def get_nodes(port, scheme="https", **auth):
    client = _k8s.K8sClient.from_auth(dict({"host": f"{scheme}://127.0.0.1:{port}", "api_key": "token"}, **auth),
                                      environ={}, timeout=10)
    try:
        with pytest.raises(_k8s.K8sError) as info:
            client.request("GET", _k8s.node_path())
    finally:
        client.close()
    return str(info.value)


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
@pytest.mark.parametrize("scheme, validate_certs", [("https", False), ("https", True), ("http", False)])
def test_a_dropped_connection_is_a_connection_problem_not_a_tls_failure(reset, scheme, validate_certs):
    with DroppingServer(reset=reset) as server:
        message = get_nodes(server.port, scheme, validate_certs=validate_certs)
    assert server.accepted >= 1
    assert message.startswith(f"GET /api/v1/nodes: the connection to the API server {scheme}://127.0.0.1:"
                              f"{server.port} was closed or reset "), message
    assert "TLS verification" not in message and "ca_cert" not in message


def test_a_certificate_that_does_not_verify_is_still_a_tls_verification_failure(tmp_path):
    with DroppingServer(tls=server_context(*self_signed(tmp_path, "apiserver.test"))) as server:
        message = get_nodes(server.port)
    assert message.startswith(f"GET /api/v1/nodes: TLS verification of https://127.0.0.1:{server.port} failed ("), \
        message
    assert "set ca_cert" in message
