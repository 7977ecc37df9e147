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
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.provider
  - aifactory.topology.provider.MODEL
  - aifactory.topology.provider.OUTPUT_FILE
  - aifactory.topology.attributes
  - aifactory.topology.attributes.FILE_MODULE
  - ansible.builtin.files
options:
  plugin:
    description:
      - The Slurm topology plugin for C(topology.conf).
      - Defaults to V(topology/tree) when O(topologies) is not set.
      - Mutually exclusive with O(topologies).
    type: str
    choices: [topology/tree, topology/block]
  block_sizes:
    description:
      - Block sizes for V(topology/block), base size first, each next one the base times a power of two (at most 2^15), ascending.
      - Without it the base size is the largest rack's node count and only that level is enforced.
      - Always written explicitly, since an omitted C(BlockSizes) makes Slurm enforce 1, 2, 4, 8 and 16 rack alignment.
    type: list
    elements: int
  topologies:
    description:
      - Named topologies for C(topology.yaml), one per partition. Keys are topology names.
      - Each value takes C(plugin) (V(topology/tree), V(topology/block) or V(topology/flat)), C(block_sizes),
        C(cluster_default) (exactly one topology must set it), and C(nodes) (a hostlist) or C(partition)
        (its nodes are read with C(scontrol show partition) where Slurm runs). Without C(nodes) and
        C(partition) a topology covers every node of the model.
      - Nodes that are not in the model are left out with a warning; a tree or block topology with none
        of its nodes in the model is written as C(flat).
    type: dict
  domain_order:
    description:
      - Accelerator domains (racks) in physical order. A listed domain with no discovered nodes becomes an
        empty placeholder block at its position; discovered domains that are not listed are appended
        after, naturally sorted, with a warning.
      - Defaults to the order the provider declares (the V(inventory) provider's C(domains)), else natural sort.
    type: list
    elements: str
  block_naming:
    description:
      - V(domain) names each block after its domain (sanitised for Slurm), so a rack that appears or
        disappears never renames another block.
      - V(topograph) reproduces NVIDIA Topograph's layout exactly, positional C(block001) names included.
    type: str
    choices: [domain, topograph]
    default: domain
  block_name_pattern:
    description:
      - Names non-empty blocks from their nodes' names, as Topograph's C(blockName) does.
      - Every node of a block must match and give the same name.
    type: dict
    suboptions:
      regexp:
        description: A regular expression searched in each node name.
        type: str
        required: true
      format:
        description: The block name, with C(${1}) or C(${name}) for captured groups.
        type: str
        required: true
  no_topology_switch:
    description:
      - For V(topology/tree), the pseudo root switch that holds nodes without a leaf switch, as Topograph does.
      - Set to an empty string to leave such nodes out of the file (with a warning).
    type: str
    default: no-topology
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
    type: str
  max_node_loss:
    description:
      - Shrink guard. Refuse to replace O(dest) with a file that drops more than this percentage of the
        nodes the current file holds, unless O(force) is set.
      - A result with no nodes never replaces a file that has some, whatever O(force) says.
      - A number from 0 to 100; C(nan) and infinities are errors.
      - A current file the guard cannot read fails the task unless O(force) is set (it fails closed). A file
        with more than comments that yields no nodes is one it cannot read; an empty file, or a C(topology.yaml)
        of flat topologies only, has no nodes to lose.
      - Reading the current file, this check and the rename happen under a lock on the directory of O(dest),
        so concurrent runs cannot both pass it.
    type: float
    default: 10
  force:
    description: Accept a change that drops more nodes than O(max_node_loss) allows.
    type: bool
    default: false
  scontrol_path:
    description: The scontrol command used to resolve C(partition) in O(topologies).
    type: str
    default: scontrol
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
    warnings:
      description: The warnings this run emitted (also shown as Ansible warnings).
      type: list
      elements: str
"""

import contextlib

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm_files as job
from ansible_collections.aifactory.topology.plugins.module_utils._common import (
    INPUT_CONSTRAINTS,
    RENDER_ARG_SPEC,
    load_topology,
    provider_arg_spec,
    warning_collector,
)
from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard
from ansible_collections.aifactory.topology.plugins.module_utils._writers.file import (
    ensure_file,
    locked,
    read_text,
    resolve_dest,
)
from ansible_collections.aifactory.topology.plugins.module_utils._errors import AifactoryTopologyError, TopologyError


def main():
    argument_spec = provider_arg_spec(model=True, output_file=True)
    argument_spec.update(RENDER_ARG_SPEC)
    argument_spec.update(
        header={"type": "str", "default": job.DEFAULT_HEADER},
        validate={"type": "str"},
        max_node_loss={"type": "float", "default": 10.0},
        force={"type": "bool", "default": False},
        scontrol_path={"type": "str", "default": "scontrol"},
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        mutually_exclusive=INPUT_CONSTRAINTS["mutually_exclusive"] + [("plugin", "topologies")],
        required_one_of=INPUT_CONSTRAINTS["required_one_of"],
        add_file_common_args=True,
        supports_check_mode=True,
    )
    params = module.params

    def resolve_partition(partition):
        rc, out, err = module.run_command([params["scontrol_path"], "show", "partition", "-o", partition])
        if rc != 0:
            raise TopologyError(f"cannot read partition {partition!r} with scontrol: {(err or out).strip()}")
        return job.parse_partition_nodes(partition, out)

    warn, warnings = warning_collector(module)

    try:
        topology = load_topology(module, warn)
        body, summary = job.render(topology, params, resolve_partition, warn)
        summary["warnings"] = warnings
        content = job.with_header(body, params["header"])
        result = {"changed": False, "content": content, "summary": summary}
        if params["dest"]:
            shrink_guard.check_max_node_loss(params["max_node_loss"])
            # Read, guard and rename under one lock: two runs cannot both pass the guard on one old file.
            with contextlib.nullcontext() if module.check_mode else locked(params["dest"]):
                current = read_text(resolve_dest(params["dest"]))
                warning = shrink_guard.check_shrink(current, content, params["max_node_loss"], params["force"],
                                                    where=f"the current file {params['dest']}")
                if warning:
                    warn(warning)
                result.update(ensure_file(module, params["dest"], content, params["backup"], params["validate"],
                                          current=current))
    except AifactoryTopologyError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
