# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes topology labels: the desired managed labels of every node, and per-node changes.

Keys and values follow NVIDIA Topograph's k8s engine (docs/kubernetes.md): ``fabric.topograph.run/tier-N``
with raw switch ids, tier 0 nearest the node; ``accelerator.topograph.run/domain``; and
``accelerator.topograph.run/sub-domain`` only together with a domain. Values longer than 63
characters become ``x`` + the lowercase, unpadded hex of their FNV-64a hash, as Topograph does.

Pure functions: no network. The writer that lists and patches nodes is ``_writers/k8s_reconcile`` (its part ``k8s_nodes``).
"""

from __future__ import annotations


from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import NodeDataError, TopologyError, clip
from ansible_collections.aifactory.topology.plugins.module_utils._base.labels import (
    LOCATION_LABELS,
    SUB_DOMAIN_LABEL,
    dns_subdomain_problem,
    is_valid_label_value,
    label_value,
)
from ansible_collections.aifactory.topology.plugins.module_utils._model import quarantine_warning

# The source of the quarantine records of this step: the model's values are fine for Slurm, not for the API server.
SOURCE = "kubernetes labels"
_LABEL_VALUE_RULE = ("is not a valid Kubernetes label value (at most 63 letters, digits, '-', '_', '.', starting and "
                     "ending with a letter or digit)")


def desired_labels(topology, keys, no_topology_value=None, node_names=False, name_label=None, warn=None):
    """Node name -> {managed key: value} for every node of the model.

    Nodes without a switch get no tier labels, or ``tier-0=<no_topology_value>`` when it is set
    (Topograph puts them under its ``no-topology`` pseudo switch).

    The model's names are fit for Slurm; the API server is stricter. What it would refuse of one node
    quarantines that node in ``topology`` (``Topology.per_node``), so one node's value never stops the
    others: a tier, domain or sub-domain value that is not a label value (an nvidia-smi cluster UUID
    with ``:``, a tier label ``leaf-ü1``); with ``node_names`` (what a writer needs), a name that can
    never be a Kubernetes node name; with ``name_label`` (NFD's ``nfd.node.kubernetes.io/node-name``),
    a name that is not a label value either. The
    node gets no entry here; the consumers remove its labels (counted by their shrink guard) and report
    it; ``warn`` gets one line naming the nodes this step quarantined. A run where every node is
    quarantined fails (``Topology.validate``). ``no_topology_value`` is the operator's option, shared by
    every node without a switch: one the server would refuse fails the run.
    """
    if no_topology_value and not is_valid_label_value(label_value(no_topology_value)):
        raise TopologyError(f"no_topology_value: {clip(no_topology_value)} {_LABEL_VALUE_RULE}")
    result = {}
    before = set(topology.quarantined)
    for node in list(topology.nodes.values()):
        with topology.per_node(node.name, SOURCE):
            result[node.name] = _node_labels(topology, node, keys, no_topology_value, node_names, name_label)
    added = [record for identifier, record in topology.quarantined.items() if identifier not in before]
    if added:
        topology.validate()  # every node quarantined: an error naming them, not an empty label map
        if warn is not None:
            warn(quarantine_warning(topology, added))
    return result


def _node_labels(topology, node, keys, no_topology_value, node_names, name_label):
    """The managed labels of one node; a NodeDataError naming the field and the value the API server would refuse."""
    problem = dns_subdomain_problem(node.name) if node_names or name_label else None
    if problem is not None:
        raise NodeDataError(f"node name {clip(node.name)} can never be a Kubernetes node name: it {problem}")
    if name_label is not None and not is_valid_label_value(node.name):
        raise NodeDataError(f"node name {clip(node.name)} as the {name_label} label value {_LABEL_VALUE_RULE}")
    labels = {}
    path = topology.path(node.switch) if node.switch is not None else []
    fields = [f"tier {tier} switch" for tier in range(len(path))]
    if not path and no_topology_value:
        path, fields = [no_topology_value], ["no_topology_value"]
    for tier, switch_id in enumerate(path):
        key = keys.fabric_key(tier)
        if key is not None:
            labels[key] = (label_value(switch_id), fields[tier])
    if node.domain is not None:
        labels[keys.accelerator_label] = (label_value(node.domain), "domain")
        if node.sub_domain is not None:
            labels[SUB_DOMAIN_LABEL] = (label_value(node.sub_domain), "sub-domain")
    if getattr(keys, "location_labels", False):
        place = topology.locations.get(node.name) or {}
        for field, key in LOCATION_LABELS.items():
            if place.get(field) not in (None, ""):
                labels[key] = (str(place[field]), f"location {field}")
    for key, (value, field) in labels.items():
        if not is_valid_label_value(value):
            raise NodeDataError(f"label {key} (the {field}): {clip(value)} {_LABEL_VALUE_RULE}")
    return {key: value for key, (value, _field) in labels.items()}
