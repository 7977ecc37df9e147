"""The NetQ topology graph parser on Topograph's fixture and its Clos test graph.

The HTTP side (login, premises, retries, TLS, NMX) is tested end to end against a server in
tests/integration/test_provider_netq.py.
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import HttpError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import netq

from ...conftest_paths import FIXTURES

GRAPH = json.loads((FIXTURES / "netq-topologyGraph.json").read_text())


def graph(nodes, links):
    return [{"nodes": [{"compounded_nodes": [{"id": i, "name": i, "tier": t} for i, t in nodes]}],
             "links": [{"id": link} for link in links]}]


def test_the_fixture_graph_is_a_spine_over_two_leaves_named_by_netq():
    topology = netq.add_graph(Topology(), GRAPH).validate()
    assert topology.to_compact()["switches"] == {"node0": "node3", "node3": None, "node9": "node3"}
    assert slurm.render_tree_conf(topology) == (
        "# net-unit-s1=node3\nSwitchName=net-unit-s1 Switches=net-unit-l[1-2]\n"
        "# net-unit-l1=node0\nSwitchName=net-unit-l1 Nodes=dgx-[01-04]\n"
        "# net-unit-l2=node9\nSwitchName=net-unit-l2 Nodes=dgx-[05-08]\n")


def test_topographs_clos_graph_collapses_to_one_path_for_the_requested_host():
    """topograph: pkg/providers/netq/netq_test.go TestParseNetq (link ids list the lower end first or not)."""
    hosts = [(h, -1) for h in "ABCD"]
    switches = [(f"L{i}", 1) for i in range(1, 9)] + [(f"S{i}", 2) for i in range(1, 9)] + [(f"C{i}", 3) for i in range(1, 5)]
    leaf_spine = ((1, 1), (1, 2), (5, 1), (5, 2), (2, 3), (2, 4), (6, 3), (6, 4),
                  (3, 5), (3, 6), (7, 5), (7, 6), (4, 7), (4, 8), (8, 7), (8, 8))
    links = ([f"{h}-*-L{i}" for h in "AB" for i in range(1, 5)] + [f"{h}-*-L{i}" for h in "CD" for i in range(5, 9)]
             + [f"L{leaf}-*-S{spine}" for leaf, spine in leaf_spine]
             + [f"S{s}-*-C{c}" for s in (1, 3, 5, 7) for c in (1, 2)] + [f"C{c}-*-S{s}" for s in (2, 4, 6, 8) for c in (3, 4)])
    topology = netq.add_graph(Topology(), graph(hosts + switches, links), wanted={"A"}).validate()
    assert topology.to_compact()["switches"] == {"C1": None, "L1": "S1", "S1": "C1"}
    assert topology.path(topology.nodes["A"].switch) == ["L1", "S1", "C1"]


def test_links_that_do_not_go_up_a_tier_are_ignored_and_reported():
    warnings = []
    topology = netq.add_graph(Topology(), graph([("h1", -1), ("l1", 1), ("l2", 1)], ["h1-*-l1", "l1-*-l2", "l1-*-ghost", "bad"]),
                              warn=warnings.append)
    assert topology.to_compact()["switches"] == {"l1": None}
    assert warnings == ["NetQ topology graph: 3 links are ignored (unknown node or both ends in one tier): "
                        "l1-*-l2, l1-*-ghost, bad"]


@pytest.mark.parametrize("body, message", [
    ([{}, {}], r"the topology graph must be a list with one object, got list of 2"),
    ({"nodes": []}, r"the topology graph must be a list with one object, got dict"),
    ([{"links": []}], r"NetQ topology graph: missing nodes"),
    ([{"nodes": [{"compounded_nodes": [{"id": "a", "name": "a"}]}], "links": []}],
     r"nodes\[0\].compounded_nodes\[0\]: missing tier"),
    ([{"nodes": [{"compounded_nodes": [{"id": "a", "name": "a", "tier": "1"}]}], "links": []}],
     r"nodes\[0\].compounded_nodes\[0\]: tier must be an integer, got '1'"),
    ([{"nodes": [{"compounded_nodes": "x"}], "links": []}], r"nodes\[0\]: compounded_nodes must be a list of objects"),
    ([{"nodes": [], "links": [{"source": "a"}]}], r"links\[0\]: missing id"),
])
def test_malformed_graphs_are_errors_naming_the_field(body, message):
    with pytest.raises(HttpError, match=message):  # a malformed answer is the API's fault
        netq.add_graph(Topology(), body)
