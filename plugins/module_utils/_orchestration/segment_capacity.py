# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the segment_capacity module does, without Ansible: options + node states -> the analysis."""

from __future__ import annotations

import gc

from ansible_collections.aifactory.topology.plugins.module_utils._base import command as _command
from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import (
    LAYOUT_ARG_SPEC,
    SCONTROL_ARG_SPEC,
    load_topology,
    warning_collector,
)
from ansible_collections.aifactory.topology.plugins.module_utils._engines import capacity, slurm

ARG_SPEC = {
    **LAYOUT_ARG_SPEC,
    "node_states": {"type": "dict"},
    **SCONTROL_ARG_SPEC,
    "segment_sizes": {"type": "list", "elements": "int"},
    "unavailability_rates": {"type": "list", "elements": "float", "default": list(capacity.DEFAULT_RATES)},
    "min_share": {"type": "float", "default": capacity.DEFAULT_MIN_SHARE},
}


def run(module):
    """What the module does: the topology, Slurm's node states, the analysis; exits the module (never changed)."""
    params = module.params
    warn, warnings = warning_collector(module)

    def read_scontrol_json():
        return _command.run_checked([params["scontrol_path"], "show", "nodes", "--json"],
                                    timeout=params["scontrol_timeout"])

    # Hundreds of thousands of small objects and no cycles: the cyclic collector only costs time here.
    gc.disable()
    try:
        with failing_cleanly(module):
            topology = load_topology(module, warn)
            result = analyse(topology, params, read_scontrol_json, warn)
            result["quarantined"] = topology.quarantine_report()
            result["summary"]["quarantined"] = len(topology.quarantined)
            if topology.locations:  # the racks the hardware names, for the report's rack map
                result["summary"]["racks"] = topology.summary()["racks"]
    finally:
        gc.enable()
    result["summary"]["warnings"] = warnings
    module.exit_json(changed=False, **result)


def analyse(topology, params, read_scontrol_json, warn):
    """The module's result. ``read_scontrol_json()`` returns the text of ``scontrol show nodes --json``."""
    options = slurm.BlockOptions(params.get("block_sizes"), params.get("domain_order"))
    blocks, sizes = slurm.plan_blocks(topology, options, warn=warn)
    block_nodes = {node for block in blocks for node in block.nodes}
    if params.get("node_states") is not None:
        node_states = params["node_states"]
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
    result = capacity.analyse(blocks, sizes, states, params.get("segment_sizes"),
                              params.get("unavailability_rates") or capacity.DEFAULT_RATES,
                              params.get("min_share", capacity.DEFAULT_MIN_SHARE), node_index, warn)
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
