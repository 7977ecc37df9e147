# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drain in Slurm the nodes quarantined as unhealthy, and resume them when they recover.

slurmctld keeps a node that is in no block out of every block and ``--segment`` job, but still gives
it single-node jobs; draining it with a reason of our own closes that gap. Only our own drains are
ever undone: a node is resumed only when Slurm shows it drained with DRAIN_REASON, so a drain an
administrator set (any other reason) is never lifted, and such a node is not drained over.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist, slurm_states

# Fixed text, never the quarantine reason: what a host reported must not reach slurmctld's state.
DRAIN_REASON = "aifactory.topology unhealthy, quarantined from the topology"


def drained_nodes(text):
    """({node: reason} of every node Slurm shows with the DRAIN flag, every node name), from scontrol's JSON
    as slurm_states.read_nodes reads it."""
    drained, known = {}, set()
    for node in slurm_states.read_nodes(text):
        known.add(node.name)
        if "DRAIN" in node.state.words:
            drained[node.name] = node.reason
    return drained, known


def unhealthy_nodes(topology, known):
    """The nodes quarantined as unhealthy that Slurm knows, in natural order."""
    return sorted((record.node for record in topology.quarantined.values() if record.unhealthy and record.node in known),
                  key=hostlist.natural_key)


def plan(unhealthy, drained):
    """(to drain, to resume): the unhealthy nodes not drained yet; our drains whose nodes recovered."""
    to_drain = [name for name in unhealthy if name not in drained]
    to_resume = sorted((name for name, reason in drained.items() if reason == DRAIN_REASON and name not in unhealthy),
                       key=hostlist.natural_key)
    return to_drain, to_resume


def commands(to_drain, to_resume):
    """The scontrol argument lists that apply the plan (the module runs them, check mode does not)."""
    result = []
    if to_drain:
        result.append(["update", f"NodeName={hostlist.compress(to_drain)}", "State=DRAIN", f"Reason={DRAIN_REASON}"])
    if to_resume:
        result.append(["update", f"NodeName={hostlist.compress(to_resume)}", "State=RESUME"])
    return result
