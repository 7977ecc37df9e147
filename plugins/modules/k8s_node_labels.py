#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_node_labels
short_description: Reconcile Kubernetes node topology labels with the cluster topology
version_added: 0.2.0
description:
  - Sets the topology labels of NVIDIA Topograph on every Kubernetes node of the topology
    (C(fabric.topograph.run/tier-N) with the raw switch ids, tier 0 nearest the node;
    C(accelerator.topograph.run/domain); C(accelerator.topograph.run/sub-domain) with a domain), so
    pod affinity, Kueue, KAI or Volcano can place pods by fabric and NVLink domain.
  - Lists the nodes once, then patches only the nodes whose managed labels differ, a few at a time
    (O(concurrency)). Each patch carries the listed C(resourceVersion); a node that changed meanwhile
    (HTTP 409) is read again and its patch recomputed.
  - Removes managed labels the topology no longer gives (stale tiers), and, with O(clean_absent_nodes),
    all managed labels of listed nodes that left the topology. Labels it does not manage are never touched.
  - Every label value is checked before the first write, so bad input never leaves a half-applied label set. A value
    from one node's data that the API server would refuse (a domain with C(:), a tier id with a non-ASCII letter),
    or a node name that can never be a Kubernetes node name, quarantines that node (RV(quarantined), source
    C(kubernetes labels)); its labels are removed as for any quarantined node, within O(max_node_loss), and the
    other nodes are written.
  - Values longer than 63 characters become C(x) followed by the hex FNV-64a hash, as Topograph writes them.
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
  clean_absent_nodes:
    description:
      - Remove the managed labels of listed nodes that are not in the topology (Topograph leaves them).
      - When none of the listed nodes is in the topology the task fails instead of cleaning them all.
    type: bool
    default: true
  max_node_loss:
    description:
      - Guard against a mass removal. The managed labels of quarantined nodes (see C(provider.params.invalid_nodes))
        are removed, so topology-aware schedulers do not count them, and with O(clean_absent_nodes) those of nodes
        gone from the topology; when the nodes losing their labels are more than this percentage of the listed nodes
        that carry managed labels, the task fails before any write, unless O(force) is set.
      - A number from 0 to 100.
    type: float
    default: 10
  force:
    description:
      - Remove the labels of quarantined nodes and of nodes gone from the topology (and taint the unhealthy ones)
        even beyond O(max_node_loss) (with a warning).
    type: bool
    default: false
  taint_unhealthy:
    description:
      - Put the taint C(aifactory.topology/unhealthy=quarantined:NoSchedule) on the nodes quarantined as unhealthy
        (a GPU outside its NVLink fabric, a failed nvidia-smi), so no new pod lands there; nodes quarantined because
        their data is invalid (a bad name, GPUs in two cliques) are not tainted.
      - The same patch puts the annotation C(aifactory.topology/unhealthy-taint=true) on the node. The module lists
        only the nodes' metadata, where taints are not, and finds the nodes it tainted by that mark.
      - Every listed node that carries the mark and is not quarantined as unhealthy in this run (it recovered, or
        the option is off) has the taint and the mark taken off. Other taints are never touched, nor a taint of
        this key put on by hand without the mark.
      - Bounded by O(max_node_loss), as a percentage of the listed nodes.
    type: bool
    default: false
  location_labels:
    description:
      - Also label each node with where the hardware says it is, from nvidia-smi's platform fields (gathered by
        M(aifactory.topology.topology_facts)) or NMX's C(LocationInfo) (the C(netq) provider), under the collection's
        own prefix C(topology.aifactory.dev/), C(chassis) (the chassis serial number), C(slot), C(tray) and C(host).
        With the NVLink domain label they name the rack, so operators and schedulers can select by rack and tray.
      - Opt-in. C(false) removes these labels where this module wrote them.
    type: bool
    default: false
    version_added: 0.2.0
notes:
  - Managed label keys are O(fabric_labels), O(accelerator_label), C(accelerator.topograph.run/sub-domain),
    C(accelerator.topograph.run/domain), any C(fabric.topograph.run/tier-<n>) and the location labels
    C(topology.aifactory.dev/chassis), C(topology.aifactory.dev/slot), C(topology.aifactory.dev/tray),
    C(topology.aifactory.dev/host).
  - Needs nodes C(get), C(list) and C(patch) (C(docs/rbac/k8s_node_labels.yaml)).
seealso:
  - module: aifactory.topology.nfd_topology
  - module: aifactory.topology.slinky_topology
"""

EXAMPLES = r"""
- name: Label the GPU nodes with their fabric tiers and NVLink domain
  aifactory.topology.k8s_node_labels:
    model: "{{ discovered.topology }}"
    node_selector:
      nvidia.com/gpu.present: "true"

- name: Same, with the credentials AWX injects (K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_SSL_CA_CERT)
  aifactory.topology.k8s_node_labels:
    provider:
      name: simulation
      params: {model_path: /etc/topology/model.yaml}
    fabric_labels: [network.example.com/leaf, network.example.com/spine]
    accelerator_label: network.example.com/nvlink
"""

RETURN = r"""
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
tainted:
  description: Nodes that got the unhealthy taint (O(taint_unhealthy)), or in check mode would.
  returned: success
  type: list
  elements: str
untainted:
  description: Nodes whose unhealthy taint was taken off (they recovered, or O(taint_unhealthy) is off).
  returned: success
  type: list
  elements: str
changed_nodes:
  description: Nodes whose labels were patched (or, in check mode, would be).
  returned: success
  type: list
  elements: str
changes:
  description: Per changed node, the managed labels after the patch (as the API server returned them).
  returned: success
  type: dict
  sample: {"gb200-r01-n01": {"fabric.topograph.run/tier-0": "leaf01", "accelerator.topograph.run/domain": "rack01"}}
summary:
  description: Counts.
  returned: success
  type: dict
  contains:
    nodes_listed:
      description: Nodes listed (matching O(node_selector)).
      type: int
    nodes_in_topology:
      description: Listed nodes that are in the topology.
      type: int
    nodes_changed:
      description: Nodes patched.
      type: int
    nodes_cleaned:
      description: Listed nodes outside the topology whose managed labels were removed.
      type: int
    nodes_missing:
      description: Nodes of the topology that are not listed (not in the cluster, or outside O(node_selector)).
      type: int
    quarantined:
      description: Nodes quarantined in this run (all of them; the C(quarantined) list shows the first 1000).
      type: int
    warnings:
      description: The warnings this run emitted, discovery's included (also shown as Ansible warnings).
      type: list
      elements: str
      version_added: 0.2.0
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module, k8s_node_labels
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import SHRINK_GUARD

OWN = ArgumentSpec({
    "clean_absent_nodes": {"type": "bool", "default": True},
    "taint_unhealthy": {"type": "bool", "default": False},
    "location_labels": {"type": "bool", "default": False},
})


def main():
    spec = k8s_module.module_spec(k8s_module.LABEL_KEYS, SHRINK_GUARD, OWN)
    k8s_node_labels.run(AnsibleModule(**spec.module_kwargs(), supports_check_mode=True))


if __name__ == "__main__":
    main()
