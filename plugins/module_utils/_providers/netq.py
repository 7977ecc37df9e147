# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA NetQ topology graph, and NVLink domains from NMX (topograph: pkg/providers/netq).

Calls, in order (the same as Topograph):

1. ``POST api/netq/auth/v1/login`` with ``{"username", "password"}`` -> ``access_token`` and
   ``premises: [{name, namespace, opid, config_key_viewed}]``;
2. for each premises with ``config_key_viewed``: ``GET api/netq/auth/v1/select/opid/<opid>``
   (Bearer token) -> a token for that premises, then
   ``POST api/netq/telemetry/v1/object/topologygraph/fetch-topology?timestamp=0`` with
   ``{"filters": [], "subgroupNestingDepth": 2}`` -> ``[{nodes: [{compounded_nodes: [{id,
   name, tier}]}], links: [{id: "<a>-*-<b>"}]}]`` (tier -1 is a host);
3. ``GET nmx/v1/compute-nodes`` (Basic auth) -> ``[{Name, DomainUUID, Health, LocationInfo}]``: the
   NVLink domain of each node, its health (a tray that is not ``HEALTHY`` is quarantined as unhealthy)
   and its place (``ChassisSerialNumber``, ``SlotID``, ``TrayIndex``, ``HostID``: the racks of the
   summary). Best effort: on failure the tree is returned with a warning.

The graph is built from the hosts up along links to higher tiers, then collapsed
(``_merger``). Switch ids are NetQ's node ids and their names NetQ's host names; with more
than one premises, ids are prefixed ``<opid>.`` to keep the premises apart.

TLS is verified (Topograph turns it off); ``ca_bundle`` names a private CA.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _merger
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import HttpError, require_keys
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology, name_problem
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import AifactoryTopologyError, RemoteAPIError, TopologyError, clip
from ansible_collections.aifactory.topology.plugins.module_utils._providers._cloud import http_client, secret
from ansible_collections.aifactory.topology.plugins.module_utils._providers._nvidia_smi import checked_location
from ansible_collections.aifactory.topology.plugins.module_utils._providers.inventory_vars import _expand

LOGIN = "api/netq/auth/v1/login"
SELECT_OPID = "api/netq/auth/v1/select/opid/{opid}"
FETCH_TOPOLOGY = "api/netq/telemetry/v1/object/topologygraph/fetch-topology"
TOPOLOGY_QUERY = {"filters": [], "subgroupNestingDepth": 2}
NMX_COMPUTE_NODES = "nmx/v1/compute-nodes"
NMX_HEALTHY = "HEALTHY"
# NMX's LocationInfo keys, as the tray's place (the keys of nvidia-smi's platform fields in the model).
NMX_LOCATION = {"chassis_serial_number": "ChassisSerialNumber", "slot_number": "SlotID", "tray_index": "TrayIndex",
                "host_id": "HostID"}
HOST_TIER = -1
LINK_SEPARATOR = "-*-"

ACCEPT_JSON = {"Accept": "application/json"}


def discover(params, creds, warn):
    username = secret(creds, "username", ("NETQ_USERNAME",), required_by="netq")
    password = secret(creds, "password", ("NETQ_PASSWORD",), required_by="netq")
    try:
        return _discover(params, username, password, warn)
    except AifactoryTopologyError as exc:
        # A server may echo the request; the password never reaches a message.
        masked = str(exc).replace(password, "********")
        if isinstance(exc, RemoteAPIError):
            raise type(exc)(masked, exc.status) from None
        raise type(exc)(masked) from None


def _url(params, key, required=False):
    value = params.get(key)
    if value is None and not required:
        return None
    if not str(value).startswith(("https://", "http://")):
        raise TopologyError(f"params.{key} must be the server's URL, such as https://netq.example.com; got {value!r}")
    return value


def _discover(params, username, password, warn):
    api_url = _url(params, "api_url", required=True)
    wanted = set(_expand(params.get("nodes"), "params.nodes")) if params.get("nodes") is not None else None
    nmx = params.get("nmx", True)
    client = http_client(params, api_url, headers=ACCEPT_JSON)
    login = require_keys(client.json("POST", LOGIN, json={"username": username, "password": password}),
                         ["access_token", "premises"], f"POST {client.url(LOGIN)}")
    premises = login["premises"]
    if not isinstance(premises, list) or not all(isinstance(item, dict) for item in premises):
        raise HttpError(f"POST {client.url(LOGIN)}: premises must be a list of objects")
    chosen = [item for item in premises if item.get("config_key_viewed")]
    if not chosen:
        raise TopologyError(f"NetQ login: none of the {len(premises)} premises has config_key_viewed set; "
                            "there is no premises to read the topology of")
    topology = Topology()
    for item in chosen:
        where = f"NetQ premises {item.get('name', '?')!r} (opid {item.get('opid')!r})"
        if item.get("opid") is None:
            raise HttpError(f"{where}: the login response gives no opid")
        graph = _fetch_graph(client, login["access_token"], item["opid"], where)
        prefix = f"{item['opid']}." if len(chosen) > 1 else ""
        add_graph(topology, graph, wanted, where, prefix, warn)
    _merger.keep_unique_names(topology, warn)
    if not topology.nodes:
        raise TopologyError("none of params.nodes is a host (tier -1) of the NetQ topology" if wanted is not None
                            else "the NetQ topology has no host (tier -1) linked to a switch")
    quarantined = {record.node for record in topology.quarantined.values()}
    missing = sorted(wanted - set(topology.nodes) - quarantined, key=hostlist.natural_key) if wanted is not None else []
    if missing:
        warn(f"{len(missing)} nodes are not in the NetQ topology and get no switch: {hostlist.compress(missing)}")
        for name in missing:
            topology.add_node(name, source="params.nodes")
    if nmx:
        _add_nvlink_domains(topology, params, api_url, (username, password), warn)
    return topology


def _fetch_graph(client, token, opid, where):
    path = SELECT_OPID.format(opid=opid)
    selected = require_keys(client.json("GET", path, headers={"Authorization": f"Bearer {token}"}),
                            ["access_token"], f"{where}: GET {client.url(path)}")
    return client.json("POST", FETCH_TOPOLOGY, params={"timestamp": "0"}, json=TOPOLOGY_QUERY,
                       headers={"Authorization": f"Bearer {selected['access_token']}"})


def add_graph(topology, graph, wanted=None, where="NetQ topology graph", prefix="", warn=None):
    """Add one premises' topology graph (the fetch-topology response) to ``topology``."""
    warn = warn or (lambda message: None)
    tiers, names, hosts = {}, {}, {}
    if not isinstance(graph, list) or len(graph) != 1 or not isinstance(graph[0], dict):
        raise HttpError(f"{where}: the topology graph must be a list with one object, got "
                        f"{type(graph).__name__}{' of ' + str(len(graph)) if isinstance(graph, list) else ''}")
    for index, group in enumerate(_list(graph[0], "nodes", where)):
        for position, node in enumerate(_list(group, "compounded_nodes", f"{where}: nodes[{index}]")):
            node_where = f"{where}: nodes[{index}].compounded_nodes[{position}]"
            record = _node_record(node, node_where)
            if isinstance(record, str):  # one node's record is unusable: that node is quarantined
                identifier = node.get("name") if isinstance(node.get("name"), str) and node.get("name") else \
                    str(node["id"])
                if wanted is None or identifier in wanted:
                    topology.quarantine(identifier, "netq", record)
                continue
            node_id, name, tier = record
            tiers[node_id] = tier
            if tier == HOST_TIER:
                problem = name_problem(name)
                if problem is not None:
                    if wanted is None or name in wanted:
                        topology.quarantine(name, "netq", f"{node_where}: host name {problem}")
                    continue
                hosts[node_id] = name
            else:
                names[node_id] = name
    up, bad_links = {}, []
    for index, link in enumerate(_list(graph[0], "links", where)):
        ends = str(require_keys(link, ["id"], f"{where}: links[{index}]")["id"]).split(LINK_SEPARATOR)
        if len(ends) != 2 or ends[0] not in tiers or ends[1] not in tiers or tiers[ends[0]] == tiers[ends[1]]:
            bad_links.append(str(link["id"]))
            continue
        low, high = sorted(ends, key=tiers.get)
        up.setdefault(low, set()).add(high)
    if bad_links:
        warn(f"{where}: {len(bad_links)} links are ignored (unknown node or both ends in one tier): "
             f"{', '.join(bad_links[:5])}{' ...' if len(bad_links) > 5 else ''}")
    leaves = {}
    for host_id, name in hosts.items():
        if wanted is None or name in wanted:
            for leaf in up.get(host_id, ()):
                if leaf in names:
                    leaves.setdefault(leaf, set()).add(name)
    tiers_up = _merger.collapse(_merger.tiers_bottom_up(leaves, up), warn)
    return _merger.add_tree(topology, tiers_up, names, prefix)


def _node_record(node, where):
    """``(id, name, tier)`` of one graph node, or why that node's record is unusable.

    A record without an id cannot be linked or named: that is the graph's problem (an error).
    """
    require_keys(node, ["id"], where)
    missing = [key for key in ("name", "tier") if key not in node]
    if missing:
        return f"{where}: missing {', '.join(missing)}"
    tier = node["tier"]
    if isinstance(tier, bool) or not isinstance(tier, int):
        return f"{where}: tier must be an integer, got {clip(tier)}"
    return str(node["id"]), str(node["name"]), tier


def _list(document, key, where):
    value = require_keys(document, [key], where)[key]
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise HttpError(f"{where}: {key} must be a list of objects")
    return value


def _add_nvlink_domains(topology, params, api_url, basic_auth, warn):
    """Best effort, as in Topograph: a failing NMX leaves the tree without domains, with a warning."""
    nmx_url = _url(params, "nmx_url") or api_url
    try:
        client = http_client(params, nmx_url, headers=ACCEPT_JSON, auth=basic_auth)
        nodes = client.json("GET", NMX_COMPUTE_NODES)
        if not isinstance(nodes, list):
            raise HttpError(f"GET {client.url(NMX_COMPUTE_NODES)}: expected a list of compute nodes")
        domains, refused, unhealthy, places = {}, {}, {}, {}
        for index, node in enumerate(nodes):
            where = f"GET {client.url(NMX_COMPUTE_NODES)}: [{index}]"
            require_keys(node, ["Name", "DomainUUID"], where)
            name, domain = node["Name"], node["DomainUUID"]
            if name and domain:
                if not isinstance(name, str):
                    raise HttpError(f"{where}: Name must be a string, got {clip(name)}")
                # One node's NVLink domain that is not a string or a name: that node is quarantined.
                problem = name_problem(domain) if isinstance(domain, str) else \
                    f"must be a string, got {clip(domain)}"
                if problem:
                    refused[name] = f"{where}.DomainUUID {problem}"
                    continue
                domains[name] = domain
                health = node.get("Health")
                if health is not None and str(health).upper() != NMX_HEALTHY:
                    unhealthy[name] = f"{where}: NMX reports Health {clip(health)}, not {NMX_HEALTHY!r}"
                place = node.get("LocationInfo")
                if isinstance(place, dict):
                    places[name] = ({key: place.get(nmx_key) for key, nmx_key in NMX_LOCATION.items()}, where)
    except AifactoryTopologyError as exc:
        # Documented as best effort: any failure of NMX (HTTP, body, values) is this warning.
        warn(f"NVLink domains from NMX are not available, so the topology has no accelerator domains: {exc}")
        return
    for name, (place, where) in places.items():
        if name in topology.nodes:
            with topology.per_node(name, "netq"):
                topology.locate(name, checked_location(name, place, f"{where}.LocationInfo"), domains.get(name),
                                witness="NMX")
    for name, reason in refused.items():
        if name in topology.nodes:
            topology.quarantine(name, "netq", reason)
    for name, reason in unhealthy.items():
        if name in topology.nodes:  # a tray NVIDIA's NVLink management calls unhealthy gets no NVLink jobs
            topology.quarantine(name, "netq", reason, unhealthy=True)
    unknown = sorted((name for name in domains if name not in topology.nodes), key=hostlist.natural_key)
    for name, domain in domains.items():
        if name in topology.nodes:
            topology.nodes[name].domain = domain
    if unknown:
        warn(f"{len(unknown)} NMX compute nodes are not nodes of the topology and are left out: "
             f"{hostlist.compress(unknown)}")
