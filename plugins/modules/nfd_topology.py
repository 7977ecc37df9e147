#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nfd_topology
short_description: Publish the cluster topology as Node Feature Discovery objects
version_added: 0.2.0
description:
  - Writes one C(NodeFeature) per node (attributes C(fabric-tier-N), C(accelerator-domain),
    C(accelerator-sub-domain) in the feature C(topograph.network)) and one C(NodeFeatureGroup) per
    distinct tier or domain value, in O(namespace), with NVIDIA Topograph's names, labels and
    annotations, so objects written by either tool are the same objects.
  - Lists the managed objects once (by their labels), then creates, patches or deletes only what differs.
  - A node whose name or label value the API server would refuse (a domain with C(:), a name longer than 63
    characters, which the C(nfd.node.kubernetes.io/node-name) label cannot hold) is quarantined (RV(quarantined),
    source C(kubernetes labels)) and gets no C(NodeFeature); the other nodes are written.
  - Managed objects that the topology no longer gives are deleted (O(cleanup)). A topology that gives no
    node any attribute is an error, so an empty discovery never deletes the last good objects, and the objects
    of quarantined nodes and of nodes gone from the topology are deleted only within O(max_node_loss).
  - nfd-master turns the attributes into node labels through C(NodeFeatureRule) objects; the collection ships
    one, C(files/nfd/topograph-labels.nodefeaturerule.yaml), that gives the nodes exactly the labels of
    M(aifactory.topology.k8s_node_labels) with its default keys. C(NodeFeatureGroup) needs nfd-master's
    C(NodeFeatureGroupAPI) feature gate.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.provider
  - aifactory.topology.provider.MODEL
  - aifactory.topology.k8s_auth
  - aifactory.topology.k8s_auth.WRITES
  - aifactory.topology.attributes
  - aifactory.topology.attributes.ACTION_GROUP_K8S
options:
  namespace:
    description:
      - The namespace of the objects (Topograph's E(NFD_NAMESPACE)). Give nfd-master's own namespace (where it is
        deployed, its E(KUBERNETES_NAMESPACE); C(node-feature-discovery) in NFD's manifests).
      - nfd-master reads C(NodeFeature) objects of every namespace (unless its
        C(restrictions.nodeFeatureNamespaceSelector) limits them), but writes the status of C(NodeFeatureGroup)
        objects in its own namespace only; a group in any other namespace never gets a C(status.nodes).
    type: str
    required: true
  cleanup:
    description: Delete managed objects of the namespace that the topology no longer gives.
    type: bool
    default: true
  max_node_loss:
    description:
      - Guard against a mass removal. The C(NodeFeature) of a quarantined node (see
        C(provider.params.invalid_nodes)) or of a node gone from the topology is deleted with O(cleanup), so
        nfd-master drops its labels; when those are more than this percentage of the listed managed C(NodeFeature)
        objects (a fabric manager restarting, a provider that lost part of the fabric), the task fails after the
        list and before any write, unless O(force) is set.
      - A number from 0 to 100; C(nan) and infinities are errors.
    type: float
    default: 10
  force:
    description:
      - Delete the C(NodeFeature) objects of quarantined nodes and of nodes gone from the topology even beyond
        O(max_node_loss) (with a warning).
    type: bool
    default: false
  no_topology_value:
    description: The C(fabric-tier-0) value for nodes without any switch. By default they get no fabric attribute.
    type: str
notes:
  - Needs C(get), C(list), C(create), C(patch) and C(delete) on C(nodefeatures) and C(nodefeaturegroups)
    in O(namespace) (C(docs/rbac/nfd_topology.yaml)).
  - The C(NodeFeatureGroup) status (C(status.nodes)) belongs to nfd-master and is never written.
seealso:
  - module: aifactory.topology.k8s_node_labels
"""

EXAMPLES = r"""
- name: Publish the topology for nfd-master
  aifactory.topology.nfd_topology:
    model: "{{ discovered.topology }}"
    namespace: node-feature-discovery
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
node_features:
  description: Number of C(NodeFeature) objects the topology gives.
  returned: success
  type: int
node_feature_groups:
  description: Number of C(NodeFeatureGroup) objects the topology gives.
  returned: success
  type: int
created:
  description:
    - Names of the objects created (or, in check mode, that would be), by kind.
    - When a request fails after others succeeded, the task fails and RV(created), RV(updated) and RV(deleted)
      still list what was written before the failure (the message names it too).
  returned: success, and on a failure after some writes
  type: dict
  sample: {"NodeFeature": ["topograph-node-node-a-66570ff0"], "NodeFeatureGroup": []}
updated:
  description: Names of the objects patched, by kind.
  returned: success, and on a failure after some writes
  type: dict
deleted:
  description: Names of the stale objects deleted, by kind.
  returned: success, and on a failure after some writes
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module, nfd_topology
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import SHRINK_GUARD

OWN = ArgumentSpec({
    "namespace": {"type": "str", "required": True},
    "cleanup": {"type": "bool", "default": True},
    "no_topology_value": {"type": "str"},
})


def main():
    spec = k8s_module.module_spec(SHRINK_GUARD, OWN)
    nfd_topology.run(AnsibleModule(**spec.module_kwargs(), supports_check_mode=True))


if __name__ == "__main__":
    main()
