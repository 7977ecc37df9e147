"""The schedulers' topology objects (Kueue Topology and ResourceFlavor, KAI Topology) and the checks before them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import scheduler_topology_docs  # tools/ is on sys.path (tests/conftest.py)
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels
from ansible_collections.aifactory.topology.plugins.module_utils._engines import scheduler_topology as st
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology

REPO = Path(__file__).resolve().parents[4]
TIER = _labels.FABRIC_PREFIX
DOMAIN = _labels.ACCELERATOR_LABEL
GPU = {"nvidia.com/gpu.present": "true"}

# KAI Scheduler's documented Topology schema (docs/kubernetes.md, "KAI Scheduler"): kai.scheduler/v1alpha1,
# cluster-scoped, spec.levels 1..16 items of {nodeLabel}, each a qualified label name of 1..316 characters,
# unique, kubernetes.io/hostname only last. The same rules as Kueue's v1beta2 Topology, which the integration
# tests prove on the real CRD.
QUALIFIED = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                       r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")


def kai_schema_problems(obj):
    problems = []
    if obj.get("apiVersion") != "kai.scheduler/v1alpha1" or obj.get("kind") != "Topology":
        problems.append("apiVersion/kind")
    if "namespace" in obj.get("metadata", {}):
        problems.append("cluster-scoped: no namespace")
    if set(obj) != {"apiVersion", "kind", "metadata", "spec"} or set(obj["spec"]) != {"levels"}:
        problems.append("unknown fields")
    levels = obj["spec"]["levels"]
    if not 1 <= len(levels) <= 16:
        problems.append("levels count")
    for level in levels:
        label = level.get("nodeLabel")
        if set(level) != {"nodeLabel"} or not isinstance(label, str) or not 1 <= len(label) <= 316 \
                or not QUALIFIED.match(label):
            problems.append(f"level {level}")
    keys = [level["nodeLabel"] for level in levels]
    if len(set(keys)) != len(keys):
        problems.append("must be unique")
    if "kubernetes.io/hostname" in keys and keys[-1] != "kubernetes.io/hostname":
        problems.append("hostname not last")
    return problems


def three_tier(nodes_per_rack=2, racks=4):
    """core > spine01 > leaf01 (racks 1-2), leaf02 (racks 3-4); one NVLink domain per rack."""
    topo = Topology()
    topo.add_switch("core")
    topo.add_switch("spine01", "core")
    for leaf in ("leaf01", "leaf02"):
        topo.add_switch(leaf, "spine01")
    for rack in range(1, racks + 1):
        for n in range(1, nodes_per_rack + 1):
            topo.add_node(f"r{rack}-n{n}", switch=f"leaf0{(rack + 1) // 2}", domain=f"rack{rack}",
                          sub_domain=f"tray{n}")
    return topo


def options(consumers=("kueue", "kai"), **kwargs):
    return st.Options(list(consumers), _labels.LabelKeys(), flavor_node_labels=kwargs.pop("flavor_node_labels", GPU),
                      **kwargs)


def test_levels_go_from_the_top_tier_down_to_the_hostname_and_name_the_label_keys_the_nodes_carry():
    topo = three_tier()
    rendered = st.render(topo, options())
    assert rendered["levels"] == [f"{TIER}2", f"{TIER}1", f"{TIER}0", DOMAIN, "kubernetes.io/hostname"]
    labels = k8s_labels.desired_labels(topo, _labels.LabelKeys())
    assert all(set(rendered["levels"][:-1]) <= set(node_labels) for node_labels in labels.values())
    kueue_topology, flavor = rendered["objects"]["kueue"]
    assert kueue_topology == {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
        "metadata": {"name": "aifactory-topology", "labels": {
            "app.kubernetes.io/managed-by": "aifactory-topology",
            "topology.aifactory.dev/scheduler-topology": "aifactory-topology"}},
        "spec": {"levels": [{"nodeLabel": key} for key in rendered["levels"]]}}
    assert rendered["findings"] == {"missing_levels": [], "shared_values": []}


def test_the_flavor_names_the_topology_and_selects_the_nodes():
    rendered = st.render(three_tier(), options(name="gb200", flavor_name="gb200-gpus"))
    _topology, flavor = rendered["objects"]["kueue"]
    assert flavor["apiVersion"] == "kueue.x-k8s.io/v1beta2" and flavor["kind"] == "ResourceFlavor"
    assert flavor["metadata"]["name"] == "gb200-gpus"
    assert flavor["metadata"]["labels"]["topology.aifactory.dev/scheduler-topology"] == "gb200"
    assert flavor["spec"] == {"nodeLabels": GPU, "topologyName": "gb200"}


def test_kai_topology_has_kais_documented_shape_and_the_same_levels():
    rendered = st.render(three_tier(), options(sub_domain=True))
    (kai,) = rendered["objects"]["kai"]
    assert kai_schema_problems(kai) == []
    assert kai["spec"] == rendered["objects"]["kueue"][0]["spec"]
    assert [level["nodeLabel"] for level in kai["spec"]["levels"]][-3:] == [
        DOMAIN, _labels.SUB_DOMAIN_LABEL, "kubernetes.io/hostname"]


def test_the_schema_check_itself_refuses_what_kai_refuses():
    bad = st.topology_object(st.KAI_API, "x", ["kubernetes.io/hostname", DOMAIN])
    assert kai_schema_problems(bad) == ["hostname not last"]
    assert "must be unique" in kai_schema_problems(st.topology_object(st.KAI_API, "x", [DOMAIN, DOMAIN]))


def test_configured_keys_become_the_levels():
    topo = three_tier()
    keys = _labels.LabelKeys(["example.com/leaf", "example.com/spine", "example.com/core"], "example.com/nvl")
    rendered = st.render(topo, st.Options(["kai"], keys, hostname=False))
    assert rendered["levels"] == ["example.com/core", "example.com/spine", "example.com/leaf", "example.com/nvl"]


def test_only_requested_consumers_are_rendered_and_kai_needs_no_flavor_labels():
    rendered = st.render(three_tier(), st.Options(["kai"], _labels.LabelKeys()))
    assert list(rendered["objects"]) == ["kai"]


@pytest.mark.parametrize("consumers, message", [
    (["kueue", "volcano"], "unknown 'volcano'"),
    ([], "non-empty list"),
    ("kueue", "non-empty list"),
])
def test_unknown_consumers_are_refused(consumers, message):
    with pytest.raises(TopologyError, match=message):
        st.Options(consumers, _labels.LabelKeys(), flavor_node_labels=GPU)


def test_kueue_without_node_labels_and_bad_names_are_refused():
    with pytest.raises(TopologyError, match="at least one node label"):
        st.Options(["kueue"], _labels.LabelKeys())
    with pytest.raises(TopologyError, match="at most 8"):
        options(flavor_node_labels={f"k{i}": "v" for i in range(9)})
    with pytest.raises(TopologyError, match="name"):
        options(name="Not_A_Name")
    with pytest.raises(TopologyError, match="fabric_tiers"):
        options(fabric_tiers=-1)


def test_differing_depths_are_refused_naming_the_nodes_unless_fabric_tiers_is_set():
    topo = three_tier()
    topo.add_switch("leaf-svc", "core")  # one tier less than the GPU leaves
    topo.add_node("login01", switch="leaf-svc")
    with pytest.raises(TopologyError, match=r"2 tiers: login01; 3 tiers: r1-n\[1-2\].*at most 2"):
        st.render(topo, options())
    rendered = st.render(topo, options(fabric_tiers=2))
    assert rendered["levels"][:2] == [f"{TIER}1", f"{TIER}0"]
    assert rendered["findings"]["missing_levels"] == [
        {"node": "login01", "missing": [DOMAIN], "reason": "no accelerator domain or sub-domain"}]
    with pytest.raises(TopologyError, match="deepest node of the model has 3"):
        st.render(topo, options(fabric_tiers=4))
    # The flavor selects the GPU nodes only: the service node is no part of the objects' nodes.
    gpus = {name for name in topo.nodes if name != "login01"}
    selected = st.render(topo, options(), selected=gpus)
    assert selected["levels"][0] == f"{TIER}2" and selected["findings"]["missing_levels"] == []
    assert selected["summary"]["nodes_selected"] == 8
    with pytest.raises(TopologyError, match="none of the 2 selected nodes is in the topology"):
        st.render(topo, options(), selected={"other1", "other2"})


def test_quarantined_and_switchless_nodes_are_reported_as_missing_every_level():
    topo = three_tier()
    topo.add_node("r9-n1", domain="rack9")  # no switch: no tier labels
    topo.quarantine("r9-n2", "nvidia-smi", "GPU outside its NVLink fabric", unhealthy=True)
    rendered = st.render(topo, options())
    missing = {item["node"]: item for item in rendered["findings"]["missing_levels"]}
    assert missing["r9-n1"] == {"node": "r9-n1", "missing": [f"{TIER}2", f"{TIER}1", f"{TIER}0"],
                                "reason": "no switch (no-topology)"}
    assert missing["r9-n2"]["reason"] == "quarantined (unhealthy)"
    assert missing["r9-n2"]["missing"] == [f"{TIER}2", f"{TIER}1", f"{TIER}0", DOMAIN]
    assert rendered["summary"]["nodes_missing_levels"] == 2


def test_no_topology_nodes_are_not_counted_as_a_depth_and_still_reported():
    topo = three_tier()
    topo.add_node("cpu01")
    rendered = st.render(topo, options(no_topology_value="no-topology"))
    (item,) = rendered["findings"]["missing_levels"]
    assert item["node"] == "cpu01" and item["reason"] == "no switch (no-topology)"
    assert item["missing"] == [f"{TIER}2", f"{TIER}1", DOMAIN]  # it has tier-0=no-topology


def test_levels_that_the_model_cannot_give_are_refused():
    topo = Topology()
    topo.add_node("cpu01")
    with pytest.raises(TopologyError, match="no topology level"):
        st.render(topo, options())
    with pytest.raises(TopologyError, match="no node of the model has an accelerator sub-domain"):
        topo = Topology()
        topo.add_switch("leaf")
        topo.add_node("n1", switch="leaf", domain="d1")
        st.render(topo, options(sub_domain=True))


def test_more_than_16_levels_are_refused():
    topo = Topology()
    parent = None
    for tier in range(15):
        topo.add_switch(f"s{tier}", parent)
        parent = f"s{tier}"
    topo.add_node("n1", switch=parent, domain="d1")
    with pytest.raises(TopologyError, match="17 levels; Kueue and KAI take at most 16"):
        st.render(topo, options())
    assert len(st.render(topo, options(hostname=False))["levels"]) == 16


def test_a_value_under_two_parents_is_reported_for_affinity_and_the_native_gang():
    topo = Topology()
    topo.add_switch("spine01")
    topo.add_switch("spine02")
    topo.add_switch("leaf01", "spine01")
    topo.add_switch("leaf02", "spine02")
    topo.add_node("a1", switch="leaf01", domain="rack1")
    topo.add_node("b1", switch="leaf02", domain="rack1")  # one NVLink domain cabled to two leaves
    rendered = st.render(topo, options(consumers=("kueue",)))
    assert rendered["findings"]["shared_values"] == [
        {"label": DOMAIN, "value": "rack1", "parents": 2, "nodes": "a1,b1"}]


def test_kai_domain_ids_that_two_paths_share_are_refused():
    topo = Topology()
    topo.add_switch("a.b")
    topo.add_switch("a")
    topo.add_switch("c", "a.b")
    topo.add_switch("b.c", "a")
    topo.add_node("n1", switch="c", domain="d1")
    topo.add_node("n2", switch="b.c", domain="d2")
    # KAI joins values with '.': a.b + c and a + b.c are both "a.b.c".
    with pytest.raises(TopologyError, match=r"KAI joins .*'a\.b\.c'"):
        st.render(topo, options())
    assert st.render(topo, options(consumers=("kueue",)))["objects"]["kueue"]  # Kueue joins with ',' instead


def test_live_check_names_selected_nodes_without_a_level_label():
    levels = [f"{TIER}0", DOMAIN, "kubernetes.io/hostname"]
    listed = {"n1": {f"{TIER}0": "l", DOMAIN: "d", "kubernetes.io/hostname": "n1"},
              "n2": {f"{TIER}0": "l", "kubernetes.io/hostname": "n2"}}
    assert st.missing_on_nodes(listed, levels) == {"n2": [DOMAIN]}


def test_the_docs_examples_are_the_engines_output_for_the_example_model():
    tool = scheduler_topology_docs
    text = (REPO / "docs" / "kubernetes.md").read_text(encoding="utf-8")
    assert tool.expected_doc(text) == text, "run python tools/scheduler_topology_docs.py"
    rendered = tool.render()
    documented = [yaml.safe_load_all(block.split("\n", 1)[1].rsplit("```", 1)[0])
                  for name, block in tool.blocks().items() if name in ("kueue", "kai")]
    assert [list(objects) for objects in documented] == [rendered["objects"]["kueue"], rendered["objects"]["kai"]]
    assert all(kai_schema_problems(obj) == [] for obj in rendered["objects"]["kai"])
