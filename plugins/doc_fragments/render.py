# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rendering options shared by the modules that render the Slurm topology.

One text per option, for the ArgumentSpec objects that name these fragments: DOCUMENTATION for
``_engines/slurm_options.RENDER`` less its layout, LAYOUT for ``_engines/slurm_options.LAYOUT`` (block_sizes,
domain_order), which segment_capacity plans with too, SHRINK_GUARD for ``_orchestration/common.SHRINK_GUARD``
(tests/unit/plugins/test_doc_fragments.py compares them).
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  plugin:
    description:
      - The Slurm topology plugin, for C(topology.conf).
      - Defaults to V(topology/tree) when O(topologies) is not set.
      - Mutually exclusive with O(topologies).
    type: str
    choices: [topology/tree, topology/block]
  topologies:
    description:
      - Named topologies for C(topology.yaml), one per partition (Slurm 25.05 and later). Keys are topology names.
      - Each value takes C(plugin) (V(topology/tree), V(topology/block) or V(topology/flat)), C(block_sizes),
        C(cluster_default) (exactly one topology must set it), and C(nodes) (a hostlist) or C(partition)
        (its nodes are read with C(scontrol show partition) where Slurm runs; only
        M(aifactory.topology.slurm_topology) can, so give C(nodes) elsewhere). Without C(nodes) and
        C(partition) a topology covers every node of the model.
      - Nodes that are not in the model are left out with a warning; a tree or block topology with none
        of its nodes in the model is written as C(flat).
    type: dict
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
        description:
          - A regular expression searched (not anchored) in each node name.
          - At most 256 characters and 2 repetitions, none inside another, no alternation inside a repetition,
            back-reference or look-around, so its cost is bounded; a node name longer than 253 characters matches nothing.
        type: str
        required: true
      format:
        description: The block name, with C(${1}) or C(${name}) for captured groups.
        type: str
        required: true
  no_topology_switch:
    description:
      - For V(topology/tree), the pseudo root switch that holds nodes without a leaf switch, as Topograph does.
      - Set to an empty string to leave such nodes out (with a warning).
    type: str
    default: no-topology
"""

    LAYOUT = r"""
options:
  block_sizes:
    description:
      - Block sizes for V(topology/block), base size first, each next one the base times a power of two (at most 2^15),
        ascending.
      - Without it the base size is the largest rack's node count and only that level is enforced.
      - Always written explicitly, since an omitted C(BlockSizes) makes Slurm enforce 1, 2, 4, 8 and 16 rack alignment.
    type: list
    elements: int
  domain_order:
    description:
      - Accelerator domains (racks) in physical order. A listed domain with no discovered nodes becomes an
        empty placeholder block at its position; discovered domains that are not listed are appended
        after, naturally sorted, with a warning.
      - Defaults to the order the provider declares (the V(inventory) provider's C(domains)), else natural sort.
    type: list
    elements: str
"""

    SHRINK_GUARD = r"""
options:
  max_node_loss:
    description:
      - Shrink guard. Refuse to replace the current topology (the file, or the ConfigMap key) with one that drops more
        than this percentage of the nodes the current one holds, unless O(force) is set.
      - A result with no nodes never replaces a topology that has some, whatever O(force) says.
      - A number from 0 to 100; C(nan) and infinities are errors.
      - A current topology the guard cannot read fails the task unless O(force) is set (it fails closed). One with
        more than comments that yields no nodes is one it cannot read; an empty one, or a C(topology.yaml) of flat
        topologies only, has no nodes to lose.
    type: float
    default: 10
  force:
    description: Accept a change that drops more nodes than O(max_node_loss) allows.
    type: bool
    default: false
"""
