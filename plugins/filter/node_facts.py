# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.aifactory.topology.plugins.module_utils._base import fact_cache


def _names(value, name):
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",")]
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise AnsibleFilterError(f"node_facts_select: {name} must be a list of host names (or a comma-separated string)")
    return [item for item in value if item]


def node_facts_select(state, hosts, gather, max_age, refresh=None, max_age_jitter=0):
    """The text of the cache file ('' when there is none) -> the nodes to visit (see ``fact_cache.select``);
    ``max_age_jitter``, a fraction from 0 to below 1, spreads the hosts' ages below ``max_age``."""
    try:
        max_age = int(max_age)
    except (TypeError, ValueError):
        raise AnsibleFilterError(f"node_facts_select: max_age must be a number of seconds, got {max_age!r}") from None
    if max_age < 0:
        raise AnsibleFilterError(f"node_facts_select: max_age must be >= 0, got {max_age}")
    try:
        jitter = float(max_age_jitter)
    except (TypeError, ValueError):
        jitter = None
    if isinstance(max_age_jitter, bool) or jitter is None or not 0 <= jitter < 1:
        raise AnsibleFilterError("node_facts_select: max_age_jitter must be a fraction from 0 to below 1 (0.2: ages "
                                 f"from 0.8 to 1.0 times max_age), got {max_age_jitter!r}")
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
