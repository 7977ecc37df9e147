# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_node_labels: the topology labels of every node, and the taint of the nodes quarantined as unhealthy."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.k8s_desired import NodeEntries, NodeTaints
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import load_topology, warning_collector
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s_nodes import list_nodes
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s_reconcile import reconcile as write


def run(module):
    """What the module does: discover or load, plan every node's labels and taint, patch them; exits the module."""
    params = module.params
    warn, warnings = warning_collector(module)

    def work():
        keys = k8s_module.label_keys(params)
        max_node_loss = shrink_guard.check_max_node_loss(params["max_node_loss"])
        client, options = k8s_module.connect(module)
        # A node provider on this connection (dra, node_labels) and the writer list the nodes once.
        with client.sharing_lists():
            topology = load_topology(module, warn, k8s_client=client)
            return reconcile(
                client, topology, keys, options, node_selector=params["node_selector"],
                no_topology_value=params["no_topology_value"], clean_absent_nodes=params["clean_absent_nodes"],
                warn=warn, diff=module._diff, max_node_loss=max_node_loss, force=params["force"],
                taint_unhealthy=params["taint_unhealthy"])

    k8s_module.run(module, work, warnings)


def reconcile(client, topology, keys, options, node_selector=None, no_topology_value=None, clean_absent_nodes=True,
              warn=None, diff=False, max_node_loss=10.0, force=False, taint_unhealthy=False):
    """The k8s_node_labels module without Ansible: a result dict (changed, changed_nodes, changes, summary, diff).

    Quarantined nodes of the topology lose their managed labels whatever ``clean_absent_nodes`` says, so
    topology-aware schedulers do not count them; the share of labelled nodes that lose them (those and, with
    ``clean_absent_nodes``, the nodes gone from the topology) is bounded by ``max_node_loss``. With
    ``taint_unhealthy`` the nodes quarantined as unhealthy get UNHEALTHY_TAINT (and UNHEALTHY_MARK); every other
    listed node that carries the mark (recovered, or the option turned off) has both taken off.
    """
    warn = warn or (lambda message: None)
    # Every value first; a node whose name or value the API server would refuse is quarantined here.
    desired = k8s_labels.desired_labels(topology, keys, no_topology_value, node_names=True, warn=warn)
    selector = _k8s.selector_string(node_selector)
    nodes = list_nodes(client, selector)
    missing = [name for name in desired if name not in nodes]
    if missing:
        warn(f"{len(missing)} nodes of the topology are not in the cluster"
             + (" or do not match node_selector" if node_selector else "") + f": {hostlist.compress(missing)}")
    in_topology = len(desired) - len(missing)
    absent = [name for name in nodes if name not in desired]
    gone = []
    if clean_absent_nodes:
        gone = [name for name in absent if keys.managed(nodes[name].labels)]
        if gone and in_topology == 0:
            raise TopologyError(f"none of the {len(nodes)} listed nodes is in the topology; refusing to remove the "
                                f"topology labels of {len(gone)} nodes (wrong cluster, node_selector or topology?)")
        desired.update({name: {} for name in gone})
    quarantined = [record.node for record in topology.quarantined.values() if record.node is not None]
    labelled = [name for name, node in nodes.items() if keys.managed(node.labels)]
    # One guard for every node that would lose its labels: a provider that lost half the fabric (no quarantine,
    # just fewer nodes) must not strip half the cluster any more than a fabric manager restarting.
    losing = sorted({name for name in quarantined if name in nodes and keys.managed(nodes[name].labels)} | set(gone))
    shrink_guard.check_share(losing, len(labelled), "labelled nodes, quarantined or gone from the topology",
                             max_node_loss, force, warn, action="remove the topology labels of",
                             acting="removing the topology labels of")
    desired.update({name: {} for name in quarantined if name in nodes})
    unhealthy = {record.node for record in topology.quarantined.values()
                 if taint_unhealthy and record.unhealthy and record.node in nodes}
    shrink_guard.check_share(sorted(unhealthy), len(nodes), "listed nodes quarantined as unhealthy", max_node_loss,
                             force, warn, action="taint", acting="tainting")
    report = write(client, [NodeEntries("labels", keys, desired, selector), NodeTaints(unhealthy, selector)], options,
                   nodes=nodes)
    patched = report.ids("patched")
    result = {
        "changed_nodes": patched,
        "tainted": report.ids("tainted"),
        "untainted": report.ids("untainted"),
        "changes": {name: report.after[name] for name in patched},
        "summary": {
            "nodes_listed": len(nodes), "nodes_in_topology": in_topology, "nodes_changed": len(patched),
            "nodes_cleaned": sum(1 for name in patched if name not in topology.nodes), "nodes_missing": len(missing),
            "quarantined": len(topology.quarantined),
        },
        "quarantined": topology.quarantine_report(),
    }
    return k8s_module.finish(result, report, diff)
