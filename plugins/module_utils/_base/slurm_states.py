# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm node states: the one table of Slurm's state words and the one reader of ``scontrol show nodes --json``.

Every part of the collection that reads a node's state reads it here: segment capacity
(``_engines/capacity``), the drain of unhealthy nodes (``_engines/slurm_drain``) and the
``slurm_nodes`` event source (``_events/eda``). So they agree on every word.

* ``WORDS``: every state word and flag Slurm 26.05 documents (``scontrol``/``sinfo`` man pages,
  ``enum node_states`` and the ``NODE_STATE_*`` flags of slurm.h, the words of the JSON
  ``data_parser/v0.0.45`` prints), each with the spellings sinfo and older Slurm versions print,
  and what it means for scheduling: one of the four classes below, or None for a flag that does not
  change whether the node takes work (a flag alone stands for an otherwise idle node).
* ``SUFFIXES``: sinfo's one-character state suffixes (``down*``, ``idle~``).
* ``classify``: the class of a state (``IDLE+DRAIN``, ``down*``, or a list of words such as the
  JSON's). The worst word wins. ``strict`` (the operator's own ``node_states``): a word Slurm does
  not print is an error naming it; otherwise (Slurm's output) it counts as out of service and is
  named in ``NodeState.unknown``, so a newer Slurm's new word is never taken as in service.
* ``read_nodes``: ``scontrol show nodes --json`` parsed once, every node classified. Output that is
  not Slurm's JSON is a ``RemoteAPIError`` (one kind, one wording, for every reader).

The classes, from best to worst: ``idle`` (takes jobs now), ``allocated`` (busy, takes jobs when
they end), ``drained`` and ``down`` (out of service). docs/segment-capacity.md
holds the table of every word, generated from this module by tools/slurm_state_docs.py.
"""

from __future__ import annotations

import collections

from ansible_collections.aifactory.topology.plugins.module_utils._base import json_text
from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    RemoteAPIError,
    TopologyError,
    clip,
)

IDLE, ALLOCATED, DRAINED, DOWN = "idle", "allocated", "drained", "down"
CATEGORIES = (IDLE, ALLOCATED, DRAINED, DOWN)  # best to worst
_RANK = {category: rank for rank, category in enumerate(CATEGORIES)}

BASE, FLAG, OLDER = "base state", "flag", "older word"
SCONTROL = "scontrol show nodes --json"
MAX_NODE_NAME = 253  # a DNS name at most; the event sources use the same bound
BAD_RECORD = "a node record is not an object"
BAD_NAME = f"a node record's name is not a name of 1-{MAX_NODE_NAME} characters"
BAD_STATE = "a node record's state is not a list of Slurm state words"

Word = collections.namedtuple("Word", "word kind category aliases meaning")

# (word as scontrol and the JSON print it, kind, class or None, other spellings, what Slurm's docs say)
WORDS = tuple(Word(*row) for row in (
    # enum node_states: the base state, first in every state Slurm prints
    ("IDLE", BASE, IDLE, (), "not allocated to any job, available for use"),
    ("ALLOCATED", BASE, ALLOCATED, ("ALLOC",), "allocated to one or more jobs"),
    ("MIXED", BASE, ALLOCATED, ("MIX",), "some of its CPUs allocated, others idle"),
    ("DOWN", BASE, DOWN, (), "unavailable for use (a failure, or an administrator)"),
    ("ERROR", BASE, DOWN, (), "in an error state (unused by Slurm 26.05's slurmctld)"),
    ("FUTURE", BASE, DOWN, ("FUTR",), "not fully configured yet, expected in the future"),
    ("UNKNOWN", BASE, DOWN, ("UNK",), "not registered with the controller yet, state not known"),
    ("INVALID", BASE, DOWN, (), "no state at all (the JSON's word for an unset state)"),
    # NODE_STATE_* flags, after the base state
    ("DRAIN", FLAG, DRAINED, ("DRAINED", "DRAINING", "DRNG", "DRAIN_PENDING"),
     "no new jobs; running jobs complete (DRAINING), then DRAINED"),
    ("FAIL", FLAG, DOWN, ("FAILING", "FAILG"), "expected to fail soon, unavailable per administrator request"),
    ("NOT_RESPONDING", FLAG, DOWN, ("NO_RESPOND", "NORESP"), "not responding (sinfo's `*`)"),
    ("INVALID_REG", FLAG, DOWN, ("INVAL",), "registered with less than configured; needs a valid registration"),
    ("REBOOT_ISSUED", FLAG, DOWN, (), "a reboot was sent to the node (sinfo's `^`)"),
    ("POWERING_DOWN", FLAG, DOWN, ("POWRING_DN",), "being powered down, cannot run jobs (sinfo's `%`)"),
    ("POWER_DRAIN", FLAG, DRAINED, (), "to be powered down as soon as its jobs end; no new jobs"),
    ("POWER_DOWN_ASAP", FLAG, DRAINED, (), "POWER_DOWN and POWER_DRAIN together (both are printed too)"),
    ("COMPLETING", FLAG, ALLOCATED, ("COMP",), "its jobs are completing; no new job until they end"),
    ("CLOUD", FLAG, None, (), "a cloud node, powered up on demand"),
    ("POWERED_DOWN", FLAG, None, ("POWERED_DN",), "powered down; Slurm powers it up for a job (sinfo's `~`)"),
    ("POWER_DOWN", FLAG, None, ("POW_DN",), "power down requested, pending (sinfo's `!`)"),
    ("POWER_DOWN_FORCE", FLAG, None, (), "POWER_DOWN and POWERED_DOWN together (both are printed too)"),
    ("POWERING_UP", FLAG, None, (), "being powered up or configured (sinfo's `#`)"),
    ("POWER_UP", FLAG, None, ("POW_UP",), "power up requested"),
    ("PLANNED", FLAG, None, ("PLND",), "earmarked by the backfill scheduler for a job (sinfo's `-`)"),
    ("RESERVED", FLAG, None, ("RESV", "RES"), "in an advance reservation (reservations are not modelled)"),
    ("MAINTENANCE", FLAG, None, ("MAINT",), "in a maintenance reservation (sinfo's `$`)"),
    ("REBOOT_REQUESTED", FLAG, None, ("REBOOT", "BOOT"), "a reboot was requested, not issued yet (sinfo's `@`)"),
    ("REBOOT_CANCELED", FLAG, None, ("CANCEL_REBOOT", "CANC_R"), "a pending reboot was cancelled"),
    ("BLOCKED", FLAG, None, ("BLOCK",), "blocked by an exclusive topology job"),
    ("EXTERNAL", FLAG, None, ("EXT",), "no slurmd: a node managed outside Slurm"),
    ("DYNAMIC_FUTURE", FLAG, None, (), "a dynamic future node"),
    ("DYNAMIC_NORM", FLAG, None, (), "a dynamic node (scontrol create)"),
    ("DYNAMIC", FLAG, None, ("DYN",), "a dynamic node (the scontrol man page's word)"),
    ("RESUME", FLAG, None, ("RESM",), "resume requested (a word of scontrol update)"),
    ("UNDRAIN", FLAG, None, (), "undrain requested (a word of scontrol update)"),
    ("PERFCTRS", FLAG, None, ("NPC",), "network performance counters in use (Slurm 24.05 and older)"),
    ("POWERED_OFF", OLDER, DOWN, (), "not printed by Slurm 26.05; read as down, as before"),
))
# sinfo's suffixes: '*' not responding; the others describe power, reservation or reboot progress.
SUFFIXES = {
    "*": (DOWN, "not responding"),
    "~": (None, "powered off"),
    "#": (None, "being powered up or configured"),
    "!": (None, "pending power down"),
    "%": (DOWN, "being powered down"),
    "$": (None, "in a maintenance reservation"),
    "@": (None, "pending reboot"),
    "^": (DOWN, "reboot issued"),
    "-": (None, "planned by the backfill scheduler"),
}
_SUFFIX_CHARS = "".join(SUFFIXES)
_LOOKUP = {spelling: entry for entry in WORDS for spelling in (entry.word, *entry.aliases)}


class NodeState(collections.namedtuple("NodeState", "category words unknown")):
    """A classified state: its class, the set of its words as scontrol names them (``DRAIN`` for
    ``drained``), and the words this table does not know (Slurm's output only; they count as down)."""

    __slots__ = ()


SlurmNode = collections.namedtuple("SlurmNode", "name state reason")
_UNREADABLE = NodeState(DOWN, frozenset(), ())


def classify(value, where, strict=True):
    """The NodeState of a Slurm state: ``IDLE+DRAIN``, ``down*``, or a list of words (the JSON's).

    A value that is not a string or list of strings, or has no word at all, is a TopologyError
    naming ``where``: a state that cannot be read is never taken as idle. A word Slurm does not
    print is an error too when ``strict``; otherwise it makes the node down and is in ``unknown``.
    """
    if isinstance(value, (list, tuple)):
        words = list(value)
    elif isinstance(value, str):
        words = value.replace("|", "+").split("+")
    else:
        raise TopologyError(f"{where}: the state must be a string such as 'idle' or 'drain' (or a list of such "
                            f"words), got {clip(value)}")
    if not words:
        raise TopologyError(f"{where}: the state is an empty list; Slurm always prints at least one word")
    category, known, unknown = None, set(), []
    for index, raw in enumerate(words):
        if not isinstance(raw, str) or not raw.strip():
            raise TopologyError(f"{where}: state {clip(value)} has an empty or non-string word")
        word = raw.strip().upper()
        # All trailing suffix characters at once: one at a time is quadratic in a long suffix.
        stem = word.rstrip(_SUFFIX_CHARS)
        for suffix in set(word[len(stem):]):
            category = _worse(category, SUFFIXES[suffix][0])
        entry = _LOOKUP.get(stem)
        if entry is None:
            if strict:
                raise TopologyError(f"{where}: unknown Slurm node state {clip(raw)} in {clip(value)}")
            unknown.append(stem if len(stem) <= 40 else f"{stem[:40]}...")
            category = DOWN
            continue
        known.add(entry.word)
        # A flag alone ("drain", "cloud") stands for an otherwise idle node.
        category = _worse(category, entry.category or (IDLE if index == 0 else None))
    return NodeState(category or IDLE, frozenset(known), tuple(unknown))


def _worse(current, new):
    if new is None:
        return current
    if current is None:
        return new
    return new if _RANK[new] > _RANK[current] else current


def read_nodes(output, where=SCONTROL, bad=None):
    """[SlurmNode(name, state, reason)] of ``scontrol show nodes --json`` (text, bytes or the parsed
    document), in Slurm's order (its node table's).

    Output that is not JSON, has no ``nodes`` list or carries Slurm's own ``errors`` is a
    RemoteAPIError naming ``where``. So is one node record that cannot be read (not an object, no
    name, a state that is not a list of words), unless ``bad`` is given: then ``bad(reason, sample)``
    is called with a fixed, short reason; a record without a usable name is skipped and a named
    node whose state cannot be read is down. Words this table does not know make their node down
    and are named in its state's ``unknown`` (``unknown_words_warning`` says which).
    """
    if isinstance(output, (str, bytes, bytearray)):
        try:
            output = json_text.loads(output)
        except json_text.JSONLimitError as exc:
            raise RemoteAPIError(f"{where} did not print valid JSON: {str(exc)[:120]}") from None
    if not isinstance(output, dict) or not isinstance(output.get("nodes"), list):
        raise RemoteAPIError(f"{where}: no 'nodes' list in the output")
    errors = output.get("errors") or []
    if errors:
        errors = errors[:3] if isinstance(errors, list) else [errors]
        messages = "; ".join(str(e.get("description") or e.get("error") or e)[:200] for e in errors
                             if isinstance(e, dict)) or clip(errors, 200)
        raise RemoteAPIError(f"{where} reported errors: {messages}")
    nodes, seen = [], {}
    for index, entry in enumerate(output["nodes"]):
        if not isinstance(entry, dict) or not _is_name(entry.get("name")):
            reason = BAD_RECORD if not isinstance(entry, dict) else BAD_NAME
            if bad is None:
                raise RemoteAPIError(f"{where}: nodes[{index}] has no name ({reason})")
            bad(reason, entry)
            continue
        name = entry["name"]
        state = entry.get("state")
        # Thousands of nodes share a few states: each distinct list is classified once.
        key = tuple(state) if isinstance(state, list) and all(isinstance(word, str) for word in state) else None
        classified = seen.get(key) if key is not None else None
        if classified is None:
            try:
                if "state" not in entry:
                    raise TopologyError(f"{where}: node {name} has no state")
                classified = classify(state, f"{where}: node {name}", strict=False)
            except TopologyError as exc:
                if bad is None:
                    raise RemoteAPIError(str(exc)) from None
                bad(BAD_STATE, {"name": name, "state": state})
                classified = _UNREADABLE
            else:
                if key is not None:
                    seen[key] = classified
        reason = entry.get("reason")
        nodes.append(SlurmNode(name, classified, reason if isinstance(reason, str) else ""))
    return nodes


def _is_name(value):
    return isinstance(value, str) and 0 < len(value) <= MAX_NODE_NAME


def unknown_words_warning(nodes, where=SCONTROL):
    """A warning naming the state words of ``nodes`` (SlurmNodes) that this table does not know, or None."""
    by_word = {}
    for node in nodes:
        for word in node.state.unknown:
            by_word.setdefault(word, []).append(node.name)
    if not by_word:
        return None
    words = [f"{word!r} ({hostlist.compress(names)})" for word, names in sorted(by_word.items())[:10]]
    more = f" and {len(by_word) - 10} more" if len(by_word) > 10 else ""
    return (f"{where}: Slurm node state words this collection does not know, their nodes counted as down: "
            f"{', '.join(words)}{more}")
