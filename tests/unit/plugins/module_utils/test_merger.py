"""The Clos merger: Topograph's Merger semantics, one parent per child, ids kept apart."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._providers import _merger
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology


def links(*pairs):
    """``up`` from (lower, upper) pairs."""
    up = {}
    for low, high in pairs:
        up.setdefault(low, set()).add(high)
    return up


def build(leaves, up, warn=None):
    tiers = _merger.collapse(_merger.tiers_bottom_up(leaves, up), warn)
    return _merger.add_tree(Topology(), tiers).validate()


def topograph_merger_graph():
    """topograph: pkg/topology/merger_test.go: 8 leaves in pairs, 8 spines, 4 cores."""
    leaves = {f"L{i}": {"A", "B"} for i in range(1, 5)} | {f"L{i}": {"C", "D"} for i in range(5, 9)}
    up = links(
        ("L1", "S1"), ("L5", "S1"), ("L1", "S2"), ("L5", "S2"), ("L2", "S3"), ("L6", "S3"), ("L2", "S4"), ("L6", "S4"),
        ("L3", "S5"), ("L7", "S5"), ("L3", "S6"), ("L7", "S6"), ("L4", "S7"), ("L8", "S7"), ("L4", "S8"), ("L8", "S8"),
        *[(s, c) for s in ("S1", "S3", "S5", "S7") for c in ("C1", "C2")],
        *[(s, c) for s in ("S2", "S4", "S6", "S8") for c in ("C3", "C4")],
    )
    return leaves, up


def test_redundant_leaves_spines_and_cores_collapse_like_topographs_merger():
    warnings = []
    topology = build(*topograph_merger_graph(), warnings.append)
    assert warnings == []  # a clean Clos: identical switches merge, nothing needs to be moved
    assert topology.to_compact()["switches"] == {"C1": None, "L1": "S1", "L5": "S1", "S1": "C1"}
    assert {name: node.switch for name, node in topology.nodes.items()} == {"A": "L1", "B": "L1", "C": "L5", "D": "L5"}


def test_a_fabric_whose_spines_have_distinct_children_keeps_them_apart():
    leaves = {"L1": {"n1"}, "L2": {"n2"}, "L3": {"n3"}, "L4": {"n4"}}
    up = links(("L1", "S1"), ("L2", "S1"), ("L3", "S2"), ("L4", "S2"))
    topology = build(leaves, up)
    assert topology.to_compact()["switches"] == {"L1": "S1", "L2": "S1", "L3": "S2", "L4": "S2", "S1": None, "S2": None}


def test_the_kept_switch_is_the_first_in_sorted_id_order():
    # Byte order, as Go's sort.Strings: "S10" sorts before "S9".
    leaves = {"L1": {"n1"}, "L2": {"n2"}}
    up = links(("L1", "S9"), ("L2", "S9"), ("L1", "S10"), ("L2", "S10"))
    assert build(leaves, up).to_compact()["switches"] == {"L1": "S10", "L2": "S10", "S10": None}


def test_a_child_linked_to_parents_that_do_not_collapse_stays_under_the_largest_and_is_reported():
    # Spine S2 misses its link to L3: S1 and S2 differ, so L1 and L2 have two parents.
    leaves = {"L1": {"n1"}, "L2": {"n2"}, "L3": {"n3"}}
    up = links(("L1", "S1"), ("L2", "S1"), ("L3", "S1"), ("L1", "S2"), ("L2", "S2"))
    warnings = []
    topology = build(leaves, up, warnings.append)
    assert topology.to_compact()["switches"] == {"L1": "S1", "L2": "S1", "L3": "S1", "S1": None}
    assert warnings == ["2 switches are linked to tier-1 switches that do not collapse into one (the fabric is not "
                        "a clean Clos: a missing link or a host on some rails only); they stay under S1, the one "
                        "with the most children: L[1-2]"]


def test_a_node_on_two_leaves_that_do_not_collapse_keeps_one_leaf():
    # A rail-optimised pod where one rail's leaf also has a management host.
    leaves = {"rail1": {"n1", "n2"}, "rail2": {"n1", "n2", "mgmt"}}
    warnings = []
    topology = build(leaves, {}, warnings.append)
    assert {name: node.switch for name, node in topology.nodes.items()} == {"n1": "rail2", "n2": "rail2", "mgmt": "rail2"}
    assert list(topology.switches) == ["rail2"]  # rail1 lost every node, so it is gone
    assert warnings[0].startswith("2 nodes are linked to leaf switches that do not collapse")


def test_ids_of_two_fabrics_stay_apart_with_a_prefix_and_names_are_kept():
    topology = Topology()
    for prefix in ("1.", "2."):
        tiers = _merger.collapse(_merger.tiers_bottom_up({"node0": {f"h{prefix[0]}"}}, {}))
        _merger.add_tree(topology, tiers, {"node0": f"leaf-{prefix[0]}"}, prefix)
    assert {sid: sw.name for sid, sw in topology.switches.items()} == {"1.node0": "leaf-1", "2.node0": "leaf-2"}


def test_shared_display_names_are_dropped_so_slurm_sees_unique_switch_names():
    topology = Topology()
    topology.add_switch("a", name="SwitchX")
    topology.add_switch("b", name="SwitchX")
    topology.add_switch("c", name="spine")
    warnings = []
    _merger.keep_unique_names(topology, warnings.append)
    assert {sid: sw.name for sid, sw in topology.switches.items()} == {"a": None, "b": None, "c": "spine"}
    assert warnings == ["switches a, b share the name 'SwitchX'; they keep their ids as names"]


def test_a_large_clos_collapses_to_one_spine_per_pod():
    # 64 pods x 32 leaves, each leaf with 16 nodes, linked to its pod's 16 spines.
    leaves, up = {}, {}
    for pod in range(64):
        for leaf in range(32):
            leaf_id = f"p{pod:02d}l{leaf:02d}"
            leaves[leaf_id] = {f"n{pod:02d}{leaf:02d}{n:02d}" for n in range(16)}
            up[leaf_id] = {f"p{pod:02d}s{s:02d}" for s in range(16)}
    warnings = []
    topology = build(leaves, up, warnings.append)
    assert len(topology.nodes) == 64 * 32 * 16 and warnings == []
    assert sorted(sid for sid, sw in topology.switches.items() if sw.parent is None) == [f"p{p:02d}s00" for p in range(64)]
