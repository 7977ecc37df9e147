#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: topology_info
short_description: Discover a GPU cluster's network topology with a provider
version_added: 0.1.0
description:
  - Runs a provider and returns the canonical topology model in its compact JSON form, for
    M(aifactory.topology.slurm_topology) and the other render modules.
  - The model is validated; an invalid source fails with an error that names the switch, node or field.
  - With O(model) instead of O(provider), it validates a model in compact form and returns its summary.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.provider
  - aifactory.topology.provider.MODEL
  - aifactory.topology.attributes
  - aifactory.topology.attributes.INFO_MODULE
notes:
  - Run it once for the cluster, typically with C(run_once) and C(delegate_to=localhost).
"""

EXAMPLES = r"""
- name: Discover the topology from a Topograph simulation model
  aifactory.topology.topology_info:
    provider:
      name: simulation
      params:
        model_path: /etc/topology/nvl72.yaml
  register: discovered

- name: Declare the topology in inventory variables
  aifactory.topology.topology_info:
    provider:
      name: inventory
      params:
        switches: {spine1: null, leaf1: spine1, leaf2: spine1}
        domains:
          - {name: rack01, nodes: "gb200-r01-n[01-18]", switch: leaf1}
          - {name: rack02, switch: leaf2}  # declared, not racked yet: a placeholder
  register: discovered
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
topology:
  description: The model in compact form; pass it to the O(aifactory.topology.slurm_topology#module:model) option.
  returned: success
  type: dict
  sample:
    format: aifactory.topology/v1
    switches: {core: null, leaf1: core}
    nodes:
      - {nodes: "gb200-r01-n[01-18]", switch: leaf1, domain: rack01}
summary:
  description: Counts for humans and assertions.
  returned: success
  type: dict
  contains:
    nodes:
      description: Number of nodes.
      type: int
    switches:
      description: Number of switches.
      type: int
    domains:
      description: Number of accelerator domains with nodes.
      type: int
    placeholder_domains:
      description: Declared domains without nodes.
      type: list
      elements: str
    nodes_without_domain:
      description: Nodes outside every accelerator domain.
      type: int
    nodes_without_switch:
      description: Nodes without a leaf switch.
      type: int
    quarantined:
      description: Nodes quarantined in this run (all of them; the C(quarantined) list shows the first 1000).
      type: int
    warnings:
      description: The warnings discovery emitted (also shown as Ansible warnings).
      type: list
      elements: str
      version_added: 0.2.0
    racks:
      description:
        - The racks the hardware names (nvidia-smi's platform fields, NMX's C(LocationInfo)), one per NVLink domain and
          chassis serial number, the first 1000; only when the topology knows where its trays are.
        - Each has C(rack) (C(<domain> (chassis <serial>))), C(domain), C(chassis_serial_number), C(trays) (its nodes in
          physical order), C(schedulable) (how many are not quarantined), and where they apply C(quarantined) (its
          quarantined nodes), C(expected_trays) and C(missing_trays) (how many trays report nothing).
      type: list
      elements: dict
      returned: when the topology knows where its trays are
      version_added: 0.2.0
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import topology_info
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import provider_spec


def main():
    topology_info.run(AnsibleModule(**provider_spec(model=True).module_kwargs(), supports_check_mode=True))


if __name__ == "__main__":
    main()
