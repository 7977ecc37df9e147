# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVLink domains, fabric health and each tray's place in its rack, from ``nvidia-smi`` on each node.

Each node runs ``QUERY``, one process::

    nvidia-smi --query-gpu=<FIELDS> --format=csv,noheader

one row per GPU, with the ``--query-gpu`` property names ``nvidia-smi --help-query-gpu`` lists
(driver 580): the four fabric fields of NVML's ``nvmlGpuFabricInfo_t`` (``FABRIC_FIELDS``), its seven
health rows (``HEALTH_FIELDS``) and the tray's place (``PLATFORM_FIELDS``, NVML's
``nvmlPlatformInfo_v2_t``: chassis serial number, slot, tray index, host id, peer type, module id).

One parser (``parse``) reads every form a node's answer may take, each to one record per GPU keyed by
those property names: that CSV; with a header line (``--format=csv``), any columns, read by name;
without one, the documented column sets by their count (``LAYOUTS``: the full query, the fabric
fields with the health or the platform fields only, what a driver that knows fewer fields answers,
and the older four- and two-column queries); and ``nvidia-smi -q`` text, whose ``Fabric`` and
``Platform Info`` sections carry the same values under other names (``Q_NAMES``), in the 550-565 layout
(keys padded to column 42, the older platform names) and the 570+ one (column 55), with ``Attached GPUs`` to count GPUs that print no
section. ``summarize`` turns the records into a node's facts (what ``topology_facts`` returns as
``nvlink``), and ``decide`` is the one decision, on those facts whichever route they took (raw output
given to the source, gathered facts, NMX records in the ``netq`` provider): docs/providers/nvidia_smi.md
has it as a table.

* ``Completed`` + ``Success`` with an all-zero cluster UUID (every HGX H100/H200/B200 node, always) is
  registered and healthy with NVLink inside the node only: the node has no multi-node domain, as a node
  outside any rack; so has a GPU with no fabric at all (``N/A`` everywhere: PCIe and single-GPU
  nodes). Neither is a fault, unless the tray should be in a multi-node domain: its GPUs report an
  NVL chassis serial number (rack-scale NVLink systems do; HGX and PCIe GPUs report none or an empty
  one), or the operator says so (``accelerator.require_domain``).
* A registration that is not ``Completed`` with ``Success``, a health row that is not its healthy
  value (``N/A``, ``[N/A]`` and ``Not Supported`` are not reported), ``Partition Assigned`` ``False``,
  a GPU counted but not printed, or one GPU out of a fabric the others are in make the node
  ``NodeUnhealthy``; GPUs in different domains or places, or a value that cannot be a name, make it
  ``NodeDataError``. Either quarantines the node (reported by name; ``invalid_nodes: fail`` makes it
  fatal); each reason names the node, the row (or ``-q`` line), the field and the value (clipped).
"""

from __future__ import annotations

import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.numbers import number_value, whole_number
from ansible_collections.aifactory.topology.plugins.module_utils._base.patterns import compile_search_pattern
from ansible_collections.aifactory.topology.plugins.module_utils._providers._gathered import command_output
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    NodeDataError,
    NodeUnhealthy,
    TopologyError,
    clip,
)
from ansible_collections.aifactory.topology.plugins.module_utils._model import name_problem, rack_name

FABRIC_FIELDS = ("fabric.clusterUuid", "fabric.cliqueId", "fabric.state", "fabric.status")
# The health rows and the value that is healthy; any other value but "not reported" is a fault.
HEALTH_FIELDS = {
    "fabric.health.summary": ("Healthy",),
    "fabric.health.bandwidth": ("Full",),
    "fabric.health.route_recovery_in_progress": ("False",),
    "fabric.health.route_unhealthy": ("False",),
    "fabric.health.access_timeout_recovery": ("False",),
    "fabric.health.incorrect_configuration": ("None",),
    # A GPU in no NVLink partition cannot use multi-node NVLink; N/A where partitions are not used.
    "fabric.health.partition_assigned": ("True",),
}
PLATFORM_FIELDS = ("platform.chassis_serial_number", "platform.slot_number", "platform.tray_index",
                   "platform.host_id", "platform.peer_type", "platform.module_id")
FIELDS = FABRIC_FIELDS + tuple(HEALTH_FIELDS) + PLATFORM_FIELDS
# Header-less CSV: the column sets a node may answer, by their count.
LAYOUTS = {len(fields): fields for fields in (
    FIELDS,
    FABRIC_FIELDS + tuple(HEALTH_FIELDS),
    FABRIC_FIELDS + PLATFORM_FIELDS,
    FABRIC_FIELDS,
    FABRIC_FIELDS[:2],
)}
FIELD_GROUPS = {"health": tuple(HEALTH_FIELDS), "platform": PLATFORM_FIELDS}


def query(fields=FIELDS):
    """The one nvidia-smi command line for ``fields``."""
    return f"nvidia-smi --query-gpu={','.join(fields)} --format=csv,noheader"


QUERY = query()
HEALTH_QUERY = "nvidia-smi -q"
# What a driver answers for a field it does not know (with a non-zero exit).
UNKNOWN_FIELD = re.compile(r'Field "([^"\n]{1,100})" is not a valid field to query')
# nvidia-smi -q: the sections' names and their values as --query-gpu property names.
Q_NAMES = {
    "Fabric": {"State": "fabric.state", "Status": "fabric.status", "CliqueId": "fabric.cliqueId",
               "ClusterUUID": "fabric.clusterUuid"},
    "Health": {"Summary": "fabric.health.summary", "Bandwidth": "fabric.health.bandwidth",
               "Route Recovery in progress": "fabric.health.route_recovery_in_progress",
               "Route Unhealthy": "fabric.health.route_unhealthy",
               "Access Timeout Recovery": "fabric.health.access_timeout_recovery",
               "Incorrect Configuration": "fabric.health.incorrect_configuration",
               "Partition Assigned": "fabric.health.partition_assigned"},
    "Platform Info": {"Chassis Serial Number": "platform.chassis_serial_number",
                      "Slot Number": "platform.slot_number", "Tray Index": "platform.tray_index",
                      "Host ID": "platform.host_id", "Peer Type": "platform.peer_type",
                      "Module Id": "platform.module_id",
                      # The names of drivers before 570 (NVML's nvmlPlatformInfo_v1_t).
                      "RACK Serial Number": "platform.chassis_serial_number",
                      "Chassis Physical Slot Number": "platform.slot_number",
                      "Compute Slot Index": "platform.tray_index", "Node Index": "platform.host_id"},
}
_GPU_HEADER = re.compile(r"GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]")
_ATTACHED = re.compile(r"Attached GPUs\s*:\s*(\d{1,4})\s*")
_FIELD_NAME = re.compile(r"[a-z][A-Za-z0-9_.]*")
# What summarize says of a node's GPUs: in a multi-node domain, NVLink inside the node only, no fabric.
FABRIC_KINDS = ("domain", "node", "none")
COMPLETED = "Completed"
SUCCESS = "Success"
# One row per GPU is a few hundred bytes; -q of 8 GPUs is about 60 KB; a node has at most a few dozen GPUs.
MAX_OUTPUT_CHARS = 1024 * 1024
MAX_ROWS = 4096
_UNAVAILABLE = frozenset({"", "n/a", "[n/a]", "not supported", "[not supported]", "unknown", "[unknown]"})
_UNREGISTERED_UUID = "00000000-0000-0000-0000-000000000000"
# The place of a tray: facts keys, from these fields. The serial names a rack in messages and labels.
PLATFORM_KEYS = {"platform.chassis_serial_number": "chassis_serial_number", "platform.slot_number": "slot_number",
                 "platform.tray_index": "tray_index", "platform.host_id": "host_id",
                 "platform.peer_type": "peer_type"}
_NUMBERED_LOCATION = ("slot_number", "tray_index", "host_id")
MAX_PLATFORM_NUMBER = 255  # NVML's slotNumber, trayIndex and hostId are unsigned chars
MAX_SERIAL_LENGTH = 64


def available(value):
    """The value, or None for what nvidia-smi prints when it has none (``N/A``, ``[N/A]``, ``Not Supported``)."""
    text = str(value).strip() if value is not None else ""
    return None if text.lower() in _UNAVAILABLE else text


def _where(node, number):
    """A CSV row by its number; a ``-q`` GPU by its line (a str)."""
    return f"nvidia-smi output of {node}, {number}" if isinstance(number, str) else \
        f"nvidia-smi output of {node}, row {number}"


# -- parsing: every form to one record per GPU ---------------------------------------------------------

def parse(node, text, fields=None):
    """``(records, attached)`` of one node's nvidia-smi answer: ``records`` a list of ``(where, {field:
    value})`` per GPU, ``attached`` the GPU count ``-q`` prints (None for CSV). ``fields`` names the
    columns of header-less CSV (else they come from the header or the column count)."""
    if not isinstance(text, str):
        raise NodeDataError(f"nvidia-smi output of {node} must be text, got {type(text).__name__}")
    if len(text) > MAX_OUTPUT_CHARS:
        raise NodeDataError(f"nvidia-smi output of {node} has {len(text)} characters, more than {MAX_OUTPUT_CHARS}; "
                            f"it is not the output of {QUERY}")
    lines = text.split("\n")
    if any(line.strip() in ("Fabric", "Platform Info") or _ATTACHED.fullmatch(line.strip()) for line in lines):
        return _q_records(node, lines)
    return _csv_records(node, lines, fields), None


def _csv_records(node, lines, fields):
    numbered = [(number, line.strip()) for number, line in enumerate(lines, start=1) if line.strip()]
    if numbered and fields is None:
        cells = [cell.strip() for cell in numbered[0][1].split(",")]
        # A header (--format=csv): property names, among them ours; read by name.
        if all(_FIELD_NAME.fullmatch(cell) for cell in cells) and set(cells) & set(FIELDS):
            twice = sorted({cell for cell in cells if cells.count(cell) > 1})
            if twice:  # which column holds the value is the node's guess; none is taken
                raise NodeDataError(f"{_where(node, numbered[0][0])}: the header names {', '.join(twice)} more than "
                                    "once; which column holds the value cannot be told")
            fields = tuple(cells)
            numbered = numbered[1:]
    records = []
    for number, line in numbered:
        if len(records) == MAX_ROWS:
            raise NodeDataError(f"nvidia-smi output of {node} has more than {MAX_ROWS} GPU rows")
        cells = [cell.strip() for cell in line.split(",")]
        columns = fields or LAYOUTS.get(len(cells))
        if columns is None or len(cells) != len(columns):
            expected = f"{len(columns)} columns ({', '.join(columns)})" if columns else \
                f"one of {', '.join(str(count) for count in sorted(LAYOUTS, reverse=True))} columns"
            raise NodeDataError(f"{_where(node, number)}: expected {expected}, got {len(cells)}: "
                                f"{clip(line)} (run: {QUERY}; other columns need a header: --format=csv)")
        records.append((number, dict(zip(columns, cells))))
    return records


def _indent(line):
    return len(line) - len(line.lstrip(" \t"))


def _q_records(node, lines):
    """The GPUs of ``nvidia-smi -q``: one record per ``GPU <bus id>`` section (or, in output cut to
    them, per ``Fabric`` section) from its ``Fabric``, ``Health`` and ``Platform Info`` values."""
    records, attached, current, path = [], None, None, []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        depth = _indent(line)
        if depth == 0:
            match = _ATTACHED.fullmatch(stripped)
            if match:
                attached = whole_number(match.group(1), f"{_where(node, f'line {number}')}: Attached GPUs", high=9999,
                                        error=NodeDataError)
            if _GPU_HEADER.fullmatch(stripped):
                current = _new_record(node, records, f"line {number}")
            path = []
            continue
        while path and path[-1][0] >= depth:
            path.pop()
        key, colon, value = stripped.partition(":")
        key = key.strip()
        if not colon:
            if key == "Fabric" and (current is None or "fabric.state" in current[1]):
                # Output cut to the Fabric sections, without GPU headers: each section is a GPU.
                current = _new_record(node, records, f"line {number}")
            path.append((depth, key))
            continue
        section = path[-1][1] if path else None
        field = Q_NAMES.get(section, {}).get(key)
        if field is None and section == "Fabric":  # where a driver prints Summary beside Health
            field = Q_NAMES["Health"].get(key)
        if field is not None and current is not None:
            current[1].setdefault(field, value.strip())
    return records, attached


def _new_record(node, records, where):
    if len(records) == MAX_ROWS:
        raise NodeDataError(f"nvidia-smi output of {node} has more than {MAX_ROWS} GPU sections")
    records.append((where, {}))
    return records[-1]


# -- one node's facts from its GPU records -----------------------------------------------------------

def _gpu_domain(node, where, record):
    """``(kind, domain or reason)`` of one GPU: kind ``domain``, ``node`` (registered, NVLink inside
    the node only), ``none`` (no fabric) or ``unhealthy``. Raises NodeDataError for a value that is no name."""
    uuid, clique = record.get("fabric.clusterUuid", ""), record.get("fabric.cliqueId", "")
    state, status = available(record.get("fabric.state")), available(record.get("fabric.status"))
    registered = "fabric.state" not in record or (state or "").lower() == COMPLETED.lower()
    if "fabric.state" in record:
        if state is None:
            return "none", None
        if not registered:
            return "unhealthy", (f"{_where(node, where)}: fabric.state is {clip(state)}, not {COMPLETED!r}; the GPU has "
                                 "not finished registering with the NVLink fabric (is nvidia-imex / the fabric "
                                 "manager running?)")
        if (status or "").lower() != SUCCESS.lower():
            return "unhealthy", (f"{_where(node, where)}: fabric.status is {clip(status or 'empty')}, not {SUCCESS!r}; "
                                 "the GPU's registration with the NVLink fabric failed")
    for value, what in ((uuid, "fabric.clusterUuid"), (clique, "fabric.cliqueId")):
        if "\ufffd" in value:  # what a lenient decoder leaves of bytes that were not UTF-8
            raise NodeDataError(f"{_where(node, where)}: {what} {clip(value)} holds U+FFFD, what is left of "
                                "bytes that were not UTF-8; the value cannot be read")
    if available(uuid) is None or available(clique) is None:
        return "none", None
    if uuid == _UNREGISTERED_UUID:
        return "node", None
    domain = f"{uuid}.{clique}"
    # The domain becomes a block name in topology.conf and a label value: the model's one name
    # rule, per field (to name it) and joined (the lengths add up).
    for value, what in ((uuid, "fabric.clusterUuid"), (clique, "fabric.cliqueId"), (domain, "the domain")):
        problem = name_problem(value)
        if problem:
            raise NodeDataError(f"{_where(node, where)}: {what}: {problem}")
    return "domain", domain


# The most telling first: a degraded bandwidth also makes the summary "Limited Capacity".
_JUDGED = tuple(field for field in HEALTH_FIELDS if field != "fabric.health.summary") + ("fabric.health.summary",)


def _health_problem(node, where, record, in_fabric):
    for field in _JUDGED:
        healthy = HEALTH_FIELDS[field]
        value = available(record.get(field))
        if value is None or value.lower() in {v.lower() for v in healthy}:
            continue
        if field == "fabric.health.partition_assigned" and not in_fabric:
            continue  # partitions are a multi-node NVLink matter
        return (f"{_where(node, where)}: {field} is {clip(value)}, not {healthy[0]!r}; "
                + ("the GPU is in no NVLink partition and cannot use multi-node NVLink"
                   if field == "fabric.health.partition_assigned" else "the GPU's NVLink fabric is degraded"))
    return None


_UNREADABLE = {"\ufffd": "U+FFFD (what is left of bytes that were not UTF-8)",
               "\ufffc": "U+FFFC (an object replacement character)"}


def _location(node, records):
    """The tray's place, the same on each GPU that reports it (module ids differ: the GPU within the node)."""
    found, first = {}, {}
    for where, record in records:
        for field, key in PLATFORM_KEYS.items():
            value = available(record.get(field))
            if value is None:
                continue
            if key in _NUMBERED_LOCATION:
                value = whole_number(value, f"{_where(node, where)}: {field}", high=MAX_PLATFORM_NUMBER,
                                     error=NodeDataError)
            elif key == "chassis_serial_number":
                # A replacement character is what a lenient decoder left of other bytes: no rack's name.
                problem = name_problem(value) or next((f"{clip(value)} holds {_UNREADABLE[char]}, so it names no rack"
                                                       for char in value if char in _UNREADABLE), None)
                if problem or len(value) > MAX_SERIAL_LENGTH:
                    raise NodeDataError(f"{_where(node, where)}: {field}: "
                                        f"{problem or f'is longer than {MAX_SERIAL_LENGTH} characters'}")
            elif not value.isprintable() or len(value) > MAX_SERIAL_LENGTH:
                raise NodeDataError(f"{_where(node, where)}: {field} must be one printable line of at most "
                                    f"{MAX_SERIAL_LENGTH} characters, got {clip(value)}")
            if key in found and found[key] != value:
                raise NodeDataError(f"nvidia-smi output of {node}: its GPUs are in different places: {field} is "
                                    f"{clip(found[key])} ({_where(node, first[key]).rsplit(', ', 1)[1]}) and "
                                    f"{clip(value)} ({_where(node, where).rsplit(', ', 1)[1]})")
            found.setdefault(key, value)
            first.setdefault(key, where)
    return found


def summarize(node, records, attached=None):
    """One node's NVLink facts from its GPU records (``parse``): what ``topology_facts`` returns as ``nvlink``.

    ``{gpus, fabric, state, status, cluster_uuid, clique_id, domain, health, location, unhealthy}``
    (each only where it applies); ``fabric`` is ``domain`` (a multi-node NVLink domain), ``node``
    (registered, NVLink inside the node only) or ``none`` (no fabric). A GPU that is unhealthy, or counted
    but not printed, gives ``unhealthy``, the reason; values that cannot be names or GPUs that disagree
    about their domain or place raise NodeDataError.
    """
    if not records:
        raise NodeDataError(f"nvidia-smi output of {node} has no GPU row")
    kinds, problems = {}, []
    for where, record in records:
        kind, value = _gpu_domain(node, where, record)
        if kind == "unhealthy":
            problems.append(value)
            continue
        kinds.setdefault((kind, value), where)
        problem = _health_problem(node, where, record, kind == "domain")
        if problem:
            problems.append(problem)
    domains = [(domain, where) for (kind, domain), where in kinds.items() if kind == "domain"]
    if len(domains) > 1:
        found = ", ".join(f"{domain} ({_where(node, where).rsplit(', ', 1)[1]})" for domain, where in domains[:8])
        raise NodeDataError(f"nvidia-smi output of {node}: its GPUs are in different NVLink domains: {found}")
    location = _location(node, records)
    facts = {"gpus": len(records)}
    if attached is not None and attached > len(records):
        problems.insert(0, f"nvidia-smi output of {node}: {attached} GPUs are attached and {len(records)} print "
                           "their state; a GPU was lost (fallen off the bus?)")
    if domains and len(kinds) > 1:
        outside = next(where for (kind, _value), where in kinds.items() if kind != "domain")
        problems.append(f"{_where(node, outside)}: the GPU is in no NVLink domain while the node's other GPUs are in "
                        f"{domains[0][0]}; the tray is out of its fabric")
    first = records[0][1]
    if "fabric.state" in first:
        facts["state"], facts["status"] = first.get("fabric.state", ""), first.get("fabric.status", "")
    if domains:
        domain = domains[0][0]
        uuid, _dot, clique = domain.rpartition(".")
        facts.update(fabric="domain", cluster_uuid=uuid, clique_id=clique, domain=domain)
    else:
        facts["fabric"] = "node" if ("node", None) in kinds else "none"
    # The rows the GPUs reported (a later GPU's value wins: the facts show one value per row).
    health = {field.rsplit(".", 1)[1]: available(record.get(field)) for _row, record in records
              for field in HEALTH_FIELDS if available(record.get(field)) is not None}
    if health:
        facts["health"] = health
    if location:
        facts["location"] = location
    if problems:
        facts["unhealthy"] = problems[0]
    return facts


# -- the one decision ------------------------------------------------------------------------------

def decide(node, facts, require_domain=False, where=None, gathered=False):
    """The node's multi-node NVLink domain, or None when it has none (not a fault); NodeUnhealthy or
    NodeDataError otherwise. ``facts`` are ``summarize``'s, here or on the node (``gathered``: their
    reasons are the node's text, quoted), or facts an older ``topology_facts`` gathered."""
    where = where or f"the NVLink facts of {node}"
    if not isinstance(facts, dict):
        raise NodeDataError(f"{where} must be a mapping, got {type(facts).__name__}")
    for key, kind, what in (("invalid", NodeDataError, "unusable NVLink data"),
                            ("unhealthy", NodeUnhealthy, "an unhealthy NVLink fabric")):
        if facts.get(key):
            raise kind(f"{where}: the gathered facts of {node} report {what}: {clip(str(facts[key]), 300)}"
                       if gathered else str(facts[key]))
    if "fabric" not in facts:
        return _legacy_domain(node, facts, require_domain, where)
    if facts["fabric"] not in FABRIC_KINDS:
        raise NodeDataError(f"{where}: fabric must be one of {', '.join(FABRIC_KINDS)}, got {clip(facts['fabric'])}")
    if facts["fabric"] == "domain":
        return _checked_domain(node, facts, where)
    serial = (facts.get("location") or {}).get("chassis_serial_number") if isinstance(facts.get("location"), dict) \
        else None
    if serial:
        raise NodeUnhealthy(f"{node}: its GPUs report NVL chassis serial number {clip(serial)}, a rack-scale NVLink "
                            f"system, but are in no multi-node NVLink domain ({_no_domain(facts)})")
    if require_domain:
        raise NodeUnhealthy(f"{node}: accelerator.require_domain names it, but its GPUs are in no multi-node NVLink "
                            f"domain ({_no_domain(facts)})")
    return None


def _no_domain(facts):
    return ("registered, with NVLink inside the node only: an all-zero cluster UUID" if facts.get("fabric") == "node"
            else "no NVLink fabric: fabric.state N/A")


def _checked_domain(node, facts, where):
    uuid, clique = str(facts.get("cluster_uuid", "")), str(facts.get("clique_id", ""))
    domain = f"{uuid}.{clique}"
    for value, what in ((uuid, "cluster_uuid"), (clique, "clique_id"), (domain, "the domain")):
        problem = name_problem(value)
        if problem:
            raise NodeDataError(f"{where}: {what}: {problem}")
    if facts.get("domain") not in (None, domain):
        raise NodeDataError(f"{where}: domain {clip(facts.get('domain'))} is not cluster_uuid.clique_id ({clip(domain)})")
    return domain


def _legacy_domain(node, facts, require_domain, where):
    """Facts of an older ``topology_facts`` (``cluster_uuid``, ``clique_id`` and maybe ``state``, ``status``;
    ``{}`` for a node without GPUs in a fabric), checked as one GPU row."""
    if not facts.get("cluster_uuid") and facts.get("clique_id") in (None, ""):
        if require_domain:
            raise NodeUnhealthy(f"{where}: accelerator.require_domain names {node}, and its gathered facts have "
                                "no NVLink clique")
        return None
    record = {"fabric.clusterUuid": str(facts.get("cluster_uuid", "")), "fabric.cliqueId": str(facts.get("clique_id", ""))}
    if "state" in facts or "status" in facts:
        record.update({"fabric.state": str(facts.get("state", "")), "fabric.status": str(facts.get("status", ""))})
    return decide(node, summarize(node, [(1, record)]), require_domain, where)


# -- the source: every node's domain and place ---------------------------------------------------

def facts_of(node, value, where):
    """``(facts, gathered)``: one node's NVLink facts from what the source was given: gathered facts
    (``topology_node`` or its ``nvlink`` part; ``gathered`` true), a registered command result or the raw output."""
    if isinstance(value, dict) and ("nvlink" in value or "hostname" in value or "infiniband" in value):
        if "nvlink" not in value:
            raise NodeDataError(f"{where}: the gathered facts of {node} have no nvlink part (topology_facts did "
                                "not gather nvlink)")
        value = value["nvlink"]
        if not isinstance(value, dict):
            raise NodeDataError(f"{where}: the gathered nvlink facts of {node} must be a mapping")
        return value, True
    if isinstance(value, dict) and ({"fabric", "clique_id", "cluster_uuid", "unhealthy", "invalid", "gpus"}
                                    & set(value) or not value):
        return value, True
    try:
        text = command_output(value, where)
    except TopologyError as exc:  # nvidia-smi failed there: that node's driver or GPUs, not the run
        raise NodeUnhealthy(str(exc)) from None
    records, attached = parse(node, text)
    return summarize(node, records, attached), False


def apply_nvidia_smi_domains(topology, outputs, warn=None, require_domain=None, rack_trays=None, escalation=None,
                             rack_from_name=None):
    """Set each node's accelerator domain and place from its nvidia-smi answer; returns ``topology``.

    ``outputs`` maps node -> raw output, a registered command result with ``stdout``, or gathered facts.
    Nodes the tree provider did not report are added without a switch, with a warning. A node with no
    multi-node domain keeps none (counted in the summary's ``nodes_without_domain``). ``require_domain``
    lists the nodes that must be in one (hostlist expressions, or ``all``); ``rack_trays`` the trays a full
    rack has; ``escalation`` (``{trays, share}``, opt-in) takes a rack with that many bad trays out;
    ``rack_from_name`` (a compiled pattern with a group ``rack``) reads the rack a node's name gives.
    """
    if not isinstance(outputs, dict) or not outputs:
        raise TopologyError("accelerator.nvidia_smi must map each node to its nvidia-smi output")
    warn = warn or (lambda message: None)
    try:
        required = set(topology.host_budget.expand(require_domain or []))
    except hostlist.HostlistError as exc:
        raise TopologyError(f"accelerator.require_domain: {exc}") from None
    added, declared = [], {}
    for node, value in outputs.items():
        node = str(node)
        where = f"accelerator.nvidia_smi.{node}"
        # One node's output (a tray out of its fabric, GPUs in two cliques) quarantines that node.
        with topology.per_node(node, "nvidia_smi"):
            facts, gathered = facts_of(node, value, where)
            if isinstance(facts, dict) and isinstance(facts.get("location"), dict):
                # Recorded first: a tray quarantined below still sits in its rack.
                _locate(topology, node, facts, where)
            domain = decide(node, facts, node in required or "all" in required, where, gathered)
            known = topology.nodes.get(node)
            if known is None:
                topology.add_node(node, domain=domain, source=where)
                added.append(node)
            else:
                if known.domain is not None:
                    declared[node] = known.domain
                if known.domain != domain:
                    known.domain, known.sub_domain = domain, None
    if added:
        warn(f"{len(added)} nodes with nvidia-smi output are not in the {len(topology.nodes) - len(added)}-node tree "
             f"and get no switch: {hostlist.compress(added)}")
    _report_contradictions(topology, declared, warn)
    topology.rack_trays = rack_trays or topology.rack_trays
    doubted = refuse_false_places(topology, warn) if topology.locations else set()
    # One rack view for both: the names read no tray's state, and escalation reads the states as they were.
    racks = topology.racks() if topology.locations and (rack_from_name is not None or escalation) else []
    if rack_from_name is not None:
        _report_names(racks, rack_from_name, warn)
    if escalation:
        escalate_racks(topology, escalation, racks, rack_from_name, warn, doubted)
    return topology


def refuse_false_places(topology, warn):
    """A tray's place is the node's own word: two trays claiming one place (domain, chassis, slot, tray), or
    a tray beyond a rack that reports more trays than ``rack_trays``, are named in a warning and refused
    (quarantined as invalid, in no rack view), unless NMX witnessed the place. Returns the racks
    (domain, serial) that had a claim refused: their missing trays are no evidence for escalation."""
    doubted = set()
    for (domain, serial, slot, index), nodes in sorted(topology.place_claims().items(), key=lambda item: str(item[0])):
        place = (f"chassis {serial}" + (f" slot {slot}" if slot is not None else "") + f" tray {index}"
                 + (f" of NVLink domain {domain}" if domain else ""))
        witnessed = [node for node in nodes if node in topology.witnessed_places]
        refused = [node for node in nodes if node not in witnessed] if len(witnessed) == 1 else nodes
        nodes = sorted(nodes, key=hostlist.natural_key)
        warn(f"{len(nodes)} trays claim one place, {place}: {', '.join(nodes)}; "
             + (f"{topology.witnessed_places[witnessed[0]]} places {witnessed[0]} there, " if len(witnessed) == 1
                else "") + f"{', '.join(sorted(refused, key=hostlist.natural_key))} counted in no rack")
        for node in refused:
            others = ", ".join(other for other in nodes if other != node)
            verb = "claims" if len(nodes) == 2 else "claim"
            topology.refuse_place(node, f"{node} claims {place}, which {others} also {verb}")
        doubted.add((domain, serial))
    limit = topology.rack_trays
    for rack in topology.racks() if limit else []:
        if len(rack["trays"]) <= limit:
            continue
        # Which claims are false is unknown; tray indices no full rack has are, so those go.
        beyond = [tray["node"] for tray in rack["trays"] if tray.get("tray_index", 0) > limit
                  and tray["node"] not in topology.witnessed_places]
        warn(f"rack {rack_name(rack)} reports {len(rack['trays'])} trays, more than its {limit}: "
             + (f"{hostlist.compress(beyond)} (tray indices above {limit}) counted in no rack" if beyond
                else "no tray refused"))
        for node in beyond:
            topology.refuse_place(node, f"{node} claims a tray index above {limit} in rack {rack_name(rack)}, "
                                        f"which reports {len(rack['trays'])} trays")
        doubted.add((rack["domain"], rack["chassis_serial_number"]))
    return doubted


def escalate_racks(topology, escalation, racks, rack_from_name=None, warn=None, doubted=()):
    """Take every rack with at least ``escalation.trays`` (or ``share`` percent of its trays) unhealthy or
    missing out of NVLink placement: its remaining trays are quarantined as unhealthy, with one reason
    naming the rack, the count and the trays, so the block holds none of them, the opt-in drain and
    taint act on them, and the shrink guard counts them. The next run without the fault restores them.
    Trays quarantined as invalid are no evidence. ``racks`` is ``topology.racks()``, computed once.

    The witness rule (docs/security.md): a tray's place and state are its own word, so only unhealthy
    trays whose place an independent witness gives (NMX, or ``rack_from_name``: the operator's name puts
    the tray in the rack its healthy trays' names give), and missing trays of a rack with no refused
    claim, count toward acting; a rack that reaches the threshold only with unwitnessed claims is named
    in a warning with its claimants and left in placement."""
    warn = warn or (lambda message: None)
    for rack in racks:
        if rack["domain"] is None:
            continue
        bad = [tray for tray in rack["trays"] if tray["state"] == "unhealthy"]
        expected = rack["expected_trays"] or len(rack["trays"])
        unseen = rack.get("unseen_trays", 0)
        if not _reaches(escalation, len(bad) + unseen, expected):
            continue
        named = sorted([tray.get("tray_index", tray["node"]) for tray in bad] + rack["missing_trays"],
                       key=lambda item: hostlist.natural_key(str(item)))
        healthy = [tray["node"] for tray in rack["trays"] if tray["state"] == "ok"]
        vouched = [tray for tray in bad if _witnessed(topology, tray["node"], rack, rack_from_name)]
        trusted_unseen = 0 if (rack["domain"], rack["chassis_serial_number"]) in doubted else unseen
        count = len(vouched) + trusted_unseen
        if healthy and not _reaches(escalation, count, expected):
            claimants = sorted((tray["node"] for tray in bad if tray not in vouched), key=hostlist.natural_key)
            warn(f"rack {rack_name(rack)} is not taken out of NVLink placement, though {len(bad) + unseen} of "
                 f"{expected} trays are unhealthy or missing: {len(healthy)} of its trays report healthy and no "
                 f"independent witness (NMX, the rack a name gives) agrees with the claims of "
                 f"{', '.join(claimants) or 'the trays that report nothing'}")
            continue
        reason = (f"rack {rack_name(rack)} is taken out of NVLink placement: {len(bad) + unseen} of {expected} "
                  f"trays are unhealthy or missing (trays {','.join(map(str, named))})")
        for node in healthy:
            topology.quarantine(node, "rack_escalation", reason, unhealthy=True)


def _reaches(escalation, count, expected):
    share = 100.0 * count / expected if expected else 0.0
    return bool(count) and bool((escalation.get("trays") and count >= escalation["trays"])
                                or (escalation.get("share") is not None and share >= escalation["share"]))


def _witnessed(topology, node, rack, pattern):
    """Whether a source other than ``node`` itself puts it in ``rack``: NMX gave its place, or its name
    (the operator's) gives the rack most of the rack's healthy trays' names give."""
    if node in topology.witnessed_places:
        return True
    if pattern is None:
        return False
    names = {}
    for tray in rack["trays"]:
        if tray["state"] == "ok":
            match = pattern.fullmatch(tray["node"])
            if match is not None and match.group("rack"):
                names[match.group("rack")] = names.get(match.group("rack"), 0) + 1
    match = pattern.fullmatch(node)
    return bool(names) and match is not None and match.group("rack") == max(names, key=lambda name: (names[name], name))


def _locate(topology, node, facts, where):
    """The tray's place from its facts: gathered facts are the node's word, so checked as the parser checks."""
    domain = facts.get("domain") if isinstance(facts.get("domain"), str) and not name_problem(facts["domain"]) else None
    topology.locate(node, checked_location(node, facts["location"], where), domain)


def checked_location(node, location, where):
    """A place given as ``{chassis_serial_number, slot_number, tray_index, host_id, peer_type}`` (gathered
    facts, NMX's LocationInfo), checked as nvidia-smi's platform fields are; NodeDataError names the field."""
    records = [(1, {field: str(location[key]) for field, key in PLATFORM_KEYS.items()
                    if location.get(key) not in (None, "")})]
    try:
        return _location(node, records)
    except NodeDataError as exc:
        raise NodeDataError(f"{where}: location: {exc}") from None


def _report_contradictions(topology, declared, warn):
    """A clique whose nodes the provider had put in different domains (racks): each name and both."""
    by_clique = {}
    for node, provider_domain in declared.items():
        if node in topology.nodes and topology.nodes[node].domain is not None:
            by_clique.setdefault(topology.nodes[node].domain, {}).setdefault(provider_domain, []).append(node)
    for clique, groups in by_clique.items():
        if len(groups) > 1:
            found = "; ".join(f"{hostlist.compress(nodes)} in {provider_domain}" for provider_domain, nodes in
                              sorted(groups.items(), key=lambda item: -len(item[1])))
            warn(f"NVLink domain {clique} contradicts the provider's domains: its nodes are {found}")


def _report_names(racks, pattern, warn):
    """A node whose name puts it in another rack than its hardware does: each hardware rack's name-rack is
    what most of its trays' names say; every tray whose name says otherwise is named, with both racks."""
    for rack in racks:
        named = {}
        for tray in rack["trays"]:
            match = pattern.fullmatch(tray["node"])
            if match is not None and match.group("rack") == "":
                warn(f"{tray['node']}: the name gives an empty rack (the group rack of accelerator.rack_from_name "
                     "matches nothing in it), so it is not compared with the hardware's rack")
            elif match is not None and match.group("rack") is not None:
                named.setdefault(match.group("rack"), []).append(tray["node"])
        if len(named) < 2:
            continue
        usual = max(named, key=lambda name: (len(named[name]), name))
        for name, nodes in sorted(named.items()):
            if name != usual:
                warn(f"{hostlist.compress(nodes)}: the name says rack {name}, the hardware says rack {rack_name(rack)}, "
                     f"whose other trays are named for rack {usual} ({hostlist.compress(named[usual])})")


def apply_accelerator(topology, spec, warn=None):
    """``params.accelerator`` of any provider, validated by its spec (``_specs.ACCELERATOR``):
    ``{source: nvidia_smi|nvidia-smi|none, nvidia_smi: {node: output}, require_domain, rack_trays}``."""
    if spec.get("source") == "none":
        return topology
    if not 0 < (spec.get("rack_trays") or 18) <= 255:
        raise TopologyError(f"accelerator.rack_trays must be a number from 1 to 255, got {spec['rack_trays']}")
    escalation = spec.get("rack_escalation") or {}
    if escalation.get("trays") is not None:
        # number_value refuses a boolean: ``trays: true`` is no count of trays.
        number_value(escalation["trays"], "accelerator.rack_escalation.trays", 1, 255, integer=True)
    if escalation.get("share") is not None:
        number_value(escalation["share"], "accelerator.rack_escalation.share", 0, 100)
        if not escalation["share"] > 0:
            raise TopologyError("accelerator.rack_escalation.share must be a percentage above 0 and at most 100, "
                                f"got {escalation['share']}")
    if escalation and escalation.get("trays") is None and escalation.get("share") is None:
        raise TopologyError("accelerator.rack_escalation needs trays or share")
    pattern = None
    if spec.get("rack_from_name"):
        pattern = compile_search_pattern(spec["rack_from_name"], "accelerator.rack_from_name")
        if "rack" not in pattern.groupindex:
            raise TopologyError("accelerator.rack_from_name needs a named group (?P<rack>...) for the rack in a name")
    return apply_nvidia_smi_domains(topology, spec.get("nvidia_smi"), warn, spec.get("require_domain"),
                                    spec.get("rack_trays"), spec.get("rack_escalation"), pattern)
