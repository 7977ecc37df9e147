# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-facts cache of playbooks/node_facts.yml: which nodes to visit, and the cache after a run.

The cache is one JSON file on the controller, ``{"format": 1, "nodes": {host: entry}}``, each entry
``{"gathered_at": <seconds since the epoch>, "gather": [what was gathered], "facts": {...}}`` and,
for an entry that must be gathered again whatever its age, ``"stale": true``. A node is visited when
its entry is missing, older than its age (the maximum age less the entry's own jitter), stale, gathered
with another ``gather`` list, or when it is named in the refresh list (an event about it). Pure
functions: no disk, no Ansible.
"""

from __future__ import annotations

import hashlib
import time

from ansible_collections.aifactory.topology.plugins.module_utils._base import json_text
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._base.numbers import number_value

CACHE_FORMAT = 1


# Bounds of a controller state file: far above a 10,000-node cache (about 5 KB a node) and far deeper than
# what the collection writes (five levels), so only a damaged or planted file meets them.
MAX_STATE_BYTES = 256 * 1024 * 1024
MAX_STATE_DEPTH = 64


def read_state(text, state_format, key, what) -> tuple[dict, str | None]:
    """The mapping under ``key`` of a state file's text (JSON ``{"format": state_format, key: {...}}``), and
    why the text was not usable (None when it was); ``what`` names the file in that reason.

    No file (None or empty text) is an empty state; a file that is not this format's JSON, is larger than
    ``MAX_STATE_BYTES`` or nests deeper than ``MAX_STATE_DEPTH`` is an empty state with the reason, so the
    run does everything again (and writes a good file afterwards). This is the one reader of the
    controller's state files: this cache and the IMEX applied state (``_engines/imex``); what each entry
    holds is checked by its caller, entry by entry, so one damaged entry costs that node a visit only."""
    if not text:
        return {}, None
    if not isinstance(text, str):
        return {}, f"not text but {type(text).__name__} ({what})"
    try:
        state = json_text.loads(text, MAX_STATE_BYTES, MAX_STATE_DEPTH)
    except json_text.JSONLimitError as exc:
        return {}, f"{exc} ({what})"
    if not isinstance(state, dict) or state.get("format") != state_format or not isinstance(state.get(key), dict):
        return {}, f"not format {state_format} of {what}"
    return state[key], None


def read_cache(text) -> tuple[dict, str | None]:
    """The ``nodes`` of a cache file's text, and why the text was not usable (None when it was); entries
    without a ``facts`` mapping are left out (their nodes are gathered again)."""
    nodes, problem = read_state(text, CACHE_FORMAT, "nodes", "the node facts cache")
    return {str(host): entry for host, entry in nodes.items()
            if isinstance(entry, dict) and isinstance(entry.get("facts"), dict)}, problem


def _gather_list(entry):
    """The entry's ``gather`` list, or None when it is not a list of names (a damaged entry: gathered again)."""
    gather = entry.get("gather")
    if gather is None:
        return []
    if isinstance(gather, list) and all(isinstance(item, str) for item in gather):
        return gather
    return None


def entry_age(host, gathered_at, max_age, jitter) -> float:
    """The age after which ``host``'s entry gathered at ``gathered_at`` is gathered again: ``max_age`` less
    the fraction ``jitter`` of it times a number in [0, 1), the first 8 bytes of the SHA-256 of the host's
    name and the second it was gathered. The same entry has the same age on every run and every
    controller; a fleet gathered at once is gathered again over ages from ``max_age * (1 - jitter)`` to
    ``max_age``, and each gathering draws the host a new age, so hosts do not fall back into step."""
    key = f"{host} {gathered_at:.0f}".encode("utf-8")
    share = int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2 ** 64
    return max_age * (1 - jitter * share)


def _age_reason(host, entry, gather, now, max_age, jitter):
    if entry is None:
        return "missing"
    if entry.get("stale"):
        return "stale"
    had = _gather_list(entry)
    if had is None or sorted(had) != sorted(gather):
        return "gather changed"
    try:  # a stamp that is no finite number, or lies in the future (a clock stepped back), is aged
        gathered_at = number_value(entry.get("gathered_at"), "gathered_at", high=now)
    except TopologyError:
        return "aged"
    if now - gathered_at > entry_age(host, gathered_at, max_age, jitter):
        return "aged"
    return None


def select(nodes, hosts, gather, max_age, refresh=(), now=None, jitter=0.0) -> dict:
    """Choose the hosts to visit, in the order of ``hosts``; an entry is aged after ``entry_age`` (with
    ``jitter`` 0, after ``max_age``).

    Returns ``now`` (the time the run's entries are stamped with), ``visit``, ``reasons`` (host -> why it
    is visited: ``missing``, ``aged``, ``stale``, ``gather changed`` or ``refresh``) and ``nodes`` (the cache as read, for ``merge``)."""
    now = time.time() if now is None else float(now)
    refresh = set(refresh or ())
    reasons = {}
    for host in hosts:
        reason = "refresh" if host in refresh else _age_reason(host, nodes.get(host), gather, now, max_age, jitter)
        if reason:
            reasons[host] = reason
    return {"now": now, "visit": [host for host in hosts if host in reasons], "reasons": reasons,
            "gather": sorted(gather), "nodes": nodes}


def merge(selection, gathered) -> dict:
    """The cache after a run: ``gathered`` (host -> the facts it gathered) stamped with the run's time;
    a visited host that gathered nothing (it failed, was unreachable or left out by --limit) keeps its
    old facts marked stale, so the next run visits it again; every other entry is kept as it was.
    Facts whose NVLink part is ``unhealthy`` or ``invalid`` are kept stale too: such a node is
    gathered again every run until its facts are good."""
    nodes = dict(selection["nodes"])
    for host in selection["visit"]:
        facts = gathered.get(host)
        if isinstance(facts, dict):
            nvlink = (facts.get("topology_node") or {}).get("nvlink") or {}
            entry = {"gathered_at": selection["now"], "gather": selection["gather"], "facts": facts}
            if nvlink.get("unhealthy") or nvlink.get("invalid"):
                entry["stale"] = True
            nodes[host] = entry
        elif host in nodes:
            nodes[host] = {**nodes[host], "stale": True}
    return {"format": CACHE_FORMAT, "nodes": dict(sorted(nodes.items()))}
