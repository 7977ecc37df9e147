#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_scheduler_topology
short_description: Render and apply the Topology objects of Kueue and KAI Scheduler from the topology labels
version_added: 0.2.0
description:
  - Writes, from the model and the label keys M(aifactory.topology.k8s_node_labels) writes, the objects a
    topology-aware scheduler reads its levels from. V(kueue) gives a Kueue C(Topology) and a C(ResourceFlavor)
    naming it (C(kueue.x-k8s.io/v1beta2)); V(kai) gives a KAI Scheduler C(Topology) (C(kai.scheduler/v1alpha1)).
  - Levels go coarsest first, as both schedulers want them, the top fabric tier down to tier 0, then the
    accelerator domain, the sub-domain (O(sub_domain)), and C(kubernetes.io/hostname) last (O(hostname)).
  - Before any write it checks and reports, naming nodes, the nodes that lack a level label (both schedulers
    ignore such a node; quarantined nodes and nodes without a switch are among them), on the model and on the
    selected nodes of the server; values found under more than one parent (one domain to podAffinity and the
    native gang); and refuses fabric tiers of differing depths unless O(fabric_tiers) says how many to use.
  - Server-side apply with its own field manager C(aifactory-topology-scheduler); only objects that differ are
    written. Objects carry C(app.kubernetes.io/managed-by=aifactory-topology) and
    C(topology.aifactory.dev/scheduler-topology=<name>); those of the same O(name) that are no longer rendered
    (a consumer dropped, the flavor renamed) are deleted (O(cleanup)).
  - An unknown consumer, levels the model cannot give, a level key used twice (C(kubernetes.io/hostname) as a
    configured key with O(hostname)), a consumer whose CRD the API server does not serve, or a change of a field
    the CRD makes immutable (without O(recreate)) fail before any write.
  - An existing object of the same name that is not this set's (another team's, without
    C(app.kubernetes.io/managed-by=aifactory-topology), or another set's, with another
    C(topology.aifactory.dev/scheduler-topology)) is never updated, deleted or recreated, and one being deleted
    (C(deletionTimestamp)) is never written; both fail before any write, naming the object.
  - A write that fails ends the task with what was already written; a O(recreate) whose create fails after its
    delete reports the object deleted.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.provider
  - aifactory.topology.provider.MODEL
  - aifactory.topology.k8s_auth
  - aifactory.topology.k8s_auth.WRITES
  - aifactory.topology.k8s_labels
  - aifactory.topology.attributes
  - aifactory.topology.attributes.ACTION_GROUP_K8S
options:
  consumers:
    description: The schedulers to render objects for.
    type: list
    elements: str
    required: true
  name:
    description: The name of the C(Topology) objects, and of the set of objects this task manages.
    type: str
    default: aifactory-topology
  flavor_name:
    description: The name of the Kueue C(ResourceFlavor). Defaults to O(name).
    type: str
  flavor_node_labels:
    description:
      - The C(ResourceFlavor)'s C(nodeLabels), which select its nodes (at most 8). Defaults to O(node_selector).
      - Kueue needs at least one when a flavor names a topology.
    type: dict
  fabric_tiers:
    description:
      - How many fabric tiers, from tier 0 up, become levels. By default all, and nodes whose fabric depths differ
        are an error (the schedulers would ignore the shallower ones); set it to the smallest depth to keep them.
    type: int
  sub_domain:
    description: Add C(accelerator.topograph.run/sub-domain) as a level below the domain.
    type: bool
    default: false
  hostname:
    description: Add C(kubernetes.io/hostname) as the last level (Kueue needs it to place pods on nodes itself).
    type: bool
    default: true
  cleanup:
    description: Delete the objects of this O(name) that are no longer rendered.
    type: bool
    default: true
  recreate:
    description:
      - Delete and create again an object whose immutable field must change (a C(Topology)'s levels, the flavor's
        C(nodeLabels) or C(topologyName)). Without it such a change is an error before any write.
      - An object with finalizers (Kueue keeps a C(Topology) while a flavor names it) is never deleted for that; the
        change is an error before any write. Give the new levels a new O(name) instead.
      - Only this set's objects are ever recreated; another team's object of the same name is an error.
    type: bool
    default: false
notes:
  - Needs C(get), C(list), C(patch) and C(delete) on C(topologies) and C(resourceflavors) of C(kueue.x-k8s.io)
    and C(topologies) of C(kai.scheduler), and C(list) on nodes (C(docs/rbac/k8s_scheduler_topology.yaml)).
  - The workload annotations and the level order are described in C(docs/kubernetes.md).
seealso:
  - module: aifactory.topology.k8s_node_labels
"""

EXAMPLES = r"""
- name: Kueue and KAI topologies for the labelled GPU nodes
  aifactory.topology.k8s_scheduler_topology:
    model: "{{ discovered.topology }}"
    consumers: [kueue, kai]
    node_selector:
      nvidia.com/gpu.present: "true"
"""

RETURN = r"""
levels:
  description: The level label keys, coarsest first.
  returned: success
  type: list
  elements: str
  sample: ["fabric.topograph.run/tier-1", "fabric.topograph.run/tier-0", "accelerator.topograph.run/domain",
           "kubernetes.io/hostname"]
objects:
  description: The rendered objects, in apply order.
  returned: success
  type: list
  elements: dict
created:
  description: Objects created (or, in check mode, that would be), as C(resource.group/name).
  returned: success, and on a failure after some writes
  type: list
  elements: str
  sample: ["topologies.kueue.x-k8s.io/aifactory-topology"]
updated:
  description: Objects applied again because they differed (or deleted and created, with O(recreate)).
  returned: success, and on a failure after some writes
  type: list
  elements: str
deleted:
  description: Stale objects of this O(name) deleted.
  returned: success, and on a failure after some writes
  type: list
  elements: str
findings:
  description: What the checks found (the first 1000 of each).
  returned: success
  type: dict
  contains:
    missing_levels:
      description: Nodes of the model (and quarantined nodes) without every level label, with C(node), C(missing)
        and C(reason).
      type: list
      elements: dict
    missing_on_nodes:
      description: Selected nodes of the server without every level label, node name to the missing keys.
      type: dict
    shared_values:
      description: Values of one level found under more than one parent, with C(label), C(value), C(parents), C(nodes).
      type: list
      elements: dict
summary:
  description: Counts.
  returned: success
  type: dict
quarantined:
  description:
    - Nodes left out of the map because their own data was unusable (see C(provider.params.invalid_nodes)), the
      first 1000 (C(summary.quarantined) counts them all where the module returns a summary).
    - Each has C(node) (its name, or null when the name itself is the problem), C(identifier) (the name, or the raw
      value clipped and escaped), C(source), C(reason) and C(kind) (V(invalid) or V(unhealthy)).
  returned: success
  type: list
  elements: dict
  sample: [{"node": null, "identifier": "'gpu-p1-l1-n1,evil'", "source": "infiniband", "kind": "invalid",
            "reason": "ibnetdiscover.gpu01, line 12: HCA 'H-0002c903000e0b72' described ... contains ','"}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._engines.scheduler_topology import SCHEDULER
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module, k8s_scheduler_topology


def main():
    module = AnsibleModule(**k8s_module.module_spec(k8s_module.LABEL_KEYS, SCHEDULER).module_kwargs(),
                           supports_check_mode=True)
    k8s_scheduler_topology.run(module)


if __name__ == "__main__":
    main()
