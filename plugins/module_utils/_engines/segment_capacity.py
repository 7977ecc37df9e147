# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""segment_capacity's analysis of a topology: its options, the blocks, Slurm's node states, the capacity, the tree.

Pure, like every engine: Slurm's node table comes through a callable the caller provides.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._engines import capacity, slurm
from ansible_collections.aifactory.topology.plugins.module_utils._engines.slurm_options import LAYOUT, LayoutOptions


@dataclasses.dataclass(frozen=True)
class CapacityOptions(LayoutOptions):
    """What segment_capacity analyses (``CAPACITY``), built by ``CAPACITY.build``."""

    node_states: dict | None  # None: ask Slurm
    segment_sizes: list | None
    unavailability_rates: list
    min_share: float


# segment_capacity's own options and the block layout (doc fragment render.LAYOUT; the others are documented
# in the module).
CAPACITY = ArgumentSpec({
    "node_states": {"type": "dict"},
    "segment_sizes": {"type": "list", "elements": "int"},
    "unavailability_rates": {"type": "list", "elements": "float", "default": list(capacity.DEFAULT_RATES)},
    "min_share": {"type": "float", "default": capacity.DEFAULT_MIN_SHARE},
}).merge(LAYOUT)
CAPACITY.options_class = CapacityOptions


def analyse(topology, options, read_scontrol_json, warn):
    """The module's result for ``options`` (``CapacityOptions``).

    ``read_scontrol_json()`` returns the text of ``scontrol show nodes --json``; it is called only
    when ``options.node_states`` is not given.
    """
    blocks, sizes = slurm.plan_blocks(topology, slurm.BlockOptions(options.block_sizes, options.domain_order), warn=warn)
    block_nodes = {node for block in blocks for node in block.nodes}
    if options.node_states is not None:
        node_states = options.node_states
        if isinstance(node_states, dict):  # a quarantined node is in no block: its state changes nothing
            node_states = {node: state for node, state in node_states.items() if node not in topology.quarantined}
        states = capacity.states_from_option(node_states, topology.nodes)
        source, node_index = "node_states", None
    else:
        states = capacity.states_from_scontrol_json(read_scontrol_json(), warn)
        node_index = {node: index for index, node in enumerate(states)}  # Slurm lists its node table in order
        missing = sorted(block_nodes - set(states), key=hostlist.natural_key)
        if missing:
            warn(f"{len(missing)} nodes of the topology are unknown to Slurm and counted as down: "
                 f"{hostlist.compress(missing)}")
            states.update({node: "down" for node in missing})
        source = "scontrol"
    result = capacity.analyse(blocks, sizes, states, options.segment_sizes, options.unavailability_rates,
                              options.min_share, node_index, warn)
    result["state_source"] = source
    result["fabric"] = fabric(topology, blocks)
    return result


def fabric(topology, blocks):
    """The switches above the blocks (id, name, parent) and each block's switch, for the report's tree."""
    block_switch = {}
    for block in blocks:
        votes = {}
        for node in block.nodes:
            switch = topology.nodes[node].switch
            if switch is not None:
                votes[switch] = votes.get(switch, 0) + 1
        block_switch[block.name] = max(sorted(votes), key=votes.get) if votes else None
    used = set()
    for switch in block_switch.values():
        while switch is not None and switch not in used:
            used.add(switch)
            switch = topology.switches[switch].parent
    switches = [{"id": sid, "name": topology.switches[sid].name or sid, "parent": topology.switches[sid].parent}
                for sid in sorted(used, key=hostlist.natural_key)]
    return {"switches": switches, "block_switch": block_switch}
