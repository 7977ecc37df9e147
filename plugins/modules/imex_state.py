#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: imex_state
short_description: Record the NVLink domains applied in full in the IMEX applied-state file, under its lock
version_added: 0.2.0
description:
  - Used on the controller by the C(aifactory.topology.imex) role's C(record) tasks (playbooks/imex.yml), after the
    node play.
  - Re-reads O(path) under an exclusive lock on its directory, takes this run's changes only for the domains whose
    record still holds what this run read when it planned (compare and swap), and writes the file atomically.
  - A domain that another run recorded in between is left unrecorded, with a warning, so the next run visits it;
    two runs at once may have left its trays with either one's files.
author:
  - aifactory.topology contributors (@aifactory)
options:
  path:
    description: The applied-state file (C(imex_state_file)). Its directory is created (mode 0700) when missing.
    type: path
    required: true
  read:
    description: Domain to digest, as this run read the file when it planned (the C(applied) of M(aifactory.topology.imex_fleet)).
    type: dict
    required: true
  after:
    description: Domain to digest, as this run would record it (the C(domains) of M(aifactory.topology.imex_applied)).
    type: dict
    required: true
extends_documentation_fragment:
  - ansible.builtin.files
  - aifactory.topology.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Record the NVLink domains applied in full
  aifactory.topology.imex_state:
    path: "{{ imex_state_file }}"
    read: "{{ imex__fleet.applied }}"
    after: "{{ imex__state_after.domains }}"
    mode: "0600"
"""

RETURN = r"""
domains:
  description: Domain to digest, as written.
  returned: success
  type: dict
conflicts:
  description: The domains another run recorded since this one planned them; left unrecorded.
  returned: success
  type: list
  elements: str
state_problem:
  description: Why the file as re-read was not usable (it is then rewritten whole), or null.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import imex_state


def main():
    imex_state.run(AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "read": {"type": "dict", "required": True},
            "after": {"type": "dict", "required": True},
        },
        add_file_common_args=True,
        supports_check_mode=True,
    ))


if __name__ == "__main__":
    main()
