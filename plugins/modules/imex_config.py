#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: imex_config
short_description: Write a node's NVIDIA IMEX files, config.cfg and nodes_config.cfg, in one task
version_added: 0.2.0
description:
  - Renders C(nodes_config.cfg) (the peer addresses of the node's NVLink domain, one a line, in the order given)
    and C(config.cfg) (a header naming the domain and the peer file, then C(KEY=value) in the order of O(config)),
    and writes each atomically, only when its content differs.
  - Creates the missing parent directories of both files (mode C(0755)).
  - The per-node work of the role C(aifactory.topology.imex) in Slurm mode, which plans O(addresses) for every
    domain at once with the filter C(aifactory.topology.imex_peers).
author:
  - aifactory.topology contributors (@aifactory)
options:
  addresses:
    description: The peer addresses of the domain, in the order every member must list them.
    type: list
    elements: str
    required: true
  config:
    description:
      - The C(config.cfg) settings, written in this order. A null value leaves its key out; a boolean is
        written C(1) or C(0); every other value must be one line of text or a number.
    type: dict
    required: true
  domain:
    description: The NVLink domain, named in the header of C(config.cfg).
    type: str
    required: true
  config_path:
    description: Where C(config.cfg) goes.
    type: path
    required: true
  nodes_config_path:
    description: Where C(nodes_config.cfg) goes (what C(IMEX_NODE_CONFIG_FILE) in O(config) should name).
    type: path
    required: true
  driver_version_file:
    description:
      - The NVIDIA driver's version file (C(/proc/driver/nvidia/version)); when given, the module also reads the
        driver branch (its major version, such as C(570)) and returns it in RV(driver).
      - The branch comes from this file when it can be read, else from O(nvidia_smi_command); a driver that cannot be
        read is not an error (the branch is then empty).
    type: path
    version_added: 0.2.0
  nvidia_smi_command:
    description:
      - The command that prints the driver version (C(nvidia-smi --query-gpu=driver_version --format=csv,noheader)),
        run (for at most 60 seconds, also in check mode) when O(driver_version_file) cannot be read or is not given.
    type: list
    elements: str
    version_added: 0.2.0
extends_documentation_fragment:
  - aifactory.topology.attributes
  - aifactory.topology.attributes.FILE_MODULE
  - ansible.builtin.files
notes:
  - O(mode), O(owner), O(group) and the other file options apply to both files.
"""

EXAMPLES = r"""
- name: Write config.cfg and nodes_config.cfg
  aifactory.topology.imex_config:
    domain: rack01
    addresses: [10.0.1.1, 10.0.1.2]
    config: {SERVER_PORT: 50000, IMEX_NODE_CONFIG_FILE: /etc/nvidia-imex/nodes_config.cfg}
    config_path: /etc/nvidia-imex/config.cfg
    nodes_config_path: /etc/nvidia-imex/nodes_config.cfg
    mode: "0644"
  notify: Restart nvidia-imex
"""

RETURN = r"""
nodes_config:
  description: The peer file, C(dest) and whether it C(changed).
  returned: success
  type: dict
  sample: {"dest": "/etc/nvidia-imex/nodes_config.cfg", "changed": true}
config:
  description: The configuration file, C(dest) and whether it C(changed).
  returned: success
  type: dict
  sample: {"dest": "/etc/nvidia-imex/config.cfg", "changed": false}
driver:
  description:
    - The driver C(branch) (empty when it could not be read) and its C(origin) (O(driver_version_file), C(nvidia-smi)).
  returned: when O(driver_version_file) or O(nvidia_smi_command) is given
  type: dict
  sample: {"branch": "570", "origin": "/proc/driver/nvidia/version"}
directories:
  description: The directories created (or that would be, in check mode).
  returned: success
  type: list
  elements: str
  sample: ["/etc/nvidia-imex"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import imex_config


def main():
    imex_config.run(AnsibleModule(
        argument_spec={
            "addresses": {"type": "list", "elements": "str", "required": True},
            "config": {"type": "dict", "required": True},
            "domain": {"type": "str", "required": True},
            "config_path": {"type": "path", "required": True},
            "nodes_config_path": {"type": "path", "required": True},
            "driver_version_file": {"type": "path"},
            "nvidia_smi_command": {"type": "list", "elements": "str"},
        },
        add_file_common_args=True,
        supports_check_mode=True,
    ))


if __name__ == "__main__":
    main()
