# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nfd_topology: NodeFeature and NodeFeatureGroup objects for NFD, from the topology's labels."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._base.k8s_desired import Objects
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels, nfd
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import load_topology
from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s_reconcile import reconcile as write


def run(module):
    """What the module does: discover or load, build the objects, sync them; exits the module."""
    params = module.params

    def work():
        max_node_loss = shrink_guard.check_max_node_loss(params["max_node_loss"])
        topology = load_topology(module)
        client, options = k8s_module.connect(module)
        result = reconcile(client, topology, params["namespace"], options, cleanup=params["cleanup"],
                           no_topology_value=params["no_topology_value"], diff=module._diff, warn=module.warn,
                           max_node_loss=max_node_loss, force=params["force"])
        result["quarantined"] = topology.quarantine_report()
        return result

    k8s_module.run(module, work)


def reconcile(client, topology, namespace, options, cleanup=True, no_topology_value=None, diff=False, warn=None,
              max_node_loss=10.0, force=False):
    """The nfd_topology module without Ansible: a result dict.

    A node whose name or label value the API server would refuse is quarantined (``k8s_labels.desired_labels``):
    it gets no NodeFeature, and ``warn`` names it. Quarantined nodes lose their NodeFeature (``cleanup``); when
    those are more than ``max_node_loss`` percent of the listed NodeFeatures, nothing is written unless ``force``
    (a fabric manager restarting must not take the cluster's NodeFeatures with it), as k8s_node_labels does
    for their labels.
    """
    _labels.check_object_name(namespace, "namespace", dns_label=True)
    labels = k8s_labels.desired_labels(topology, _labels.LabelKeys(), no_topology_value,
                                       name_label=nfd.LABEL_NODE_NAME, warn=warn)
    features, groups = nfd.build_objects(labels, namespace)
    if not features:
        raise TopologyError("the topology gives no node a fabric tier or accelerator domain, so there would be no "
                            "NodeFeature objects; refusing to go on (the existing objects are kept)")
    feature_of = {nfd.stable_object_name("topograph-node", record.node): record.node
                  for record in topology.quarantined.values() if record.node is not None}
    kinds = nfd.kinds(namespace)

    def guard(listed, deletes):  # after the lists, before the first write
        # Every NodeFeature deleted: of a quarantined node (named by it), or of a node gone from the topology.
        shrink_guard.check_share(sorted(feature_of.get(name, name) for kind, name in deletes if kind is kinds[0]),
                                 len(listed[kinds[0]]),
                                 "listed NodeFeature objects, of quarantined nodes or nodes gone from the topology",
                                 max_node_loss, force, warn or (lambda message: None), action="delete",
                                 acting="deleting")
    desired = [(kinds[0], obj) for obj in features] + [(kinds[1], obj) for obj in groups]
    report = write(client, [Objects(kinds, desired, cleanup, guard=guard)], options)
    result = {"node_features": len(features), "node_feature_groups": len(groups)}
    for action in ("created", "updated", "deleted"):
        result[action] = {kind.kind: [oid.split("/", 1)[1] for oid in report.ids(action)
                                      if oid.startswith(kind.kind + "/")] for kind in kinds}
    return k8s_module.finish(result, report, diff)
