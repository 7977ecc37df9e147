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
  - The NVLink clique, cluster UUID, fabric registration, fabric health and the tray's place come from one
    C(nvidia-smi --query-gpu=... --format=csv,noheader) process asking for the four C(fabric.*) fields, the seven
    C(fabric.health.*) fields and the C(platform.*) fields (chassis serial number, slot, tray index, host id, peer
    type, module id), with nvidia-smi's C(--query-gpu) property names (C(nvidia-smi --help-query-gpu)).
  - A driver that does not know a field (C(Field "..." is not a valid field to query.)) is asked again without that
    field's group, at most three processes; only where the health fields are missing does C(nvidia-smi -q) give the
    health. C(nvlink.query) says which fields were read and where the health came from.
  - The facts are read and decided by the parser and the decision of the C(nvidia_smi) accelerator source, the same
    for raw output and facts (docs/providers/nvidia_smi.md has the decision as a table).
  - A node without C(nvidia-smi) or without GPUs gets empty C(nvlink) facts. A registered node with NVLink inside the
    node only (every HGX H100, H200 and B200, with C(Completed), C(Success) and an all-zero cluster UUID) gets
    C(fabric=node), a node with no NVLink fabric (C(N/A)) C(fabric=none); neither is a fault, there is no multi-node
    domain.
  - A GPU whose C(fabric.state) is not C(Completed), whose C(fabric.status) is not C(Success), whose fabric health is
    degraded, that is in no NVLink partition (C(Partition Assigned) C(False)), that C(-q) counts but does not print,
    or that is out of the fabric the node's other GPUs are in, and a tray that reports an NVL chassis serial number
    but is in no multi-node domain, give C(nvlink) facts with C(unhealthy), the reason naming the node, the row, the
    field and the value, and a warning with it; nvidia-smi failing or hanging gives C(unhealthy) too. The
    C(nvidia_smi) accelerator source then quarantines the node as unhealthy.
  - GPUs in different cliques or places, output that is not UTF-8, or a value that is not a valid name (white space,
    C(=), C([), C(#), more than 253 characters; the domain becomes a Slurm block name) give C(invalid), the reason,
    and a warning that names the node, the row and the field; the source quarantines the node as invalid.
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
      - Also read the health of the NVLink fabric (the C(fabric.health.*) fields, or C(nvidia-smi -q) where the driver
        does not know them); a degraded fabric makes the facts C(unhealthy).
      - C(false) reads only the registration (C(fabric.state), C(fabric.status)), the domain and the place.
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
            - The node's NVLink facts; empty without C(nvidia-smi) or GPUs.
            - C(gpus), C(state) and C(status) (of the first GPU), C(fabric) (C(domain), in a multi-node NVLink domain;
              C(node), registered with NVLink inside the node only; C(none), no fabric), and in a domain
              C(cluster_uuid), C(clique_id) and C(domain) (C(<cluster_uuid>.<clique_id>)).
            - C(health), the health rows the GPUs reported (C(N/A) rows left out); C(location), the tray's place
              (C(chassis_serial_number), C(slot_number), C(tray_index), C(host_id), C(peer_type)), as far as reported.
            - C(query), the fields read (C(fields)) and where the health came from (C(health) C(query), C(nvidia-smi -q)
              or null); C(health_checked).
            - C(unhealthy) or C(invalid), the reason, for a node that must not get NVLink jobs or whose data cannot be
              used.
            - Facts gathered by older versions have only C(cluster_uuid), C(clique_id) and maybe C(state) and C(status);
              the C(nvidia_smi) source still reads them.
          type: dict
          sample:
            gpus: 4
            state: Completed
            status: Success
            fabric: domain
            cluster_uuid: 6a4f2e1c-93b7-4d0e-8f51-2c7d9e0a1b34
            clique_id: "32766"
            domain: 6a4f2e1c-93b7-4d0e-8f51-2c7d9e0a1b34.32766
            health: {summary: Healthy, bandwidth: Full, route_recovery_in_progress: "False", route_unhealthy: "False",
                     access_timeout_recovery: "False"}
            location: {chassis_serial_number: "1821124000123", slot_number: 14, tray_index: 4, host_id: 1,
                       peer_type: Switch Connected}
            query: {fields: [fabric.clusterUuid, fabric.cliqueId, "...", platform.module_id], health: query}
            health_checked: true
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import topology_facts

OWN = ArgumentSpec({
    "gather": {"type": "list", "elements": "str", "choices": ["hostname", "infiniband", "nvlink"],
               "default": ["hostname", "infiniband", "nvlink"]},
    "sysfs_root": {"type": "path", "default": "/sys"},
    "nvidia_smi_path": {"type": "path"},
    "timeout": {"type": "int", "default": 60},
    "fabric_health": {"type": "bool", "default": True},
})


def main():
    topology_facts.run(AnsibleModule(**OWN.module_kwargs(), supports_check_mode=True))


if __name__ == "__main__":
    main()
