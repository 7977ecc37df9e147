# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""InfiniBand fabric from ``ibnetdiscover`` output (topograph: pkg/ib, infiniband-bm).

params:
  ibnetdiscover:        node -> the text ibnetdiscover printed there (or the registered
                        result of an ``ansible.builtin.command`` task: its ``stdout`` is read), or a
                        list of them / a loop's registered result (one run per port)
  ibnetdiscover_files:  paths of saved outputs (a path or a list)
  nodes:                the cluster's nodes (hostlist or list); default every host named by an HCA
  node_map:             HCA GUID (``H-<guid>``, ``0x<guid>``, ``<guid>``) or described host name
                        -> node name, for HCAs whose description does not carry the node's name
  node_facts:           node -> its ``topology_node`` fact (aifactory.topology.topology_facts): each
                        HCA GUID a node reported is that node's, whatever its description says;
                        ``node_map`` wins where both name one HCA. Each node writes its own facts:
                        unusable ones, or a GUID two nodes report, quarantine the node (``facts_node_map``)
  switches:             ``{include: [regex], exclude: [regex]}`` on switch names (display name or GUID id,
                        matched whole): excluded switches leave the fabric at every tier; with include,
                        only matching switches are leaves (Topograph's ``switchSelector``)
  hcas:                 ``{include: [regex], exclude: [regex]}`` on HCA names (``mlx5_0``, the second word
                        of the description) or GUIDs: only selected HCAs put a node under a leaf

An HCA's node description is ``<host> <hca>`` (``a05-p1-dgx-01-c01 mlx5_0``), set by the
host (rdma-ndd); its first word is the node name, as in Topograph. Every output of one fabric
lists the whole fabric, so outputs that only differ in their ``#`` header are read once.
A leaf is a switch with HCAs of cluster nodes; the tiers above it are the switches without
host HCAs linked to the tier below; then the Clos is collapsed (``_merger``).

A leaf that holds most nodes of two or more other leaves the fabric keeps apart (a storage or
management leaf on the compute subnet, reached by every node's second HCA) would swallow the
tree: every node would end under it. That is an error naming the leaf and what to set
(``switches.exclude``, ``hcas.include`` with ``nodes``, ``switches.include``), never a one-switch map;
a selection that still leaves a leaf of other hosts on a higher tier (roots that fabric links join)
is refused too. A host name two HCAs claim with one description is quarantined (neither host trusted).
"""

from __future__ import annotations

import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _merger
from ansible_collections.aifactory.topology.plugins.module_utils._base.patterns import NameSelector
from ansible_collections.aifactory.topology.plugins.module_utils._providers._gathered import command_output
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology, check_name, name_problem
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import NodeDataError, TopologyError, clip
from ansible_collections.aifactory.topology.plugins.module_utils._providers.inventory_vars import _expand

_HEADER = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([^"]+)"\s*#\s*"([^"]*)"')
_PORT = re.compile(r'^\[(\d+)\](?:\[[^\]]*\])?(?:\([0-9a-fA-F]+\))?\s+"([^"]+)"\[(\d+)\]')
# ``ibnetdiscover -g`` (grouped) ends some attribute lines with a comment: ``sysimgguid=0x...\t\t# Chassis 1``,
# ``switchguid=0x...(...)\t# CS7500 Line 1 Chip 1``.
_ATTRIBUTE = re.compile(r"^([A-Za-z]\w*)=(\S*)(?:\s+#.*)?$")
# The lines -g adds between records: a chassis, its Xsigo host name, the switches outside any chassis. The
# records themselves are the same, ``[ext N]`` port numbers aside (_PORT reads past them).
_GROUPING = re.compile(r"^(?:Chassis \d+(?: \(guid 0x[0-9a-fA-F]+\))?|Non-Chassis Nodes|Hostname: .*)$")
_HOST_AND_HCA = re.compile(r"^(\S+)\s\S+$")  # Topograph's rule: exactly "<host> <hca>"
_SWITCH_NAME = re.compile(r"^[^;:]+;([^;:]+):[^;:]+$")  # "MF0;<name>:MQM9701/U1"
_GUID = re.compile(r"^(?:[Hh]-|0[xX])?([0-9a-fA-F]{16})$")
# Names a host reports before it is configured; never a cluster node.
_PLACEHOLDER_HOSTS = frozenset({"localhost", "localhost.localdomain"})


class _Device:
    __slots__ = ("kind", "description", "system_guid", "line", "source")

    def __init__(self, kind, description, system_guid, line, source=None):
        self.kind = kind
        self.description = description
        self.system_guid = system_guid
        self.line = line
        self.source = source


class Fabric:
    """Devices (switches, HCAs, routers) and the links between them, from one or more outputs."""

    def __init__(self):
        self.devices: dict[str, _Device] = {}
        self.links: dict[str, set[str]] = {}

    def link(self, a, b):
        self.links.setdefault(a, set()).add(b)
        self.links.setdefault(b, set()).add(a)

    def of_kind(self, kind):
        return {device_id: device for device_id, device in self.devices.items() if device.kind == kind}


def parse(text, source, fabric=None):
    """Add one ibnetdiscover output to ``fabric``; a malformed or cut-off output is an error naming the line."""
    fabric = fabric if fabric is not None else Fabric()
    record, record_ports, system_guid = None, 0, None
    switch_records = 0
    defined_here = {}  # device id -> line of its record in this output
    referenced = {}  # device id -> first line that links to it

    def close(record, ports):
        if record is not None and not ports:
            device_id, device = record
            what = "switch" if device.kind == "Switch" else "HCA" if device.kind == "Ca" else "router"
            raise TopologyError(
                f"{source}, line {device.line}: {what} {device_id!r} ({device.description!r}) has no port line: "
                "the output is cut off there, or the node that ran ibnetdiscover has its port down "
                "and saw no fabric")

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            close(record, record_ports)
            record, record_ports = None, 0
            continue
        if line.startswith("#"):
            continue
        attribute = _ATTRIBUTE.match(line)
        if attribute:
            if attribute.group(1) == "sysimgguid":
                system_guid = attribute.group(2).lower()
            continue
        if record is None and _GROUPING.match(line):
            continue  # -g's chassis lines, between records only
        header = _HEADER.match(line)
        if header:
            close(record, record_ports)
            kind, _ports, device_id, description = header.groups()
            if device_id in defined_here:
                raise TopologyError(f"{source}, line {number}: device {clip(device_id)} is listed twice "
                                    f"(first at line {defined_here[device_id]}); a duplicated GUID would hide a device")
            defined_here[device_id] = number
            known = fabric.devices.get(device_id)
            if known is not None and known.kind != kind:
                raise TopologyError(f"{source}, line {number}: device {clip(device_id)} is a {kind} here and a "
                                    f"{known.kind} in another output; these outputs are not of one fabric")
            device = _Device(kind, description.strip(), system_guid, number, source)
            fabric.devices[device_id] = device
            switch_records += kind == "Switch"
            record, record_ports, system_guid = (device_id, device), 0, None
            continue
        if line.startswith("["):
            port = _PORT.match(line)
            if port is None:
                raise TopologyError(f"{source}, line {number}: malformed port line {_clip(line)!r}")
            if record is None:
                raise TopologyError(f"{source}, line {number}: port line outside a Switch or Ca record")
            fabric.link(record[0], port.group(2))
            referenced.setdefault(port.group(2), number)
            record_ports += 1
            continue
        hint = " (a line of ibnetdiscover -g inside a record: run ibnetdiscover without -g)" \
            if _GROUPING.match(line) else ""
        raise TopologyError(f"{source}, line {number}: not ibnetdiscover output: {_clip(line)!r}{hint}")
    close(record, record_ports)
    if not switch_records:
        raise TopologyError(f"{source}: no switch in the output; run ibnetdiscover on a node whose HCA port is up")
    # ibnetdiscover prints a record for every device it links to; a link to a device without
    # one means the output ends early (cut off between records).
    dangling = sorted((line, device_id) for device_id, line in referenced.items() if device_id not in defined_here)
    if dangling:
        line, device_id = dangling[0]
        raise TopologyError(f"{source}, line {line}: links to device {clip(device_id)}, which has no record in the "
                            f"output ({len(dangling)} such devices): the output is cut off")
    return fabric


def _clip(line, width=80):
    return line if len(line) <= width else line[:width] + "..."


def switch_name(description):
    """The display name in a switch description (``MF0;A09-P1-IBLEAF-01-01:MQM9701/U1``), or None."""
    match = _SWITCH_NAME.match(description)
    if match:
        return match.group(1)
    return description if description and not any(c in description for c in " ;:") else None


def _host_in(description):
    match = _HOST_AND_HCA.match(description)
    return match.group(1) if match else None


def _hca_name(description):
    """The HCA's own name in ``<host> <hca>`` (``mlx5_0``), or None."""
    words = description.split()
    return words[1] if len(words) == 2 else None


def _guid_key(text):
    """``H-E09D...``, ``0xe09d...`` and ``e09d...`` are one GUID; other text is kept as it is."""
    match = _GUID.match(text)
    return match.group(1).lower() if match else text


def _outputs(params):
    """(source, text) for every output, identical ones (bar the ``#`` header) once."""
    found = []
    outputs = params.get("ibnetdiscover") or {}
    for node, value in outputs.items():
        node = str(node)[:60]
        # One run per port (``ibnetdiscover -C mlx5_0 -P 1`` in a loop): a list, or the loop's registered result.
        runs = value.get("results") if isinstance(value, dict) and "results" in value else value
        if isinstance(runs, list):
            if not runs:
                raise TopologyError(f"params.ibnetdiscover.{node} is an empty list; give each port's output")
            labels = [f"{node}[{index}]" for index in range(len(runs))]
            labels = [f"{label} ({str(run['item'])[:40]})" if isinstance(run, dict) and "item" in run else label
                      for label, run in zip(labels, runs)]
        else:
            runs, labels = [runs], [node]
        for label, run in zip(labels, runs):
            text = command_output(run, f"params.ibnetdiscover.{label}")
            if not isinstance(text, str):
                raise TopologyError(f"params.ibnetdiscover.{label} must be the text ibnetdiscover printed")
            found.append((f"ibnetdiscover output of {label}", text))
    files = params.get("ibnetdiscover_files") or []
    for path in files:
        try:
            found.append((str(path), _input_file.read_text(path, "params.ibnetdiscover_files:")))
        except _input_file.InputFileError as exc:
            raise TopologyError(str(exc)) from None
    if not found:
        raise TopologyError("the infiniband provider needs params.ibnetdiscover (node -> output) "
                            "or params.ibnetdiscover_files")
    unique = {}
    for source, text in found:
        if not text.strip():
            raise TopologyError(f"{source} is empty; ibnetdiscover printed nothing there")
        body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
        unique.setdefault(body, (source, text))
    return list(unique.values())


def discover(params, creds, warn):
    wanted = set(_expand(params.get("nodes"), "params.nodes")) if params.get("nodes") is not None else None
    node_map = params.get("node_map") or {}
    if not isinstance(node_map, dict):
        raise TopologyError("params.node_map must map an HCA GUID or described host name to a node name")
    for key, value in node_map.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TopologyError(f"params.node_map: {clip(key)}: {clip(value)} must map a GUID or host name "
                                "(a string) to a node name (a string)")
    topology = Topology()  # a node whose own facts are unusable is quarantined before the fabric is read
    guids = facts_node_map(params.get("node_facts"), topology, wanted)
    guids.update({_guid_key(k): v for k, v in node_map.items()})
    switch_selector = NameSelector.from_params(params.get("switches"), "params.switches")
    hca_selector = NameSelector.from_params(params.get("hcas"), "params.hcas")
    fabric = Fabric()
    for source, text in _outputs(params):
        parse(text, source, fabric)
    return build(fabric, wanted, guids, warn, switch_selector, hca_selector, topology)


def facts_node_map(node_facts, topology, wanted=None):
    """HCA GUID (``_guid_key`` form) -> node, from each node's gathered ``topology_node`` fact.

    Root on each host writes that host's facts, so they are one node's data, never the whole input's:
    facts that are not a ``topology_node`` fact with its ``infiniband`` list, an HCA entry that is not a
    mapping, a ``node_guid`` that is not a GUID, or a node key the name rule refuses quarantine that node in
    ``topology`` and the rest are read. With ``wanted``, only its nodes' facts are read (no other becomes a node).
    A GUID in the facts of two nodes quarantines every claimant and names no HCA: an HCA is in one host,
    so one of them reports what it does not have, and the controller cannot tell which from the facts
    (keeping the first, or either, would let a host take another's HCA and its place in the tree).
    ``node_facts`` that is not a mapping is the whole input's problem: a TopologyError.
    """
    if node_facts is None:
        return {}
    if not isinstance(node_facts, dict):
        raise TopologyError("params.node_facts must map each node to its topology_node fact")
    claims = {}  # GUID -> {node: field} of every node whose facts report it
    for node, facts in node_facts.items():
        node = str(node)
        if wanted is not None and node not in wanted:
            continue  # never a node: its facts name no HCA, nor dispute a cluster node's
        with topology.per_node(node, "infiniband"):
            for key, field in _reported_guids(node, facts).items():
                claims.setdefault(key, {})[node] = field
    owners = {}
    for key, claimants in claims.items():
        if len(claimants) == 1:
            owners[key] = next(iter(claimants))
            continue
        # Each reason in constant time, never a list of all claimants: a cloned image gives thousands one GUID.
        first, second = list(claimants)[:2]
        more = f" and {len(claimants) - 2} more" if len(claimants) > 2 else ""
        nobody = "neither" if len(claimants) == 2 else "none of them"
        for node, field in claimants.items():
            topology.quarantine(node, "infiniband", f"{field}: HCA 0x{key} is also in the gathered facts of "
                                                    f"{second if node == first else first}{more}; an HCA is in one "
                                                    f"host, so {nobody} can be trusted to own it")
    return owners


def _reported_guids(node, facts):
    """GUID -> the field that reports it, of one node's facts; a NodeDataError naming the node and field."""
    problem = name_problem(node)
    if problem is not None:
        raise NodeDataError(f"params.node_facts: node {problem}")
    where = f"params.node_facts.{node}"
    hcas = facts.get("infiniband") if isinstance(facts, dict) else None
    if not isinstance(hcas, list):
        raise NodeDataError(f"{where} must be the node's topology_node fact, with its infiniband list "
                            f"(gathered by aifactory.topology.topology_facts), got {clip(facts)}")
    reported = {}
    for index, hca in enumerate(hcas):
        field = f"{where}.infiniband[{index}]"
        if not isinstance(hca, dict):
            raise NodeDataError(f"{field} must be a mapping, got {clip(hca)}")
        value = hca.get("node_guid")
        if value is None or value == "":
            continue  # sysfs had no readable node_guid there: the HCA names no node
        match = _GUID.match(value) if isinstance(value, str) else None
        if match is None:
            raise NodeDataError(f"{field}.node_guid must be an HCA GUID (16 hex digits, as in 0xe09d73030037311c), "
                                f"got {clip(value)}")
        reported.setdefault(match.group(1).lower(), f"{field}.node_guid")
    return reported


def build(fabric, wanted=None, node_map=None, warn=None, switch_selector=None, hca_selector=None, topology=None):
    """The Topology of a parsed fabric: leaves with cluster HCAs, tiers above, collapsed.

    ``node_map`` keys are GUIDs in ``_guid_key`` form or described host names;
    ``switch_selector`` and ``hca_selector`` are ``_patterns.NameSelector`` (or None);
    ``topology``, one to build in: the HCAs of the nodes quarantined there already put them under no switch.
    A host name that another host claims is quarantined first (``_quarantine_claimed_names``).
    """
    warn = warn or (lambda message: None)
    node_map = node_map or {}
    topology = topology if topology is not None else Topology()
    _quarantine_claimed_names(fabric, node_map, wanted, topology)
    every_switch = fabric.of_kind("Switch")
    switch_systems = {device.system_guid for device in every_switch.values() if device.system_guid}
    names = {}
    for sid, device in every_switch.items():
        name = switch_name(device.description)
        if name is not None:
            names[sid] = name
    if switch_selector is not None:
        switches = {sid: device for sid, device in every_switch.items()
                    if not switch_selector.excludes(sid, names.get(sid))}
    else:
        switches = every_switch
    host_facing, leaves, unnamed, placeholders, refused = set(), {}, [], set(), {}
    others = {}  # leaf -> hosts on it that are not cluster nodes (or whose HCA was not selected)
    leaf_hcas = {}  # leaf -> {node: HCA names}
    for hca_id, hca in fabric.of_kind("Ca").items():
        if hca.system_guid in switch_systems or hca.description.endswith("Aggregation Node"):
            continue  # the switch's own SHARP aggregation node, not a host
        described = _host_in(hca.description)
        name = node_map.get(_guid_key(hca_id), node_map.get(described, described))
        # Every host HCA keeps its switch out of the tiers above, selected or not: a leaf is a leaf.
        attached = [peer for peer in fabric.links.get(hca_id, ()) if peer in switches]
        host_facing.update(attached)
        if name is None:
            unnamed.append(hca_id)
            continue
        if name in _PLACEHOLDER_HOSTS:
            placeholders.add(name)
            continue
        if name in topology.quarantined:
            continue  # its own facts were unusable: it stays out, whatever its HCAs say
        hca_name = _hca_name(hca.description)
        if switch_selector is not None:
            attached = [leaf for leaf in attached if switch_selector.included(leaf, names.get(leaf))]
        if (wanted is not None and name not in wanted) or (
                hca_selector is not None and not hca_selector.selects(hca_id, hca_name)):
            if name_problem(name) is None:  # only names fit to be shown in a message
                for leaf in attached:
                    others.setdefault(leaf, set()).add(name)
            continue
        # Any host with root on the fabric sets its description: the name is checked here,
        # where its origin is known, before it reaches a Slurm file. A bad description is that
        # host's problem (quarantined); a bad params.node_map value is the operator's (fatal).
        if name == described:
            problem = name_problem(name)
            if problem is not None:
                refused[name] = f"{hca.source}, line {hca.line}: HCA {clip(hca_id)} described {clip(hca.description)}: {problem}"
                continue
        else:
            check_name(name, f"params.node_map value for HCA {clip(hca_id)}")
        for leaf in attached:
            leaves.setdefault(leaf, set()).add(name)
            leaf_hcas.setdefault(leaf, {}).setdefault(name, set()).add(hca_name or clip(hca_id))
    for sid in switches:
        if sid in names:
            device = switches[sid]
            check_name(names[sid], f"{device.source}, line {device.line}: switch {clip(sid)} described "
                                   f"{clip(device.description)}")
    _refuse_swallowing_leaves(leaves, names, others, leaf_hcas, wanted is not None)
    up = {sid: [peer for peer in fabric.links.get(sid, ()) if peer in switches and peer not in host_facing]
          for sid in switches}
    tiers = _merger.collapse(_merger.tiers_bottom_up(leaves, up), warn)
    names = {sid: name for sid, name in names.items() if sid in switches}
    for name, reason in refused.items():
        topology.quarantine(name, "infiniband", reason)
    topology = _merger.add_tree(topology, tiers, names)
    _check_split_tree(topology, fabric, names, warn, selected=switch_selector is not None or hca_selector is not None)
    _merger.keep_unique_names(topology, warn)
    if wanted is None and (unnamed or placeholders):
        warn(f"{len(unnamed)} HCAs have no host name in their node description and HCAs named "
             f"{sorted(placeholders) or 'none'} are not taken as nodes; set the hosts' node descriptions "
             "or name them in params.node_map")
    if not topology.nodes and (switch_selector is not None or hca_selector is not None):
        raise TopologyError("params.switches and params.hcas leave no HCA of a cluster node on a selected leaf "
                            "switch; check the patterns against the switch names and HCA names of the output")
    if not topology.nodes and not topology.quarantined:  # else validate() names the quarantined nodes
        raise TopologyError("no HCA in the ibnetdiscover output belongs to a node of params.nodes "
                            "(check the node names against the HCAs' node descriptions, or use params.node_map)"
                            if wanted is not None else "no HCA in the ibnetdiscover output names a host")
    missing = [] if wanted is None else sorted(wanted - set(topology.nodes) - set(topology.quarantined),
                                               key=hostlist.natural_key)
    if missing:
        warn(f"{len(missing)} nodes have no HCA in the ibnetdiscover output and get no switch: "
             f"{hostlist.compress(missing)}")
        for name in missing:
            topology.add_node(name, source="params.nodes")
    for leaf, hosts in leaf_hcas.items():  # the rails, for the cabling comparison
        for name, hcas in hosts.items():
            if name in topology.nodes:
                for hca in hcas:
                    topology.hca_switches.setdefault(name, {})[hca] = names.get(leaf, leaf)
    return topology


def _shown(items, limit=4):
    items = sorted(items, key=hostlist.natural_key)
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _literal(name):
    """``name`` as a regular expression that matches only it (names have no ``[``, ``]`` or ``\\``)."""
    return "".join("\\" + char if char in ".^$*+?{}|()" else char for char in name)


def _refuse_swallowing_leaves(leaves, names, others, leaf_hcas, nodes_listed=True):
    """A TopologyError when one leaf holds most nodes of two or more leaves that the fabric keeps apart.

    Such a leaf is no leaf of the compute tree but a second network on the same subnet (a storage or
    management leaf reached by every node's second HCA): the merge would put every node under it and
    the compute tree would be gone. Leaves with the same nodes (the rails of a scalable unit) are one
    group; a group "holds most" of another when it has more than half its nodes; two groups are "kept
    apart" when they share less than half of the smaller one. A host on some rails only, or a missing
    cable, touches one group or a few nodes and is not refused (the merge warns about it).

    Each setting the error advises gives the one compute tree: ``hcas.include`` comes with ``params.nodes``
    when it is not set (``nodes_listed``), since the storage servers' HCAs usually have the compute HCAs'
    names, and alone it keeps them as nodes on this leaf, which is then linked straight to the cores.
    """
    groups = {}
    for leaf in sorted(leaves):
        if leaves[leaf]:
            groups.setdefault(frozenset(leaves[leaf]), []).append(leaf)
    holding = {}
    for group in groups:
        for node in group:
            holding.setdefault(node, []).append(group)
    for group, group_leaves in groups.items():
        shared = {}
        for node in group:
            for other in holding[node]:
                if other is not group:
                    shared[other] = shared.get(other, 0) + 1
        held = [other for other, count in shared.items() if 2 * count > len(other)]
        if not any(2 * len(a & b) < min(len(a), len(b)) for index, a in enumerate(held) for b in held[index + 1:]):
            continue
        leaf = group_leaves[0]
        label = names.get(leaf, leaf)
        swallowed = {names.get(other_leaf, other_leaf) for other in held for other_leaf in groups[other]}
        nodes = set().union(*(group & other for other in held))
        hca_names = sorted({hca for node in nodes for hca in leaf_hcas.get(leaf, {}).get(node, ())})
        # Hosts only this leaf has (storage servers), and hosts that are not (selected) cluster nodes.
        extra = sorted((group - set().union(*held)) | others.get(leaf, set()), key=hostlist.natural_key)
        hosts = f", and {len(extra)} hosts no compute leaf has ({hostlist.compress(extra)})" if extra else ""
        with_nodes = "" if nodes_listed else (
            " together with params.nodes, the compute nodes (the storage servers' HCAs usually have the same names, "
            "and would stay nodes on this leaf)")
        raise TopologyError(
            f"leaf switch {label} ({leaf}) holds {len(nodes)} nodes that the rest of the fabric places under "
            f"{len(swallowed)} other leaf switches ({_shown(swallowed)}){hosts}: it is a storage or management "
            f"leaf on the compute fabric, and the merge would put every node under it (one switch, no tree). "
            f"Set params.switches.exclude: [{_literal(label)!r}] to leave it out, or params.hcas.include to the "
            f"names of the compute HCAs (the nodes reach it through {', '.join(hca_names[:4]) or 'their HCAs'})"
            f"{with_nodes}, or params.switches.include to the compute leaves")


def _check_split_tree(topology, fabric, names, warn, selected=False):
    """Warn when the tree has several roots that fabric links join: leaves at different depths; refuse it when
    ``selected`` (``params.switches`` or ``params.hcas`` set): the selection was to give the one compute tree.

    A leaf linked straight to a higher tier (a storage leaf on the cores, its compute HCAs left
    out) makes those switches its tier 1, so the compute leaves' spines find no parent: Slurm then
    sees separate trees and places no job across them. The hosts under the root linked to most of the
    others are named: they are what holds that leaf (storage servers kept as nodes).
    """
    root_of = {sid: topology.path(sid)[-1] for sid in topology.switches}
    roots = sorted(set(root_of.values()))
    if len(roots) < 2:
        return
    joined = set()
    for sid, root in root_of.items():
        for peer in fabric.links.get(sid, ()):
            if root_of.get(peer, root) != root:
                joined.update((root, root_of[peer]))
    if not joined:
        return  # separate fabrics (a compute and a storage subnet): separate trees are right
    shown = _shown(names.get(root, root) for root in joined)
    if selected:
        links = {root: sum(1 for sid, at in root_of.items() if at == root for peer in fabric.links.get(sid, ())
                           if root_of.get(peer, root) != root) for root in joined}
        top = max(sorted(joined), key=lambda root: links[root])
        held = [name for name, node in topology.nodes.items() if node.switch and root_of[node.switch] == top]
        raise TopologyError(
            f"params.switches and params.hcas leave a tree of {len(joined)} roots that fabric links join ({shown}): "
            f"a leaf of {len(held)} hosts ({hostlist.compress(held)[:200]}) is linked straight to a higher tier "
            f"({names.get(top, top)}), so the tiers above the other leaves are cut off and Slurm would place no job "
            "across these trees. List the compute nodes in params.nodes (storage servers' HCAs usually have the "
            "compute HCAs' names), or leave that leaf out with params.switches.exclude")
    warn(f"the tree has {len(joined)} roots that fabric links join ({shown}): a leaf is linked straight to a "
         "higher tier (a storage or management leaf on the cores?), so the tiers above the other leaves are cut "
         "off and Slurm places no job across these trees; leave that leaf out with params.switches.exclude, or "
         "list the cluster's nodes in params.nodes so it holds none")


def _quarantine_claimed_names(fabric, node_map, wanted, topology):
    """Quarantine each host name that two hosts claim, before any HCA is placed.

    Any host with root on the fabric sets its HCAs' descriptions, so a storage server can describe
    its HCA as a compute node's (``gpu-03 mlx5_0``) and put that node on its own leaf. Two HCAs with
    one description (one host name and one HCA name, which a host has once) are two hosts that claim
    one name. The fabric cannot tell which host is the node, so neither is trusted: the name is
    quarantined and every HCA that claims it stays out (the node's own and the claimant's), reported
    with both HCAs. A claim under an HCA name the node does not have is not told apart from a node
    cabled to two leaves (the merge keeps it under one and warns).
    Names given by GUID (``params.node_map``, ``params.node_facts``) are the operator's or the node's
    own word and are not claims; only names ``params.nodes`` lists (when set) are checked.
    """
    described = {}  # (host, HCA name) -> first HCA id with that description
    for hca_id, hca in fabric.of_kind("Ca").items():
        host = _host_in(hca.description)
        if host is None or _guid_key(hca_id) in node_map or node_map.get(host, host) != host \
                or (wanted is not None and host not in wanted) or host in _PLACEHOLDER_HOSTS \
                or name_problem(host) is not None or host in topology.quarantined:
            continue
        shown = f"HCA {clip(hca_id)} ({hca.source}, line {hca.line})"
        first = described.setdefault((host, _hca_name(hca.description)), hca_id)
        if first != hca_id:
            other = fabric.devices[first]
            topology.quarantine(host, "infiniband", (
                f"{shown} and HCA {clip(first)} ({other.source}, line {other.line}) are both described "
                f"{clip(hca.description)}: a host has one HCA of a name, so another host claims {host}'s name, "
                "and neither can be trusted"))
