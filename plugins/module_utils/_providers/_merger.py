# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn a fabric graph (a Clos with redundant spines) into the model's switch tree.

Fabric providers (``infiniband``, ``netq``) find the leaf switches of the cluster's nodes,
then the switches above them tier by tier (``tiers_bottom_up``). ``collapse`` applies
Topograph's Merger (topograph: pkg/topology/merger.go): in each tier, switches whose
children (after the merges below) are the same set collapse into the first one in sorted-id
order, so the redundant spines of a Clos become one switch of a tree. Topograph compares
each signature with every one seen before (quadratic per tier); here a signature is a
frozenset used as a dict key, so a tier costs its number of links plus one sort.

A child still linked to two parents after the merge (a missing cable, an extra host on one
rail) would not be a tree: it stays under the parent with the most children (ties: sorted
id) and the change is reported.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist


def tiers_bottom_up(leaves, up):
    """Tiers of the fabric, leaves first: ``[{switch: children}, ...]``.

    ``leaves`` maps each leaf switch to the node names under it; ``up`` maps a switch to
    the switches that may sit above it. Tier k+1 is every switch not placed yet that is
    above a tier-k switch; its children are those tier-k switches. A switch is placed once,
    at the lowest tier that reaches it.
    """
    tiers = [{leaf: set(nodes) for leaf, nodes in leaves.items() if nodes}]
    placed = set(tiers[0])
    while True:
        upper = {}
        for child in tiers[-1]:
            for parent in up.get(child, ()):
                if parent not in placed:
                    upper.setdefault(parent, set()).add(child)
        if not upper:
            return tiers
        placed.update(upper)
        tiers.append(upper)


def collapse(tiers, warn=None):
    """Merge identical switches tier by tier and leave every child with one parent.

    Returns tiers of the same shape holding only the kept switches, whose children are
    kept switches of the tier below (node names for tier 0).
    """
    warn = warn or (lambda message: None)
    result = []
    representative = None  # id in the tier below -> the kept switch standing for it (or None)
    for level, tier in enumerate(tiers):
        first_with = {}
        kept = {}
        stands_for = {}
        for switch_id in sorted(tier):
            children = tier[switch_id]
            if representative is not None:
                children = {representative[c] for c in children if representative.get(c) is not None}
            if not children:
                stands_for[switch_id] = None
                continue
            signature = frozenset(children)
            first = first_with.setdefault(signature, switch_id)
            stands_for[switch_id] = first
            if first == switch_id:
                kept[switch_id] = set(children)
        _one_parent_each(kept, level, warn)
        representative = {sid: (rep if rep in kept else None) for sid, rep in stands_for.items()}
        result.append(kept)
    return result


def _one_parent_each(kept, level, warn):
    parents = {}
    for parent in sorted(kept):
        for child in kept[parent]:
            parents.setdefault(child, []).append(parent)
    size = {parent: len(children) for parent, children in kept.items()}
    moved = {}
    for child, candidates in parents.items():
        if len(candidates) < 2:
            continue
        chosen = min(candidates, key=lambda p: (-size[p], p))
        for parent in candidates:
            if parent != chosen:
                kept[parent].discard(child)
        moved.setdefault(chosen, []).append(child)
    for parent in [p for p, children in kept.items() if not children]:
        del kept[parent]
    for chosen, children in sorted(moved.items()):
        what, above = ("nodes", "leaf switches") if level == 0 else ("switches", f"tier-{level} switches")
        warn(f"{len(children)} {what} are linked to {above} that do not collapse into one "
             f"(the fabric is not a clean Clos: a missing link or a host on some rails only); they stay under "
             f"{chosen}, the one with the most children: {hostlist.compress(children)}")


def add_tree(topology, tiers, names=None, prefix=""):
    """Add the collapsed tiers to ``topology``: switches with parents, nodes under their leaf.

    ``prefix`` is put before every switch id (to keep ids of separate fabrics apart);
    ``names`` maps an unprefixed switch id to its display name.
    """
    names = names or {}
    for level in range(len(tiers) - 1, -1, -1):
        for switch_id in sorted(tiers[level]):
            full_id = prefix + switch_id
            topology.add_switch(full_id, name=names.get(switch_id), source=f"fabric switch {switch_id!r}")
            for child in sorted(tiers[level][switch_id]):
                if level == 0:
                    topology.add_node(child, switch=full_id, source=f"fabric leaf {switch_id!r}")
                else:
                    topology.add_switch(prefix + child, parent=full_id, source=f"fabric switch {child!r}")
    return topology


def keep_unique_names(topology, warn=None):
    """Drop display names two switches share: Slurm needs one SwitchName per switch."""
    holders = {}
    for switch in topology.switches.values():
        if switch.name is not None:
            holders.setdefault(switch.name, []).append(switch.id)
    for name, ids in sorted(holders.items()):
        if len(ids) > 1:
            for switch_id in ids:
                topology.switches[switch_id].name = None
            if warn:
                warn(f"switches {', '.join(sorted(ids))} share the name {name!r}; they keep their ids as names")
    return topology
