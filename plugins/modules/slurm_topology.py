#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_topology
short_description: Render Slurm topology.conf or topology.yaml from the cluster topology
version_added: 0.1.0
description:
  - Renders the Slurm topology for C(topology/tree), C(topology/block) (C(topology.conf)), or several
    named topologies, one per partition (C(topology.yaml), Slurm 25.05 and later).
  - Writes O(dest) atomically and only when the content differs, after an optional O(validate) command
    ran on the new file. Without O(dest) the content is only returned.
  - Block layout follows the physical rack order (O(domain_order)); a declared rack without nodes
    becomes an empty placeholder block at its position, so aggregated blocks stay aligned.
  - Block sizes are validated here, because Slurm before 26.05.3 silently accepts bad ones in topology.yaml.
  - C(scontrol show partition) (O(scontrol_path)) is run only to resolve a topology's C(partition) (O(topologies)).
  - The shrink guard (O(max_node_loss)) reads the current O(dest), checks, and renames the new file under a lock on
    the directory of O(dest), so concurrent runs cannot both pass it.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.provider
  - aifactory.topology.provider.MODEL
  - aifactory.topology.provider.OUTPUT_FILE
  - aifactory.topology.attributes
  - aifactory.topology.attributes.FILE_MODULE
  - ansible.builtin.files
  - aifactory.topology.render
  - aifactory.topology.render.LAYOUT
  - aifactory.topology.render.SHRINK_GUARD
  - aifactory.topology.scontrol
options:
  header:
    description:
      - A comment written at the top of the file. An empty string writes none.
      - It is written verbatim, so every line must start with C(#) and hold no control character.
    type: str
    default: "# Managed by Ansible (aifactory.topology.slurm_topology). Local edits are overwritten."
  validate:
    description:
      - A command run on the new file before it replaces O(dest); C(%s) stands for the file's path.
      - When it fails, O(dest) is left as it was and the task fails with the command's output.
      - It runs without a shell, for at most 300 seconds together with every process it starts, then it is killed
        and the task fails the same way.
    type: str
  drain_unhealthy:
    description:
      - Drain in Slurm the nodes quarantined as unhealthy (a GPU outside its NVLink fabric, a failed nvidia-smi), with
        the fixed reason C(aifactory.topology unhealthy, quarantined from the topology), and resume the nodes drained
        with that reason once they are no longer unhealthy. A node is in no block once quarantined, but slurmctld still
        gives it single-node jobs; the drain stops that.
      - A drain with any other reason (an administrator's) is never lifted, and such a node is not drained again.
      - Bounded by O(max_node_loss), as a percentage of the nodes discovered; O(force) accepts more, with a warning.
        Checked before anything is written, so a refused drain leaves O(dest) as it was.
      - Runs C(scontrol show nodes --json) before the file is written and C(scontrol update) with O(scontrol_path)
        after; in check mode it reports what it would do and sends nothing.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Blocks for NVL72 racks, in physical order, with a placeholder for rack03
  aifactory.topology.slurm_topology:
    model: "{{ discovered.topology }}"
    plugin: topology/block
    block_sizes: [18, 36, 72]
    domain_order: [rack01, rack02, rack03, rack04]
    dest: /etc/slurm/topology.conf
    validate: /usr/local/sbin/check-topology %s

- name: One topology per partition, with a flat admin partition
  aifactory.topology.slurm_topology:
    provider:
      name: simulation
      params: {model_path: /etc/topology/model.yaml}
    topologies:
      nvl72: {plugin: topology/block, block_sizes: [18, 36], partition: gpu, cluster_default: true}
      fabric: {plugin: topology/tree, partition: cpu}
      admin: {plugin: topology/flat}
    dest: /etc/slurm/topology.yaml
    backup: true
"""

RETURN = r"""
drained:
  description: Nodes drained in Slurm in this run (O(drain_unhealthy)), or in check mode that would be.
  returned: when O(drain_unhealthy) is set
  type: list
  elements: str
resumed:
  description: Nodes this collection had drained that are healthy again and were resumed.
  returned: when O(drain_unhealthy) is set
  type: list
  elements: str
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
  description: The file content (with O(header)).
  returned: success
  type: str
dest:
  description: The file written, when O(dest) is set.
  returned: when O(dest) is set
  type: str
backup_file:
  description: The backup copy, when O(backup) made one.
  returned: changed and O(backup)
  type: str
summary:
  description: What the file holds, for humans and assertions.
  returned: success
  type: dict
  contains:
    format:
      description: V(topology.conf) or V(topology.yaml).
      type: str
    plugin:
      description: The plugin of a C(topology.conf).
      type: str
      returned: for topology.conf
    blocks:
      description: Number of blocks, placeholders included.
      type: int
      returned: for topology/block
    placeholders:
      description: Names of empty placeholder blocks.
      type: list
      elements: str
      returned: for topology/block
    topologies:
      description: Topology names of a C(topology.yaml).
      type: list
      elements: str
      returned: for topology.yaml
    nodes:
      description: Number of nodes in the model.
      type: int
    quarantined:
      description: Nodes quarantined in this run (all of them; the C(quarantined) list shows the first 1000).
      type: int
    warnings:
      description: The warnings this run emitted (also shown as Ansible warnings).
      type: list
      elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._base.scontrol import SCONTROL
from ansible_collections.aifactory.topology.plugins.module_utils._engines.slurm_files import DEFAULT_HEADER
from ansible_collections.aifactory.topology.plugins.module_utils._engines.slurm_options import RENDER
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import slurm_topology
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import SHRINK_GUARD, provider_spec

OWN = ArgumentSpec({
    "header": {"type": "str", "default": DEFAULT_HEADER},
    "validate": {"type": "str"},
    "drain_unhealthy": {"type": "bool", "default": False},
})


def main():
    spec = provider_spec(model=True, output_file=True).merge(RENDER, SHRINK_GUARD, SCONTROL, OWN)
    slurm_topology.run(AnsibleModule(**spec.module_kwargs(), add_file_common_args=True, supports_check_mode=True))


if __name__ == "__main__":
    main()
