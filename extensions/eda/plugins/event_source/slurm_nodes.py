# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aifactory.topology.slurm_nodes: Slurm node state changes (new, removed, down, drain, up, resume).

Polls ``scontrol show nodes --json`` every ``interval`` seconds and compares each node's
availability (down / drain / up) with the previous poll. Jobs starting and ending (idle,
allocated, mixed), power saving and other flags never make an event. Changes are debounced
(``delay``, ``max_wait``): a burst becomes one event ``{"topology_change": {...}}``. Why polling
and not ``strigger``: docs/event-driven.md.

Options: ``scontrol`` (the command, a list; default ``["scontrol"]``, e.g. ``["chroot", "/srv/root",
"scontrol"]`` or ``["ssh", "ctl", "scontrol"]``), ``slurm_conf`` (sets ``SLURM_CONF``),
``interval`` (10), ``command_timeout`` (30), ``delay`` (15), ``max_wait`` (120), ``initial_sync``
(true: one event at start).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys

try:
    from ansible_collections.aifactory.topology.plugins.module_utils import _eda
except ImportError:  # run by ansible-rulebook from <path>/ansible_collections/aifactory/topology/extensions/...
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 7)))
    from ansible_collections.aifactory.topology.plugins.module_utils import _eda

SOURCE = "aifactory.topology.slurm_nodes"
LOG = logging.getLogger(SOURCE)
SPEC = dict(
    scontrol=("list", ["scontrol"]),
    slurm_conf=("str", None),
    interval=("float", 10.0),
    command_timeout=("float", 30.0),
    initial_sync=("bool", True),
    **_eda.DEBOUNCE_SPEC,
)
MAX_OUTPUT = 256 * 1024 * 1024  # 256 MiB of JSON: far above 100,000 nodes, still bounded


async def poll(args):
    """name -> availability, from one ``scontrol show nodes --json``; RemoteAPIError on any failure."""
    command = [*args["scontrol"], "show", "nodes", "--json"]
    env = dict(os.environ, **({"SLURM_CONF": args["slurm_conf"]} if args["slurm_conf"] else {}))
    try:
        process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.PIPE, env=env,
                                                       limit=MAX_OUTPUT)
    except OSError as exc:
        raise _eda.RemoteAPIError(f"{SOURCE}: cannot run {' '.join(command)}: {exc.strerror}") from None
    try:
        out, err = await asyncio.wait_for(process.communicate(), args["command_timeout"])
    except asyncio.TimeoutError:
        process.kill()
        await process.wait()
        raise _eda.RemoteAPIError(f"{SOURCE}: {' '.join(command)} did not finish in "
                                  f"{args['command_timeout']:g} s") from None
    if process.returncode != 0:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise _eda.RemoteAPIError(f"{SOURCE}: {' '.join(command)} failed (exit {process.returncode}): "
                                  + " / ".join(tail))
    try:
        document = json.loads(out)
    except ValueError:
        raise _eda.RemoteAPIError(f"{SOURCE}: {' '.join(command)} printed no JSON") from None
    return _eda.slurm_nodes(document)


async def main(queue, args):
    args = _eda.SourceArgs(SOURCE, args, SPEC)
    if args["interval"] <= 0:
        raise _eda.TopologyError(f"{SOURCE}: option 'interval' must be > 0")
    known = await poll(args)  # a controller that does not answer is an error at start
    LOG.info("%s: %d nodes; polling every %g s", SOURCE, len(known), args["interval"])
    debouncer = _eda.debouncer_from(args, queue.put, SOURCE)
    debouncer.start()
    failing = None
    try:
        if args["initial_sync"]:
            debouncer.add({"kind": "source", "name": SOURCE, "change": "started", "nodes": len(known)})
        while True:
            await asyncio.sleep(args["interval"])
            try:
                current = await poll(args)
            except _eda.RemoteAPIError as exc:
                if str(exc) != failing:  # a controller restart: say it once, keep polling
                    LOG.warning("%s (will retry every %g s)", exc, args["interval"])
                failing = str(exc)
                continue
            if failing:
                LOG.info("%s: scontrol answers again", SOURCE)
                failing = None
            for change in _eda.slurm_changes(known, current):
                debouncer.add(change)
            known = current
    finally:
        await debouncer.stop()
