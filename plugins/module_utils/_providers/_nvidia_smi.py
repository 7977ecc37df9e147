# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVLink domains and fabric health from ``nvidia-smi`` on each node, on top of any tree provider.

Each node runs ``QUERY``::

    nvidia-smi --query-gpu=fabric.clusterUuid,fabric.cliqueId,fabric.state,fabric.status --format=csv,noheader

one row per GPU, with the ``--query-gpu`` property names nvidia-smi documents (``nvidia-smi
--help-query-gpu``) for the fields of NVML's ``nvmlGpuFabricInfo_t``: ``fabric.clusterUuid`` and
``fabric.cliqueId`` (the domain), ``fabric.state`` (the GPU's registration with the NVLink fabric:
``Not Supported``, ``Not Started``, ``In Progress`` or ``Completed``) and ``fabric.status`` (the
result of a completed registration: ``Success`` or the error nvidia-smi names). The rows of a node
must agree; its domain is ``<clusterUuid>.<cliqueId>``, as in Topograph's infiniband providers.

The fabric health is not among these fields; nvidia-smi prints it in ``HEALTH_QUERY``
(``nvidia-smi -q``), in each GPU's ``Fabric`` section, the same four values as ``State``, ``Status``,
``CliqueId`` and ``ClusterUUID`` and a ``Health`` block (``HEALTH_ROWS``: ``Summary`` ``Healthy``,
``Bandwidth`` ``Full`` or ``Degraded``, ``Route Recovery in progress``, ``Route Unhealthy``, ``Access
Timeout Recovery``, ``Incorrect Configuration``; NVML's ``healthSummary`` and ``healthMask`` of
``nvmlGpuFabricInfo_v3_t``). ``node_fabric`` reads that output too, one record per ``Fabric`` section.

A GPU whose registration is not ``Completed`` with ``Success``, that is outside any fabric (``N/A``,
an all-zero cluster UUID) or whose fabric health is degraded makes its node ``NodeUnhealthy``; GPUs
in different cliques or a value that cannot be a name make it ``NodeDataError``. Either quarantines
the node (left out of the map, reported by name; ``invalid_nodes: fail`` makes it fatal). Both name the node,
the row (the line of a ``-q`` section), the field and the value (clipped): a wrong domain would let
Slurm place one job across two NVLink domains, an unregistered tray would get jobs that cannot use
NVLink.

The older two-column output (``--query-gpu=fabric.clusterUuid,fabric.cliqueId`` only, as
operators registered it and older ``topology_facts`` gathered it) is still read, without the
registration check it cannot make.

Providers take it as ``params.accelerator: {source: nvidia_smi, nvidia_smi: {node: output}}``; an
output may also be the node's ``topology_node`` fact from aifactory.topology.topology_facts (or its
``nvlink`` part), which ran ``QUERY`` on the node through ``node_fabric``, the same parser.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._providers._gathered import command_output
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    NodeDataError,
    NodeUnhealthy,
    TopologyError,
    clip,
)
from ansible_collections.aifactory.topology.plugins.module_utils._model import name_problem

FIELDS = ("fabric.clusterUuid", "fabric.cliqueId", "fabric.state", "fabric.status")
QUERY = f"nvidia-smi --query-gpu={','.join(FIELDS)} --format=csv,noheader"
HEALTH_QUERY = "nvidia-smi -q"
# The -q names of the Fabric section's values, as the --query-gpu fields they are.
_SECTION_FIELDS = {"ClusterUUID": "fabric.clusterUuid", "CliqueId": "fabric.cliqueId", "State": "fabric.state",
                   "Status": "fabric.status"}
# Health rows of the Fabric section and their healthy values; N/A or Not Supported means not reported.
# The most telling first: a degraded bandwidth also makes the summary "Limited Capacity".
HEALTH_ROWS = {"Bandwidth": ("Full",), "Route Recovery in progress": ("False",), "Route Unhealthy": ("False",),
               "Access Timeout Recovery": ("False",), "Incorrect Configuration": ("None",), "Summary": ("Healthy",)}
COMPLETED = "Completed"
SUCCESS = "Success"
# One row per GPU is a few dozen bytes; a node has at most a few dozen GPUs.
MAX_OUTPUT_CHARS = 1024 * 1024
MAX_ROWS = 4096
_UNAVAILABLE = frozenset({"", "n/a", "[n/a]", "not supported", "[not supported]", "unknown", "[unknown]"})
_UNREGISTERED_UUID = "00000000-0000-0000-0000-000000000000"


class NotInFabric(NodeUnhealthy):
    """The node's GPUs are in no NVLink fabric at all (``N/A``, ``Not Supported``, an all-zero cluster
    UUID): unhealthy for a provider that was told they are, no NVLink facts for topology_facts."""


def _where(node, number):
    """A CSV row by its number; a ``Fabric`` section of ``nvidia-smi -q`` by its line (a str)."""
    return f"nvidia-smi output of {node}, {number}" if isinstance(number, str) else \
        f"nvidia-smi output of {node}, row {number}"


def check_row(node, number, fields, health=None):
    """The domain of one GPU row, ``fields`` being (clusterUuid, cliqueId[, state, status]) as text and
    ``health`` the rows of its ``Fabric`` / ``Health`` block (``nvidia-smi -q``), if read.

    The one check of a row, for command output and gathered facts alike: the registration
    (``fabric.state`` ``Completed``, ``fabric.status`` ``Success``) first, then the health, then the
    domain fields.
    """
    uuid, clique = fields[0], fields[1]
    if len(fields) > 2:
        state, status = fields[2], fields[3]
        if state.lower() in _UNAVAILABLE:
            raise NotInFabric(f"{_where(node, number)}: fabric.state is {clip(state or 'empty')}; the GPU is not in "
                              "an NVLink fabric (no multi-node NVLink, or the fabric manager is not running)")
        if state.lower() != COMPLETED.lower():
            raise NodeUnhealthy(f"{_where(node, number)}: fabric.state is {clip(state)}, not {COMPLETED!r}; the GPU "
                                "has not finished registering with the NVLink fabric (is nvidia-imex / the fabric "
                                "manager running?)")
        if status.lower() != SUCCESS.lower():
            raise NodeUnhealthy(f"{_where(node, number)}: fabric.status is {clip(status or 'empty')}, not "
                                f"{SUCCESS!r}; the GPU's registration with the NVLink fabric failed")
    for row, healthy in HEALTH_ROWS.items():
        value = (health or {}).get(row, "")
        if value.lower() not in _UNAVAILABLE and value.lower() not in {v.lower() for v in healthy}:
            raise NodeUnhealthy(f"{_where(node, number)}: Fabric Health {row} is {clip(value)}, not "
                                f"{healthy[0]!r}; the GPU's NVLink fabric is degraded")
    for value, what in ((uuid, "fabric.clusterUuid"), (clique, "fabric.cliqueId")):
        if value.lower() in _UNAVAILABLE:
            raise NotInFabric(f"{_where(node, number)}: {what} is {clip(value or 'empty')}; the GPU is not in an "
                              "NVLink fabric (is nvidia-imex / the fabric manager running?)")
    if uuid == _UNREGISTERED_UUID:
        raise NotInFabric(f"{_where(node, number)}: the cluster UUID is all zeros; the GPU has not registered "
                          "with the NVLink fabric yet")
    for value, what in ((uuid, "fabric.clusterUuid"), (clique, "fabric.cliqueId")):
        if "\ufffd" in value:  # what a lenient decoder leaves of bytes that were not UTF-8: printable, a "name"
            raise NodeDataError(f"{_where(node, number)}: {what} {clip(value)} holds U+FFFD, what is left of "
                                "bytes that were not UTF-8; the value cannot be read")
    # The domain becomes a block name in topology.conf and a label value: the model's one name
    # rule, per field (to name it) and joined (the lengths add up).
    domain = f"{uuid}.{clique}"
    for value, what in ((uuid, "fabric.clusterUuid"), (clique, "fabric.cliqueId"), (domain, "the domain")):
        problem = name_problem(value)
        if problem:
            raise NodeDataError(f"{_where(node, number)}: {what}: {problem}")
    return domain


def _indent(line):
    return len(line) - len(line.lstrip(" \t"))


def _sections(node, lines):
    """(line number, fields, health) of each GPU's ``Fabric`` section in ``nvidia-smi -q`` output."""
    records = []
    number, end = 0, len(lines)
    while number < end:
        line = lines[number]
        number += 1
        if line.strip() != "Fabric":
            continue
        if len(records) == MAX_ROWS:
            raise NodeDataError(f"nvidia-smi output of {node} has more than {MAX_ROWS} Fabric sections")
        start, depth, values, health, health_depth = number, _indent(line), {}, {}, None
        while number < end and (not lines[number].strip() or _indent(lines[number]) > depth):
            row = lines[number]
            number += 1
            key, colon, value = row.strip().partition(":")
            key = key.strip()
            if not colon:
                health_depth = _indent(row) if key == "Health" else None
            elif health_depth is not None and _indent(row) > health_depth:
                health[key] = value.strip()
            else:
                health_depth = None
                values[key] = value.strip()
        if "Summary" in values:  # where a driver prints it beside Health rather than in it
            health.setdefault("Summary", values["Summary"])
        fields = [values.get(name, "") for name in _SECTION_FIELDS]
        records.append((f"line {start}", fields, health))
    return records


def _rows(node, text):
    """(row number, fields, health) of each GPU: the non-blank rows of the CSV query (the status, last,
    may itself hold commas), or the ``Fabric`` sections of ``nvidia-smi -q``."""
    if len(text) > MAX_OUTPUT_CHARS:
        raise NodeDataError(f"nvidia-smi output of {node} has {len(text)} characters, more than {MAX_OUTPUT_CHARS}; "
                            f"it is not the output of {QUERY}")
    lines = text.splitlines()
    if any(line.strip() == "Fabric" for line in lines):
        return _sections(node, lines)
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(rows) == MAX_ROWS:
            raise NodeDataError(f"nvidia-smi output of {node} has more than {MAX_ROWS} GPU rows")
        fields = [field.strip() for field in line.split(",", len(FIELDS) - 1)]
        if len(fields) not in (2, len(FIELDS)):
            raise NodeDataError(f"{_where(node, number)}: expected '{', '.join(FIELDS)}' (or the older "
                                f"'{', '.join(FIELDS[:2])}'), got {clip(line.strip())} (run: {QUERY})")
        rows.append((number, fields, None))
    return rows


def node_fabric(node, text):
    """The NVLink facts of one node from its nvidia-smi rows: ``{cluster_uuid, clique_id, domain, gpus}``
    and, from ``QUERY``'s output, ``state`` and ``status``. A NodeDataError or NodeUnhealthy names the
    node and the row."""
    domains = {}
    rows = _rows(node, text)
    for number, fields, health in rows:
        domains.setdefault(check_row(node, number, fields, health), number)
    if not domains:
        raise NodeDataError(f"nvidia-smi output of {node} has no GPU row")
    if len(domains) > 1:
        found = ", ".join(f"{domain} (row {row})" for domain, row in list(domains.items())[:8])
        raise NodeDataError(f"nvidia-smi output of {node}: its GPUs are in different NVLink domains: {found}")
    domain = next(iter(domains))
    uuid, clique = rows[0][1][:2]
    facts = {"cluster_uuid": uuid, "clique_id": clique, "domain": domain, "gpus": len(rows)}
    if all(len(fields) == len(FIELDS) for _number, fields, _health in rows):
        facts.update(state=COMPLETED, status=SUCCESS)
    return facts


def node_domain(node, text):
    """The domain of one node from its nvidia-smi rows; an error names the node and the row."""
    return node_fabric(node, text)["domain"]


def facts_domain(node, facts, where):
    """The domain in a node's gathered facts (``topology_node`` or its ``nvlink`` part), checked as a row.

    Facts of an unhealthy fabric (``nvlink.unhealthy``, what topology_facts found) raise NodeUnhealthy;
    facts without ``state``/``status`` (gathered by an older topology_facts) are read as the older query.
    """
    nvlink = facts.get("nvlink") if "nvlink" in facts else facts
    if isinstance(nvlink, dict) and nvlink.get("unhealthy"):
        raise NodeUnhealthy(f"{where}: the gathered facts of {node} report an unhealthy NVLink fabric: "
                            f"{clip(str(nvlink['unhealthy']), 300)}")
    if not isinstance(nvlink, dict) or not nvlink.get("cluster_uuid") or nvlink.get("clique_id") in (None, ""):
        raise NodeDataError(f"{where}: the gathered facts of {node} have no NVLink clique (no GPU in an NVLink "
                            "fabric there, or topology_facts did not gather nvlink)")
    keys = ("cluster_uuid", "clique_id", "state", "status") if "state" in nvlink or "status" in nvlink else (
        "cluster_uuid", "clique_id")
    return check_row(node, 1, [str(nvlink.get(key, "")) for key in keys])


def _domain_of(node, value, where):
    if isinstance(value, dict) and ("nvlink" in value or "clique_id" in value or "unhealthy" in value):
        return facts_domain(node, value, where)
    try:
        text = command_output(value, where)
    except TopologyError as exc:  # nvidia-smi failed there: that node's driver or GPUs, not the run
        raise NodeUnhealthy(str(exc)) from None
    return node_domain(node, text)


def apply_nvidia_smi_domains(topology, outputs, warn=None):
    """Set each node's accelerator domain from its nvidia-smi output; returns ``topology``.

    ``outputs`` maps node -> raw output, a registered command result with ``stdout``, or gathered facts.
    Nodes the tree provider did not report are added without a switch, with a warning.
    """
    if not isinstance(outputs, dict) or not outputs:
        raise TopologyError("accelerator.nvidia_smi must map each node to its nvidia-smi output")
    warn = warn or (lambda message: None)
    added = []
    for node, value in outputs.items():
        node = str(node)
        # One node's output (a tray out of its fabric, GPUs in two cliques) quarantines that node.
        with topology.per_node(node, "nvidia_smi"):
            domain = _domain_of(node, value, f"accelerator.nvidia_smi.{node}")
            known = topology.nodes.get(node)
            if known is None:
                topology.add_node(node, domain=domain, source=f"accelerator.nvidia_smi.{node}")
                added.append(node)
            elif known.domain != domain:
                known.domain, known.sub_domain = domain, None
    if added:
        warn(f"{len(added)} nodes with nvidia-smi output are not in the {len(topology.nodes) - len(added)}-node tree "
             f"and get no switch: {hostlist.compress(added)}")
    return topology


def apply_accelerator(topology, spec, warn=None):
    """``params.accelerator`` of any provider, validated by its spec (``_specs.ACCELERATOR``):
    ``{source: nvidia_smi|nvidia-smi|none, nvidia_smi: {node: output}}``."""
    if spec.get("source") == "none":
        return topology
    return apply_nvidia_smi_domains(topology, spec.get("nvidia_smi"), warn)
