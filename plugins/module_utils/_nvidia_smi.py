# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVLink domains from ``nvidia-smi`` on each node, on top of any tree provider.

Each node runs ``nvidia-smi --query-gpu=fabric.clusterUuid,fabric.cliqueId --format=csv,noheader``
(one row per GPU). The rows of a node must agree; its domain is ``<clusterUuid>.<cliqueId>``,
as in Topograph's infiniband providers. A node with a GPU outside any fabric (``N/A``, an
all-zero cluster UUID) or with GPUs in different cliques is quarantined (left out of the map,
reported by name): a wrong domain would let Slurm place one job across two NVLink domains.

Providers take it as ``params.accelerator: {source: nvidia_smi, nvidia_smi: {node: output}}``; an
output may also be the node's ``topology_node`` fact from aifactory.topology.topology_facts (or its
``nvlink`` part), which ran the same query on the node.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils import _hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._gathered import command_output
from ansible_collections.aifactory.topology.plugins.module_utils._errors import (
    NodeDataError,
    NodeUnhealthy,
    TopologyError,
    clip,
)
from ansible_collections.aifactory.topology.plugins.module_utils._model import name_problem

QUERY = "nvidia-smi --query-gpu=fabric.clusterUuid,fabric.cliqueId --format=csv,noheader"
_UNAVAILABLE = frozenset({"", "n/a", "[n/a]", "not supported", "[not supported]", "unknown", "[unknown]"})
_UNREGISTERED_UUID = "00000000-0000-0000-0000-000000000000"


def node_domain(node, text):
    """The domain of one node from its nvidia-smi rows; an error names the node and the row."""
    domains = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != 2:
            raise NodeDataError(f"nvidia-smi output of {node}, row {number}: expected 'clusterUuid, cliqueId', "
                                f"got {clip(line.strip())} (run: {QUERY})")
        uuid, clique = fields
        for value, what in ((uuid, "fabric.clusterUuid"), (clique, "fabric.cliqueId")):
            if value.lower() in _UNAVAILABLE:
                raise NodeUnhealthy(f"nvidia-smi output of {node}, row {number}: {what} is {value or 'empty'!r}; "
                                    "the GPU is not in an NVLink fabric (is nvidia-imex / the fabric manager running?)")
        if uuid == _UNREGISTERED_UUID:
            raise NodeUnhealthy(f"nvidia-smi output of {node}, row {number}: the cluster UUID is all zeros; "
                                "the GPU has not registered with the NVLink fabric yet")
        # The domain becomes a block name in topology.conf and a label value: the model's one name
        # rule, per field (to name it) and joined (the lengths add up).
        domain = f"{uuid}.{clique}"
        for value, what in ((uuid, "fabric.clusterUuid"), (clique, "fabric.cliqueId"), (domain, "the domain")):
            problem = name_problem(value)
            if problem:
                raise NodeDataError(f"nvidia-smi output of {node}, row {number}: {what}: {problem}")
        domains.setdefault(domain, number)
    if not domains:
        raise NodeDataError(f"nvidia-smi output of {node} has no GPU row")
    if len(domains) > 1:
        found = ", ".join(f"{domain} (row {row})" for domain, row in domains.items())
        raise NodeDataError(f"nvidia-smi output of {node}: its GPUs are in different NVLink domains: {found}")
    return next(iter(domains))


def facts_domain(node, facts, where):
    """The domain in a node's gathered facts (``topology_node`` or its ``nvlink`` part), checked as a row."""
    nvlink = facts.get("nvlink") if "nvlink" in facts else facts
    if not isinstance(nvlink, dict) or not nvlink.get("cluster_uuid") or nvlink.get("clique_id") in (None, ""):
        raise NodeDataError(f"{where}: the gathered facts of {node} have no NVLink clique (no GPU in an NVLink "
                            "fabric there, or topology_facts did not gather nvlink)")
    return node_domain(node, f"{nvlink['cluster_uuid']}, {nvlink['clique_id']}")


def _domain_of(node, value, where):
    if isinstance(value, dict) and ("nvlink" in value or "clique_id" in value):
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
