# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes topology labels: the desired managed labels of every node, and per-node changes.

Keys and values follow NVIDIA Topograph's k8s engine (docs/kubernetes.md): ``fabric.topograph.run/tier-N``
with raw switch ids, tier 0 nearest the node; ``accelerator.topograph.run/domain``; and
``accelerator.topograph.run/sub-domain`` only together with a domain. Values longer than 63
characters become ``x`` + the lowercase, unpadded hex of their FNV-64a hash, as Topograph does.

Pure functions: no network. The reconcile that lists and patches nodes is in ``_writers/k8s_nodes``.
"""

from __future__ import annotations


from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._base.labels import (
    SUB_DOMAIN_LABEL,
    is_valid_label_value,
    label_value,
)


def desired_labels(topology, keys, no_topology_value=None):
    """Node name -> {managed key: value} for every node of the model.

    Nodes without a switch get no tier labels, or ``tier-0=<no_topology_value>`` when it is set
    (Topograph puts them under its ``no-topology`` pseudo switch).
    """
    result = {}
    problems = []
    for node in topology.nodes.values():
        labels = {}
        path = topology.path(node.switch) if node.switch is not None else []
        if not path and no_topology_value:
            path = [no_topology_value]
        for tier, switch_id in enumerate(path):
            key = keys.fabric_key(tier)
            if key is not None:
                labels[key] = label_value(switch_id)
        if node.domain is not None:
            labels[keys.accelerator_label] = label_value(node.domain)
            if node.sub_domain is not None:
                labels[SUB_DOMAIN_LABEL] = label_value(node.sub_domain)
        for key, value in labels.items():
            if not is_valid_label_value(value):
                problems.append((value, key, node.name))
        result[node.name] = labels
    if problems:
        by_value = {}
        for value, key, node in problems:
            by_value.setdefault((value, key), []).append(node)
        details = "; ".join(f"{key}={value!r} on {hostlist.compress(nodes)}" for (value, key), nodes in sorted(by_value.items()))
        raise TopologyError("switch or domain ids that are not valid Kubernetes label values (letters, digits, "
                            f"'-', '_', '.', starting and ending with a letter or digit): {details}")
    return result
