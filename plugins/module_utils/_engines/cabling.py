# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Expected versus observed: the designed topology against the discovered one, node by node and link by link.

Names of switches and domains differ between a design and a discovery (a design says ``su1-leaf-2``, the
fabric a GUID or ``MF0;A09-P1-IBLEAF-01-01``; a design says ``rack07``, nvidia-smi a cluster UUID), and a
provider collapses the redundant spines of a Clos into one of them. So switches and domains are matched
by what they hold, not by their names: each observed leaf stands for the designed leaf that holds most of
its nodes (ties: the same name, then the first in natural order), each switch above it for the designed
switch that holds most of the switches it stands above, each observed NVLink domain for the designed
domain that holds most of its trays. A node is under another leaf when the designed leaf its observed leaf
stands for is not the one the design puts it under; the same, tier by tier, for switches and domains. Names
appear in the findings only, so an operator sees both sides' words.

The rail check needs the switch each HCA of a node is cabled to (``Topology.hca_switches``, which the
``infiniband`` provider records): in a rail-optimised fabric HCA i of every node of a scalable unit sits on
one leaf, rail i's. A group is the nodes whose HCAs share leaves (joined through any common leaf); rail i's
leaf is the one most of the group's HCA i land on, and a node whose HCA i lands elsewhere is reported with
both leaves. With fewer than three nodes on a rail no majority can say which side is wrong: nothing is reported.

This engine only compares: it never changes a map. Findings are data (kind, subject, expected, observed,
message); the module reports them, a metric counts them.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec

KINDS = (
    "node_missing",        # designed, not discovered
    "node_quarantined",    # designed, discovered with unusable data (left out of the map)
    "node_unexpected",     # discovered, not designed
    "node_unattached",     # designed under a leaf, discovered under none
    "node_moved",          # under another leaf than the design says
    "switch_moved",        # a switch under another switch than the design says
    "switch_missing",      # a designed switch that nothing discovered stands for
    "switch_unexpected",   # a discovered switch that stands for no designed one
    "domain_moved",        # a tray in another NVLink domain than the design says
    "tray_moved",          # a tray in another chassis, slot or tray index than the design says
    "rail_crossed",        # HCA i of a node on another leaf than rail i's
)
MIN_RAIL_NODES = 3
LOCATION_FIELDS = ("slot_number", "tray_index")


@dataclasses.dataclass(frozen=True)
class CablingOptions:
    """What topology_compare checks (``CABLING``), built by ``CABLING.build``."""

    rails: bool
    max_findings: int


# topology_compare's own options (documented in the module).
CABLING = ArgumentSpec({
    "rails": {"type": "bool", "default": True},
    "max_findings": {"type": "int", "default": 1000},
}, options_class=CablingOptions)


def _finding(kind, subject, expected, observed, message):
    return {"kind": kind, "subject": subject, "expected": expected, "observed": observed, "message": message}


def _switch_label(topology, switch_id):
    switch = topology.switches.get(switch_id)
    return switch.name or switch.id if switch is not None else switch_id


def _best(counts, own_name, names):
    """The key of ``counts`` with the highest count; ties: the one named ``own_name``, then natural order."""
    top = max(counts.values())
    tied = [key for key, count in counts.items() if count == top]
    same = [key for key in tied if names(key) == own_name]
    return same[0] if same else min(tied, key=lambda key: hostlist.natural_key(names(key)))


def _tiers(topology):
    """Switch ids by tier from the leaves up (a switch's tier: 0 above nodes, parent's = child's + 1)."""
    tier = {}
    for node in topology.nodes.values():
        if node.switch is not None:
            tier[node.switch] = 0
    frontier = set(tier)
    while frontier:
        above = set()
        for switch_id in frontier:
            parent = topology.switches[switch_id].parent
            if parent is not None and tier.get(parent, -1) < tier[switch_id] + 1:
                tier[parent] = tier[switch_id] + 1
                above.add(parent)
        frontier = above
    for switch_id in topology.switches:  # switches above no node: by their height over the tree's leaves
        tier.setdefault(switch_id, 0)
    levels = {}
    for switch_id, level in tier.items():
        levels.setdefault(level, []).append(switch_id)
    return [sorted(levels.get(level, []), key=hostlist.natural_key) for level in range(max(levels, default=-1) + 1)]


def _match_switches(expected, observed):
    """observed switch id -> the expected switch id it stands for (absent: it stands for none)."""
    stands_for = {}
    observed_children = {}
    for switch in observed.switches.values():
        if switch.parent is not None:
            observed_children.setdefault(switch.parent, []).append(switch.id)
    observed_nodes = observed.nodes_by_switch()
    for level in _tiers(observed):
        for switch_id in level:
            counts = {}
            for name in observed_nodes.get(switch_id, ()):
                designed = expected.nodes.get(name)
                if designed is not None and designed.switch is not None:
                    counts[designed.switch] = counts.get(designed.switch, 0) + 1
            for child in observed_children.get(switch_id, ()):
                designed_child = stands_for.get(child)
                parent = expected.switches[designed_child].parent if designed_child is not None else None
                if parent is not None:
                    counts[parent] = counts.get(parent, 0) + 1
            if counts:
                stands_for[switch_id] = _best(counts, _switch_label(observed, switch_id),
                                              lambda key: _switch_label(expected, key))
    return stands_for


def _match_domains(expected, observed):
    """observed domain -> the expected domain holding most of its trays."""
    counts = {}
    for node in observed.nodes.values():
        designed = expected.nodes.get(node.name)
        if node.domain is not None and designed is not None and designed.domain is not None:
            per = counts.setdefault(node.domain, {})
            per[designed.domain] = per.get(designed.domain, 0) + 1
    return {domain: _best(per, domain, str) for domain, per in counts.items()}


def _members(by_switch, switch_id, limit=4):
    names = sorted(by_switch.get(switch_id, ()), key=hostlist.natural_key)
    return hostlist.compress(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _node_findings(expected, observed, stands_for):
    findings = []
    by_switch = observed.nodes_by_switch()
    designed_names = sorted(expected.nodes, key=hostlist.natural_key)
    for name in designed_names:
        designed = expected.nodes[name]
        seen = observed.nodes.get(name)
        if seen is None:
            record = observed.quarantined.get(name)
            if record is not None:
                findings.append(_finding("node_quarantined", name, _switch_label(expected, designed.switch)
                                         if designed.switch else None, None,
                                         f"node {name}: designed, but its discovered data was left out ({record.reason})"))
            else:
                findings.append(_finding("node_missing", name, _switch_label(expected, designed.switch)
                                         if designed.switch else None, None,
                                         f"node {name}: designed, not discovered"))
            continue
        if designed.switch is None:
            continue
        want = _switch_label(expected, designed.switch)
        if seen.switch is None:
            findings.append(_finding("node_unattached", name, want, None,
                                     f"node {name}: the design puts it under {want}; the discovery under no switch"))
        elif stands_for.get(seen.switch) != designed.switch:
            got = _switch_label(observed, seen.switch)
            findings.append(_finding("node_moved", name, want, got,
                                     f"node {name}: the design puts it under {want}; it is cabled to {got} "
                                     f"(with {_members(by_switch, seen.switch)})"))
    for name in sorted(set(observed.nodes) - set(expected.nodes), key=hostlist.natural_key):
        node = observed.nodes[name]
        got = _switch_label(observed, node.switch) if node.switch else None
        findings.append(_finding("node_unexpected", name, None, got,
                                 f"node {name}: discovered{f' under {got}' if got else ''}, not in the design"))
    return findings


def _switch_findings(expected, observed, stands_for):
    findings = []
    for switch_id in sorted(observed.switches, key=hostlist.natural_key):
        switch = observed.switches[switch_id]
        label = _switch_label(observed, switch_id)
        designed = stands_for.get(switch_id)
        if designed is None:
            findings.append(_finding("switch_unexpected", label, None, label,
                                     f"switch {label}: discovered, holds nothing the design places"))
            continue
        want_parent = expected.switches[designed].parent
        got_parent = switch.parent
        if want_parent is None or got_parent is None:
            continue  # a top of one side: the other side's extra tiers are not a cabling fault
        if stands_for.get(got_parent) != want_parent:
            want, got = _switch_label(expected, want_parent), _switch_label(observed, got_parent)
            findings.append(_finding("switch_moved", label, want, got,
                                     f"switch {label} (designed {_switch_label(expected, designed)}): the design "
                                     f"puts it under {want}; it is cabled to {got}"))
    matched = set(stands_for.values())
    for switch_id in sorted(set(expected.switches) - matched, key=hostlist.natural_key):
        label = _switch_label(expected, switch_id)
        findings.append(_finding("switch_missing", label, label, None,
                                 f"switch {label}: designed, no discovered switch holds what it holds"))
    return findings


def _place_findings(expected, observed):
    findings = []
    domains = _match_domains(expected, observed)
    chassis = {}
    for name, place in observed.locations.items():
        designed = expected.locations.get(name, {})
        if place.get("chassis_serial_number") and designed.get("chassis_serial_number"):
            per = chassis.setdefault(place["chassis_serial_number"], {})
            per[designed["chassis_serial_number"]] = per.get(designed["chassis_serial_number"], 0) + 1
    chassis = {serial: _best(per, serial, str) for serial, per in chassis.items()}
    for name in sorted(set(expected.nodes) & set(observed.nodes), key=hostlist.natural_key):
        designed, seen = expected.nodes[name], observed.nodes[name]
        if designed.domain is not None and seen.domain is not None and domains.get(seen.domain) != designed.domain:
            findings.append(_finding("domain_moved", name, designed.domain, seen.domain,
                                     f"node {name}: the design puts it in NVLink domain {designed.domain}; it is in "
                                     f"{seen.domain}, which holds trays of {domains.get(seen.domain)}"))
        want, got = expected.locations.get(name, {}), observed.locations.get(name, {})
        differs = [field for field in LOCATION_FIELDS if field in want and field in got and want[field] != got[field]]
        serial_want, serial_got = want.get("chassis_serial_number"), got.get("chassis_serial_number")
        if serial_want and serial_got and chassis.get(serial_got) != serial_want:
            differs.insert(0, "chassis_serial_number")
        if differs:
            findings.append(_finding(
                "tray_moved", name, {field: want.get(field) for field in differs},
                {field: got.get(field) for field in differs},
                f"node {name}: the design puts it at " + ", ".join(f"{field} {want.get(field)}" for field in differs)
                + "; the hardware says " + ", ".join(f"{field} {got.get(field)}" for field in differs)))
    return findings


def _rail_groups(hca_switches):
    """Nodes joined through any leaf they share (union-find over the leaves)."""
    parent = {}

    def find(item):
        while parent.setdefault(item, item) != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    for node, ports in hca_switches.items():
        for leaf in ports.values():
            parent[find(("leaf", leaf))] = find(("node", node))
    groups = {}
    for node in hca_switches:
        groups.setdefault(find(("node", node)), []).append(node)
    return list(groups.values())


def rail_findings(hca_switches):
    """``rail_crossed`` findings from node -> {HCA name: leaf name}."""
    findings = []
    for group in _rail_groups(hca_switches):
        rails = {}
        for node in group:
            for hca, leaf in hca_switches[node].items():
                rails.setdefault(hca, {}).setdefault(leaf, []).append(node)
        for hca in sorted(rails, key=hostlist.natural_key):
            by_leaf = rails[hca]
            if sum(len(nodes) for nodes in by_leaf.values()) < MIN_RAIL_NODES:
                continue
            top = max(len(nodes) for nodes in by_leaf.values())
            leaders = [leaf for leaf, nodes in by_leaf.items() if len(nodes) == top]
            if len(leaders) > 1:
                continue  # no majority: not a rail-optimised group for this HCA
            rail_leaf = leaders[0]
            for leaf in sorted(by_leaf, key=hostlist.natural_key):
                if leaf == rail_leaf:
                    continue
                for node in sorted(by_leaf[leaf], key=hostlist.natural_key):
                    findings.append(_finding(
                        "rail_crossed", f"{node} {hca}", rail_leaf, leaf,
                        f"node {node}: {hca} is cabled to {leaf}; {hca} of the other "
                        f"{top} nodes of its group is on {rail_leaf} (rail {hca}'s leaf)"))
    return findings


def compare(expected, observed, options):
    """``{"findings": [...], "counts": {kind: n}, "mismatches": n, "truncated": bool}``: ``expected`` (the design)
    against ``observed`` (the discovery), both validated Topology objects; ``options`` is ``CablingOptions``."""
    stands_for = _match_switches(expected, observed)
    findings = _node_findings(expected, observed, stands_for)
    findings += _switch_findings(expected, observed, stands_for)
    findings += _place_findings(expected, observed)
    if options.rails:
        findings += rail_findings(getattr(observed, "hca_switches", {}) or {})
    counts = {kind: 0 for kind in KINDS}
    for finding in findings:
        counts[finding["kind"]] += 1
    limit = max(options.max_findings, 0)
    return {"findings": findings[:limit], "counts": counts, "mismatches": len(findings),
            "truncated": len(findings) > limit}
