# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one Kubernetes writer: ``reconcile`` makes the engines' desired state (``_base/k8s_desired``) true.

Every Kubernetes module writes through it (the event-driven path runs the modules). Its parts, by what they write:
``k8s_objects`` (``Objects``), ``k8s_nodes`` (``NodeEntries``, ``NodeTaints``), ``k8s_configmap``
(``ConfigMapKey``); ``k8s`` holds what they share and the ``WriteReport``, which
``_orchestration/k8s_module.finish`` turns into ``changed``, ``diff`` and the partial-write error.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import k8s_desired
from ansible_collections.aifactory.topology.plugins.module_utils._writers import k8s_configmap, k8s_nodes, k8s_objects
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import WriteReport

_NODE_PARTS = (k8s_desired.NodeEntries, k8s_desired.NodeTaints)


def reconcile(client, desired, options, nodes=None):
    """Make ``desired`` (``k8s_desired`` parts, in the order they are written) true; one WriteReport.

    Each resource is listed once: the nodes once per selector, and not at all when the caller hands over ``nodes``,
    the ``k8s_nodes.list_nodes`` it took (with the parts' selector) to build ``desired``. Every part is read,
    compared and checked before the first write (the node parts first), so a TopologyError means nothing was
    written. Then the parts are written in order; the first failed request stops the rest (a part not reached
    reports nothing written).
    """
    listed = {}

    def nodes_for(part):
        if nodes is not None:
            return nodes
        if part.selector not in listed:
            listed[part.selector] = k8s_nodes.list_nodes(client, part.selector)
        return listed[part.selector]

    # The node parts are planned first (from one list), then the others read and checked: the order of the
    # refusals when several parts would be refused.
    writes = {}
    for index, part in sorted(enumerate(desired), key=lambda item: not isinstance(item[1], _NODE_PARTS)):
        if isinstance(part, k8s_desired.Objects):
            writes[index] = k8s_objects.prepare(client, part, options)
        elif isinstance(part, k8s_desired.NodeEntries):
            writes[index] = k8s_nodes.prepare_entries(client, part, nodes_for(part), options)
        elif isinstance(part, k8s_desired.NodeTaints):
            writes[index] = k8s_nodes.prepare_taints(client, part, nodes_for(part), options)
        elif isinstance(part, k8s_desired.ConfigMapKey):
            writes[index] = k8s_configmap.prepare(client, part, options)
        else:
            raise TypeError(f"not a desired state of _base/k8s_desired: {part!r}")
    reports = []
    for index, part in enumerate(desired):
        failed = any(report.error is not None for report in reports)
        reports.append(WriteReport(headers=getattr(part, "headers", None)) if failed else writes[index]())
    return WriteReport.combined(reports)
