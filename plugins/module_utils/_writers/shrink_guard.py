# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shrink guard: a new Slurm topology file never silently drops the nodes the current one places.

It reads the node sets of both files (topology.conf or topology.yaml, the latter even without
PyYAML, as on minimal controllers) and refuses a change that loses too many.
"""

from __future__ import annotations

import math
import re

from ansible_collections.aifactory.topology.plugins.module_utils import _hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils import _slurm_lines as slurm_lines
from ansible_collections.aifactory.topology.plugins.module_utils import _yaml
from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError, clip


def check_max_node_loss(value, where="max_node_loss"):
    """``value`` as a percentage; nan, infinities and values outside 0..100 would disable the guard."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= 100:
        raise TopologyError(f"{where} must be a number from 0 to 100 (a percentage of nodes), got {clip(value)}")
    return float(value)


def check_shrink(current, content, max_node_loss, force):
    """Refuse a new file that loses too many of the nodes the current one holds.

    Returns a warning or None; raises TopologyError when the write must not happen. A current
    file the guard cannot read fails closed: only ``force`` replaces it (with a warning).
    """
    max_node_loss = check_max_node_loss(max_node_loss)
    if current is None or current == content:
        return None  # nothing to lose: the common case of a scheduled run with no change
    try:
        before = nodes_in_file(current)
    except (TopologyError, hostlist.HostlistError) as exc:
        problem = f"the shrink guard cannot read the current file ({exc})"
        if force:
            return f"force: {problem}; it is replaced unchecked"
        raise TopologyError(f"{problem}; it fails closed: set force: true to replace it") from None
    if not before:
        return None
    after = nodes_in_file(content)
    if not after:
        raise TopologyError(
            f"refusing to replace a file that places {len(before)} nodes with one that places none "
            "(an empty discovery never overwrites a good file; remove the file first if this is intended)"
        )
    lost = before - after
    share = 100.0 * len(lost) / len(before)
    if share > max_node_loss:
        names = _shown(hostlist.compress(lost))
        if not force:
            raise TopologyError(
                f"refusing to drop {len(lost)} of {len(before)} nodes ({share:.1f}% > max_node_loss "
                f"{max_node_loss:g}%): {names}; set force: true to accept"
            )
        return f"force: dropping {len(lost)} of {len(before)} nodes: {names}"
    return None


def _shown(hostlist_text, width=200):
    """A hostlist for a message, cut to ``width`` characters (100k scattered names would be megabytes)."""
    return hostlist_text if len(hostlist_text) <= width else f"{hostlist_text[:width]}... ({len(hostlist_text)} characters)"


_CONF_RECORDS = frozenset({"switchname", "blockname", "blocksizes"})


def _conf_lines(text):
    """topology.conf's lines as Slurm reads them (lines end at \\n only; comments, continuations)."""
    return slurm_lines.logical_lines(slurm_lines.physical_lines(text))


def _is_topology_conf(text):
    """topology.conf records are Key=Value lines; anything else is taken for topology.yaml."""
    for line in _conf_lines(text):
        if line.text.strip(slurm_lines.SPACE):
            pairs = slurm_lines.key_values(line.text)
            return bool(pairs) and pairs[0][0].lower() in _CONF_RECORDS
    return True


_YAML_NODES = re.compile(r"^\s*(?:-\s+)?nodes:\s*(.+?)\s*$")
# YAML's line breaks (libyaml's, which Slurm links): not the form feed or the other breaks str.splitlines knows.
_YAML_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


def _yaml_nodes_by_line(text):
    """``nodes:`` values of a block-style topology.yaml, for hosts without PyYAML (minimal controllers)."""
    names = set()
    for line in _YAML_LINE_BREAK.split(text):
        match = _YAML_NODES.match(line.split(" #", 1)[0])
        if match:
            value = match.group(1)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            names.update(hostlist.expand(value))
    return names


def nodes_in_file(text):
    """Node names that a topology.conf or topology.yaml text places, for the shrink guard."""
    if _is_topology_conf(text):
        return _conf_nodes(text)
    if not _yaml.HAS_YAML:
        return _yaml_nodes_by_line(text)
    return _yaml_nodes(text)


def _conf_nodes(text):
    names = set()
    for line in _conf_lines(text):
        for key, value in slurm_lines.key_values(line.text):
            if key.lower() == "nodes":
                names.update(hostlist.expand(value))
    return names


def _yaml_nodes(text):
    try:
        entries = _yaml.safe_load(text) or []
    except _yaml.YAMLError as exc:
        raise TopologyError(f"the existing topology.yaml is not valid YAML: {exc}") from None
    if isinstance(entries, dict):
        entries = [entries]
    names = set()
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        for section, items in (("tree", "switches"), ("block", "blocks")):
            for item in (entry.get(section) or {}).get(items) or []:
                if isinstance(item, dict) and item.get("nodes"):
                    names.update(hostlist.expand(str(item["nodes"])))
    return names
