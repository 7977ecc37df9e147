# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verified apply: what the running slurmctld has loaded, against the topology file written for it.

A correct file is not a correct controller: a reconfigure slurmctld rejected, a restart from another copy
of the configuration or a hand edit leave the controller on another map than the file says. So the file
and the controller's own answers are compared as node sets:

* ``read_file``: each topology of a topology.yaml (its name, block or tree or flat, the blocks in order
  with their nodes, placeholders included, or the switches with their nodes and child switches), or the
  one of a topology.conf (named ``default``: ``scontrol show topology`` without a name shows it);
* ``read_shown``: what ``scontrol show topology [NAME]`` prints (Slurm 25.05+: ``BlockName=`` lines with
  ``BlockIndex`` and, unless empty, ``Nodes``; ``AggregatedBlock=`` lines, which follow from the blocks and
  are not compared; ``SwitchName=`` lines with ``Nodes`` and ``Switches``; nothing for a flat topology);
* ``differences``: one line per difference, naming the topology and the block or switch;
* ``probe_plan`` and ``probe_problem``: the questions to ask ``sbatch --test-only`` (``-N size
  --segment=size`` for each block size, where one aligned group of blocks has that many idle nodes) and
  whether an answer fits in one group, as the map says it must.

Pure: the caller runs scontrol and sbatch. Every hostlist expands within one budget.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist, slurm_lines
from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, clip
from ansible_collections.aifactory.topology.plugins.module_utils._base.numbers import whole_number

CONF_TOPOLOGY = "default"  # how a topology.conf's one topology is named here (scontrol shows it without a name)
MAX_SHOWN_BYTES = 64 * 1024 * 1024
MAX_LISTED = 5  # blocks or switches named in one difference line


@dataclasses.dataclass
class Layout:
    """One topology, from the file or from the controller."""

    name: str
    kind: str  # block, tree or flat
    blocks: list = dataclasses.field(default_factory=list)  # [(block name, frozenset of nodes)] in order
    block_sizes: list = dataclasses.field(default_factory=list)
    switches: dict = dataclasses.field(default_factory=dict)  # switch -> (frozenset nodes, frozenset children)
    default: bool = False


def _expand(value, budget, where):
    try:
        return frozenset(budget.expand(str(value)))
    except hostlist.HostlistError as exc:
        raise TopologyError(f"{where}: {exc}") from None


def _sizes(value, where):
    if value in (None, ""):
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return [whole_number(str(item).strip(), f"{where}[{index}]", low=1, high=2 ** 31) for index, item in enumerate(items)]


def read_file(text, where="the topology file"):
    """The topologies of a topology.yaml or topology.conf text, as ``Layout`` objects."""
    budget = hostlist.HostBudget()
    stripped = [line for line in text.split("\n") if line.strip() and not line.lstrip().startswith("#")]
    if stripped and (stripped[0].lstrip().startswith("-") or stripped[0].lstrip().startswith("topology:")):
        return _read_yaml(text, budget, where)
    return [_read_conf(text, budget, where)]


def _read_conf(text, budget, where):
    layout = Layout(CONF_TOPOLOGY, "flat", default=True)
    for line in slurm_lines.logical_lines(slurm_lines.physical_lines(text)):
        settings = {key.lower(): value for key, value in slurm_lines.key_values(line.text)}
        at = f"{where}, line {line.first + 1}"
        if "blockname" in settings:
            layout.kind = "block"
            nodes = _expand(settings["nodes"], budget, at) if settings.get("nodes") else frozenset()
            layout.blocks.append((settings["blockname"], nodes))
        elif "blocksizes" in settings:
            layout.block_sizes = _sizes(settings["blocksizes"], f"{at}: BlockSizes")
        elif "switchname" in settings:
            layout.kind = "tree"
            nodes = _expand(settings["nodes"], budget, at) if settings.get("nodes") else frozenset()
            children = _expand(settings["switches"], budget, at) if settings.get("switches") else frozenset()
            layout.switches[settings["switchname"]] = (nodes, children)
    return layout


def _read_yaml(text, budget, where):
    try:
        entries = _yaml.safe_load(text) or []
    except _yaml.YAMLError as exc:
        raise TopologyError(f"{where} is not valid YAML: {clip(str(exc), 200)}") from None
    if not isinstance(entries, list):
        raise TopologyError(f"{where} must be a list of topologies")
    layouts = []
    for index, entry in enumerate(entries):
        at = f"{where}[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("topology"), str):
            raise TopologyError(f"{at} must be a mapping with a topology name")
        layout = Layout(entry["topology"], "flat", default=entry.get("cluster_default") is True)
        if isinstance(entry.get("block"), dict):
            layout.kind = "block"
            layout.block_sizes = _sizes(entry["block"].get("block_sizes"), f"{at}.block.block_sizes")
            for number, block in enumerate(entry["block"].get("blocks") or []):
                if not isinstance(block, dict) or not isinstance(block.get("block"), str):
                    raise TopologyError(f"{at}.block.blocks[{number}] must be a mapping with a block name")
                nodes = _expand(block["nodes"], budget, f"{at}.block.blocks[{number}].nodes") \
                    if block.get("nodes") else frozenset()
                layout.blocks.append((block["block"], nodes))
        elif isinstance(entry.get("tree"), dict):
            layout.kind = "tree"
            for number, switch in enumerate(entry["tree"].get("switches") or []):
                if not isinstance(switch, dict) or not isinstance(switch.get("switch"), str):
                    raise TopologyError(f"{at}.tree.switches[{number}] must be a mapping with a switch name")
                here = f"{at}.tree.switches[{number}]"
                nodes = _expand(switch["nodes"], budget, f"{here}.nodes") if switch.get("nodes") else frozenset()
                children = _expand(switch["children"], budget, f"{here}.children") \
                    if switch.get("children") else frozenset()
                layout.switches[switch["switch"]] = (nodes, children)
        layouts.append(layout)
    if layouts and not any(layout.default for layout in layouts):
        layouts[0].default = True  # Slurm's rule: without cluster_default the first topology is the default
    return layouts


def read_shown(name, text):
    """The ``Layout`` that ``scontrol show topology`` printed for ``name``; TopologyError naming the line."""
    if len(text) > MAX_SHOWN_BYTES:
        raise TopologyError(f"scontrol show topology {name}: the answer is larger than {MAX_SHOWN_BYTES} bytes")
    budget = hostlist.HostBudget()
    layout = Layout(name, "flat")
    indexed = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        fields = {}
        for word in line.split():
            key, sep, value = word.partition("=")
            if sep:
                fields[key] = value
        at = f"scontrol show topology {name}, line {number}"
        if "BlockName" in fields:
            layout.kind = "block"
            index = whole_number(fields.get("BlockIndex", ""), f"{at}: BlockIndex", high=2 ** 31)
            nodes = _expand(fields["Nodes"], budget, at) if fields.get("Nodes") else frozenset()
            indexed.append((index, fields["BlockName"], nodes))
            if "BlockSize" in fields and not layout.block_sizes:
                layout.block_sizes = [whole_number(fields["BlockSize"], f"{at}: BlockSize", low=1, high=2 ** 31)]
        elif "AggregatedBlock" in fields:
            continue
        elif "SwitchName" in fields:
            layout.kind = "tree"
            nodes = _expand(fields["Nodes"], budget, at) if fields.get("Nodes") else frozenset()
            children = _expand(fields["Switches"], budget, at) if fields.get("Switches") else frozenset()
            layout.switches[fields["SwitchName"]] = (nodes, children)
        else:
            raise TopologyError(f"{at}: not a line of scontrol show topology: {clip(line, 120)}")
    layout.blocks = [(block, nodes) for _index, block, nodes in sorted(indexed)]
    return layout


def _names(items):
    items = sorted(items, key=hostlist.natural_key)
    shown = ", ".join(items[:MAX_LISTED])
    return shown + (f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")


def _nodes_differ(what, written, loaded):
    def shown(names):
        names = sorted(names, key=hostlist.natural_key)
        return hostlist.compress(names[:50]) + (f" and {len(names) - 50} more" if len(names) > 50 else "")
    parts = []
    if loaded - written:
        parts.append(f"the controller has {shown(loaded - written)} in it, the file does not")
    if written - loaded:
        parts.append(f"the file's {shown(written - loaded)} are not in it on the controller")
    return f"{what}: " + "; ".join(parts)


def _leaf_nodes(switches):
    """A tree's leaf switches and their nodes: Slurm shows every switch with the nodes below it."""
    return {name: nodes for name, (nodes, children) in switches.items() if not children}


def differences(written, loaded):
    """One line per difference between the file's ``Layout`` and the controller's; [] when they match."""
    topology = f"topology {written.name}"
    if written.kind != loaded.kind:
        if loaded.kind == "flat" and written.kind != "flat":
            return [f"{topology}: the controller has no {written.kind} topology loaded under this name "
                    "(not loaded, or loaded as flat)"]
        return [f"{topology}: the file says {written.kind}, the controller has {loaded.kind}"]
    found = []
    if written.kind == "block":
        names_written = [name for name, _nodes in written.blocks]
        names_loaded = [name for name, _nodes in loaded.blocks]
        only_file = set(names_written) - set(names_loaded)
        only_controller = set(names_loaded) - set(names_written)
        if only_file:
            found.append(f"{topology}: blocks {_names(only_file)} of the file are not loaded")
        if only_controller:
            found.append(f"{topology}: the controller has blocks {_names(only_controller)} that the file does not")
        common = [name for name in names_written if name in set(names_loaded)]
        if [name for name in names_loaded if name in set(names_written)] != common:
            found.append(f"{topology}: the controller holds the blocks in another order than the file "
                         "(the positions decide which blocks aggregate)")
        loaded_nodes = dict(loaded.blocks)
        for name, nodes in written.blocks:
            if name in loaded_nodes and loaded_nodes[name] != nodes:
                found.append(_nodes_differ(f"{topology}, block {name}", nodes, loaded_nodes[name]))
    elif written.kind == "tree":
        only_file = set(written.switches) - set(loaded.switches)
        only_controller = set(loaded.switches) - set(written.switches)
        if only_file:
            found.append(f"{topology}: switches {_names(only_file)} of the file are not loaded")
        if only_controller:
            found.append(f"{topology}: the controller has switches {_names(only_controller)} that the file does not")
        written_leaves, loaded_leaves = _leaf_nodes(written.switches), _leaf_nodes(loaded.switches)
        for name in sorted(set(written.switches) & set(loaded.switches), key=hostlist.natural_key):
            if written.switches[name][1] != loaded.switches[name][1]:
                found.append(f"{topology}, switch {name}: the file links it to switches "
                             f"{hostlist.compress(sorted(written.switches[name][1])) or 'none'}, the controller to "
                             f"{hostlist.compress(sorted(loaded.switches[name][1])) or 'none'}")
            elif name in written_leaves and written_leaves[name] != loaded_leaves.get(name, frozenset()):
                found.append(_nodes_differ(f"{topology}, switch {name}", written_leaves[name],
                                           loaded_leaves.get(name, frozenset())))
    return found


def groups(layout, size):
    """The aligned groups of blocks a job of ``size`` nodes at ``--segment=size`` must fit in: each a list
    of block names. Slurm aggregates blocks by position, ``size // base`` at a time."""
    base = layout.block_sizes[0] if layout.block_sizes else size
    width = max(size // base, 1)
    names = [name for name, _nodes in layout.blocks]
    return [names[start:start + width] for start in range(0, len(names), width)]


def probe_plan(layout, idle):
    """[(size, group or None)]: for each block size of a block ``layout``, a group with ``size`` idle nodes
    (``idle``: the set of idle nodes), or None when no group has that many (no question to ask)."""
    if layout.kind != "block":
        return []
    nodes_of = dict(layout.blocks)
    plan = []
    for size in layout.block_sizes or ([len(layout.blocks[0][1])] if layout.blocks else []):
        fitting = None
        for group in groups(layout, size):
            if len(frozenset().union(*(nodes_of[name] for name in group)) & idle) >= size:
                fitting = group
                break
        plan.append((size, fitting))
    return plan


def probe_problem(layout, size, answer):
    """None when the nodes of ``answer`` (a set) fit in one aligned group of ``size``; else the line."""
    nodes_of = dict(layout.blocks)
    for group in groups(layout, size):
        if answer <= frozenset().union(*(nodes_of[name] for name in group)):
            return None
    spanned = sorted({name for name, nodes in layout.blocks if nodes & answer}, key=hostlist.natural_key)
    return (f"topology {layout.name}: a {size}-node job with --segment={size} was answered across blocks "
            f"{_names(spanned)} (nodes {hostlist.compress(sorted(answer, key=hostlist.natural_key))}); "
            "the map says it fits in one")
