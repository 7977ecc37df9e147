#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_node_annotations
short_description: Publish gathered node facts as Kubernetes node annotations, as Topograph's Node Data Broker does
version_added: 0.2.0
description:
  - Writes, on each Kubernetes node named in O(node_facts), the annotations NVIDIA Topograph's Node Data Broker
    writes, from the node's C(topology_node) fact (M(aifactory.topology.topology_facts)).
  - C(topograph.run/instance) is the node's host name; the C(dra) and C(node_labels) providers use it as the
    node's name in the topology, so Kubernetes and Slurm agree on names.
  - C(topograph.run/region) is O(region).
  - C(topograph.run/cluster-id) is the node's NVLink domain C(<ClusterUUID>.<CliqueId>), only on nodes with a
    clique (Topograph's C(infiniband-k8s) provider reads it); it is removed from a node whose facts have none.
  - Lists the nodes once and patches only the nodes whose managed annotations differ; other annotations are
    never touched. Nodes of O(node_facts) that are not in the cluster are named in a warning.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.k8s_auth
  - aifactory.topology.k8s_auth.WRITES
  - aifactory.topology.attributes
  - aifactory.topology.attributes.ACTION_GROUP_K8S
options:
  node_facts:
    description:
      - Kubernetes node name to that node's C(topology_node) fact.
    type: dict
    required: true
  region:
    description: The value of C(topograph.run/region); Topograph's broker writes V(local) outside the clouds.
    type: str
    default: local
seealso:
  - module: aifactory.topology.topology_facts
  - module: aifactory.topology.k8s_node_labels
"""

EXAMPLES = r"""
- name: Gather each GPU node's facts
  aifactory.topology.topology_facts:

- name: Publish them on the Kubernetes nodes (node names are the inventory names here)
  aifactory.topology.k8s_node_annotations:
    node_facts: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'topology_node'))) }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
changed_nodes:
  description: Nodes whose annotations were written (or would be, in check mode).
  returned: always
  type: list
  elements: str
summary:
  description: Counts.
  returned: always
  type: dict
  contains:
    nodes_given:
      description: Nodes in O(node_facts).
      type: int
    nodes_changed:
      description: Nodes written.
      type: int
    nodes_missing:
      description: Nodes of O(node_facts) not in the cluster.
      type: int
diff:
  description: Managed annotations before and after, per written node, in diff mode.
  returned: diff mode
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module, k8s_node_annotations
from ansible_collections.aifactory.topology.plugins.module_utils._transport.k8s_auth import CONNECTION

OWN = ArgumentSpec({
    "node_facts": {"type": "dict", "required": True},
    "region": {"type": "str", "default": "local"},
})


def main():
    spec = CONNECTION.merge(k8s_module.WRITES, OWN)
    k8s_node_annotations.run(AnsibleModule(**spec.module_kwargs(), supports_check_mode=True))


if __name__ == "__main__":
    main()
