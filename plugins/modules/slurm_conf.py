#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_conf
short_description: Manage individual settings and partition attributes in slurm.conf
version_added: 0.2.0
description:
  - Sets or removes the global C(Key=Value) settings and the partition attributes it is given, and leaves
    every other line of C(slurm.conf) exactly as it is, so the site keeps owning the file.
  - Reports whether the change needs the Slurm daemons restarted (C(SwitchType), C(SwitchParameters))
    or only C(scontrol reconfigure), which applies everything else since Slurm 23.11.
  - Never writes an empty value (an empty C(Topology=) once made slurmd swallow the next option).
  - Reads the file as Slurm does, lines ending at a newline only, and follows C(Include) (a relative path is
    relative to the directory of O(path); C(%c) is the cluster name). A setting or partition an included file
    already holds as wanted is left there; one that would have to change there fails, naming the file and line,
    before anything is written, since only O(path) is edited.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.attributes
  - aifactory.topology.attributes.FILE_MODULE
  - ansible.builtin.files
options:
  path:
    description: The slurm.conf file. It must exist.
    type: path
    default: /etc/slurm/slurm.conf
  settings:
    description:
      - Global settings, key to value, for example C(SwitchType=switch/nvidia_imex). A null value removes the key.
      - A value is a string without spaces or C(#), a number, or a boolean (written C(YES) or C(NO)).
      - Keys match case-insensitively; a key given twice in the file is reduced to one line.
      - New keys are appended under a comment that says Ansible manages them.
    type: dict
    default: {}
  partitions:
    description:
      - Partition attributes, partition name to a mapping of attribute to value, for example
        C(gpu) to C(Topology=nvl72). A null attribute value removes the attribute; a null partition removes the line.
      - Values as in O(settings); V(4) for C(MaxNodes) writes C(MaxNodes=4), V(true) for C(Hidden) writes C(Hidden=YES).
      - A partition that does not exist is added when its mapping has C(Nodes).
    type: dict
    default: {}
  backup:
    description: Keep a timestamped copy of the file it replaces.
    type: bool
    default: false
  validate:
    description:
      - A command run on the new file before it replaces O(path); C(%s) stands for the file's path.
      - It runs without a shell, for at most 300 seconds together with every process it starts, then it is killed
        and the task fails with O(path) left as it was.
    type: str
"""

EXAMPLES = r"""
- name: IMEX channels, the Lua CLI filter and a topology per partition
  aifactory.topology.slurm_conf:
    settings:
      SwitchType: switch/nvidia_imex
      SwitchParameters: imex_channel_count=2048
      CliFilterPlugins: cli_filter/lua
    partitions:
      gpu: {Topology: nvl72}
      admin: {Nodes: ALL, Hidden: "YES", Topology: admin, AllowGroups: hpc-admins}
  register: slurm_conf
  notify: Reconfigure Slurm
"""

RETURN = r"""
changed_settings:
  description: Global settings whose value changed (added, modified or removed).
  returned: success
  type: list
  elements: str
changed_partitions:
  description: Partitions whose line changed.
  returned: success
  type: list
  elements: str
restart_required:
  description: Whether the change needs the Slurm daemons restarted rather than C(scontrol reconfigure).
  returned: success
  type: bool
restart_settings:
  description: The changed settings that need the restart.
  returned: success
  type: list
  elements: str
backup_file:
  description: The backup copy, when O(backup) made one.
  returned: changed and O(backup)
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import slurm_conf

OWN = ArgumentSpec({
    "path": {"type": "path", "default": "/etc/slurm/slurm.conf"},
    "settings": {"type": "dict", "default": {}},
    "partitions": {"type": "dict", "default": {}},
    "backup": {"type": "bool", "default": False},
    "validate": {"type": "str"},
})


def main():
    slurm_conf.run(AnsibleModule(**OWN.module_kwargs(), add_file_common_args=True, supports_check_mode=True))


if __name__ == "__main__":
    main()
