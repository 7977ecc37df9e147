# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA IMEX peer lists: one ``nodes_config.cfg`` per NVLink domain.

IMEX needs the same list of peer addresses, in the same order, on every member of a domain
(a mismatch shows as ``!M!`` and blocks communication), and only that domain's members.
``domain_members`` gives each domain's nodes in a stable order (natural sort of the names);
``peer_plan`` joins them with the addresses the hosts report and returns every problem at
once, so that a playbook can refuse to write anything anywhere while one domain disagrees.
"""

from __future__ import annotations

import hashlib
import json
import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import config_text
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import clip
from ansible_collections.aifactory.topology.plugins.module_utils._base.fact_cache import read_state
from ansible_collections.aifactory.topology.plugins.module_utils._base.hostlist import natural_key

try:
    import netaddr
except ImportError:  # reported by normalize_address, the only user
    netaddr = None

ADDRESS_SOURCES = ("auto", "variable", "facts")


def domain_members(topology, include_empty=False) -> dict[str, list[str]]:
    """Domain -> member nodes in natural order; domains in ``domain_order``, then the others in natural order.

    Declared domains without nodes (day-2 placeholders) are left out unless ``include_empty``.
    """
    members = topology.domains()
    declared = list(topology.domain_order)
    others = sorted((name for name in members if name not in set(declared)), key=natural_key)
    return {
        name: sorted(members.get(name, []), key=natural_key)
        for name in declared + others
        if include_empty or members.get(name)
    }


def normalize_address(value) -> str:
    """The canonical text of a unicast IPv4/IPv6 address; ValueError says what is wrong with it."""
    if netaddr is None:
        raise ValueError("the Python library 'netaddr' is required on the Ansible controller "
                         "to validate IMEX addresses (pip install netaddr)")
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{value!r} is not an IP address")
    text = value.strip()
    try:
        # INET_PTON: only the standard notation, never '10.1' or '012.0.0.1' style shorthands.
        address = netaddr.IPAddress(text, flags=netaddr.INET_PTON)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        raise ValueError(f"{text!r} is not a valid IP address") from None
    if address.value == 0:
        raise ValueError(f"{text!r} is the unspecified address")
    if address.is_loopback():
        raise ValueError(f"{text!r} is a loopback address; peers on other nodes cannot reach it")
    if address.is_multicast() or (address.version == 4 and address == netaddr.IPAddress("255.255.255.255")):
        raise ValueError(f"{text!r} is not a unicast address")
    if address.version == 6 and address.is_link_local():
        raise ValueError(f"{text!r} is an IPv6 link-local address, which needs a zone IMEX peers do not share")
    return str(address)


def _resolve(record) -> tuple[str | None, str | None]:
    """(address, None) or (None, problem) for one host record, following its address source."""
    source = record.get("source") or "auto"
    variable = record.get("address") or None
    facts = record.get("facts_address") or None
    origin = record.get("facts_origin") or "facts"
    if not record.get("in_play", True):
        if variable is None:
            return None, ("not in this play (left out by --limit, unreachable or failed) and no imex_address in "
                          "the inventory; run the play on the whole domain or set imex_address")
        return _checked(variable, "imex_address")
    if source not in ADDRESS_SOURCES:
        return None, f"imex_address_source {source!r} is not one of {', '.join(ADDRESS_SOURCES)}"
    if source == "variable" or (source == "auto" and variable is not None):
        if variable is None:
            return None, "no imex_address (imex_address_source: variable)"
        return _checked(variable, "imex_address")
    if facts is None:
        if source == "auto":
            return None, f"neither imex_address nor an address in its facts ({origin})"
        return None, f"no address in its facts ({origin})"
    address, problem = _checked(facts, f"the address in its facts ({origin})")
    if problem or variable is None:
        return address, problem
    declared, problem = _checked(variable, "imex_address")
    if problem:
        return None, problem
    if declared != address:
        return None, f"imex_address {declared} differs from the address in its facts ({origin}) {address}"
    return address, None


def _checked(value, what) -> tuple[str | None, str | None]:
    try:
        return normalize_address(value), None
    except ValueError as exc:
        return None, f"{what}: {exc}"


def peer_plan(topology, records) -> dict:
    """Join each NVLink domain's members with their addresses; collect every problem.

    ``records``: one mapping per inventory host: ``host``, ``node`` (its name in the model),
    ``in_play`` (the host reported itself in this run), ``source`` (auto, variable or facts),
    ``address`` (its imex_address), ``facts_address`` and ``facts_origin`` (what its facts say).

    Only domains with at least one member in the play are planned (and checked). Returns
    ``domains``: domain -> {nodes, hosts, addresses, errors} in the domain's node order (errors: that
    domain's messages); ``hosts``: each
    host in the play -> {node, domain, reason} (domain None with the reason when it has no
    NVLink domain); ``errors``: messages naming the domain, node, host and address.
    """
    members = domain_members(topology)
    domain_of = {node: domain for domain, nodes in members.items() for node in nodes}
    errors: list[str] = []

    by_node: dict[str, dict] = {}
    claimed_by: dict[str, list[str]] = {}
    for record in records:
        node = record.get("node") or record.get("host")
        claimed_by.setdefault(node, []).append(record.get("host"))
        # A host that reported itself wins over an inventory-only entry for the same node.
        if node not in by_node or (record.get("in_play") and not by_node[node].get("in_play")):
            by_node[node] = record

    hosts: dict[str, dict] = {}
    wanted: list[str] = []
    for record in records:
        if not record.get("in_play"):
            continue
        node = record.get("node") or record["host"]
        domain = domain_of.get(node)
        if domain is None:
            reason = ("is not in the topology model" if node not in topology.nodes
                      else "has no NVLink domain in the topology model")
        else:
            reason = None
            if domain not in wanted:
                wanted.append(domain)
        hosts[record["host"]] = {"node": node, "domain": domain, "reason": reason}

    domains: dict[str, dict] = {}
    owner_of_address: dict[str, tuple[str, str]] = {}
    for domain in (name for name in members if name in wanted):
        plan = {"nodes": members[domain], "hosts": [], "addresses": []}
        errors_before = len(errors)
        seen: dict[str, str] = {}
        families: dict[int, str] = {}
        for node in members[domain]:
            claimants = claimed_by.get(node, [])
            if len(claimants) > 1:
                errors.append(f"domain {domain}: node {node} is claimed by several hosts "
                              f"({', '.join(sorted(claimants))}); set imex_node_name so that each node has one host")
                continue
            record = by_node.get(node)
            if record is None:
                errors.append(f"domain {domain}: node {node} has no inventory host (no host of that name and "
                              f"no host with imex_node_name: {node}), so its address is unknown")
                continue
            address, problem = _resolve(record)
            label = node if record["host"] == node else f"{node} (host {record['host']})"
            if problem:
                errors.append(f"domain {domain}: node {label}: {problem}")
                continue
            if address in seen:
                errors.append(f"domain {domain}: nodes {seen[address]} and {node} have the same address {address}")
                continue
            version = 6 if ":" in address else 4
            other = families.get(10 - version)
            if other is not None:
                errors.append(f"domain {domain}: node {node} has an IPv{version} address ({address}) but "
                              f"{other} has an IPv{10 - version} one; use one address family per domain")
                continue
            families.setdefault(version, f"{node} ({address})")
            if address in owner_of_address:
                other_domain, other_node = owner_of_address[address]
                errors.append(f"domain {domain}: node {node} has address {address}, which node {other_node} "
                              f"of domain {other_domain} has too")
                continue
            seen[address] = node
            owner_of_address[address] = (domain, node)
            plan["hosts"].append(record["host"])
            plan["addresses"].append(address)
        plan["errors"] = errors[errors_before:]
        domains[domain] = plan
    return {"domains": domains, "hosts": hosts, "errors": errors}


CONFIG_HEADER = (
    "# NVIDIA IMEX configuration, written by the aifactory.topology.imex role: edits here are replaced.\n"
    "# NVLink domain {domain}; its peers are listed in {nodes_config_path}.\n"
    "# nvidia-imex reads this file only when it starts; the role restarts it after a change.\n"
)


def render_nodes_config(addresses) -> str:
    """``nodes_config.cfg``: one peer address a line, in the domain's order."""
    return "".join(f"{address}\n" for address in addresses)


# What config.cfg can hold (render_config writes, setting_problems checks before anything is written): one line of
# text, a number or a boolean (an int to Python, written 1 or 0); None leaves the key out.
def _scalar(value) -> bool:
    return isinstance(value, (str, int, float))


def _multi_line(value) -> bool:
    return isinstance(value, str) and ("\n" in value or "\r" in value)


def render_config(settings, domain, nodes_config_path) -> str:
    """``config.cfg``: the header, then ``KEY=value`` in the order of ``settings``.

    A None value leaves its key out (IMEX then uses its built-in default); a boolean is written 1 or 0.
    A value that is not one line of text, a number or a boolean is a ValueError naming the key.
    """
    lines = [CONFIG_HEADER.format(domain=domain, nodes_config_path=nodes_config_path)]
    for key, value in settings.items():
        problem = config_text.key_problem(key)
        if problem is not None:
            raise ValueError(f"config key {clip(key)}: {problem}")
        if value is None:
            continue
        if isinstance(value, bool):
            value = int(value)
        elif not _scalar(value) or _multi_line(value):
            raise ValueError(f"config.{key}: the value must be one line of text, a number, a boolean or null")
        problem = config_text.value_problem(value)
        if problem is not None:
            raise ValueError(f"config.{key}: {problem}")
        lines.append(f"{key}={value}\n")
    return "".join(lines)


def setting_problems(config, extra_keys, documented_keys, mode, driver_branch, nodes_config_path) -> list[str]:
    """Everything wrong with one host's IMEX settings (the role's ``imex_*`` variables, ``config`` and ``extra_keys``
    typed), as messages, all at once; ``documented_keys``: the config.cfg keys NVIDIA documents."""
    problems = []
    if mode == "slurm":
        unknown = sorted(set(config) - set(documented_keys) - set(extra_keys))
        if unknown:
            problems.append(f"imex_config: unknown key(s) {', '.join(unknown)}. Documented keys: {', '.join(documented_keys)}. "
                            "To use a key of a newer IMEX release, add it to imex_config_extra_keys.")
        if "IMEX_NODE_CONFIG_FILE" in config:
            problems.append(f"imex_config: IMEX_NODE_CONFIG_FILE is set by the role from imex_nodes_config_path (now "
                            f"{nodes_config_path}), where it writes the peer list; set imex_nodes_config_path instead.")
        # The keys of values of another type first, then those of text over several lines.
        bad = [key for key, value in config.items() if value is not None and not _scalar(value)]
        bad += [key for key, value in config.items() if _multi_line(value)]
        if bad:
            problems.append(f"imex_config: the value of {', '.join(bad)} must be one line of text, a number, a boolean "
                            "(written 1 or 0) or null (key left out).")
        for key, value in config.items():
            if key not in bad and config_text.value_problem(value) is not None:
                problems.append(f"imex_config: the value of {clip(key)}: {config_text.value_problem(value)}")
        for option, keys in (("imex_config", config), ("imex_config_extra_keys", extra_keys)):
            for key in keys:
                if config_text.key_problem(key) is not None:
                    problems.append(f"{option}: key {clip(key)}: {config_text.key_problem(key)}")
    if not re.fullmatch(r"[0-9]*", str(driver_branch)):
        problems.append(f"imex_driver_branch must be the driver's major version such as 570, or empty to detect it; "
                        f"got {driver_branch}")
    return problems


# -- a run that costs what changed: which nodes to visit ------------------------------------------

# The driver's major version (its branch, such as 570): from /proc/driver/nvidia/version ("... Kernel Module
# for x86_64  570.133.20  ...") or from nvidia-smi's driver_version query (one "570.133.20" a GPU). Read line
# by line with an anchored match, over at most MAX_DRIVER_TEXT characters: a search with (?m)^\s* runs on
# across every blank line from every line start (quadratic in a node's output).
MAX_DRIVER_TEXT = 64 * 1024
_DRIVER_VERSION = re.compile(r"([0-9]{3,})\.[0-9]")


def driver_branch(text, from_nvidia_smi=False) -> str:
    """The driver branch in the text of the driver's version file (its first word such as 570.133.20 after
    a space) or of nvidia-smi's answer (the first line that starts with one); '' when none."""
    text = (text or "")[:MAX_DRIVER_TEXT]
    for number, line in enumerate(text.split("\n")):
        if from_nvidia_smi:
            found = _DRIVER_VERSION.match(line.strip())
            if found:
                return found.group(1)
            continue
        # In the version file the number follows white space: not the text's very first word.
        for word in line.split()[1 if number == 0 and line[:1].strip() else 0:]:
            found = _DRIVER_VERSION.match(word)
            if found:
                return found.group(1)
    return ""


STATE_FORMAT = 1


def read_applied(text) -> tuple[dict[str, str], str | None]:
    """The ``domains`` (domain -> digest) of an applied-state file's text, and why it was not usable.

    No file (None or empty text) is an empty state; a file that is not this format's JSON is an empty
    state with the reason, so the run visits every domain (and writes a good file afterwards).
    """
    domains, problem = read_state(text, STATE_FORMAT, "domains", "the IMEX applied state")
    return {str(name): str(digest) for name, digest in domains.items()}, problem


def domain_digest(plan, settings, revision) -> str:
    """What a domain's trays must hold, as one SHA-256: its members, nodes and addresses in order, the
    nodes_config.cfg text rendered from them, each member's IMEX settings as the controller sees them, and
    ``revision``: the values of the role's defaults that shape config.cfg (never source text, so a comment
    or a style fix visits no node)."""
    facts = {"format": STATE_FORMAT, "revision": revision, "nodes": plan["nodes"], "hosts": plan["hosts"],
             "addresses": plan["addresses"], "nodes_config": render_nodes_config(plan["addresses"]),
             "settings": {host: settings.get(host) for host in plan["hosts"]}}
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def fleet_selection(topology, records, settings, applied, revision, verify_all=False) -> dict:
    """Plan every domain on the controller and choose the hosts a run must visit.

    ``records`` as for ``peer_plan``, one per inventory host, ``in_play`` for the hosts of the node play
    (their addresses from the inventory and the cached facts); ``settings``: host -> its IMEX settings as
    the controller sees them; ``applied``: domain -> the digest recorded after its last complete apply.

    A domain is visited (all its members in the play) when it was never applied, its digest differs, or
    the controller cannot plan it (an address only the node's facts can give, a conflict: the node play
    then finds and reports it); with ``verify_all`` every host of the play is visited. Returns ``plan``
    (``peer_plan``'s), ``digests`` (domain -> digest, for domains planned without error), ``status``
    (domain -> unchanged, new, changed or unplanned), ``visit_domains``, ``visit`` (hosts, inventory
    order) and ``outside`` (host of the play -> why it has no domain).
    """
    plan = peer_plan(topology, records)
    digests, status = {}, {}
    for domain, entry in plan["domains"].items():
        if entry["errors"]:
            status[domain] = "unplanned"
            continue
        digests[domain] = domain_digest(entry, settings, revision)
        if domain not in applied:
            status[domain] = "new"
        elif applied[domain] != digests[domain]:
            status[domain] = "changed"
        else:
            status[domain] = "unchanged"
    visit_domains = [domain for domain, state in status.items() if verify_all or state != "unchanged"]
    wanted = set(visit_domains)
    outside = {host: entry["reason"] for host, entry in plan["hosts"].items() if entry["domain"] is None}
    visit = [host for host, entry in plan["hosts"].items()
             if entry["domain"] in wanted or (verify_all and entry["domain"] is None)]
    return {"plan": plan, "digests": digests, "status": status, "visit_domains": visit_domains,
            "visit": visit, "outside": outside}


def applied_after(before, fleet, reports) -> dict[str, str]:
    """The applied state after a run: ``before`` plus each visited domain that was applied whole.

    ``reports``: host -> the peer addresses of its domain as the node play wrote them (hosts that reached
    the end of the role; a host that failed, was left out by --limit or ran in check mode is missing).
    A domain counts only when every member reported the controller's addresses: a run limited to part of
    it, or whose node plan differs (cached facts older than the node's), stays to be applied.
    """
    after = dict(before)
    for domain in fleet["visit_domains"]:
        digest = fleet["digests"].get(domain)
        entry = fleet["plan"]["domains"][domain]
        if digest is None:
            continue
        if entry["hosts"] and all(reports.get(host) == entry["addresses"] for host in entry["hosts"]):
            after[domain] = digest
    return after


def merge_applied(current, read, after) -> tuple[dict[str, str], list[str]]:
    """The applied state to write: ``current`` (the file as re-read under its lock) with this run's changes.

    ``read``: the domains as this run read them when it planned; ``after``: what it would record. A domain
    this run changes is taken only where ``current`` still holds what the run read (compare and swap);
    where another run recorded it meanwhile, the two runs may have left its trays with either one's
    files, so the domain is dropped (the next run visits it) and named in the conflicts. Domains this run
    did not change keep what ``current`` holds (another run's record stays).
    """
    merged = dict(current)
    conflicts = []
    for domain in sorted(set(read) | set(after)):
        if read.get(domain) == after.get(domain):
            continue
        if current.get(domain) == read.get(domain):
            if domain in after:
                merged[domain] = after[domain]
            else:
                merged.pop(domain, None)
        elif current.get(domain) != after.get(domain):
            merged.pop(domain, None)
            conflicts.append(domain)
    return merged, conflicts
