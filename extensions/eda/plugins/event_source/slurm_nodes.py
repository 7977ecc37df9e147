# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aifactory.topology.slurm_nodes: Slurm node state changes (new, removed, down, drain, up, resume).

Polls ``scontrol show nodes --json`` every ``interval`` seconds and compares each node's
availability (down / drain / up) with the previous poll. The availability comes from the
collection's one reader of Slurm node states (``_base/slurm_states``, the table in
docs/segment-capacity.md): every state that takes a node out of service (DOWN, ERROR, UNKNOWN,
FAIL, NOT_RESPONDING, INVALID_REG, REBOOT_ISSUED, POWERING_DOWN, DRAIN, POWER_DRAIN, ...) makes an
event, and so does its return; a word the collection does not know counts as down and is named in
the log. Jobs starting and ending (idle, allocated, mixed) and flags that keep a node in service
(powered down, reserved, ...) never make an event. Changes are debounced (``delay``,
``max_wait``): a burst becomes one event ``{"topology_change": {...}}``. Why polling and not
``strigger``: docs/event-driven.md.

Options: ``scontrol`` (the command, a list; default ``["scontrol"]``, e.g. ``["chroot", "/srv/root",
"scontrol"]`` or ``["ssh", "ctl", "scontrol"]``), ``slurm_conf`` (sets ``SLURM_CONF``),
``interval`` (10), ``command_timeout`` (60, the modules' ``scontrol_timeout``: one default, in
``_base/scontrol.py``), ``max_output`` (256 MiB of JSON), ``delay`` (15),
``max_wait`` (120), ``initial_sync`` (true: one event at start), ``stats_interval`` (300: a line
with the counts). A node record that cannot be read is one bad message (counted, logged; a
record without a name is skipped, a node whose state cannot be read is down); a poll that fails
(scontrol fails, no JSON, more than ``max_output``) is logged and the next poll tries again; only
the first poll, at start, ends the source.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

try:
    from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
except ImportError:  # run by ansible-rulebook from <path>/ansible_collections/aifactory/topology/extensions/...
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 7)))
    from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda

from ansible_collections.aifactory.topology.plugins.module_utils._base import command as _command  # importable now, either way

SOURCE = "aifactory.topology.slurm_nodes"
LOG = logging.getLogger(SOURCE)
SPEC = dict(
    **_eda.SCONTROL_SPEC,  # scontrol and command_timeout: the modules' scontrol options
    slurm_conf={"type": "str"},
    interval={"type": "float", "default": 10.0},
    max_output={"type": "int", "default": 256 * 1024 * 1024},  # of JSON: far above 100,000 nodes, still bounded
    initial_sync={"type": "bool", "default": True},
    **_eda.DEBOUNCE_SPEC,
    **_eda.STATS_SPEC,
)


async def poll(args, stats=None):
    """name -> availability, from one ``scontrol show nodes --json``; RemoteAPIError on any failure.

    A node record that cannot be read is a BadMessage for ``stats``, or an error without it; state
    words the collection does not know are logged once through ``stats.note``.
    The command runs as every command of the collection does (_command): in a session of its own,
    killed with every process it started at ``command_timeout`` (an ``ssh ctl scontrol`` whose
    remote end hangs, a wrapper's child holding the pipes) or beyond ``max_output`` bytes.
    """
    scontrol = _eda.scontrol_options(args)
    command = scontrol.command("show", "nodes", "--json")
    env = dict(os.environ, **({"SLURM_CONF": args["slurm_conf"]} if args["slurm_conf"] else {}))
    try:
        returncode, out, err = await _command.run_async(command, scontrol.scontrol_timeout, args["max_output"], env)
    except _command.CommandError as exc:
        hint = " (raise max_output)" if "printed more than" in str(exc) else ""
        raise _eda.RemoteAPIError(f"{SOURCE}: {exc}{hint}") from None
    if returncode != 0:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise _eda.RemoteAPIError(f"{SOURCE}: {_command.describe(command)} failed (exit {returncode}): "
                                  + " / ".join(line[:200] for line in tail))
    return _eda.slurm_nodes(out, stats.bad if stats else None, f"{SOURCE}: {_command.describe(command)}",
                            stats.note if stats else None)


@_eda.scrubbed
async def main(queue, args):
    args = _eda.source_args(SOURCE, args, SPEC)
    for name in ("interval", "command_timeout", "max_output", "stats_interval"):
        if args[name] <= 0:
            raise _eda.TopologyError(f"{SOURCE}: option {name!r} must be > 0")
    stats = _eda.SourceStats("scontrol poll", lambda message: LOG.warning("%s: %s", SOURCE, message))
    known = await poll(args, stats)  # a controller that does not answer is an error at start
    LOG.info("%s: %d nodes; polling every %g s", SOURCE, len(known), args["interval"])
    debouncer = _eda.debouncer_from(args, queue.put, SOURCE)
    debouncer.start()
    summaries = asyncio.ensure_future(_eda.log_summaries([stats], args["stats_interval"],
                                                         lambda line: LOG.info("%s: %s", SOURCE, line)))
    failing = None
    try:
        if args["initial_sync"]:
            debouncer.add({"kind": "source", "name": SOURCE, "change": "started", "nodes": len(known)})
        while True:
            await asyncio.sleep(args["interval"])
            try:
                current = await poll(args, stats)
            except _eda.RemoteAPIError as exc:
                stats.count("failed polls")
                if str(exc) != failing:  # a controller restart: say it once, keep polling
                    LOG.warning("%s (will retry every %g s)", exc, args["interval"])
                failing = str(exc)
                continue
            stats.count("polls")
            if failing:
                LOG.info("%s: scontrol answers again", SOURCE)
                failing = None
            for change in _eda.slurm_changes(known, current):
                debouncer.add(change)
            known = current
    finally:
        summaries.cancel()
        LOG.info("%s: ending; %s", SOURCE, stats.summary())
        await debouncer.stop()
