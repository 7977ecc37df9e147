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
``interval`` (10), ``command_timeout`` (30), ``max_output`` (256 MiB of JSON), ``delay`` (15),
``max_wait`` (120), ``initial_sync`` (true: one event at start), ``stats_interval`` (300: a line
with the counts). A node record that cannot be read is one bad message (counted, logged,
skipped); a poll that fails (scontrol fails, no JSON, more than ``max_output``) is logged and the
next poll tries again; only the first poll, at start, ends the source.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys

try:
    from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
except ImportError:  # run by ansible-rulebook from <path>/ansible_collections/aifactory/topology/extensions/...
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 7)))
    from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda

SOURCE = "aifactory.topology.slurm_nodes"
LOG = logging.getLogger(SOURCE)
SPEC = dict(
    scontrol={"type": "list", "elements": "str", "default": ["scontrol"]},
    slurm_conf={"type": "str"},
    interval={"type": "float", "default": 10.0},
    command_timeout={"type": "float", "default": 30.0},
    max_output={"type": "int", "default": 256 * 1024 * 1024},  # of JSON: far above 100,000 nodes, still bounded
    initial_sync={"type": "bool", "default": True},
    **_eda.DEBOUNCE_SPEC,
    **_eda.STATS_SPEC,
)
MAX_STDERR = 64 * 1024  # kept for the message of a failed scontrol
READ_SIZE = 64 * 1024


async def _read_at_most(stream, limit):
    """Up to ``limit`` bytes of ``stream``, and whether it had more (then the rest is not read)."""
    chunks, size = [], 0
    while size <= limit:
        chunk = await stream.read(limit + 1 - size)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:limit], True


async def _discard(stream):
    while await stream.read(READ_SIZE):
        pass


async def poll(args, stats=None):
    """name -> availability, from one ``scontrol show nodes --json``; RemoteAPIError on any failure.

    A node record that cannot be read is a BadMessage for ``stats`` (skipped), or an error without it.
    """
    command = [*args["scontrol"], "show", "nodes", "--json"]
    shown = " ".join(command)
    env = dict(os.environ, **({"SLURM_CONF": args["slurm_conf"]} if args["slurm_conf"] else {}))
    try:
        process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.PIPE, env=env)
    except OSError as exc:
        raise _eda.RemoteAPIError(f"{SOURCE}: cannot run {shown}: {exc.strerror}") from None

    def kill():
        with contextlib.suppress(ProcessLookupError):  # it has just ended by itself
            process.kill()

    async def read_stdout():
        out, too_much = await _read_at_most(process.stdout, args["max_output"])
        if too_much:  # stop it now: stderr ends with it, and nothing more is read
            kill()
        return out, too_much

    try:
        (out, too_much), (err, _more) = await _eda.wait_within(asyncio.gather(
            read_stdout(), _read_at_most(process.stderr, MAX_STDERR)), args["command_timeout"])
        if too_much:
            raise _eda.RemoteAPIError(f"{SOURCE}: {shown} printed more than {args['max_output']} bytes; "
                                      "not read further (raise max_output)")
        await _eda.wait_within(process.wait(), args["command_timeout"])
    except asyncio.TimeoutError:
        raise _eda.RemoteAPIError(f"{SOURCE}: {shown} did not finish in {args['command_timeout']:g} s") from None
    finally:
        if process.returncode is None:
            kill()
        # Read both pipes to their end: asyncio closes the process's transport only then (an
        # unread pipe would stay open until garbage collection).
        with contextlib.suppress(asyncio.TimeoutError):
            await _eda.wait_within(asyncio.gather(_discard(process.stdout), _discard(process.stderr),
                                                  process.wait()), args["command_timeout"])
    if process.returncode != 0:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise _eda.RemoteAPIError(f"{SOURCE}: {shown} failed (exit {process.returncode}): "
                                  + " / ".join(line[:200] for line in tail))
    try:
        document = json.loads(out)
    except (ValueError, RecursionError):
        raise _eda.RemoteAPIError(f"{SOURCE}: {shown} printed no JSON (or JSON nested too deeply)") from None
    return _eda.slurm_nodes(document, stats.bad if stats else None)


async def main(queue, args):
    args = _eda.source_args(SOURCE, args, SPEC)
    for name in ("interval", "max_output", "stats_interval"):
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
