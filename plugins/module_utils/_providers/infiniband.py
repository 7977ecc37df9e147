# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""InfiniBand fabric from ``ibnetdiscover`` output (topograph: pkg/ib, infiniband-bm).

params:
  ibnetdiscover:        node -> the text ibnetdiscover printed there (or the registered
                        result of an ``ansible.builtin.command`` task: its ``stdout`` is read)
  ibnetdiscover_files:  paths of saved outputs (a path or a list)
  nodes:                the cluster's nodes (hostlist or list); default every host named by an HCA
  node_map:             HCA GUID (``H-<guid>``, ``0x<guid>``, ``<guid>``) or described host name
                        -> node name, for HCAs whose description does not carry the node's name
  node_facts:           node -> its ``topology_node`` fact (aifactory.topology.topology_facts): each
                        HCA GUID a node reported is that node's, whatever its description says;
                        ``node_map`` wins where both name one HCA

An HCA's node description is ``<host> <hca>`` (``a05-p1-dgx-01-c01 mlx5_0``), set by the
host (rdma-ndd); its first word is the node name, as in Topograph. Every output of one fabric
lists the whole fabric, so outputs that only differ in their ``#`` header are read once.
A leaf is a switch with HCAs of cluster nodes; the tiers above it are the switches without
host HCAs linked to the tier below; then the Clos is collapsed (``_merger``).
"""

from __future__ import annotations

import re

from ansible_collections.aifactory.topology.plugins.module_utils import _hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils import _input_file
from ansible_collections.aifactory.topology.plugins.module_utils import _merger
from ansible_collections.aifactory.topology.plugins.module_utils._gathered import command_output
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology, check_name, name_problem
from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError, clip
from ansible_collections.aifactory.topology.plugins.module_utils._providers.inventory import _expand

_HEADER = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([^"]+)"\s*#\s*"([^"]*)"')
_PORT = re.compile(r'^\[(\d+)\](?:\[[^\]]*\])?(?:\([0-9a-fA-F]+\))?\s+"([^"]+)"\[(\d+)\]')
_ATTRIBUTE = re.compile(r"^[A-Za-z]\w*=\S*$")
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
        if _ATTRIBUTE.match(line):
            key, _sep, value = line.partition("=")
            if key == "sysimgguid":
                system_guid = value.lower()
            continue
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
        raise TopologyError(f"{source}, line {number}: not ibnetdiscover output: {_clip(line)!r}")
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
        text = command_output(value, f"params.ibnetdiscover.{node}")
        if not isinstance(text, str):
            raise TopologyError(f"params.ibnetdiscover.{node} must be the text ibnetdiscover printed")
        found.append((f"ibnetdiscover output of {node}", text))
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
    guids = facts_node_map(params.get("node_facts"))
    guids.update({_guid_key(k): v for k, v in node_map.items()})
    fabric = Fabric()
    for source, text in _outputs(params):
        parse(text, source, fabric)
    return build(fabric, wanted, guids, warn)


def facts_node_map(node_facts):
    """HCA GUID (``_guid_key`` form) -> node, from each node's gathered ``topology_node`` fact."""
    if node_facts is None:
        return {}
    if not isinstance(node_facts, dict):
        raise TopologyError("params.node_facts must map each node to its topology_node fact")
    owners = {}
    for node, facts in node_facts.items():
        where = f"params.node_facts.{node}"
        hcas = facts.get("infiniband") if isinstance(facts, dict) else None
        if not isinstance(hcas, list):
            raise TopologyError(f"{where} must be the node's topology_node fact, with its infiniband list "
                                "(gathered by aifactory.topology.topology_facts)")
        for index, hca in enumerate(hcas):
            if not isinstance(hca, dict):
                raise TopologyError(f"{where}.infiniband[{index}] must be a mapping")
            if not hca.get("node_guid"):
                continue
            key = _guid_key(str(hca["node_guid"]))
            if owners.get(key, node) != node:
                raise TopologyError(f"HCA {hca['node_guid']} is in the gathered facts of both {owners[key]} and {node}")
            owners[key] = str(node)
    return owners


def build(fabric, wanted=None, node_map=None, warn=None):
    """The Topology of a parsed fabric: leaves with cluster HCAs, tiers above, collapsed.

    ``node_map`` keys are GUIDs in ``_guid_key`` form or described host names.
    """
    warn = warn or (lambda message: None)
    node_map = node_map or {}
    switches = fabric.of_kind("Switch")
    switch_systems = {device.system_guid for device in switches.values() if device.system_guid}
    host_facing, leaves, unnamed, placeholders, refused = set(), {}, [], set(), {}
    for hca_id, hca in fabric.of_kind("Ca").items():
        if hca.system_guid in switch_systems or hca.description.endswith("Aggregation Node"):
            continue  # the switch's own SHARP aggregation node, not a host
        described = _host_in(hca.description)
        name = node_map.get(_guid_key(hca_id), node_map.get(described, described))
        attached = [peer for peer in fabric.links.get(hca_id, ()) if peer in switches]
        host_facing.update(attached)
        if name is None:
            unnamed.append(hca_id)
            continue
        if name in _PLACEHOLDER_HOSTS:
            placeholders.add(name)
            continue
        if wanted is not None and name not in wanted:
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
    up = {sid: [peer for peer in fabric.links.get(sid, ()) if peer in switches and peer not in host_facing]
          for sid in switches}
    tiers = _merger.collapse(_merger.tiers_bottom_up(leaves, up), warn)
    names = {}
    for sid, device in switches.items():
        name = switch_name(device.description)
        if name is not None:
            names[sid] = check_name(name, f"{device.source}, line {device.line}: switch {clip(sid)} described "
                                          f"{clip(device.description)}")
    topology = Topology()
    for name, reason in refused.items():
        topology.quarantine(name, "infiniband", reason)
    topology = _merger.add_tree(topology, tiers, names)
    _merger.keep_unique_names(topology, warn)
    if wanted is None and (unnamed or placeholders):
        warn(f"{len(unnamed)} HCAs have no host name in their node description and HCAs named "
             f"{sorted(placeholders) or 'none'} are not taken as nodes; set the hosts' node descriptions "
             "or name them in params.node_map")
    if not topology.nodes:
        raise TopologyError("no HCA in the ibnetdiscover output belongs to a node of params.nodes "
                            "(check the node names against the HCAs' node descriptions, or use params.node_map)"
                            if wanted is not None else "no HCA in the ibnetdiscover output names a host")
    missing = sorted(wanted - set(topology.nodes), key=hostlist.natural_key) if wanted is not None else []
    if missing:
        warn(f"{len(missing)} nodes have no HCA in the ibnetdiscover output and get no switch: "
             f"{hostlist.compress(missing)}")
        for name in missing:
            topology.add_node(name, source="params.nodes")
    return topology
