# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shrink guard: a new Slurm topology file never silently drops the nodes the current one places.

It reads the node sets of both files (topology.conf, and topology.yaml through the collection's one
YAML reader, ``_base/yaml.py``) and refuses a change that loses too many. Whatever it cannot read
fails closed: a current file that is not empty and yields no nodes is one it cannot read, and so is
a topology.yaml on a host without PyYAML (``force`` replaces it unchecked, with a warning).
"""

from __future__ import annotations

import math
import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import slurm_lines
from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, clip


def check_max_node_loss(value, where="max_node_loss"):
    """``value`` as a percentage; nan, infinities and values outside 0..100 would disable the guard."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= 100:
        raise TopologyError(f"{where} must be a number from 0 to 100 (a percentage of nodes), got {clip(value)}")
    return float(value)


def check_share(names, total, what, max_node_loss, force, warn, action, acting, untouched="nothing was written"):
    """Refuse to ``action`` the nodes ``names`` when they are more than ``max_node_loss`` % of ``total``.

    The one guard of every mass action on quarantined nodes (drain them, remove their labels, taint
    them): a mass failure (a fabric manager down, every tray degraded) must not take the whole cluster
    out at once. ``force`` accepts it with a warning (``acting`` names the action in it); the refusal says
    what was left ``untouched``.
    """
    if not names or not total:
        return
    share = 100.0 * len(names) / total
    if share <= max_node_loss:
        return
    message = (f"{len(names)} of {total} {what} ({share:.1f}% > max_node_loss {max_node_loss:g}%): "
               f"{hostlist.compress(names)[:200]}")
    if not force:
        raise TopologyError(f"refusing to {action} {message}; {untouched}. Fix the cause, or set force: true to accept")
    warn(f"force: {acting} {message}")


def check_shrink(current, content, max_node_loss, force, where="the current file"):
    """Refuse a new file that loses too many of the nodes the current one holds.

    Returns a warning or None; raises TopologyError when the write must not happen. A current
    file the guard cannot read fails closed: only ``force`` replaces it (with a warning). ``where``
    names the current file in messages.
    """
    max_node_loss = check_max_node_loss(max_node_loss)
    if current is None or current == content or _is_blank(current):
        return None  # nothing to lose: no file, an empty one, or the common case of a run with no change
    try:
        before, flat_only = _read_nodes(current)
        if not before and not flat_only:
            # Nodes the guard does not see are nodes it would let go: "no nodes" is not "nothing to lose".
            raise TopologyError("it is not empty, yet no nodes could be read from it")
    except (TopologyError, hostlist.HostlistError) as exc:
        problem = f"the shrink guard cannot read {where} ({exc})"
        if force:
            return f"force: {problem}; it is replaced unchecked"
        raise TopologyError(f"{problem}; it fails closed: set force: true to replace it") from None
    if not before:
        return None  # flat topologies only: they place no node that could be lost
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


# Line breaks of YAML 1.1 (libyaml, PyYAML) besides \n: a topology.yaml breaks lines where Slurm's reader does not.
_YAML_BREAKS = re.compile("\r\n|[\r\x85\u2028\u2029]")


def _is_blank(text):
    """A file that says nothing in either format: nothing but comments and white space to Slurm's reader of
    topology.conf (lines end at \\n only) and to YAML's (lines end at \\r, U+0085, U+2028, U+2029 too)."""
    if any(line.text.strip(slurm_lines.SPACE) for line in _conf_lines(text)):
        return False
    return all(not line.strip(" \t") or line.lstrip(" \t").startswith("#")
               for line in _YAML_BREAKS.sub("\n", text).split("\n"))


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


def nodes_in_file(text):
    """Node names that a topology.conf or topology.yaml text places, for the shrink guard."""
    return _read_nodes(text)[0]


def _read_nodes(text):
    """(node names, whether the text declares only flat topologies, which place no nodes)."""
    if _is_topology_conf(text):
        return _conf_nodes(text), False
    if not _yaml.HAS_YAML:  # a minimal controller: the one narrow read of the one YAML reader
        return _yaml.topology_nodes_without_pyyaml(text)
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
    names, sections = set(), set()
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        sections.update(entry)
        for section, items in (("tree", "switches"), ("block", "blocks")):
            content = entry.get(section)
            for item in (content.get(items) if isinstance(content, dict) else None) or []:
                if isinstance(item, dict) and item.get("nodes"):
                    names.update(hostlist.expand(str(item["nodes"])))
    return names, "flat" in sections and not sections & {"tree", "block"}
