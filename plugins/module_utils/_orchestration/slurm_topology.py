# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_topology: discover or load, render topology.conf or topology.yaml, guard and write it, drain the unhealthy."""

from __future__ import annotations

import contextlib

from ansible_collections.aifactory.topology.plugins.module_utils._base import command as _command
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import CommandError, failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._base.scontrol import SCONTROL
from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm_files, slurm_options
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import load_topology, warning_collector
from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard
from ansible_collections.aifactory.topology.plugins.module_utils._writers.file import ensure_file, locked, read_text, resolve_dest


def run(module):
    """What the module does; exits the module."""
    params = module.params
    warn, warnings = warning_collector(module)

    scontrol_options = SCONTROL.build(params)

    def scontrol(args):
        return _command.run_checked(scontrol_options.command(*args), timeout=scontrol_options.scontrol_timeout)

    def resolve_partition(partition):
        try:
            out = scontrol(["show", "partition", "-o", partition])
        except CommandError as exc:
            raise CommandError(f"cannot read partition {partition!r} with scontrol: {exc}") from None
        return slurm_files.parse_partition_nodes(partition, out)

    with failing_cleanly(module):
        topology = load_topology(module, warn)
        body, summary = slurm_files.render(topology, slurm_options.RENDER.build(params), resolve_partition, warn)
        summary["warnings"] = warnings
        content = slurm_files.with_header(body, params["header"])
        result = {"changed": False, "content": content, "summary": summary,
                  "quarantined": topology.quarantine_report()}
        # Checked once, for both guards (the file's and the drain's), and only where one applies.
        max_node_loss = shrink_guard.check_max_node_loss(params["max_node_loss"]) \
            if params["dest"] or params["drain_unhealthy"] else None
        # Both guards before any write: the drain's is planned (and refused) before the file is replaced.
        drains = plan_drains(topology, scontrol, max_node_loss, params["force"], warn) \
            if params["drain_unhealthy"] else None
        if params["dest"]:
            # Read, guard and rename under one lock: two runs cannot both pass the guard on one old file.
            with contextlib.nullcontext() if module.check_mode else locked(params["dest"]):
                current = read_text(resolve_dest(params["dest"]))
                warning = shrink_guard.check_shrink(current, content, max_node_loss, params["force"],
                                                    where=f"the current file {params['dest']}")
                if warning:
                    warn(warning)
                result.update(ensure_file(module, params["dest"], content, params["backup"], params["validate"],
                                          current=current))
        if drains is not None:
            run_drains(drains, scontrol, module.check_mode)
            result.update(drains, changed=result["changed"] or bool(drains["drained"] or drains["resumed"]))
    module.exit_json(**result)


def plan_drains(topology, scontrol, max_node_loss, force, warn):
    """The drains of the unhealthy quarantined nodes and the resumes of our recovered drains, guarded; reads only.

    ``scontrol(args)`` returns stdout. Returns ``{"drained": [...], "resumed": [...]}``; more unhealthy nodes than
    ``max_node_loss`` percent is a TopologyError (nothing written, no node drained) unless ``force``.
    """
    # Only a run that drains needs the drain engine (and the capacity engine's scontrol reader): imported here,
    # statically, so that AnsiballZ still ships it.
    from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm_drain  # pylint: disable=import-outside-toplevel

    drained, known = slurm_drain.drained_nodes(scontrol(["show", "nodes", "--json"]))
    unhealthy = slurm_drain.unhealthy_nodes(topology, known)
    shrink_guard.check_share(unhealthy, len(topology.nodes) + len(topology.quarantined),
                             "nodes quarantined as unhealthy", max_node_loss, force, warn,
                             action="drain", acting="draining", untouched="nothing was written, no node was drained")
    to_drain, to_resume = slurm_drain.plan(unhealthy, drained)
    return {"drained": to_drain, "resumed": to_resume}


def run_drains(drains, scontrol, check_mode):
    """Send the planned drains and resumes (``plan_drains``); in check mode nothing is sent."""
    if not check_mode:
        # Imported where it is used (as plan_drains does): a run without drain_unhealthy never loads it.
        from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm_drain  # pylint: disable=import-outside-toplevel
        for args in slurm_drain.commands(drains["drained"], drains["resumed"]):
            scontrol(args)
