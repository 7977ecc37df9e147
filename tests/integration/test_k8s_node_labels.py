"""aifactory.topology.k8s_node_labels against the REAL kube-apiserver of tools/k8s_testbed.py.

Writes are counted from the API server's side: a node's resourceVersion changes exactly when the
server stores a write, so "zero writes" and "exactly 18 writes" are read from the nodes themselves.
"""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._writers import k8s as k8s_writer
from ansible_collections.aifactory.topology.plugins.module_utils._writers import k8s_nodes
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover
from ansible_collections.aifactory.topology.plugins.modules import k8s_node_labels
from tests.integration.k8s_support import (
    TEST_LABEL,
    RequestLog,
    client,
    gb200,
    make_nodes,
    new_id,
    node_names,
    node_state,
    run_module,
    topology_labels,
    written,
)
from tests.unit.conftest_paths import MODELS
from tests import nvidia_smi_shapes as shapes
from tests.nvidia_smi_shapes import UNHEALTHY_TRAY

pytestmark = pytest.mark.k8s
TIER = _labels.FABRIC_PREFIX
DOMAIN = _labels.ACCELERATOR_LABEL


@pytest.fixture
def admin(k8s):
    api = client(k8s.kubeconfig)
    yield api
    api.close()


def labels_args(k8s, test_id, params, **extra):
    return dict({"provider": {"name": "inventory", "params": params}, "kubeconfig": str(k8s.kubeconfig),
                 "node_selector": {TEST_LABEL: test_id}}, **extra)


def test_medium_node_1202_gets_topograph_ci_labels_and_a_rerun_writes_nothing(k8s, admin, monkeypatch):
    test_id = new_id()
    model = discover("simulation", {"model_path": str(MODELS / "medium.yaml")})
    make_nodes(k8s, sorted(model.nodes), test_id)
    args = {"provider": {"name": "simulation", "params": {"model_path": str(MODELS / "medium.yaml")}},
            "kubeconfig": str(k8s.kubeconfig), "node_selector": {TEST_LABEL: test_id}}
    first = run_module(k8s_node_labels, args, monkeypatch)
    assert not first["failed"], first["msg"] if first["failed"] else ""
    assert first["changed"] and len(first["changed_nodes"]) == 8
    state = node_state(admin, test_id)
    assert topology_labels(state["1202"][1]) == {f"{TIER}0": "sw12", f"{TIER}1": "sw21", f"{TIER}2": "sw3",
                                                 DOMAIN: "nvl2"}
    assert state["1202"][1]["kubernetes.io/hostname"] == "1202"  # labels it does not manage stay
    again = run_module(k8s_node_labels, args, monkeypatch)
    assert again["changed"] is False and again["changed_nodes"] == []
    assert written(state, node_state(admin, test_id)) == []


def test_lifecycle_counts_writes_exactly_and_check_mode_stores_nothing(k8s, admin, monkeypatch):
    test_id = new_id()
    prefix = f"t{test_id}"
    names = node_names(prefix, 4)
    first_node = names[0]
    make_nodes(k8s, names, test_id, {first_node: {"team": "a", f"{TIER}5": "stale", f"{TIER}0": "wrong"}})
    args = labels_args(k8s, test_id, gb200(prefix))
    start = node_state(admin, test_id)

    dry = run_module(k8s_node_labels, args, monkeypatch, check_mode=True, diff=True)
    assert dry["changed"] and len(dry["changed_nodes"]) == 72
    assert dry["diff"]["before"][first_node] == {f"{TIER}0": "wrong", f"{TIER}5": "stale"}
    assert dry["diff"]["after"][first_node] == {f"{TIER}0": f"{prefix}-leaf01", f"{TIER}1": f"{prefix}-spine01",
                                                f"{TIER}2": f"{prefix}-core", DOMAIN: f"{prefix}-rack01"}
    assert written(start, node_state(admin, test_id)) == []  # dryRun=All: validated, not stored

    first = run_module(k8s_node_labels, args, monkeypatch, diff=True)
    after_first = node_state(admin, test_id)
    assert first["changed"] and written(start, after_first) == sorted(names)  # 72 writes, one per node
    assert after_first[first_node][1]["team"] == "a" and f"{TIER}5" not in after_first[first_node][1]
    assert first["summary"] == {"nodes_listed": 72, "nodes_in_topology": 72, "nodes_changed": 72,
                                "nodes_cleaned": 0, "nodes_missing": 0, "quarantined": 0, "warnings": []}

    second = run_module(k8s_node_labels, args, monkeypatch)
    assert second["changed"] is False and written(after_first, node_state(admin, test_id)) == []  # zero writes

    # One rack moves to another leaf: exactly its 18 nodes are written.
    moved = labels_args(k8s, test_id, gb200(prefix, leaf_of={3: f"{prefix}-leaf09"}))
    third = run_module(k8s_node_labels, moved, monkeypatch)
    after_third = node_state(admin, test_id)
    rack3 = [n for n in names if n.startswith(f"{prefix}-r03-")]
    assert written(after_first, after_third) == rack3 and sorted(third["changed_nodes"]) == rack3
    assert after_third[rack3[0]][1][f"{TIER}0"] == f"{prefix}-leaf09"

    # Rack 4 leaves the topology: its managed labels go, its other labels stay, nobody else is written.
    smaller = gb200(prefix, racks=3, leaf_of={3: f"{prefix}-leaf09"})
    kept = run_module(k8s_node_labels, labels_args(k8s, test_id, smaller, clean_absent_nodes=False), monkeypatch)
    assert kept["changed"] is False and written(after_third, node_state(admin, test_id)) == []
    # A quarter of the labelled nodes losing their labels is beyond the shrink guard's default 10 %: refused, unwritten.
    refused = run_module(k8s_node_labels, labels_args(k8s, test_id, smaller), monkeypatch)
    assert refused["failed"] and refused["msg"].startswith(
        "refusing to remove the topology labels of 18 of 72 labelled nodes, quarantined or gone from the topology "
        "(25.0% > max_node_loss 10%)"), refused["msg"]
    assert written(after_third, node_state(admin, test_id)) == []
    fourth = run_module(k8s_node_labels, labels_args(k8s, test_id, smaller, max_node_loss=25), monkeypatch)
    after_fourth = node_state(admin, test_id)
    rack4 = [n for n in names if n.startswith(f"{prefix}-r04-")]
    assert written(after_third, after_fourth) == rack4 and fourth["summary"]["nodes_cleaned"] == 18
    assert topology_labels(after_fourth[rack4[0]][1]) == {}
    assert after_fourth[rack4[0]][1][TEST_LABEL] == test_id


def test_bad_input_and_a_foreign_topology_write_nothing(k8s, admin, monkeypatch):
    test_id = new_id()
    prefix = f"t{test_id}"
    names = make_nodes(k8s, node_names(prefix, 2, 4), test_id)
    params = gb200(prefix, racks=2, per_rack=4)
    run_module(k8s_node_labels, labels_args(k8s, test_id, params), monkeypatch)
    before = node_state(admin, test_id)
    params["domains"][1]["name"] = "rack:02"  # valid in Slurm, not as a label value: its 4 nodes are quarantined
    bad = run_module(k8s_node_labels, labels_args(k8s, test_id, params), monkeypatch)
    assert bad["failed"] and bad["msg"].startswith(  # half the labelled nodes: the guard writes nothing
        f"refusing to remove the topology labels of 4 of 8 labelled nodes, quarantined or gone from the topology (50.0% > max_node_loss 10%): "
        f"{prefix}-r02-n[01-04]")
    foreign = run_module(k8s_node_labels, labels_args(k8s, test_id, gb200("other", racks=1, per_rack=2)), monkeypatch)
    assert foreign["failed"] and "none of the 8 listed nodes is in the topology" in foreign["msg"]
    assert written(before, node_state(admin, test_id)) == [] and len(names) == 8


def test_a_value_the_server_refuses_quarantines_those_nodes_and_the_others_are_written(k8s, admin, monkeypatch):
    test_id = new_id()
    prefix = f"t{test_id}"
    make_nodes(k8s, node_names(prefix, 2, 4), test_id)
    params = gb200(prefix, racks=2, per_rack=4)
    run_module(k8s_node_labels, labels_args(k8s, test_id, params), monkeypatch)
    before = node_state(admin, test_id)
    # Rack 2's domain becomes 'rack:02' (as an nvidia-smi cluster UUID with ':' would): fine for Slurm, not a
    # label value. Its nodes are quarantined and lose their labels; rack 1 is left as it is.
    params["domains"][1]["name"] = "rack:02"
    result = run_module(k8s_node_labels, labels_args(k8s, test_id, params, max_node_loss=50), monkeypatch)
    assert not result["failed"], result.get("msg")
    rack2 = [f"{prefix}-r02-n{n:02d}" for n in range(1, 5)]
    assert [(q["node"], q["source"]) for q in result["quarantined"]] == [(node, "kubernetes labels") for node in rack2]
    assert result["quarantined"][0]["reason"].startswith(
        "label accelerator.topograph.run/domain (the domain): 'rack:02' is not a valid Kubernetes label value")
    after = node_state(admin, test_id)
    assert written(before, after) == rack2 and all(topology_labels(after[node][1]) == {} for node in rack2)


def test_node_selector_limits_scope_and_missing_nodes_are_warned(k8s, admin, monkeypatch):
    test_id = new_id()
    prefix = f"t{test_id}"
    names = node_names(prefix, 2, 3)
    make_nodes(k8s, names, test_id, {name: {"pool": "gpu"} for name in names[:3]})
    args = labels_args(k8s, test_id, gb200(prefix, racks=2, per_rack=3), node_selector={TEST_LABEL: test_id, "pool": "gpu"})
    result = run_module(k8s_node_labels, args, monkeypatch)
    assert sorted(result["changed_nodes"]) == names[:3]
    assert result["warnings"] == [f"3 nodes of the topology are not in the cluster or do not match node_selector: "
                                  f"{prefix}-r02-n[01-03]"]
    state = node_state(admin, test_id)
    assert all(not topology_labels(state[name][1]) for name in names[3:])


def test_a_node_changed_between_list_and_patch_is_reread_and_patched_again(k8s, admin):
    test_id = new_id()
    prefix = f"t{test_id}"
    names = make_nodes(k8s, node_names(prefix, 1, 2), test_id)
    topology = discover("inventory", gb200(prefix, racks=1, per_rack=2))
    keys = _labels.LabelKeys()
    listed = k8s_nodes.list_nodes(admin, f"{TEST_LABEL}={test_id}")
    # Someone else writes the first node after our list: our patch carries a stale resourceVersion.
    admin.request("PATCH", _k8s.node_path(names[0]), body={"metadata": {"labels": {"other": "x"}}},
                  content_type=k8s_writer.MERGE_PATCH)
    spy = RequestLog(admin)
    desired = k8s_labels.desired_labels(topology, keys)
    changes = k8s_nodes.plan_node_changes(listed, desired, keys)
    report = k8s_nodes.patch_nodes(spy, changes, listed, keys, k8s_writer.WriteOptions(concurrency=1, retry_delay=0))
    assert report.error is None and sorted(report.ids("patched")) == names
    first = [call for call in spy.calls if call[1] == _k8s.node_path(names[0])]
    assert first == [("PATCH", first[0][1], 409), ("GET", first[0][1], 200), ("PATCH", first[0][1], 200)]
    state = node_state(admin, test_id)
    assert state[names[0]][1]["other"] == "x" and state[names[0]][1][f"{TIER}0"] == f"{prefix}-leaf01"


def test_a_quarantined_node_loses_its_labels_a_mass_quarantine_writes_nothing_and_recovery_relabels(
        k8s, admin, monkeypatch):
    """On the real API server: a node whose GPUs left the fabric loses exactly its managed labels;
    nine of 72 (12.5% > max_node_loss 10%) are refused before any write; recovery brings them back."""
    test_id = new_id()
    prefix = f"t{test_id}"
    names = make_nodes(k8s, node_names(prefix, 4), test_id)
    args = labels_args(k8s, test_id, gb200(prefix))
    assert run_module(k8s_node_labels, args, monkeypatch)["changed"]
    labelled = node_state(admin, test_id)

    def with_unhealthy(nodes, **extra):
        accelerator = {"source": "nvidia_smi", "nvidia_smi": {node: UNHEALTHY_TRAY for node in nodes}}
        params = dict(gb200(prefix), accelerator=accelerator)
        return labels_args(k8s, test_id, params, **extra)

    one = run_module(k8s_node_labels, with_unhealthy(names[:1]), monkeypatch)
    assert not one["failed"], one.get("msg")
    after_one = node_state(admin, test_id)
    assert written(labelled, after_one) == [names[0]] and one["changed_nodes"] == [names[0]]
    assert topology_labels(after_one[names[0]][1]) == {}
    assert one["summary"]["quarantined"] == 1 and one["quarantined"][0]["node"] == names[0]
    assert one["quarantined"][0]["kind"] == "unhealthy"

    mass = run_module(k8s_node_labels, with_unhealthy(names[1:10]), monkeypatch)
    assert mass["failed"] and "refusing to remove the topology labels of 9 of 71 labelled nodes" in mass["msg"]
    assert written(after_one, node_state(admin, test_id)) == []
    forced = run_module(k8s_node_labels, with_unhealthy(names[1:10], force=True), monkeypatch)
    assert not forced["failed"] and len(forced["changed_nodes"]) == 10  # nine unlabelled, the first relabelled
    assert any(w.startswith("force: removing the topology labels of 9 of 71") for w in forced["summary"]["warnings"])

    recovered = run_module(k8s_node_labels, args, monkeypatch)
    assert sorted(recovered["changed_nodes"]) == sorted(names[1:10])
    assert {name: topology_labels(state[1]) for name, state in node_state(admin, test_id).items()} == \
        {name: topology_labels(state[1]) for name, state in labelled.items()}


def test_taint_unhealthy_taints_only_unhealthy_nodes_keeps_other_taints_and_untaints_on_recovery(
        k8s, admin, monkeypatch):
    test_id = new_id()
    prefix = f"t{test_id}"
    names = make_nodes(k8s, node_names(prefix, 1), test_id)
    sick, bad_data, other = names[0], names[1], names[2]
    someone_elses = {"key": "example.com/maintenance", "value": "yes", "effect": "NoExecute"}
    admin.request("PATCH", _k8s.node_path(sick), None, {"spec": {"taints": [someone_elses]}}, k8s_writer.MERGE_PATCH)
    two_cliques = "3bd4c4b2-4a2c-4b1f-9b4e-7a8b1c2d3e4f, 1\n3bd4c4b2-4a2c-4b1f-9b4e-7a8b1c2d3e4f, 2\n"
    outputs = {sick: UNHEALTHY_TRAY, bad_data: two_cliques}
    params = dict(gb200(prefix, racks=1), accelerator={"source": "nvidia_smi", "nvidia_smi": outputs})
    args = labels_args(k8s, test_id, params, taint_unhealthy=True, max_node_loss=20)

    def taints(name):
        return admin.request("GET", _k8s.node_path(name)).get("spec", {}).get("taints") or []

    def marked(name):
        annotations = admin.request("GET", _k8s.node_path(name))["metadata"].get("annotations") or {}
        return annotations.get(k8s_nodes.UNHEALTHY_MARK) == "true"

    dry = run_module(k8s_node_labels, args, monkeypatch, check_mode=True)
    assert dry["tainted"] == [sick] and taints(sick) == [someone_elses]
    applied = run_module(k8s_node_labels, args, monkeypatch)
    assert not applied["failed"], applied.get("msg")
    assert applied["tainted"] == [sick] and applied["untainted"] == []
    assert taints(sick) == [someone_elses, k8s_nodes.UNHEALTHY_TAINT]
    assert taints(bad_data) == [] and taints(other) == []  # invalid data is not a sick node: quarantined, untainted
    assert marked(sick) and not marked(bad_data) and not marked(other)  # the mark the metadata-only list reads
    assert run_module(k8s_node_labels, args, monkeypatch)["changed"] is False

    recovered = run_module(k8s_node_labels, labels_args(k8s, test_id, gb200(prefix, racks=1), taint_unhealthy=True),
                           monkeypatch)
    assert recovered["untainted"] == [sick] and taints(sick) == [someone_elses] and not marked(sick)

    # Tainted again, then the option turned off: the taint and its mark come off, the other taint stays.
    assert run_module(k8s_node_labels, args, monkeypatch)["tainted"] == [sick]
    turned_off = run_module(k8s_node_labels, dict(args, taint_unhealthy=False), monkeypatch)
    assert turned_off["untainted"] == [sick] and taints(sick) == [someone_elses] and not marked(sick)


def test_an_escalated_rack_is_tainted_whole_with_one_reason_and_untainted_when_it_recovers(k8s, admin, monkeypatch):
    """Rack-level escalation on the real API server: two bad trays of 18 take rack 1 out (taint_unhealthy); the
    other rack stays labelled and untainted; the rack's recovery removes every taint."""
    test_id = new_id()
    prefix = f"t{test_id}"
    names = make_nodes(k8s, node_names(prefix, 2), test_id)
    uuids = ["4b1d9c3e-7a25-4f60-9e8b-d2c5a7f01e36", "0c9e7d2a-5f41-4b8e-a3d6-71e2f0c4b958"]
    bad = {2: {"fabric__state": "In Progress"}, 6: {"fabric__health__route_unhealthy": "True"}}

    def outputs(changes):
        trays = {}
        for number, uuid in enumerate(uuids, start=1):
            trays.update(shapes.rack(f"{prefix}-r{number:02d}-n", uuid, f"18211240002{number:02d}",
                                     changes=changes if number == 1 else None))
        return {node: shapes.csv(gpus) for node, gpus in trays.items()}

    def args(changes):
        # The operator's names witness the rack (the witness rule, docs/security.md).
        accelerator = {"source": "nvidia_smi", "nvidia_smi": outputs(changes), "rack_escalation": {"trays": 2},
                       "rack_from_name": f"{prefix}-r(?P<rack>[0-9]+)-n[0-9]+"}
        params = dict(gb200(prefix, racks=2), accelerator=accelerator)
        return labels_args(k8s, test_id, params, taint_unhealthy=True, max_node_loss=60)

    def tainted():
        return sorted(name for name in names if k8s_nodes.UNHEALTHY_TAINT in (
            admin.request("GET", _k8s.node_path(name)).get("spec", {}).get("taints") or []))

    applied = run_module(k8s_node_labels, args(bad), monkeypatch)
    assert not applied["failed"], applied.get("msg")
    assert sorted(applied["tainted"]) == names[:18] == tainted()
    reasons = {record["node"]: record["reason"] for record in applied["quarantined"]}
    assert reasons[names[0]] == (f"rack {uuids[0]}.32766 (chassis 1821124000201) is taken out of NVLink placement: "
                                 "2 of 18 trays are unhealthy or missing (trays 2,6)")
    assert set(reasons) == set(names[:18])
    assert run_module(k8s_node_labels, args(bad), monkeypatch)["changed"] is False
    recovered = run_module(k8s_node_labels, args(None), monkeypatch)
    assert sorted(recovered["untainted"]) == names[:18] and tainted() == []


def test_location_labels_are_opt_in_name_the_rack_and_tray_and_come_off_when_turned_off(k8s, admin, monkeypatch):
    test_id = new_id()
    prefix = f"t{test_id}"
    names = make_nodes(k8s, node_names(prefix, 1, per_rack=3), test_id)
    trays = shapes.rack(f"{prefix}-r01-n", "4b1d9c3e-7a25-4f60-9e8b-d2c5a7f01e36", "1821124000301", trays=3)
    params = dict(gb200(prefix, racks=1, per_rack=3), accelerator={
        "source": "nvidia_smi", "nvidia_smi": {node: shapes.csv(gpus) for node, gpus in trays.items()},
        "rack_trays": 3})

    def location(name):
        labels = admin.request("GET", _k8s.node_path(name))["metadata"].get("labels") or {}
        return {key.split("/")[1]: value for key, value in labels.items() if key.startswith("topology.aifactory.dev/")}

    plain = run_module(k8s_node_labels, labels_args(k8s, test_id, params), monkeypatch)
    assert not plain["failed"], plain.get("msg")
    assert location(names[0]) == {}
    located = run_module(k8s_node_labels, labels_args(k8s, test_id, params, location_labels=True), monkeypatch)
    assert sorted(located["changed_nodes"]) == names
    assert [location(name) for name in names] == [
        {"chassis": "1821124000301", "slot": str(10 + index), "tray": str(index), "host": "1"} for index in range(3)]
    assert run_module(k8s_node_labels, labels_args(k8s, test_id, params, location_labels=True),
                      monkeypatch)["changed"] is False
    off = run_module(k8s_node_labels, labels_args(k8s, test_id, params), monkeypatch)
    assert sorted(off["changed_nodes"]) == names and all(location(name) == {} for name in names)
