#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: slinky_topology
short_description: Write the Slurm topology into the ConfigMap of a Slinky (Slurm on Kubernetes) cluster
version_added: 0.2.0
description:
  - Renders the Slurm topology exactly as M(aifactory.topology.slurm_topology) does (C(topology/tree),
    C(topology/block), or C(topology.yaml) with one topology per partition) and writes it, without a header,
    into the key O(configmap_key) of the ConfigMap O(configmap_name), as NVIDIA Topograph's slinky engine does.
  - Uses server-side apply with its own field manager, so it owns only its key and its annotations; other keys
    (for example C(slurm.conf) from the Slinky Helm chart) are never touched.
  - Writes nothing when the key already holds the content. The annotation C(topograph.run/last-updated) changes
    only when the content does, so a rerun reports no change.
  - With O(use_dynamic_nodes), also annotates each Kubernetes node that runs a Slurm node with
    C(topology.slinky.slurm.net/spec) (only where the value differs); nodes that left the topology are left alone.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.provider
  - aifactory.topology.provider.MODEL
  - aifactory.topology.k8s_auth
  - aifactory.topology.k8s_auth.WRITES
  - aifactory.topology.attributes
  - aifactory.topology.render
  - aifactory.topology.render.LAYOUT
  - aifactory.topology.render.SHRINK_GUARD
  - aifactory.topology.attributes.ACTION_GROUP_K8S
options:
  namespace:
    description: The Slurm namespace, where the ConfigMap and the slurmd pods are.
    type: str
    required: true
  configmap_name:
    description: The ConfigMap that holds the Slurm configuration. It is created if it does not exist.
    type: str
    required: true
  configmap_key:
    description: The key (file name) the topology is written to, such as V(topology.conf) or V(topology.yaml).
    type: str
    default: topology.conf
  skeleton_only:
    description:
      - Write switches and blocks without their nodes (Topograph's C(skeleton-only) mode), for Slurm clusters
        whose nodes register dynamically and take their place from O(use_dynamic_nodes).
      - The shrink guard (O(max_node_loss)) checks full content only, since skeleton content holds no nodes.
    type: bool
    default: false
  use_dynamic_nodes:
    description: Annotate the Kubernetes nodes with their C(topology.slinky.slurm.net/spec).
    type: bool
    default: false
  pod_selector:
    description:
      - Labels of the slurmd pods in O(namespace). Each Running and Ready pod maps its Slurm node (label
        O(slurm_node_name_label), else the pod's hostname) to the Kubernetes node it runs on.
      - Without it, Slurm node names are taken to be Kubernetes node names.
    type: dict
  slurm_node_name_label:
    description: The pod label that holds the Slurm node name.
    type: str
    default: slurm.node.name
notes:
  - Needs C(get) and C(patch) on the ConfigMap (C(create) too if it does not exist yet); with O(use_dynamic_nodes),
    nodes C(get), C(list), C(patch), and pods C(list) in O(namespace) with O(pod_selector) (C(docs/rbac/slinky_topology.yaml)).
seealso:
  - module: aifactory.topology.slurm_topology
"""

EXAMPLES = r"""
- name: Block topology for the Slinky cluster
  aifactory.topology.slinky_topology:
    model: "{{ discovered.topology }}"
    namespace: slurm
    configmap_name: slurm-config
    configmap_key: topology.conf
    plugin: topology/block
    block_sizes: [18, 36, 72]

- name: Skeleton only, nodes place themselves through their spec annotation
  aifactory.topology.slinky_topology:
    model: "{{ discovered.topology }}"
    namespace: slurm
    configmap_name: slurm-config
    configmap_key: topology.yaml
    topologies:
      nvl72: {plugin: topology/block, block_sizes: [18, 36], cluster_default: true}
      fabric: {plugin: topology/tree}
    skeleton_only: true
    use_dynamic_nodes: true
    pod_selector: {app.kubernetes.io/component: compute}
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
content:
  description: The content of the ConfigMap key.
  returned: success
  type: str
configmap_changed:
  description: Whether the ConfigMap was written (or, in check mode, would be).
  returned: success
  type: bool
annotated_nodes:
  description: Kubernetes nodes whose spec annotation was set, with O(use_dynamic_nodes).
  returned: success
  type: list
  elements: str
summary:
  description: What the content holds, as M(aifactory.topology.slurm_topology) returns it.
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._engines.slurm_options import RENDER
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module, slinky_topology
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import SHRINK_GUARD

OWN = ArgumentSpec({
    "namespace": {"type": "str", "required": True},
    "configmap_name": {"type": "str", "required": True},
    "configmap_key": {"type": "str", "default": "topology.conf", "no_log": False},
    "skeleton_only": {"type": "bool", "default": False},
    "use_dynamic_nodes": {"type": "bool", "default": False},
    "pod_selector": {"type": "dict"},
    "slurm_node_name_label": {"type": "str", "default": "slurm.node.name"},
})


def main():
    spec = k8s_module.module_spec(RENDER, SHRINK_GUARD, OWN)
    slinky_topology.run(AnsibleModule(**spec.module_kwargs(), supports_check_mode=True))


if __name__ == "__main__":
    main()
