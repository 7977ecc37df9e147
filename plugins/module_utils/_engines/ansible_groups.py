# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible inventory groups and host variables from the topology (the ``topology`` inventory plugin).

Every node is a host. Each accelerator domain is a group (``<domain_prefix><domain>``) and each
switch is a group (``<switch_prefix><switch name>``) whose children are the groups of the switches
below it, so a spine's group holds every host under it. Names are made group-safe: every
character other than an ASCII letter, digit or ``_`` becomes ``_`` (``nvl-r01`` ->
``domain_nvl_r01``), and a leading digit gets a ``_`` in front. Two names that become the same
group are an error naming both: one group would silently target two racks.

A node whose name Ansible treats specially is no host: it is skipped with a warning naming it
(one bad node description must not take the whole inventory down). Such names are an IP address
(an HCA described ``127.0.0.1 mlx5_5`` would put the controller itself in a leaf group), a name
of the controller itself (``localhost``, ``127.1``), Ansible's own groups ``all`` and
``ungrouped`` (Ansible ends in an unexpected exception), a group of this inventory
(``domain_rack02``: ``--limit`` would pick the group), and a name host patterns cannot address
(``~``, ``!``, ``&``, ``@`` first; ``*``, ``?`` or ``:`` anywhere). Only when every node is
refused does the whole source fail.

Pure: no Ansible import, no disk.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, clip

DOMAIN_PREFIX = "domain_"
SWITCH_PREFIX = "switch_"
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
_RESERVED = frozenset({"all", "ungrouped"})
# Names resolvers give the controller itself (glibc's /etc/hosts defaults, RFC 6761's .localhost).
_LOCALHOST_NAMES = frozenset({"localhost", "localhost.localdomain", "localhost4", "localhost4.localdomain4",
                              "localhost6", "localhost6.localdomain6", "ip6-localhost", "ip6-loopback"})
# A part of an IPv4 address as inet_aton (getaddrinfo, ssh) reads it: hex, octal or decimal.
_INET_ATON_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")
_PATTERN_FIRST = "~!&@"  # a regexp, an exclusion, an intersection, a file of hosts (--limit @file)
_PATTERN_ANYWHERE = "*?:"  # globs, and the separator of host patterns
MAX_SKIP_WARNINGS = 20  # one warning per skipped node up to this many, then one for the rest
GROUP_CLASH = "is the name of a group of this inventory too (--limit and host patterns would pick the group)"


def group_safe(name):
    """``name`` with every character a group name cannot hold replaced by ``_``."""
    safe = _UNSAFE.sub("_", name)
    return "_" + safe if safe[:1].isdigit() else safe


def inet_aton(name):
    """The IPv4 address the system resolver reads in ``name`` (``127.1``, ``0x7f000001``, ``0``), or None."""
    parts = name.split(".")
    if len(parts) > 4 or not all(_INET_ATON_PART.fullmatch(part) for part in parts):
        return None
    values = [int(part[2:] or "0", 16) if part[:2] in ("0x", "0X") else int(part, 8) if part[:1] == "0" else int(part)
              for part in parts]
    last_bits = 8 * (5 - len(parts))
    if any(value > 255 for value in values[:-1]) or values[-1] >= 1 << last_bits:
        return None
    address = values[-1]
    for index, value in enumerate(values[:-1]):
        address |= value << (24 - 8 * index)
    return ipaddress.IPv4Address(address)


def host_name_problem(name, groups=()):
    """Why the node ``name`` cannot be an Ansible host, or None; ``groups``: the inventory's group names."""
    lowered = name.lower().rstrip(".")
    if name in _RESERVED:
        return f"is the name of Ansible's own group {name!r}"
    if name in groups:
        return GROUP_CLASH
    if lowered in _LOCALHOST_NAMES or lowered.endswith(".localhost"):
        return "names the controller itself (a localhost name)"
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        address = inet_aton(name)
        if address is not None and (address.is_loopback or address.is_unspecified):
            return f"names the controller itself (the resolver reads it as {address})"
    else:
        itself = " (the controller itself)" if address.is_loopback or address.is_unspecified else ""
        return f"is an IP address{itself}, not a host name (a node description that names no host?)"
    if name[0] in _PATTERN_FIRST or any(char in name for char in _PATTERN_ANYWHERE):
        return "cannot be named in a host pattern (it starts with ~ ! & @ or holds * ? :)"
    return None


def switch_label(topology, switch_id):
    """What people call a switch: its display name, else its id."""
    return topology.switches[switch_id].name or switch_id


class InventoryLayout:
    """Groups (name -> hosts, children) and host variables for one topology."""

    def __init__(self):
        self.group_hosts: dict[str, list[str]] = {}
        self.group_children: dict[str, list[str]] = {}
        self.hostvars: dict[str, dict] = {}
        self.skipped: dict[str, str] = {}  # node -> why it is no host
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
           switch_groups=True, warn=None):
    """The InventoryLayout of a validated Topology; groups and hosts in natural order.

    Nodes whose names Ansible treats specially (host_name_problem) are skipped, each with a
    warning through ``warn``; a topology whose every node is skipped is an error.
    """
    warn = warn or (lambda message: None)
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
        problem = host_name_problem(name, result.group_hosts)
        if problem is not None:
            result.skipped[name] = problem
            continue
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
    _report_skipped(result.skipped, len(topology.nodes), warn)
    return result


def skip_message(name, problem):
    """The warning for a node that is not made a host."""
    return f"node {clip(name)} is not made a host: its name {problem}"


def _report_skipped(skipped, nodes, warn):
    if skipped and len(skipped) == nodes:
        first = next(iter(skipped.items()))
        raise TopologyError(f"every node ({nodes}) has a name Ansible treats specially, so the inventory would be "
                            f"empty; the first, {clip(first[0])}, {first[1]}")
    for name, problem in list(skipped.items())[:MAX_SKIP_WARNINGS]:
        warn(skip_message(name, problem))
    if len(skipped) > MAX_SKIP_WARNINGS:
        rest = list(skipped)[MAX_SKIP_WARNINGS:]
        warn(f"{len(rest)} more nodes are not made hosts for such names: "
             f"{', '.join(clip(name, 30) for name in rest[:10])}{', ...' if len(rest) > 10 else ''}")
