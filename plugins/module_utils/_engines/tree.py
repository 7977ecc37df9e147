# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Breadth-first walk of the switch forest, shared by the tree, block and graph engines.

Order follows Topograph (pkg/translate/topology.go): roots and children in sorted id
order (byte order, as Go's sort.Strings). Nodes without a switch hang off a pseudo root
switch (``no-topology`` by default), so they stay out of the real tree.
"""

from __future__ import annotations

from collections import deque

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError

NO_TOPOLOGY = "no-topology"


class TreeSwitch:
    __slots__ = ("id", "name", "children", "nodes")

    def __init__(self, switch_id, name, children, nodes):
        self.id = switch_id
        self.name = name
        self.children = children
        self.nodes = nodes


def walk(topology, no_topology_switch=NO_TOPOLOGY, node_filter=None):
    """TreeSwitch records in breadth-first order.

    ``node_filter`` (a set) prunes the tree to those nodes: a switch is kept only if it
    has kept nodes or kept children. Without a filter every switch is kept.
    """
    children = topology.children()
    nodes_by_switch = topology.nodes_by_switch()
    orphans = nodes_by_switch.pop(None, [])
    if no_topology_switch and no_topology_switch in topology.switches and orphans:
        raise TopologyError(f"switch id {no_topology_switch!r} is reserved for nodes without a switch")

    def members(switch_id):
        names = nodes_by_switch.get(switch_id, [])
        if node_filter is not None:
            names = [name for name in names if name in node_filter]
        return sorted(names)

    kept = None
    if node_filter is not None:
        kept = set()
        for switch_id, names in nodes_by_switch.items():
            if any(name in node_filter for name in names):
                for ancestor in topology.path(switch_id):
                    kept.add(ancestor)

    roots = sorted(children.get(None, []))
    orphan_members = sorted(n for n in orphans if node_filter is None or n in node_filter)
    records = []
    queue = deque(roots)
    if no_topology_switch and orphan_members:
        # The pseudo switch sorts among the real roots like any other id.
        queue = deque(sorted(roots + [no_topology_switch]))
    while queue:
        switch_id = queue.popleft()
        if switch_id == no_topology_switch and switch_id not in topology.switches:
            records.append(TreeSwitch(switch_id, None, [], orphan_members))
            continue
        if kept is not None and switch_id not in kept:
            continue
        child_ids = sorted(c for c in children.get(switch_id, []) if kept is None or c in kept)
        records.append(TreeSwitch(switch_id, topology.switches[switch_id].name, child_ids, members(switch_id)))
        queue.extend(child_ids)
    return records


def node_order(records):
    """Node names in the order a breadth-first walk meets them."""
    return [name for record in records for name in record.nodes]
