# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canonical topology model every provider produces and every engine consumes.

A forest of switches (each switch knows its parent; tier 0 is the switch nearest a node,
growing outward), accelerator domains (one NVLink domain, e.g. an NVL72 rack) with
optional sub-domains, and the nodes. ``domain_order`` lists domains in physical order,
including declared domains that have no nodes yet (day-2 placeholders).

The compact JSON form groups nodes that share switch, domain, sub-domain and labels
into one hostlist expression, and stores each distinct label set once (``label_sets``;
a group's ``labels`` is an index into it, or an inline mapping in hand-written models),
so a 100k-node model is a few hundred KB.
"""

from __future__ import annotations

import contextlib
import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    NodeDataError,
    NodeUnhealthy,
    TopologyError,
    check_known_keys,
    clip,
)

COMPACT_FORMAT = "aifactory.topology/v1"


class Switch:
    __slots__ = ("id", "name", "parent")

    def __init__(self, switch_id: str, parent: str | None = None, name: str | None = None):
        self.id = switch_id
        self.parent = parent
        self.name = name  # display name (e.g. a normalised or NetQ name); the id stays the key


class Node:
    __slots__ = ("name", "switch", "domain", "sub_domain", "labels")

    def __init__(self, name, switch=None, domain=None, sub_domain=None, labels=None):
        self.name = name
        self.switch = switch
        self.domain = domain
        self.sub_domain = sub_domain
        self.labels = labels or {}


class Quarantined:
    """A node left out of the map: in no block, under no switch, without topology labels."""

    __slots__ = ("node", "identifier", "source", "reason", "unhealthy")

    def __init__(self, node, identifier, source, reason, unhealthy):
        self.node = node              # the node's name, or None when the name itself is the problem
        self.identifier = identifier  # the name, or the raw identifier clipped and escaped
        self.source = source          # where the data came from (provider, accelerator, record)
        self.reason = reason          # the error that quarantined it, clipped
        self.unhealthy = unhealthy    # a valid node reported unhealthy (drain/taint may act on it)

    def as_dict(self):
        return {"node": self.node, "identifier": self.identifier, "source": self.source, "reason": self.reason,
                "kind": "unhealthy" if self.unhealthy else "invalid"}


MAX_REASON_LENGTH = 300
MAX_REPORTED_QUARANTINE = 1000  # a result lists this many; the count in the summary is exact


class Topology:
    """Switch forest + domains + nodes. Build it through the add_* methods, then validate()."""

    def __init__(self):
        self.switches: dict[str, Switch] = {}
        self.nodes: dict[str, Node] = {}
        self.domain_order: list[str] = []
        self._declared_by: dict[str, str] = {}
        # One expansion budget for every hostlist of one discovery or model (a whole run).
        self.host_budget = hostlist.HostBudget()
        self._checked_names: set[str] = set()  # switch and domain names add_node has checked
        # Nodes whose own data was unusable, by identifier: left out, reported, counted by the guards.
        self.quarantined: dict[str, Quarantined] = {}
        # Where the hardware says each tray is (node -> LOCATION_KEYS), kept for quarantined trays too: a
        # tray out of the map still sits in its rack. ``rack_trays``: how many trays a full rack has.
        self.locations: dict[str, dict] = {}
        self.rack_trays: int | None = None
        # Trays whose place a source other than the node itself gave (node -> that source, e.g. NMX): the
        # witness rule (docs/security.md) lets only such places take a rack out. Not in the compact form.
        self.witnessed_places: dict[str, str] = {}
        self.refused_places: set[str] = set()  # trays whose claimed place no rack view counts
        # Which switch each HCA of a node is cabled to (node -> {HCA name: switch name}), where a provider sees
        # the cables (infiniband): the rail check of the cabling comparison reads it. Not in the compact form.
        self.hca_switches: dict[str, dict[str, str]] = {}

    # -- quarantine ---------------------------------------------------------------------

    def quarantine(self, identifier, source, reason, unhealthy=False):
        """Leave one node out of the map: ``identifier`` is its name, or the raw value that is not one."""
        node = identifier if name_problem(identifier) is None else None
        shown = node if node is not None else clip(identifier)
        if shown in self.quarantined:
            return
        if node is not None:
            self.nodes.pop(node, None)
        reason = str(reason)
        if len(reason) > MAX_REASON_LENGTH:
            reason = reason[:MAX_REASON_LENGTH] + "..."
        self.quarantined[shown] = Quarantined(node, shown, source, reason, unhealthy)

    def quarantine_report(self, limit=MAX_REPORTED_QUARANTINE):
        """The result's ``quarantined`` list: the first ``limit`` records (``summary.quarantined`` counts all)."""
        return [record.as_dict() for record in list(self.quarantined.values())[:limit]]

    def restore_quarantine(self, records, where="model.quarantined"):
        """The ``quarantined`` list of a compact model (as to_compact writes it) back into this topology."""
        if not isinstance(records, list):
            raise TopologyError(f"{where} must be a list of quarantine records")
        for index, record in enumerate(records):
            at = f"{where}[{index}]"
            if not isinstance(record, dict):
                raise TopologyError(f"{at} must be a mapping")
            check_known_keys(record, {"node", "identifier", "source", "reason", "kind"}, at)
            for key in ("identifier", "source", "reason"):
                if not isinstance(record.get(key), str):
                    raise TopologyError(f"{at}.{key} must be a string, got {clip(record.get(key))}")
            if record.get("kind") not in ("invalid", "unhealthy"):
                raise TopologyError(f"{at}.kind must be invalid or unhealthy, got {clip(record.get('kind'))}")
            node = record.get("node")
            if node is not None:
                check_name(node, f"{at}.node")
                if node in self.nodes:
                    raise TopologyError(f"{at}: node {node!r} is quarantined and in model.nodes")
            # Taken as written (already clipped and escaped when it was recorded), within the same bounds.
            shown = node if node is not None else _as_recorded(record["identifier"])
            self.quarantined.setdefault(shown, Quarantined(node, shown, _as_recorded(record["source"]),
                                                           _as_recorded(record["reason"], MAX_REASON_LENGTH + 3),
                                                           record["kind"] == "unhealthy"))

    @contextlib.contextmanager
    def per_node(self, identifier, source):
        """Run one node's record: a NodeDataError in it quarantines that node, the others go on."""
        try:
            yield
        except NodeDataError as exc:
            self.quarantine(identifier, source, exc, unhealthy=isinstance(exc, NodeUnhealthy))

    # -- where each tray is --------------------------------------------------------------

    def locate(self, node, location, domain=None, witness=None):
        """Record where the hardware says ``node`` is (its chassis serial number, slot, tray index, host
        id, peer type) and, for a tray that may be quarantined, the NVLink domain it reported.

        ``witness`` names a source other than the node itself (NMX); a place the node then reports about
        itself must agree with the witnessed one on chassis, slot and tray, or NodeDataError names both."""
        place = {key: location[key] for key in LOCATION_KEYS if location.get(key) not in (None, "")}
        if domain:
            place["domain"] = domain
        if not place:
            return
        known = self.locations.get(node)
        if witness is None and node in self.witnessed_places and known is not None:
            differ = [key for key in PLACE_KEYS if key in place and key in known and place[key] != known[key]]
            if differ:
                raise NodeDataError(
                    f"{node} reports " + ", ".join(f"{key} {clip(place[key])}" for key in differ)
                    + f", but {self.witnessed_places[node]} places it at "
                    + ", ".join(f"{key} {clip(known[key])}" for key in differ))
            place = {**known, **place}
        elif witness is not None:
            self.witnessed_places[node] = witness
        self.locations[node] = place

    def refuse_place(self, node, reason):
        """A tray whose claimed place is not believed: in no rack view, quarantined as invalid by name."""
        self.refused_places.add(node)
        self.quarantine(node, PLACE_REFUSED, reason)

    def place_claims(self):
        """Trays that claim one place (domain, chassis serial number, slot, tray index) another tray also
        claims: ``{(domain, serial, slot, tray): [nodes]}``, only places with two claimants or more. The
        trays are grouped as ``racks()`` groups them, so no rack view ever holds one place twice."""
        claims = {}
        for (domain, serial), trays in self._rack_groups().items():
            for tray in trays:
                if "tray_index" in tray:
                    key = (domain, serial, tray.get("slot_number"), tray["tray_index"])
                    claims.setdefault(key, []).append(tray["node"])
        return {key: nodes for key, nodes in claims.items() if len(nodes) > 1}

    def _rack_groups(self):
        """``{(domain, serial): [tray]}`` for every located tray, refused places included (so refusing a
        claim never moves another tray to another rack); a quarantined tray that reported no domain joins
        the one rack of its chassis, if there is one."""
        states = {record.node: ("unhealthy" if record.unhealthy else "invalid")
                  for record in self.quarantined.values() if record.node is not None}
        groups, unplaced = {}, []
        for node, place in self.locations.items():
            serial = place.get("chassis_serial_number")
            if not serial or (node not in self.nodes and node not in states):
                continue
            domain = self.nodes[node].domain if node in self.nodes else place.get("domain")
            tray = {"node": node, **{key: place[key] for key in ("slot_number", "tray_index", "host_id")
                                     if key in place}, "state": states.get(node, "ok")}
            if domain is None and node in states:
                unplaced.append((serial, tray))
            else:
                groups.setdefault((domain, serial), []).append(tray)
        for serial, tray in unplaced:
            keys = [key for key in groups if key[1] == serial]
            groups.setdefault(keys[0] if len(keys) == 1 else (None, serial), []).append(tray)
        return groups

    def racks(self):
        """Every rack the hardware names: one per (NVLink domain, chassis serial number), since several
        mini-racks may share one serial, never the serial alone; its trays in physical order.

        Each rack: ``{domain, chassis_serial_number, trays: [{node, slot_number, tray_index, host_id,
        state}], expected_trays, missing_trays}``; ``state`` is ``ok`` or the quarantine kind. A
        quarantined tray that reported no domain joins the one rack of its chassis, if there is one.
        """
        refused = self.refused_places
        groups = {key: [tray for tray in trays if tray["node"] not in refused]
                  for key, trays in self._rack_groups().items()}
        groups = {key: trays for key, trays in groups.items() if trays}
        racks = []
        for (domain, serial), trays in sorted(groups.items(), key=lambda item: (
                hostlist.natural_key(item[0][1]), hostlist.natural_key(item[0][0] or ""))):
            trays.sort(key=lambda tray: (tray.get("slot_number", -1), tray.get("tray_index", -1),
                                         tray.get("host_id", -1), hostlist.natural_key(tray["node"])))
            rack = {"domain": domain, "chassis_serial_number": serial, "trays": trays,
                    "expected_trays": self.rack_trays, "missing_trays": []}
            seen = sorted({tray["tray_index"] for tray in trays if "tray_index" in tray})
            if self.rack_trays and seen and len(seen) < self.rack_trays:
                gaps = [index for index in range(seen[0], seen[-1] + 1) if index not in seen]
                rack["missing_trays"] = gaps
                rack["unseen_trays"] = self.rack_trays - len(seen)
            racks.append(rack)
        return racks

    def rack_problems(self, racks=None):
        """One line per rack problem: a domain in more than one chassis, a rack missing trays."""
        racks = self.racks() if racks is None else racks
        problems, chassis_of = [], {}
        for rack in racks:
            if rack["domain"] is not None:
                chassis_of.setdefault(rack["domain"], []).append(rack)
        for domain, found in chassis_of.items():
            if len(found) > 1:
                where = "; ".join(f"chassis {rack['chassis_serial_number']}: "
                                  f"{hostlist.compress([tray['node'] for tray in rack['trays']])}" for rack in found)
                problems.append(f"NVLink domain {domain} has trays in {len(found)} chassis: {where}")
        for rack in racks:
            if rack.get("unseen_trays"):
                trays = len({tray["tray_index"] for tray in rack["trays"] if "tray_index" in tray})
                named = rack["missing_trays"]
                missing = (f"tray{'s' if len(named) > 1 else ''} {','.join(map(str, named))} "
                           "report nothing") if named else ""
                beyond = rack["unseen_trays"] - len(named)
                if beyond:
                    missing += (("; and " if missing else "") + f"{beyond} more outside trays "
                                f"{min(t.get('tray_index', 0) for t in rack['trays'])}-"
                                f"{max(t.get('tray_index', 0) for t in rack['trays'])}")
                problems.append(f"rack {rack_name(rack)}: {trays} of {rack['expected_trays']} trays; {missing}")
        return problems

    # -- building -----------------------------------------------------------------------

    def add_switch(self, switch_id, parent=None, name=None, source="switch"):
        """Add a switch or attach a parent to a known one; a second, different parent is an error."""
        _require_name(switch_id, source)
        if parent is not None:
            _require_name(parent, f"{source}: parent of switch {switch_id!r}")
        if name is not None:
            _require_name(name, f"{source}: name of switch {switch_id!r}")
        switch = self.switches.get(switch_id)
        if switch is None:
            self.switches[switch_id] = Switch(switch_id, parent, name)
            return
        if parent is not None:
            if switch.parent is not None and switch.parent != parent:
                raise TopologyError(
                    f"switch {switch_id!r} has two parents: {switch.parent!r} and {parent!r}"
                )
            switch.parent = parent
        if name is not None:
            switch.name = name

    def add_node(self, name, switch=None, domain=None, sub_domain=None, labels=None, source="node"):
        problem = name_problem(name)
        if problem is not None:
            raise NodeDataError(f"{source}: {problem}")
        if name in self.quarantined:
            return  # one record of it was unusable: the node stays out, whatever the others say
        for value, what in ((switch, "switch"), (domain, "domain"), (sub_domain, "sub_domain")):
            # Each switch or domain is shared by many nodes: checked once, not once per node.
            if value is not None and not (isinstance(value, str) and value in self._checked_names):
                _require_name(value, f"{source}: {what} of node {name!r}")
                self._checked_names.add(value)
        if sub_domain is not None and domain is None:
            raise NodeDataError(f"node {name!r} has sub_domain {sub_domain!r} but no domain")
        labels = dict(labels or {})
        for key, value in labels.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise NodeDataError(f"{source}: labels of node {name!r} must map strings to strings, "
                                    f"got {clip(key)}: {clip(value)}")
        known = self.nodes.get(name)
        if known is None:
            if len(self.nodes) >= self.host_budget.max_hosts:
                raise TopologyError(f"{source}: more than {self.host_budget.max_hosts} nodes "
                                    "(limit against runaway input)")
            self.nodes[name] = Node(name, switch, domain, sub_domain, labels)
            return
        if switch is not None and known.switch is not None and known.switch != switch:
            raise NodeDataError(f"node {name!r} is under two leaf switches: {known.switch!r} and {switch!r}")
        if domain is not None and known.domain is not None and known.domain != domain:
            raise NodeDataError(f"node {name!r} is in two domains: {known.domain!r} and {domain!r}")
        known.switch = known.switch or switch
        known.domain = known.domain or domain
        known.sub_domain = known.sub_domain or sub_domain
        known.labels.update(labels)

    def add_nodes(self, names, switch=None, domain=None, sub_domain=None, labels=None, source="node"):
        """add_node for each of ``names``, which share switch, domains and labels (a model's block).

        The same rules and messages as add_node; what the nodes share is checked once, and the
        names together (names_are_valid), which matters at 100,000 nodes.
        """
        nodes = self.nodes
        if not names or len(nodes) + len(names) > self.host_budget.max_hosts or not names_are_valid(names):
            for name in names:  # add_node finds the first problem, in order, with its message
                self.add_node(name, switch, domain, sub_domain, labels, source)
            return
        self.add_node(names[0], switch, domain, sub_domain, labels, source)  # checks what they share
        labels = labels or {}
        for name in names[1:]:
            if name in nodes or name in self.quarantined:
                self.add_node(name, switch, domain, sub_domain, labels, source)
            else:
                nodes[name] = Node(name, switch, domain, sub_domain, dict(labels))

    def declare_domain(self, domain, source="domain"):
        """Declare a domain at the next physical position (it may have no nodes yet)."""
        _require_name(domain, source)
        if domain in self._declared_by:
            raise TopologyError(f"domain {domain!r} is declared twice ({self._declared_by[domain]} and {source})")
        self._declared_by[domain] = source
        self.domain_order.append(domain)

    # -- queries ------------------------------------------------------------------------

    def children(self) -> dict[str, list[str]]:
        """Switch id -> child switch ids (unsorted); roots under the key None."""
        result: dict[str | None, list[str]] = {None: []}
        for switch in self.switches.values():
            result.setdefault(switch.parent, []).append(switch.id)
        return result

    def nodes_by_switch(self) -> dict[str | None, list[str]]:
        result: dict[str | None, list[str]] = {}
        for node in self.nodes.values():
            result.setdefault(node.switch, []).append(node.name)
        return result

    def domains(self) -> dict[str, list[str]]:
        """Domain -> member node names, for every domain with nodes."""
        result: dict[str, list[str]] = {}
        for node in self.nodes.values():
            if node.domain is not None:
                result.setdefault(node.domain, []).append(node.name)
        return result

    def path(self, switch_id: str | None) -> list[str]:
        """Switch ids from ``switch_id`` (tier 0) up to its root."""
        path = []
        while switch_id is not None:
            path.append(switch_id)
            switch_id = self.switches[switch_id].parent
        return path

    # -- validation ---------------------------------------------------------------------

    def validate(self) -> "Topology":
        if not self.nodes:
            if self.quarantined:
                raise TopologyError(f"every node was quarantined ({len(self.quarantined)}), so nothing is left to "
                                    f"map: {quarantine_summary(self)}")
            raise TopologyError("the topology is empty: it has no nodes")
        self.check_switch_forest()
        self.check_unique_switch_names()
        for node in self.nodes.values():
            if node.switch is not None and node.switch not in self.switches:
                raise TopologyError(f"node {node.name!r} refers to unknown switch {node.switch!r}")
        return self

    def check_switch_forest(self) -> None:
        """Every parent exists and no switch is its own ancestor; path() relies on both."""
        for switch in self.switches.values():
            if switch.parent is not None and switch.parent not in self.switches:
                raise TopologyError(f"switch {switch.id!r} refers to unknown parent switch {switch.parent!r}")
        self._check_cycles()

    def check_unique_switch_names(self) -> None:
        """Slurm needs one SwitchName per switch: a display name (or id) used by two switches is an error."""
        holder: dict[str, str] = {}
        for switch in self.switches.values():
            shown = switch.name if switch.name is not None else switch.id
            other = holder.setdefault(shown, switch.id)
            if other != switch.id:
                raise TopologyError(f"switches {other!r} and {switch.id!r} both have the name {shown!r}; "
                                    "Slurm needs one SwitchName per switch")

    def _check_cycles(self) -> None:
        done: set[str] = set()
        for start in self.switches:
            seen_here = []
            current = start
            on_path = set()
            while current is not None and current not in done:
                if current in on_path:
                    cycle = seen_here[seen_here.index(current):] + [current]
                    raise TopologyError("switch cycle: " + " -> ".join(cycle))
                on_path.add(current)
                seen_here.append(current)
                current = self.switches[current].parent
            done.update(seen_here)

    # -- compact JSON form ----------------------------------------------------------------

    def to_compact(self) -> dict:
        groups: dict[tuple, list[str]] = {}
        for node in self.nodes.values():
            key = (node.domain or "", node.switch or "", node.sub_domain or "", tuple(sorted(node.labels.items())))
            groups.setdefault(key, []).append(node.name)
        node_groups = []
        label_sets: dict[tuple, int] = {}
        for key in sorted(groups, key=lambda k: (hostlist.natural_key(k[0]), hostlist.natural_key(k[1]), k[2], k[3])):
            domain, switch, sub_domain, labels = key
            group = {"nodes": hostlist.compress(groups[key])}
            if switch:
                group["switch"] = switch
            if domain:
                group["domain"] = domain
            if sub_domain:
                group["sub_domain"] = sub_domain
            if labels:
                group["labels"] = label_sets.setdefault(labels, len(label_sets))
            node_groups.append(group)
        compact = {
            "format": COMPACT_FORMAT,
            "switches": {sid: self.switches[sid].parent for sid in sorted(self.switches, key=hostlist.natural_key)},
            "nodes": node_groups,
        }
        names = {sid: sw.name for sid, sw in self.switches.items() if sw.name is not None}
        if names:
            compact["switch_names"] = dict(sorted(names.items()))
        if label_sets:
            compact["label_sets"] = [dict(labels) for labels in label_sets]  # insertion order = index
        if self.domain_order:
            compact["domain_order"] = list(self.domain_order)
        if self.quarantined:  # carried along, so a model handed to the next module still reports (and drains) them
            compact["quarantined"] = self.quarantine_report(limit=None)
        if self.locations:  # per node, not per group: a tray's place is its own
            compact["locations"] = {node: dict(place) for node, place in self.locations.items()}
        if self.rack_trays:
            compact["rack_trays"] = self.rack_trays
        return compact

    @classmethod
    def from_compact(cls, data) -> "Topology":
        """Parse and validate the compact form; errors name the field (``nodes[3].nodes``)."""
        if not isinstance(data, dict):
            raise TopologyError(f"model must be a mapping in the {COMPACT_FORMAT} form, got {type(data).__name__}")
        if data.get("format") != COMPACT_FORMAT:
            raise TopologyError(f"model.format must be {COMPACT_FORMAT!r}, got {clip(data.get('format'))}")
        check_known_keys(data, {"format", "switches", "switch_names", "nodes", "domain_order", "label_sets",
                                "quarantined", "locations", "rack_trays"}, "model")
        topo = cls()
        switches = data.get("switches") or {}
        if not isinstance(switches, dict):
            raise TopologyError("model.switches must be a mapping of switch id to parent id (or null)")
        names = data.get("switch_names") or {}
        if not isinstance(names, dict):
            raise TopologyError("model.switch_names must be a mapping of switch id to display name")
        for switch_id, parent in switches.items():
            where = f"model.switches[{clip(switch_id)}]"
            if parent is not None and not isinstance(parent, str):
                raise TopologyError(f"{where} must be a parent id or null, got {clip(parent)}")
            topo.add_switch(switch_id, parent, source=where)
        for switch_id, name in names.items():
            if not isinstance(switch_id, str) or switch_id not in topo.switches:
                raise TopologyError(f"model.switch_names names unknown switch {clip(switch_id)}")
            _require_name(name, f"model.switch_names[{switch_id!r}]")
            topo.switches[switch_id].name = name
        label_sets = data.get("label_sets", [])
        if not isinstance(label_sets, list) or not all(isinstance(item, dict) for item in label_sets):
            raise TopologyError("model.label_sets must be a list of mappings")
        groups = data.get("nodes")
        if not isinstance(groups, list):
            raise TopologyError("model.nodes must be a list of node groups")
        for index, group in enumerate(groups):
            where = f"model.nodes[{index}]"
            if not isinstance(group, dict):
                raise TopologyError(f"{where} must be a mapping")
            check_known_keys(group, {"nodes", "switch", "domain", "sub_domain", "labels"}, where)
            if not isinstance(group.get("nodes"), (str, list)):
                raise TopologyError(f"{where}.nodes must be a hostlist string or a list of them, "
                                    f"got {clip(group.get('nodes'))}")
            try:
                members = topo.host_budget.expand(group.get("nodes"))
            except hostlist.HostlistError as exc:
                raise TopologyError(f"{where}.nodes: {exc}") from None
            if not members:
                raise TopologyError(f"{where}.nodes is empty")
            labels = group.get("labels")
            if labels is None:
                labels = {}
            elif isinstance(labels, int) and not isinstance(labels, bool):
                if not 0 <= labels < len(label_sets):
                    raise TopologyError(f"{where}.labels: no label set {labels} in model.label_sets")
                labels = label_sets[labels]
            if not isinstance(labels, dict):
                raise TopologyError(f"{where}.labels must be a mapping or an index into model.label_sets")
            topo.add_nodes(members, group.get("switch"), group.get("domain"), group.get("sub_domain"),
                           labels, source=f"{where}.nodes")
        topo.restore_quarantine(data.get("quarantined") or [])
        topo.restore_locations(data.get("locations") or {}, data.get("rack_trays"))
        domain_order = data.get("domain_order") or []
        if not isinstance(domain_order, list):
            raise TopologyError(f"model.domain_order must be a list of domain names, got {clip(domain_order)}")
        for index, domain in enumerate(domain_order):
            topo.declare_domain(domain, source=f"model.domain_order[{index}]")
        return topo.validate()

    def restore_locations(self, locations, rack_trays=None, where="model.locations"):
        """The ``locations`` and ``rack_trays`` of a compact model (as to_compact writes them)."""
        if not isinstance(locations, dict):
            raise TopologyError(f"{where} must be a mapping of node to its place")
        if rack_trays is not None and (isinstance(rack_trays, bool) or not isinstance(rack_trays, int)
                                       or not 0 < rack_trays <= MAX_RACK_TRAYS):
            raise TopologyError(f"model.rack_trays must be a number from 1 to {MAX_RACK_TRAYS}, got {clip(rack_trays)}")
        self.rack_trays = rack_trays
        for node, place in locations.items():
            at = f"{where}[{clip(node)}]"
            check_name(node, at)
            if not isinstance(place, dict):
                raise TopologyError(f"{at} must be a mapping")
            check_known_keys(place, set(LOCATION_KEYS) | {"domain"}, at)
            for key, value in place.items():
                numbered = key in ("slot_number", "tray_index", "host_id")
                if numbered and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 255):
                    raise TopologyError(f"{at}.{key} must be a number from 0 to 255, got {clip(value)}")
                if not numbered:
                    check_name(value, f"{at}.{key}") if key != "peer_type" else _check_text(value, f"{at}.{key}")
            self.locations[node] = dict(place)

    def summary(self) -> dict:
        domains = self.domains()
        declared = set(self.domain_order)
        racks = self.racks() if self.locations else []
        extra = {"racks": [_rack_summary(rack) for rack in racks[:MAX_REPORTED_RACKS]]} if racks else {}
        return {
            "nodes": len(self.nodes),
            "switches": len(self.switches),
            "domains": len(domains),
            "placeholder_domains": sorted(declared - set(domains), key=hostlist.natural_key),
            "nodes_without_domain": sum(1 for node in self.nodes.values() if node.domain is None),
            "nodes_without_switch": sum(1 for node in self.nodes.values() if node.switch is None),
            "quarantined": len(self.quarantined),
            **extra,
        }


def rack_name(rack):
    """How messages name a rack: its NVLink domain and its chassis (several racks may share a serial)."""
    return f"{rack['domain'] or '(no NVLink domain)'} (chassis {rack['chassis_serial_number']})"


def _rack_summary(rack):
    """A rack in the summary: its name, its trays in physical order, and what is wrong with it."""
    summary = {"rack": rack_name(rack), "domain": rack["domain"],
               "chassis_serial_number": rack["chassis_serial_number"],
               "trays": [tray["node"] for tray in rack["trays"]],
               "schedulable": sum(1 for tray in rack["trays"] if tray["state"] == "ok")}
    bad = [tray["node"] for tray in rack["trays"] if tray["state"] != "ok"]
    if bad:
        summary["quarantined"] = bad
    if rack["expected_trays"]:
        summary["expected_trays"] = rack["expected_trays"]
    if rack.get("unseen_trays"):
        summary["missing_trays"] = rack["unseen_trays"]
    return summary


def _check_text(value, where):
    if not isinstance(value, str) or not value.isprintable() or len(value) > 64:
        raise TopologyError(f"{where} must be a printable string of at most 64 characters, got {clip(value)}")


def _as_recorded(text, width=200):
    """A quarantine field read back from a model: kept when it is one printable line within ``width``, else clipped."""
    return text if len(text) <= width and text.isprintable() else clip(text, width)


def quarantine_summary(topology, shown=5, records=None):
    """One line naming the first quarantined nodes and why (the warning and the error use it); ``records``:
    only these of the topology's Quarantined records (those one step added)."""
    records = list(topology.quarantined.values()) if records is None else list(records)
    text = "; ".join(f"{record.identifier} ({record.reason})" for record in records[:shown])
    return text + (f"; and {len(records) - shown} more" if len(records) > shown else "")


def quarantine_warning(topology, records=None):
    """The warning line about ``topology``'s quarantined nodes (or only ``records``), after a discovery, from a
    model that carries them, or from a consumer that refused one node's value."""
    count = len(topology.quarantined) if records is None else len(records)
    return f"{count} nodes quarantined (left out of the map): {quarantine_summary(topology, records=records)}"


# Names end up verbatim in Slurm's files (topology.conf records, hostlist expressions, ``#``
# comments), in topology.yaml and in Kubernetes label values. Slurm splits records on white
# space and hostlists on ',', expands '[...]', reads '=' as a key separator and '#' as a
# comment; its parser also treats quotes and '\\' specially. Such a name would change which
# nodes a record holds, so it is refused where the model is built, naming its source.
FORBIDDEN_NAME_CHARACTERS = ",[]=#\"'\\"
# The place of a tray, as nvidia-smi's platform fields and NMX's LocationInfo give it.
LOCATION_KEYS = ("chassis_serial_number", "slot_number", "tray_index", "host_id", "peer_type")
# What makes a tray's place: a node's claim must agree with a witness on these.
PLACE_KEYS = ("chassis_serial_number", "slot_number", "tray_index")
# Quarantine source of a tray whose place is not believed (claimed twice, beyond its rack).
PLACE_REFUSED = "tray_place"
MAX_RACK_TRAYS = 255
MAX_REPORTED_RACKS = 1000
MAX_NAME_LENGTH = 253  # a DNS name; longer is never a host, switch or rack name
# \s is str.isspace() (both use Py_UNICODE_ISSPACE).
_SPACE_OR_FORBIDDEN = re.compile(r"[\s" + re.escape(FORBIDDEN_NAME_CHARACTERS) + "]")


def names_are_valid(values):
    """Whether every one of ``values`` (a list) is a valid name: the rule itself, for all at once, in C."""
    # "_" is a valid name character, so the joined text is valid exactly when every name is.
    try:
        joined = "_".join(values)
    except TypeError:  # a name that is not a string
        return False
    return ("" not in values and joined.isprintable() and _SPACE_OR_FORBIDDEN.search(joined) is None
            and max(map(len, values), default=0) <= MAX_NAME_LENGTH)


def name_problem(value):
    """Why ``value`` cannot be a node, switch or domain name, or None when it can (names_are_valid's rule)."""
    if names_are_valid([value]):
        return None
    # Only to say what is wrong.
    if not isinstance(value, str):
        return f"name must be a non-empty string, got {type(value).__name__} {clip(value)}"
    if not value.strip():
        return f"name must be a non-empty string, got {clip(value)}"
    if len(value) > MAX_NAME_LENGTH:
        return f"{clip(value)} is longer than {MAX_NAME_LENGTH} characters"
    for char in value:
        if char.isspace() or not char.isprintable():
            return f"{clip(value)} contains white space or a control character ({char!r})"
        if char in FORBIDDEN_NAME_CHARACTERS:
            return (f"{clip(value)} contains {char!r}; names may not contain white space, control characters "
                    f"or any of {' '.join(FORBIDDEN_NAME_CHARACTERS)}")
    return None


def check_name(value, what):
    """``value`` if it is a valid name, else a TopologyError naming ``what`` (its source)."""
    problem = name_problem(value)
    if problem is not None:
        raise TopologyError(f"{what}: {problem}")
    return value


_require_name = check_name


def normalize_switch_names(topology):
    """Give switches Topograph's normalised display names ``switch.<tier+1>.<n>`` (OCI family).

    Nodes are ordered by their switch path from the highest tier down, then by name; each
    switch is numbered within its tier in the order first met (topograph: ClusterTopology.ToGraph).
    """
    paths = {name: topology.path(node.switch) for name, node in topology.nodes.items() if node.switch}
    counters: dict[int, int] = {}
    named: set[str] = set()
    for name in sorted(paths, key=lambda n: (list(reversed(paths[n])), n)):
        for tier, switch_id in enumerate(paths[name]):
            if switch_id in named:
                continue
            named.add(switch_id)
            counters[tier] = counters.get(tier, 0) + 1
            topology.switches[switch_id].name = f"switch.{tier + 1}.{counters[tier]}"
    return topology
