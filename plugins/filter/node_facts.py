# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.aifactory.topology.plugins.module_utils._base import fact_cache
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._base.numbers import number_value, whole_number


def _names(value, name):
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",")]
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise AnsibleFilterError(f"node_facts_select: {name} must be a list of host names (or a comma-separated string)")
    return [item for item in value if item]


def _number(value, name, kind, integer=False, high=2 ** 63 - 1):
    """An operator's variable as a number: a number, or its text (``-e`` gives text: ``3600``, ``0.2``);
    booleans (``true`` is no count of seconds), NaN, signs and exponents are refused naming the variable."""
    given = value
    try:
        if isinstance(value, str):
            whole, point, fraction = value.strip().partition(".")
            if integer or not point:
                return whole_number(whole if not point else value, name, high=high)
            # A decimal fraction read without float(): the digits on each side of the one point.
            value = whole_number(whole or "0", name) + whole_number(fraction, name) / 10 ** len(fraction)
        return number_value(value, name, high=high, integer=integer)
    except TopologyError:
        raise AnsibleFilterError(f"node_facts_select: {name} must be {kind}, got {given!r}") from None


def node_facts_select(state, hosts, gather, max_age, refresh=None, max_age_jitter=0):
    """The text of the cache file ('' when there is none) -> the nodes to visit (see ``fact_cache.select``);
    ``max_age_jitter``, a fraction from 0 to below 1, spreads the hosts' ages below ``max_age``."""
    max_age = _number(max_age, "max_age", "a whole number of seconds", integer=True)
    jitter = _number(max_age_jitter, "max_age_jitter", "a fraction from 0 to below 1 (0.2: ages from 0.8 to 1.0 "
                     "times max_age)", high=1)
    if jitter >= 1:
        raise AnsibleFilterError(f"node_facts_select: max_age_jitter must be a fraction from 0 to below 1, got {jitter}")
    nodes, problem = fact_cache.read_cache(state)
    selection = fact_cache.select(nodes, _names(hosts, "hosts"), _names(gather, "gather"), max_age,
                                  _names(refresh or [], "refresh"), jitter=jitter)
    selection["state_problem"] = problem
    return selection


def node_facts_merge(selection, gathered):
    """node_facts_select's result and host -> the facts it gathered -> the cache file's content."""
    if not isinstance(selection, dict) or "visit" not in selection:
        raise AnsibleFilterError("node_facts_merge: the first argument must be node_facts_select's result")
    if not isinstance(gathered, dict):
        raise AnsibleFilterError("node_facts_merge: gathered must be a mapping of host -> facts")
    return fact_cache.merge(selection, gathered)


class FilterModule:
    def filters(self):
        return {"node_facts_select": node_facts_select, "node_facts_merge": node_facts_merge}
