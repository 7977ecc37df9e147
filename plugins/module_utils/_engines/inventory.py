# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible inventory groups and host variables from the topology (the ``topology`` inventory plugin).

Every node is a host. Each accelerator domain is a group (``<domain_prefix><domain>``) and each
switch is a group (``<switch_prefix><switch name>``) whose children are the groups of the switches
below it, so a spine's group holds every host under it. Names are made group-safe: every
character other than an ASCII letter, digit or ``_`` becomes ``_`` (``nvl-r01`` ->
``domain_nvl_r01``), and a leading digit gets a ``_`` in front. Two names that become the same
group are an error naming both: one group would silently target two racks.

Pure: no Ansible import, no disk.
"""

from __future__ import annotations

import re

from ansible_collections.aifactory.topology.plugins.module_utils import _hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError

DOMAIN_PREFIX = "domain_"
SWITCH_PREFIX = "switch_"
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
_RESERVED = frozenset({"all", "ungrouped"})


def group_safe(name):
    """``name`` with every character a group name cannot hold replaced by ``_``."""
    safe = _UNSAFE.sub("_", name)
    return "_" + safe if safe[:1].isdigit() else safe


def switch_label(topology, switch_id):
    """What people call a switch: its display name, else its id."""
    return topology.switches[switch_id].name or switch_id


class InventoryLayout:
    """Groups (name -> hosts, children) and host variables for one topology."""

    def __init__(self):
        self.group_hosts: dict[str, list[str]] = {}
        self.group_children: dict[str, list[str]] = {}
        self.hostvars: dict[str, dict] = {}
        self._origin: dict[str, str] = {}  # group name -> what it was made from, for collision errors

    def claim(self, group, origin):
        if group in _RESERVED:
            raise TopologyError(f"{origin} would become the reserved group {group!r}; set a group prefix")
        earlier = self._origin.get(group)
        if earlier is not None and earlier != origin:
            raise TopologyError(f"{earlier} and {origin} both become group {group!r}; rename one, or set "
                                "domain_prefix/switch_prefix so they differ")
        self._origin[group] = origin
        self.group_hosts.setdefault(group, [])
        self.group_children.setdefault(group, [])
        return group


def layout(topology, domain_prefix=DOMAIN_PREFIX, switch_prefix=SWITCH_PREFIX, domain_groups=True,
           switch_groups=True):
    """The InventoryLayout of a validated Topology; groups and hosts in natural order."""
    result = InventoryLayout()
    switch_group = {}
    if switch_groups:
        for switch_id in sorted(topology.switches, key=hostlist.natural_key):
            label = switch_label(topology, switch_id)
            switch_group[switch_id] = result.claim(group_safe(switch_prefix + label), f"switch {label!r}")
        for switch_id in sorted(topology.switches, key=hostlist.natural_key):
            parent = topology.switches[switch_id].parent
            if parent is not None:
                result.group_children[switch_group[parent]].append(switch_group[switch_id])
    domain_group = {}
    if domain_groups:
        for domain in list(topology.domain_order) + sorted(topology.domains(), key=hostlist.natural_key):
            if domain not in domain_group:
                domain_group[domain] = result.claim(group_safe(domain_prefix + domain), f"domain {domain!r}")
    for name in sorted(topology.nodes, key=hostlist.natural_key):
        node = topology.nodes[name]
        path = topology.path(node.switch)
        result.hostvars[name] = {
            "topology_domain": node.domain,
            "topology_sub_domain": node.sub_domain,
            "topology_switches": [switch_label(topology, switch_id) for switch_id in path],
        }
        if node.switch is not None and switch_groups:
            result.group_hosts[switch_group[node.switch]].append(name)
        if node.domain is not None and domain_groups:
            result.group_hosts[domain_group[node.domain]].append(name)
    return result
