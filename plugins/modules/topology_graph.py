#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: topology_graph
short_description: Render the topology as Topograph's instance-oriented graph JSON
version_added: 0.1.0
description:
  - Renders C({"instances":[{"id","network_layers","labels"}]}), sorted by id, with the switch path of each
    node from tier 0 outward, as NVIDIA Topograph's C(graph) engine does.
  - Writes O(dest) atomically and only when the content differs; without O(dest) the content is only returned.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.provider
  - aifactory.topology.attributes
  - ansible.builtin.files
options:
  model:
    description:
      - The topology model in compact form, as returned by M(aifactory.topology.topology_info).
      - Mutually exclusive with O(provider); one of them is required.
    type: dict
  dest:
    description: The file to write. Without it nothing is written and RV(content) is returned.
    type: path
  backup:
    description: Keep a timestamped copy of the file it replaces.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
  safe_file_operations:
    description: Uses Ansible's strict file operation functions to ensure proper permissions and avoid data corruption.
    support: full
"""

EXAMPLES = r"""
- name: Export the topology for other tools
  aifactory.topology.topology_graph:
    model: "{{ discovered.topology }}"
    dest: /var/lib/topology/graph.json
    mode: "0644"
"""

RETURN = r"""
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

from ansible_collections.aifactory.topology.plugins.module_utils._common import load_topology, provider_arg_spec
from ansible_collections.aifactory.topology.plugins.module_utils._engines.graph import render_graph_json
from ansible_collections.aifactory.topology.plugins.module_utils._file import FileWriteError, ensure_file
from ansible_collections.aifactory.topology.plugins.module_utils._model import TopologyError


def main():
    argument_spec = provider_arg_spec()
    argument_spec.update(model={"type": "dict"}, dest={"type": "path"}, backup={"type": "bool", "default": False})
    module = AnsibleModule(
        argument_spec=argument_spec,
        mutually_exclusive=[("provider", "model")],
        required_one_of=[("provider", "model")],
        add_file_common_args=True,
        supports_check_mode=True,
    )
    try:
        content = render_graph_json(load_topology(module))
        result = {"changed": False, "content": content}
        if module.params["dest"]:
            result.update(ensure_file(module, module.params["dest"], content, module.params["backup"]))
    except (TopologyError, FileWriteError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
