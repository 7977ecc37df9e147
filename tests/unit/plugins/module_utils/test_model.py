from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._model import COMPACT_FORMAT, Topology, name_problem, names_are_valid
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError


def small():
    topo = Topology()
    topo.add_switch("core")
    topo.add_switch("leaf1", parent="core")
    topo.add_switch("leaf2", parent="core", name="L2")
    topo.declare_domain("rack01")
    topo.declare_domain("rack02")
    topo.declare_domain("rack03")
    for i in range(1, 5):
        topo.add_node(f"n{i:02d}", "leaf1", "rack01", labels={"zone": "a"})
    for i in range(5, 8):
        topo.add_node(f"n{i:02d}", "leaf2", "rack02", sub_domain="tray1")
    topo.add_node("login1", "leaf2")
    topo.add_node("svc1")
    return topo.validate()


def test_path_runs_from_tier_zero_outward():
    topo = small()
    assert topo.path("leaf2") == ["leaf2", "core"]
    assert topo.path(None) == []


def test_compact_form_round_trips_and_groups_nodes_by_hostlist():
    topo = small()
    compact = topo.to_compact()
    assert compact["format"] == COMPACT_FORMAT
    assert {"nodes": "n[01-04]", "switch": "leaf1", "domain": "rack01", "labels": 0} in compact["nodes"]
    assert compact["label_sets"] == [{"zone": "a"}]
    assert compact["switch_names"] == {"leaf2": "L2"}
    assert compact["domain_order"] == ["rack01", "rack02", "rack03"]
    again = Topology.from_compact(json.loads(json.dumps(compact)))
    assert again.to_compact() == compact
    assert again.nodes["n05"].sub_domain == "tray1"
    assert again.switches["leaf2"].name == "L2"


def test_summary_counts_placeholders_and_loose_nodes():
    summary = small().summary()
    assert summary == {"nodes": 9, "switches": 3, "domains": 2, "placeholder_domains": ["rack03"],
                       "nodes_without_domain": 2, "nodes_without_switch": 1, "quarantined": 0}


def test_cycle_is_named():
    topo = Topology()
    topo.add_switch("a", parent="b")
    topo.add_switch("b", parent="c")
    topo.add_switch("c", parent="a")
    topo.add_node("n1", "a")
    with pytest.raises(TopologyError, match="switch cycle: .*a.*b.*c"):
        topo.validate()


def test_second_parent_is_named():
    topo = Topology()
    topo.add_switch("leaf", parent="spine1")
    with pytest.raises(TopologyError, match="switch 'leaf' has two parents: 'spine1' and 'spine2'"):
        topo.add_switch("leaf", parent="spine2")


def test_unknown_switch_references_are_named():
    topo = Topology()
    topo.add_switch("leaf", parent="ghost")
    topo.add_node("n1", "leaf")
    with pytest.raises(TopologyError, match="switch 'leaf' refers to unknown parent switch 'ghost'"):
        topo.validate()
    topo = Topology()
    topo.add_node("n1", "nowhere")
    with pytest.raises(TopologyError, match="node 'n1' refers to unknown switch 'nowhere'"):
        topo.validate()


def test_node_in_two_domains_or_two_leaves_is_named():
    topo = Topology()
    topo.add_node("n1", "leaf1", "rack01")
    with pytest.raises(TopologyError, match="node 'n1' is in two domains: 'rack01' and 'rack02'"):
        topo.add_node("n1", None, "rack02")
    with pytest.raises(TopologyError, match="node 'n1' is under two leaf switches: 'leaf1' and 'leaf9'"):
        topo.add_node("n1", "leaf9", None)


@pytest.mark.parametrize("call, message", [
    (lambda t: t.add_switch(""), "switch: name must be a non-empty string"),
    (lambda t: t.add_node("  "), "node: name must be a non-empty string"),
    (lambda t: t.add_node("n1", domain=""), "domain of node 'n1'"),
    (lambda t: t.add_node("n1", sub_domain="x"), "sub_domain 'x' but no domain"),
    (lambda t: t.declare_domain(None), "domain: name must be"),
])
def test_empty_names_are_rejected(call, message):
    with pytest.raises(TopologyError, match=message):
        call(Topology())


def test_empty_model_is_rejected():
    with pytest.raises(TopologyError, match="the topology is empty"):
        Topology().validate()


def test_domain_declared_twice_is_rejected():
    topo = Topology()
    topo.declare_domain("rack01")
    with pytest.raises(TopologyError, match="domain 'rack01' is declared twice"):
        topo.declare_domain("rack01")


@pytest.mark.parametrize("data, message", [
    ([], "model must be a mapping"),
    ({"format": "v0", "nodes": []}, "model.format must be"),
    ({"format": COMPACT_FORMAT, "nodes": [], "extra": 1}, "model has unknown keys: extra; known: domain_order, format"),
    ({"format": COMPACT_FORMAT, "nodes": {}}, "model.nodes must be a list"),
    ({"format": COMPACT_FORMAT, "nodes": [{"nodes": "n[1-"}]}, r"model.nodes\[0\].nodes: unbalanced"),
    ({"format": COMPACT_FORMAT, "nodes": [{"nodes": "n1", "rack": "x"}]},
     r"model.nodes\[0\] has unknown keys: rack; known: domain, labels, nodes, sub_domain, switch"),
    ({"format": COMPACT_FORMAT, "nodes": [{"nodes": ""}]}, r"model.nodes\[0\].nodes is empty"),
    ({"format": COMPACT_FORMAT, "nodes": []}, "the topology is empty"),
    ({"format": COMPACT_FORMAT, "switches": {"a": 3}, "nodes": [{"nodes": "n1"}]}, r"model.switches\['a'\]"),
    ({"format": COMPACT_FORMAT, "switch_names": {"x": "y"}, "nodes": [{"nodes": "n1"}]}, "unknown switch 'x'"),
    ({"format": COMPACT_FORMAT, "nodes": [{"nodes": "n1", "domain": "a"}, {"nodes": "n1", "domain": "b"}]},
     "node 'n1' is in two domains"),
    ({"format": COMPACT_FORMAT, "nodes": [{"nodes": "n1", "labels": 2}], "label_sets": [{}]},
     r"model.nodes\[0\].labels: no label set 2"),
    ({"format": COMPACT_FORMAT, "nodes": [{"nodes": "n1"}], "label_sets": {}}, "model.label_sets must be a list"),
])
def test_compact_form_errors_name_the_field(data, message):
    with pytest.raises(TopologyError, match=message):
        Topology.from_compact(data)


def test_inline_labels_are_accepted_in_hand_written_models():
    topo = Topology.from_compact({"format": COMPACT_FORMAT, "nodes": [{"nodes": "n[1-2]", "labels": {"a": "b"}}]})
    assert topo.nodes["n2"].labels == {"a": "b"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=6), st.text(alphabet="ab1-_.", min_size=250, max_size=256), st.integers()),
                max_size=6))
def test_names_are_valid_agrees_with_the_one_name_rule(names):
    """names_are_valid tests all names at once, in C; it must say what name_problem says of each."""
    assert names_are_valid(names) == all(name_problem(name) is None for name in names)


def build_one_by_one(groups, max_hosts=None):
    topo = Topology()
    if max_hosts:
        topo.host_budget.max_hosts = max_hosts
    for names, switch, domain, labels in groups:
        for name in names:
            topo.add_node(name, switch, domain, None, labels, source="blocks")
    return topo


def build_by_group(groups, max_hosts=None):
    topo = Topology()
    if max_hosts:
        topo.host_budget.max_hosts = max_hosts
    for names, switch, domain, labels in groups:
        topo.add_nodes(names, switch, domain, None, labels, source="blocks")
    return topo


def outcome(build, groups, max_hosts=None):
    try:
        topo = build(groups, max_hosts)
    except TopologyError as exc:
        return str(exc)
    return {name: (node.switch, node.domain, node.labels) for name, node in topo.nodes.items()}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(["n1", "n2", "n3", "n4", "n 5"]), max_size=4),
                          st.sampled_from([None, "leaf1", "leaf2"]), st.sampled_from([None, "rack1", "rack2"]),
                          st.sampled_from([{}, {"zone": "a"}, {"zone": "b"}, {"zone": 5}])), max_size=4),
       st.sampled_from([None, 2, 3]))
def test_add_nodes_is_add_node_for_each(groups, max_hosts):
    """Same nodes, same merges, same first error (conflicting switch or domain, bad name or label, the limit)."""
    assert outcome(build_by_group, groups, max_hosts) == outcome(build_one_by_one, groups, max_hosts)


def test_add_nodes_copies_labels_per_node():
    topo = Topology()
    topo.add_nodes(["n1", "n2"], labels={"zone": "a"})
    topo.add_node("n1", labels={"row": "1"})
    assert topo.nodes["n2"].labels == {"zone": "a"}
