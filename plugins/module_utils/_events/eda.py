# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared code of the collection's Event-Driven Ansible sources (extensions/eda/plugins/event_source).

* ``source_args``: checks a source's arguments once, at start, against an Ansible argument spec
  with the collection's one validator (``_arguments.validate``, as providers and the inventory
  plugin): an unknown option, a wrong type or a bad value is an error that names the option,
  never a silent idle loop.
* ``SCONTROL_SPEC`` and ``scontrol_options``: the ``slurm_nodes`` source's scontrol options, its
  ``command_timeout`` the very option (and default) of the modules' ``scontrol_timeout``, built into the
  modules' ``ScontrolOptions`` by their spec (``_base/scontrol.py``).
* ``K8S_CONNECTION_SPEC`` and ``k8s_connection_options``: the ``k8s_nodes`` source's connection options, the very
  options (and defaults: ``request_timeout``) of the Kubernetes modules, built into the modules'
  ``ConnectionOptions`` by their spec (``_transport/k8s_auth.CONNECTION``).
* ``Debouncer``: the one trailing debounce every source uses. Changes arrive with ``add()``; one
  event leaves ``delay`` seconds after the last change of a burst, or ``max_wait`` seconds after its
  first change when the burst never pauses. The event carries what changed (bounded).
* ``BadMessage`` and ``SourceStats``: one message a source cannot use (a garbage line, an object
  without a name) is counted, logged clipped and skipped; the source goes on. The counts are in a
  summary log line every ``stats_interval`` seconds and when the source ends.
* Not here, because it must run before this module can be imported: the sources run from
  ansible-rulebook (``runpy.run_path``), where ``ansible_collections`` may not be importable yet, so
  each source starts with the same fallback that puts the directory holding ``ansible_collections``
  on ``sys.path`` (``tests/unit/plugins/module_utils/test_eda.py`` checks that the three agree).

ansible-rulebook's event filters see one event at a time and cannot hold one back, so the debounce
is shared code here rather than a filter (docs/event-driven.md).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import math
import threading
import time

from ansible_collections.aifactory.topology.plugins.module_utils._base import arguments as _arguments
from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._base import slurm_states as _slurm_states
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    AifactoryTopologyError,
    RemoteAPIError,
    TopologyError,
    clip,
)
from ansible_collections.aifactory.topology.plugins.module_utils._base.labels import MAX_VALUE_LENGTH
from ansible_collections.aifactory.topology.plugins.module_utils._base.scontrol import SCONTROL
from ansible_collections.aifactory.topology.plugins.module_utils._transport.k8s_auth import AUTH_ARG_SPEC, CONNECTION

__all__ = ["AifactoryTopologyError", "RemoteAPIError", "TopologyError"]  # re-exported for the event sources
EVENT_KEY = "topology_change"
DEFAULT_DELAY = 15.0
DEFAULT_MAX_WAIT = 120.0
MAX_CHANGES_KEPT = 500  # an event stays small however large the burst; ``count`` says how many there were
# ansible-rulebook adds this argument itself when it runs under an EDA controller.
RULEBOOK_ARGS = {"eda_feedback_queue"}
MAX_NAME_LENGTH = _slurm_states.MAX_NODE_NAME  # Kubernetes object and Slurm node names: a DNS name at most
LOGGED_BAD_MESSAGES = 5  # per summary period; a flood of garbage is counted, not logged line by line
STATS_INTERVAL = 300.0


def _undefined_variable(value):
    """The name of an undefined rulebook variable in ``value`` (at any depth), else None.

    ansible-rulebook renders a source argument that is just ``{{ name }}`` with Jinja's native
    environment, which hands over the Undefined object instead of raising.
    """
    if isinstance(value, dict):
        return next(filter(None, map(_undefined_variable, value.values())), None)
    if isinstance(value, list):
        return next(filter(None, map(_undefined_variable, value)), None)
    if any(cls.__name__ == "Undefined" and cls.__module__.startswith("jinja2") for cls in type(value).__mro__):
        return getattr(value, "_undefined_name", None) or "?"
    return None


def scrubbed(main):
    """A source's ``main`` run within its own secrets scope, for the source's whole life: its ``no_log`` options
    (``source_args``) and every credential it loads (a kubeconfig's token, what a request sends) are registered,
    so no log line or error of it quotes one, and the error that ends it is scrubbed on its way to
    ansible-rulebook."""
    @functools.wraps(main)
    async def run(queue, args):
        with _secrets.scope():
            try:
                await main(queue, args)
            except BaseException as exc:
                _secrets.scrub_exception(exc)
                raise
    return run


def source_args(source, args, spec):
    """A source's arguments checked against ``spec`` (an Ansible argument spec), defaults filled in.

    Ansible's validator (``_arguments.validate``: the collection's one check and one message
    format) converts and checks types; what it would let through is refused here too, so a source
    never starts on a value it cannot use: a boolean or a negative or infinite number for a number,
    an empty string in a list, a mapping or a list for a string. The argument that ansible-rulebook
    adds itself (``eda_feedback_queue``) is dropped; an undefined rulebook variable is named; a
    known option given as None (a rulebook's ``default(None)``) takes its default.
    """
    args = {key: value for key, value in (args or {}).items() if key not in RULEBOOK_ARGS}
    for name, value in args.items():
        missing = _undefined_variable(value)
        if missing and name in spec:
            raise TopologyError(f"{source}: option {name!r}: the rulebook variable {missing!r} is undefined "
                                "(give it with --vars or --env-vars)")
    values = _arguments.validate(args, spec, source, none_is_unset=True)
    # Within the source's scope (``scrubbed``). A no_log mapping (k8s_nodes' auth) is not masked whole, its host
    # would go too: the credentials in it are registered where the transport loads them.
    _secrets.register(*(values[name] for name, option in spec.items() if option.get("no_log")))
    for name, option in spec.items():
        given, value = args.get(name), values[name]
        if given is None:
            continue
        where = f"{source}: option {name!r}"
        kind = option.get("type")
        if kind in ("int", "float"):
            if isinstance(given, bool):
                raise TopologyError(f"{where} must be a number, not {given!r}")
            if value < 0 or not math.isfinite(value):
                raise TopologyError(f"{where} must be >= 0, not {clip(given)}")
        elif kind == "list" and not all(isinstance(item, str) and item for item in value):
            raise TopologyError(f"{where} must be a list of non-empty strings")
        elif kind in ("str", "path") and isinstance(given, (bool, dict, list)):
            raise TopologyError(f"{where} must be a string")
    return values


DEBOUNCE_SPEC = {
    "delay": {"type": "float", "default": DEFAULT_DELAY},
    "max_wait": {"type": "float", "default": DEFAULT_MAX_WAIT},
}
STATS_SPEC = {"stats_interval": {"type": "float", "default": STATS_INTERVAL}}
# How the slurm_nodes source runs scontrol: a command line, and the modules' scontrol_timeout (one default).
SCONTROL_SPEC = {
    "scontrol": {"type": "list", "elements": "str", "default": ["scontrol"]},
    "command_timeout": SCONTROL.argument_spec["scontrol_timeout"],
}


def scontrol_options(args):
    """The ``ScontrolOptions`` of a source's checked arguments (``SCONTROL_SPEC``), built as the modules build theirs."""
    return SCONTROL.build({"scontrol_timeout": args["command_timeout"]}, where="options",
                          command_line=tuple(args["scontrol"]))


# How the k8s_nodes source connects: the Kubernetes modules' connection options (auth and request_timeout, one
# spec, one default), and the same auth options in one mapping ``auth`` (a playbook's k8s_topology_auth).
K8S_CONNECTION_SPEC = dict(
    CONNECTION.argument_spec,
    # No default: Ansible's validator fills a mapping's suboptions into it, and would change a default {} in place.
    auth={"type": "dict", "no_log": True, "options": AUTH_ARG_SPEC},
)


def k8s_connection_options(args):
    """The ``ConnectionOptions`` of a source's checked arguments (``K8S_CONNECTION_SPEC``), built as the modules build
    theirs; an auth option given on its own wins over the same one in ``auth``."""
    given = {name: value for name, value in (args["auth"] or {}).items() if name in AUTH_ARG_SPEC and value is not None}
    given.update({name: args[name] for name in CONNECTION.argument_spec if args[name] is not None})
    return CONNECTION.build(given, where="options")


# -- bad messages and the counts that make them visible ------------------------------------------

class BadMessage(ValueError):
    """One message a source cannot use: counted, logged (clipped) and skipped; the source goes on.

    ``reason`` is short and fixed (it is a counter's name); ``sample`` is what was received.
    """

    def __init__(self, reason, sample=None):
        super().__init__(reason)
        self.reason = reason
        self.sample = sample


class SourceStats:
    """What one part of a source (a watch, a poller) did, for its log lines. Thread-safe.

    ``count(what)`` counts; ``bad(message)`` counts a BadMessage by its reason and logs it
    clipped, only the first LOGGED_BAD_MESSAGES of each summary period; ``note(message)`` logs a
    message once while it stays the same; ``summary()`` puts every count in one line and starts the
    next period.
    """

    def __init__(self, name, log):
        self.name = name
        self.log = log
        self.counts = collections.Counter()
        self.bad_messages = collections.Counter()
        self._logged = 0
        self._noted = None
        self._lock = threading.Lock()

    def count(self, what, number=1):
        with self._lock:
            self.counts[what] += number

    def bad(self, message):
        with self._lock:
            self.bad_messages[message.reason] += 1
            self._logged += 1
            logged = self._logged
        if logged <= LOGGED_BAD_MESSAGES:
            sample = "" if message.sample is None else f": {clip(_as_text(message.sample), 120)}"
            more = "; more in this period are only counted" if logged == LOGGED_BAD_MESSAGES else ""
            self.log(f"{self.name}: skipped a bad message ({message.reason}){sample}{more}")

    def note(self, message):
        """Log ``message`` unless it is the one noted last: a condition that lasts is said once, not every poll."""
        with self._lock:
            if message == self._noted:
                return
            self._noted = message
        self.log(f"{self.name}: {message}")

    def snapshot(self):
        with self._lock:
            return dict(self.counts), dict(self.bad_messages)

    def summary(self):
        with self._lock:
            self._logged = 0
            counts = [f"{number} {what}" for what, number in sorted(self.counts.items())]
            bad = sum(self.bad_messages.values())
            reasons = ", ".join(f"{number} {reason}" for reason, number in self.bad_messages.most_common())
        line = f"{self.name}: {', '.join(counts) or 'nothing yet'}; {bad} bad messages"
        return line + (f" ({reasons})" if bad else "")


def _as_text(sample):
    if isinstance(sample, str):
        return sample
    try:
        return json.dumps(sample, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(type(sample))


async def log_summaries(parts, interval, log):
    """Log each part's summary every ``interval`` seconds when its counts changed; runs until cancelled."""
    last = {}
    while True:
        await asyncio.sleep(interval)
        for part in parts:
            snapshot = part.snapshot()
            if last.get(part.name) != snapshot:
                last[part.name] = snapshot
                log(part.summary())


def mapping(value, what):
    """``value`` as a dict (None is empty); BadMessage naming ``what`` for anything else."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadMessage(f"{what} is not an object", value)
    return value


def checked_name(value, what):
    if not isinstance(value, str) or not value or len(value) > MAX_NAME_LENGTH:
        raise BadMessage(f"{what} is not a name of 1-{MAX_NAME_LENGTH} characters", value)
    return value


def clipped_value(value, what):
    """A label value for an event: longer than Kubernetes allows (63) is clipped, not carried verbatim."""
    if not isinstance(value, str):
        raise BadMessage(f"{what} is not a string", value)
    return value if len(value) <= MAX_VALUE_LENGTH else f"{value[:MAX_VALUE_LENGTH]}... ({len(value)} characters)"


class Debouncer:
    """Trailing debounce: a burst of changes becomes one event.

    ``put`` is an async callable (the rulebook's queue ``put``). The timer restarts with every
    change; the event leaves when no change came for ``delay`` seconds, or at the latest
    ``max_wait`` seconds after the first change of the burst. Changes that arrive while an event is
    being put start the next burst. Thread-safe entry: ``add_threadsafe`` from a worker thread.
    """

    def __init__(self, put, source, delay=DEFAULT_DELAY, max_wait=DEFAULT_MAX_WAIT, clock=time.monotonic,
                 wall_clock=time.time):
        if max_wait < delay:
            raise TopologyError(f"{source}: max_wait ({max_wait:g} s) must not be shorter than delay ({delay:g} s)")
        self.put = put
        self.source = source
        self.delay = delay
        self.max_wait = max_wait
        self.clock = clock
        self.wall_clock = wall_clock
        self.loop = None
        self._changes = []
        self._count = 0
        self._first = None
        self._first_wall = None
        self._last = None
        self._wakeup = None
        self._task = None
        self.emitted = 0

    def start(self):
        self.loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        self._task = asyncio.ensure_future(self._run())
        return self._task

    async def stop(self):
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    def add(self, change):
        """Record one change (a small dict); call from the event loop's thread."""
        now = self.clock()
        if self._first is None:
            self._first = now
            self._first_wall = self.wall_clock()
        self._last = now
        self._count += 1
        if len(self._changes) < MAX_CHANGES_KEPT:
            self._changes.append(change)
        self._wakeup.set()

    def add_threadsafe(self, change):
        self.loop.call_soon_threadsafe(self.add, change)

    @property
    def pending(self):
        return self._count

    def _due(self):
        return min(self._last + self.delay, self._first + self.max_wait)

    async def _run(self):
        while True:
            if self._first is None:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            remaining = self._due() - self.clock()
            if remaining > 0:
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), remaining)
                except asyncio.TimeoutError:
                    pass
                continue
            event = self._take()
            await self.put(event)
            self.emitted += 1

    def _take(self):
        changes, count = self._changes, self._count
        event = {EVENT_KEY: {
            "source": self.source,
            "count": count,
            "changes": changes,
            "truncated": count > len(changes),
            "first_change_at": self._first_wall,
            "waited": round(self.clock() - self._first, 3),
        }}
        self._changes, self._count, self._first, self._first_wall, self._last = [], 0, None, None, None
        return event


def debouncer_from(args, put, source):
    return Debouncer(put, source, delay=args["delay"], max_wait=args["max_wait"])


# -- Kubernetes: what a Node or Pod change means for the topology ------------------------------

def node_digest(obj, watched_labels):
    """What of a Node the topology depends on: the values of the watched labels (missing ones omitted).

    BadMessage for a Node that is not shaped like one (labels that are not a mapping of strings).
    """
    labels = mapping(mapping(mapping(obj, "the object").get("metadata"), "metadata").get("labels"),
                     "metadata.labels")
    return {key: clipped_value(labels[key], f"label {key}") for key in watched_labels if key in labels}


def pod_digest(obj, _watched_labels=()):
    """What of a Pod the topology depends on: the node it runs on and whether it is Ready (Slinky's
    slurmd pods; Topograph's Node Observer also triggers on their Ready transitions). BadMessage
    for a Pod that is not shaped like one."""
    obj = mapping(obj, "the object")
    conditions = mapping(obj.get("status"), "status").get("conditions") or []
    if not isinstance(conditions, list):
        raise BadMessage("status.conditions is not a list", conditions)
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions if isinstance(c, dict))
    node = mapping(obj.get("spec"), "spec").get("nodeName") or ""
    return {"node": node and checked_name(node, "spec.nodeName"), "ready": ready}


def object_change(kind, name, old, new):
    """A change record for one object, or None when nothing the topology reads changed.

    ``old``/``new`` are digests (None: the object does not exist on that side).
    """
    if old is None and new is None:
        return None
    if old is None:
        return {"kind": kind, "name": name, "change": "added", **({"labels": new} if kind == "node" else new)}
    if new is None:
        return {"kind": kind, "name": name, "change": "removed"}
    if old == new:
        return None
    changed = sorted(key for key in set(old) | set(new) if old.get(key) != new.get(key))
    return {"kind": kind, "name": name, "change": "modified",
            "fields": {key: {"old": old.get(key), "new": new.get(key)} for key in changed}}


def state_diff(kind, before, after):
    """Change records that turn the digest map ``before`` into ``after`` (a relist after 410 Gone)."""
    changes = []
    for name in sorted(set(before) | set(after)):
        change = object_change(kind, name, before.get(name), after.get(name))
        if change:
            changes.append(change)
    return changes


# -- Slurm: node states as `scontrol show nodes --json` reports them -----------------------------

# A node's availability for the topology, from its class (_base/slurm_states, the collection's one
# reader of Slurm node states): drained and down nodes leave the usable map; idle and allocated ones
# (mixed, completing, powered down, reserved...) are "up", and moving between them is never an event.
AVAILABILITY = {
    _slurm_states.IDLE: "up",
    _slurm_states.ALLOCATED: "up",
    _slurm_states.DRAINED: "drain",
    _slurm_states.DOWN: "down",
}


def slurm_nodes(output, bad=None, where=_slurm_states.SCONTROL, unknown=None):
    """name -> availability from ``scontrol show nodes --json`` (its text, bytes or parsed document).

    Output that is not a node list, or that reports errors, is a RemoteAPIError (the whole poll
    failed). One node record that cannot be read is one BadMessage, handed to ``bad``: a record
    without a usable name is skipped, a named node whose state cannot be read is down (raised when
    ``bad`` is None). State words the collection does not know make their node down; ``unknown``,
    when given, is called with a message naming them.
    """
    report = None if bad is None else (lambda reason, sample: bad(BadMessage(reason, sample)))
    nodes = _slurm_states.read_nodes(output, where, report)
    message = _slurm_states.unknown_words_warning(nodes)
    if message and unknown is not None:
        unknown(message)
    return {node.name: AVAILABILITY[node.state.category] for node in nodes}


def slurm_changes(before, after):
    """Change records between two name -> availability maps: new, removed, down, drain, resume (up)."""
    changes = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if old is None:
            change = "new"
        elif new is None:
            change = "removed"
        else:
            # Back to service: "up" after down, "resume" after a drain (what `scontrol update state=resume` ends).
            change = new if new != "up" else ("up" if old == "down" else "resume")
        changes.append({"kind": "slurm_node", "name": name, "change": change, "state": new, "previous": old})
    return changes
