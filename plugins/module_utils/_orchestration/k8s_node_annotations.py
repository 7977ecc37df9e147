# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_node_annotations: Topograph's Node Data Broker annotations, from each node's gathered facts."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module
from ansible_collections.aifactory.topology.plugins.module_utils._providers import node_facts as _node_facts
from ansible_collections.aifactory.topology.plugins.module_utils._base.k8s_desired import NodeEntries
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s_nodes import check_desired_annotations, list_nodes
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s_reconcile import reconcile as write


def run(module):
    """What the module does: the annotations from the facts, then one patch per changed node; exits the module."""

    def work():
        desired = _node_facts.broker_annotations(module.params["node_facts"], module.params["region"])
        client, options = k8s_module.connect(module)
        return reconcile(client, desired, options, warn=module.warn, diff=module._diff)

    k8s_module.run(module, work)


def reconcile(client, desired, options, warn=None, diff=False):
    """Set the broker annotations of each node of ``desired`` (node name -> annotations); a result dict."""
    warn = warn or (lambda message: None)
    check_desired_annotations(desired, "node_facts", one_line=_labels.BROKER_ANNOTATIONS)
    nodes = list_nodes(client)
    missing = [name for name in desired if name not in nodes]
    if missing:
        warn(f"{len(missing)} nodes with facts are not in the cluster: {hostlist.compress(missing)}")
    keys = _labels.ManagedKeys(_labels.BROKER_ANNOTATIONS)  # Topograph's Node Data Broker keys
    report = write(client, [NodeEntries("annotations", keys, desired)], options, nodes=nodes)
    result = {
        "changed_nodes": report.ids(),
        "summary": {"nodes_given": len(desired), "nodes_changed": len(report.done), "nodes_missing": len(missing)},
    }
    return k8s_module.finish(result, report, diff)
