#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: topology_facts
short_description: Gather a node's InfiniBand HCAs, NVLink clique and fabric health, and hostname
version_added: 0.2.0
description:
  - Runs on each node and returns, as the C(topology_node) fact, what the node knows about its place in the
    fabric, the role of NVIDIA Topograph's Node Data Broker.
  - InfiniBand HCAs come from sysfs (C(/sys/class/infiniband/<device>)), each with its node GUID, system
    image GUID, node description, node type and per port the state, physical state, rate and link layer.
  - The NVLink clique, cluster UUID and fabric registration come from
    C(nvidia-smi --query-gpu=fabric.clusterUuid,fabric.cliqueId,fabric.state,fabric.status --format=csv,noheader)
    (nvidia-smi's C(--query-gpu) property names); the GPUs of a node must agree. With O(fabric_health), the
    fabric health comes from the C(Fabric) section of C(nvidia-smi -q) (C(Health) rows C(Bandwidth),
    C(Route Recovery in progress), C(Route Unhealthy), C(Access Timeout Recovery), C(Incorrect Configuration),
    C(Summary)), which the fabric query does not report. Both outputs are read by the parser of the
    C(nvidia_smi) accelerator source.
  - A node without HCAs, without C(nvidia-smi), without GPUs or with GPUs outside an NVLink fabric (C(N/A),
    C(Not Supported)) gets empty C(infiniband) or C(nvlink) facts, not an error.
  - A GPU whose C(fabric.state) is not C(Completed) (C(Not Started), C(In Progress)), whose C(fabric.status) is
    not C(Success), or whose fabric health is degraded (C(Bandwidth) C(Degraded), a C(Summary) other than
    C(Healthy), ...) gives C(nvlink) facts with C(unhealthy), the reason naming the node, the row, the field and
    the value, and a warning with it; the C(nvidia_smi) accelerator source then quarantines the node as unhealthy.
  - GPUs in different cliques, nvidia-smi failing, output that is not UTF-8, or a cluster UUID or clique id that
    is not a valid name (white space, C(=), C([), C(#), more than 253 characters; the domain becomes a Slurm block
    name) give empty C(nvlink) facts and a warning that names the node, the row and the field. When only
    C(nvidia-smi -q) fails, the clique is kept and the warning says that the health was not checked.
  - The C(infiniband) provider takes the facts as C(params.node_facts), to name HCAs by GUID; the
    C(nvidia_smi) accelerator source takes them in place of the command output; and
    M(aifactory.topology.k8s_node_annotations) publishes them as Kubernetes node annotations.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.attributes
  - aifactory.topology.attributes.INFO_MODULE
  - aifactory.topology.attributes.FACTS
options:
  gather:
    description: What to gather.
    type: list
    elements: str
    choices: [hostname, infiniband, nvlink]
    default: [hostname, infiniband, nvlink]
  sysfs_root:
    description: Where sysfs is mounted; HCAs are read from C(<sysfs_root>/class/infiniband).
    type: path
    default: /sys
  nvidia_smi_path:
    description: The C(nvidia-smi) executable. By default it is looked up on the C(PATH); when it is not found
      the node has no GPU facts.
    type: path
  fabric_health:
    description:
      - Also run C(nvidia-smi -q) on a node with an NVLink clique and read the health of its fabric (the
        C(Health) rows of each GPU's C(Fabric) section); a degraded fabric makes the facts C(unhealthy).
      - C(false) reads only the registration (C(fabric.state), C(fabric.status)) of the fabric query.
    type: bool
    default: true
    version_added: 0.2.0
  timeout:
    description: Seconds each nvidia-smi run may take before the module gives up on it (a hung driver must not hang the play).
    type: int
    default: 60
notes:
  - Needs no root. C(node_desc) is what the host's C(rdma-ndd) set, normally C(<hostname> <device>).
seealso:
  - plugin: aifactory.topology.topology
    plugin_type: inventory
  - module: aifactory.topology.k8s_node_annotations
"""

EXAMPLES = r"""
- name: Gather the fabric facts of every GPU node
  aifactory.topology.topology_facts:

- name: Name the HCAs of the fabric scan by the nodes that gathered them
  aifactory.topology.topology_info:
    provider:
      name: infiniband
      params:
        ibnetdiscover: "{{ {ansible_play_hosts[0]: fabric_scan} }}"
        node_facts: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'topology_node'))) }}"
        accelerator:
          source: nvidia_smi
          nvidia_smi: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'topology_node'))) }}"
  run_once: true
  delegate_to: localhost
  register: discovered
"""

RETURN = r"""
ansible_facts:
  description: The node's facts.
  returned: always
  type: dict
  contains:
    topology_node:
      description: What the node knows about its place in the fabric; parts not gathered are absent.
      returned: always
      type: dict
      contains:
        hostname:
          description: The node's host name (the kernel's node name).
          type: str
          sample: gb200-r01-n01
        infiniband:
          description: The node's HCAs in device order; empty without any.
          type: list
          elements: dict
          sample:
            - device: mlx5_0
              node_guid: "0xe09d73030037311c"
              sys_image_guid: "0xe09d73030037311c"
              node_desc: gb200-r01-n01 mlx5_0
              node_type: CA
              ports:
                - {port: 1, state: ACTIVE, phys_state: LinkUp, rate: 400 Gb/sec (4X NDR), link_layer: InfiniBand}
        nvlink:
          description:
            - The node's NVLink clique; empty without GPUs in an NVLink fabric.
            - C(cluster_uuid), C(clique_id), C(domain) (C(<cluster_uuid>.<clique_id>)), C(gpus), C(state) and
              C(status) (always C(Completed) and C(Success) here) and, when O(fabric_health) read C(nvidia-smi -q),
              C(health_checked).
            - For a fabric registration that is not complete and successful, or degraded, only C(gpus) and
              C(unhealthy), the reason (for example C(nvidia-smi output of gb200-r01-n01, row 3 -
              fabric.state is 'In Progress', not 'Completed'; ...)).
            - Facts gathered by older versions have no C(state) and C(status); the C(nvidia_smi) source still
              reads them.
          type: dict
          sample:
            cluster_uuid: 6a4f2e1c-93b7-4d0e-8f51-2c7d9e0a1b34
            clique_id: "32766"
            domain: 6a4f2e1c-93b7-4d0e-8f51-2c7d9e0a1b34.32766
            gpus: 4
            state: Completed
            status: Success
            health_checked: true
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import topology_facts


def main():
    topology_facts.run(AnsibleModule(
        argument_spec={
            "gather": {"type": "list", "elements": "str", "choices": ["hostname", "infiniband", "nvlink"],
                       "default": ["hostname", "infiniband", "nvlink"]},
            "sysfs_root": {"type": "path", "default": "/sys"},
            "nvidia_smi_path": {"type": "path"},
            "timeout": {"type": "int", "default": 60},
            "fabric_health": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    ))


if __name__ == "__main__":
    main()
