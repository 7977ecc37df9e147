# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drain in Slurm the nodes quarantined as unhealthy, and resume them when they recover.

slurmctld keeps a node that is in no block out of every block and ``--segment`` job, but still gives
it single-node jobs; draining it with a reason of our own closes that gap. Only our own drains are
ever undone: a node is resumed only when Slurm shows it drained with DRAIN_REASON, so a drain an
administrator set (any other reason) is never lifted, and such a node is not drained over.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._engines.capacity import scontrol_json_nodes
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError

# Fixed text, never the quarantine reason: what a host reported must not reach slurmctld's state.
DRAIN_REASON = "aifactory.topology unhealthy, quarantined from the topology"


def drained_nodes(text, where="scontrol show nodes --json"):
    """({node: reason} of every node Slurm shows with the DRAIN flag, every node name), from scontrol's JSON."""
    drained, known = {}, set()
    for name, entry in scontrol_json_nodes(text, where):
        known.add(name)
        state = entry.get("state")
        flags = {word.upper() for word in state if isinstance(word, str)} if isinstance(state, list) else set()
        if "DRAIN" in flags:
            drained[name] = entry.get("reason") if isinstance(entry.get("reason"), str) else ""
    return drained, known


def plan(topology, drained, known, max_node_loss, force, warn):
    """(to drain, to resume): unhealthy quarantined nodes Slurm knows and has not drained; our drains that recovered."""
    unhealthy = sorted((record.node for record in topology.quarantined.values()
                        if record.unhealthy and record.node in known), key=hostlist.natural_key)
    total = len(topology.nodes) + len(topology.quarantined)
    if unhealthy and 100.0 * len(unhealthy) / total > max_node_loss:
        message = (f"{len(unhealthy)} of {total} nodes quarantined as unhealthy "
                   f"({100.0 * len(unhealthy) / total:.1f}% > max_node_loss {max_node_loss:g}%)")
        if not force:
            raise TopologyError(f"refusing to drain {message}: {hostlist.compress(unhealthy)[:200]}; "
                                "fix the cause, or set force: true")
        warn(f"force: draining {message}")
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


def reconcile(topology, scontrol, check_mode, max_node_loss, force, warn):
    """Drain the unhealthy quarantined nodes, resume our recovered drains; ``scontrol(args)`` returns stdout.

    Returns ``{"drained": [...], "resumed": [...]}``; in check mode nothing is sent.
    """
    drained, known = drained_nodes(scontrol(["show", "nodes", "--json"]))
    to_drain, to_resume = plan(topology, drained, known, max_node_loss, force, warn)
    if not check_mode:
        for args in commands(to_drain, to_resume):
            scontrol(args)
    return {"drained": to_drain, "resumed": to_resume}
