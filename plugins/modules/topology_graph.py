#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: topology_graph
short_description: Render the topology as Topograph's instance-oriented graph JSON
version_added: 0.2.0
description:
  - Renders C({"instances":[{"id","network_layers","labels"}]}), sorted by id, with the switch path of each
    node from tier 0 outward, as NVIDIA Topograph's C(graph) engine does.
  - Writes O(dest) atomically and only when the content differs; without O(dest) the content is only returned.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.provider
  - aifactory.topology.provider.MODEL
  - aifactory.topology.provider.OUTPUT_FILE
  - aifactory.topology.attributes
  - aifactory.topology.attributes.FILE_MODULE
  - ansible.builtin.files
"""

EXAMPLES = r"""
- name: Export the topology for other tools
  aifactory.topology.topology_graph:
    model: "{{ discovered.topology }}"
    dest: /var/lib/topology/graph.json
    mode: "0644"
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
  description: The JSON text.
  returned: success
  type: str
  sample: '{"instances":[{"id":"n1","network_layers":["leaf1","spine1"]}]}'
dest:
  description: The file written, when O(dest) is set.
  returned: when O(dest) is set
  type: str
backup_file:
  description: The backup copy, when O(backup) made one.
  returned: changed and O(backup)
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import topology_graph
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import provider_spec


def main():
    topology_graph.run(AnsibleModule(**provider_spec(model=True, output_file=True).module_kwargs(),
                                     add_file_common_args=True, supports_check_mode=True))


if __name__ == "__main__":
    main()
