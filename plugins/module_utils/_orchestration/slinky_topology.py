# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slinky_topology: the Slinky ConfigMap key rendered from the topology and, for dynamic Slurm nodes, the
spec annotation of each Kubernetes node; everything is read and checked before the first write."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._base.k8s_desired import ConfigMapKey, NodeEntries
from ansible_collections.aifactory.topology.plugins.module_utils._engines import slinky
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import load_topology, warning_collector
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s_configmap import ready_pod_nodes
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s_nodes import list_nodes
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s_reconcile import reconcile as write


def run(module):
    """What the module does: discover or load, render, apply; exits the module."""
    warn, warnings = warning_collector(module)

    def work():
        topology = load_topology(module, warn)
        client, options = k8s_module.connect(module, FIELD_MANAGER)
        result = reconcile(client, topology, module.params, options, warn=warn, diff=module._diff)
        result["quarantined"] = topology.quarantine_report()
        return result

    k8s_module.run(module, work, warnings)


FIELD_MANAGER = "aifactory-topology-slinky"


def reconcile(client, topology, params, options, warn=None, diff=False):
    """The slinky_topology module without Ansible: a result dict.

    Everything is read and checked before the first write (the pods and nodes, the node annotations, the
    ConfigMap); then the ConfigMap is written, then the node annotations.
    """
    warn = warn or (lambda message: None)
    name, key, namespace = params["configmap_name"], params.get("configmap_key") or "topology.conf", params["namespace"]
    _labels.check_object_name(namespace, "namespace", dns_label=True)
    _labels.check_object_name(name, "configmap_name")
    _labels.check_configmap_key(key, "configmap_key")
    skeleton = bool(params.get("skeleton_only"))
    content, summary = slinky.render(topology, params, warn, skeleton=skeleton)
    specs = slinky.dynamic_specs(topology, params) if params.get("use_dynamic_nodes") else None
    pod_selector = _k8s.selector_string(params.get("pod_selector"), "pod_selector")
    if specs is not None and pod_selector:
        _labels.check_label_key(params.get("slurm_node_name_label"), "slurm_node_name_label")
    topologies = params.get("topologies")
    annotations = slinky.configmap_annotations(
        namespace, None if topologies else (params.get("plugin") or "topology/tree"),
        None if topologies else params.get("block_sizes"))

    def guard(before, after):
        if before is not None and not skeleton:
            message = shrink_guard.check_shrink(before, after, params.get("max_node_loss", 10.0),
                                                params.get("force", False),
                                                where=f"the current key {key} of configmap/{namespace}/{name}")
            if message:
                warn(message)

    desired = [ConfigMapKey(namespace, name, key, content, annotations,
                            owned_annotations=(slinky.ANNOTATION_PLUGIN, slinky.ANNOTATION_BLOCK_SIZES),
                            timestamp_annotation=slinky.ANNOTATION_LAST_UPDATED, guard=guard)]
    nodes = None
    if specs is not None:
        entries, nodes = _spec_annotations(client, specs, namespace, pod_selector, params, warn)
        desired.append(NodeEntries("annotations", _labels.ManagedKeys([slinky.SPEC_ANNOTATION]), entries,
                                   headers=("node annotations", "node annotations")))
    report = write(client, desired, options, nodes=nodes)
    result = {"configmap_changed": bool(report.ids("applied")), "content": content,
              "annotated_nodes": report.ids("patched"), "summary": summary}
    return k8s_module.finish(result, report, diff)


def _spec_annotations(client, specs, namespace, pod_selector, params, warn):
    """(node name -> spec annotation, listed nodes): reads only, and checks every annotation."""
    if pod_selector:
        slurm_to_node = ready_pod_nodes(client, namespace, pod_selector, params.get("slurm_node_name_label"))
    else:
        slurm_to_node = {node: node for node in specs}
    desired = {slurm_to_node[node]: {slinky.SPEC_ANNOTATION: spec} for node, spec in specs.items()
               if node in slurm_to_node}
    for node, wanted in desired.items():
        _labels.check_annotations(wanted, f"node {node}", one_line=wanted)
    nodes = list_nodes(client)
    unplaced = sorted(node for node in specs if slurm_to_node.get(node) not in nodes)
    if unplaced:
        warn(f"{len(unplaced)} Slurm nodes run on no listed Kubernetes node and get no spec annotation: "
             f"{hostlist.compress(unplaced)}")
    return desired, nodes
