# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Topology declared in Ansible inventory variables, for sites with no discovery source yet.

params (declared and validated in ``_specs.INVENTORY_PARAMS``):
  domains:   racks (accelerator domains) in physical order: [{name, nodes, switch, sub_domains}]
             A domain without nodes is a declared rack whose nodes are not there yet: it
             becomes a placeholder block at its position.
  switches:  switch id -> parent id (or null), or -> {parent, name}
  nodes:     node groups outside any domain (service nodes): [{nodes, switch}]
  hosts:     hostname -> {domain, switch, sub_domain}, e.g. built from hostvars
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, check_known_keys, clip


def _expand(value, where, budget=None):
    """Names of a hostlist option; ``budget`` (the topology's) bounds the whole run's expansion."""
    if value is None:
        return []
    if not isinstance(value, (str, list)):
        raise TopologyError(f"{where} must be a hostlist string or a list of them, got {clip(value)}")
    try:
        return budget.expand(value) if budget is not None else hostlist.expand(value)
    except hostlist.HostlistError as exc:
        raise TopologyError(f"{where}: {exc}") from None


def _list_of_mappings(value, where):
    if value is None:
        return []
    if not all(isinstance(item, dict) for item in value):
        raise TopologyError(f"{where} must be a list of mappings")
    return value


def discover(params, creds, warn):
    topo = Topology()
    switches = params.get("switches") or {}
    for switch_id, spec in switches.items():
        where = f"params.switches.{str(switch_id)[:60]}"
        if isinstance(spec, dict):
            # Switch and host entries take two forms, which an argument spec cannot say: checked here.
            check_known_keys(spec, {"parent", "name"}, where)
            topo.add_switch(switch_id, spec.get("parent"), spec.get("name"), source=where)
        elif spec is None or isinstance(spec, str):
            topo.add_switch(switch_id, spec, source=where)
        else:
            raise TopologyError(f"{where} must be a parent id, null, or {{parent, name}}")

    for index, domain in enumerate(_list_of_mappings(params.get("domains"), "params.domains")):
        where = f"params.domains[{index}]"
        name = domain.get("name")
        topo.declare_domain(name, source=f"{where}.name")
        for node in _expand(domain.get("nodes"), f"{where}.nodes", topo.host_budget):
            topo.add_node(node, domain.get("switch"), name, source=f"{where}.nodes")
        for sub_index, sub in enumerate(_list_of_mappings(domain.get("sub_domains"), f"{where}.sub_domains")):
            sub_where = f"{where}.sub_domains[{sub_index}]"
            for node in _expand(sub.get("nodes"), f"{sub_where}.nodes", topo.host_budget):
                topo.add_node(node, sub.get("switch") or domain.get("switch"), name, sub.get("name"),
                              source=f"{sub_where}.nodes")

    for index, group in enumerate(_list_of_mappings(params.get("nodes"), "params.nodes")):
        where = f"params.nodes[{index}]"
        members = _expand(group.get("nodes"), f"{where}.nodes", topo.host_budget)
        if not members:
            raise TopologyError(f"{where}.nodes is empty")
        for node in members:
            topo.add_node(node, group.get("switch"), group.get("domain"), source=f"{where}.nodes")

    hosts = params.get("hosts") or {}
    for host, spec in hosts.items():
        where = f"params.hosts.{str(host)[:60]}"
        spec = spec or {}
        if not isinstance(spec, dict):
            raise TopologyError(f"{where} must be a mapping")
        check_known_keys(spec, {"domain", "switch", "sub_domain"}, where)
        topo.add_node(host, spec.get("switch"), spec.get("domain"), spec.get("sub_domain"), source=where)
    return topo
