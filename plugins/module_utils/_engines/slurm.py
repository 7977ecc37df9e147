# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm engines: topology.conf (topology/tree, topology/block) and topology.yaml.

Pure functions of the model; they return text and report warnings through ``warn``.
Block rules: docs/slurm-facts.md; Topograph's layout and where we differ: docs/topograph-differences.md.
"""

from __future__ import annotations

import math
import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._engines.slurm_options import BLOCK_NAMING
from ansible_collections.aifactory.topology.plugins.module_utils._engines import tree as tree_walk
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, clip
from ansible_collections.aifactory.topology.plugins.module_utils._base.patterns import compile_search_pattern
from ansible_collections.aifactory.topology.plugins.module_utils._model import check_name

PLUGINS = ("topology/tree", "topology/block", "topology/flat")
MAX_BLOCK_LEVEL = 15  # Slurm: each size is base * 2^k with k <= 15
_UNSAFE_BLOCK_CHARS = re.compile(r"[^A-Za-z0-9._:@+=-]")


def _ignore(message):
    return None


# -- block sizes ---------------------------------------------------------------------------

def validate_block_sizes(sizes, where="block_sizes"):
    """Slurm's rule: first value is the base B; each next one is B * 2^k (k <= 15), ascending.

    Slurm before 26.05.3 silently accepts bad sizes in topology.yaml, so we check ourselves.
    """
    if not isinstance(sizes, (list, tuple)) or not sizes:
        raise TopologyError(f"{where} must be a non-empty list of positive integers")
    values = []
    for index, size in enumerate(sizes):
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise TopologyError(f"{where}[{index}] must be a positive integer, got {size!r}")
        values.append(size)
    base = values[0]
    previous = base
    for index, size in enumerate(values[1:], start=1):
        ratio, remainder = divmod(size, base)
        if remainder or ratio & (ratio - 1):
            raise TopologyError(
                f"{where}[{index}] = {size} must be the base size {base} times a power of two"
            )
        if ratio.bit_length() - 1 > MAX_BLOCK_LEVEL:
            raise TopologyError(f"{where}[{index}] = {size} is more than {base} * 2^{MAX_BLOCK_LEVEL}")
        if size <= previous:
            raise TopologyError(f"{where} must be ascending: {where}[{index}] = {size} follows {previous}")
        previous = size
    return values


# -- blocks --------------------------------------------------------------------------------

class Block:
    __slots__ = ("name", "label", "nodes")

    def __init__(self, name, label, nodes):
        self.name = name      # BlockName
        self.label = label    # domain (or sub-domain) the block stands for; None for padding
        self.nodes = nodes    # node names in block order


class BlockOptions:
    """What shapes the block layout; shared by topology.conf and topology.yaml."""

    def __init__(self, block_sizes=None, domain_order=None, naming="domain", name_pattern=None):
        if naming not in BLOCK_NAMING:
            raise TopologyError(f"block_naming must be one of {', '.join(BLOCK_NAMING)}, got {naming!r}")
        if naming == "topograph" and domain_order:
            raise TopologyError("domain_order needs block_naming=domain (Topograph's layout is alphabetical)")
        self.block_sizes = validate_block_sizes(block_sizes) if block_sizes else None
        if domain_order is not None and not isinstance(domain_order, (list, tuple)):
            raise TopologyError(f"domain_order must be a list of domain names, got {clip(domain_order)}")
        for index, domain in enumerate(domain_order or ()):
            check_name(domain, f"domain_order[{index}]")
        self.domain_order = list(domain_order) if domain_order else None
        self.naming = naming
        self.name_pattern = _compile_pattern(name_pattern) if name_pattern else None

    def with_block_sizes(self, block_sizes):
        """A copy with other (already validated) block sizes, or this one when None."""
        if not block_sizes:
            return self
        copy = BlockOptions(naming=self.naming)
        copy.block_sizes, copy.domain_order, copy.name_pattern = block_sizes, self.domain_order, self.name_pattern
        return copy


def _compile_pattern(pattern):
    if not isinstance(pattern, dict) or set(pattern) != {"regexp", "format"}:
        raise TopologyError("block_name_pattern needs exactly the keys regexp and format")
    for key in ("regexp", "format"):
        if not isinstance(pattern[key], str):
            raise TopologyError(f"block_name_pattern.{key} must be a string, got {clip(pattern[key])}")
    regexp = compile_search_pattern(pattern["regexp"], "block_name_pattern.regexp")
    # Topograph uses Go's Expand syntax: $1, ${1}, ${name}.
    template = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: "\\g<" + (m.group(1) or m.group(2)) + ">",
                      pattern["format"].replace("\\", "\\\\"))
    return regexp, template


def _apply_name_pattern(blocks, pattern):
    if pattern is None:
        return
    regexp, template = pattern
    used = {}
    for block in blocks:
        if not block.nodes:
            continue
        names = set()
        for node in block.nodes:
            match = regexp.search(node)
            if match is None:
                raise TopologyError(
                    f"block {block.name} (domain {block.label}): node {node!r} does not match block_name_pattern.regexp"
                )
            try:
                names.add(match.expand(template))
            except (re.error, IndexError) as exc:
                raise TopologyError(f"block_name_pattern.format {clip(template)} does not fit the regexp: {exc}") from None
        if len(names) != 1 or "" in names:
            shown = ", ".join(clip(name) for name in sorted(names)[:5]) + (", ..." if len(names) > 5 else "")
            raise TopologyError(
                f"block {block.name} (domain {block.label}): block_name_pattern gives {len(names)} names ({shown}); "
                "every node of a block must give the same non-empty name"
            )
        name = names.pop()
        # The name is written verbatim as BlockName=: it must be a name Slurm reads back as one.
        check_name(name, f"block_name_pattern result for block {block.name} (domain {block.label})")
        if _UNSAFE_BLOCK_CHARS.search(name):
            raise TopologyError(f"block_name_pattern gives block {block.name} the name {clip(name)}; block names may "
                                "use letters, digits and . _ : @ + = - only")
        if name in used:
            raise TopologyError(f"block_name_pattern gives {name!r} to blocks {used[name]} and {block.name}")
        used[name] = block.name
        block.name = name


def sanitize_block_name(domain):
    """Slurm rebuilds aggregated block names with hostlist code: no ',', '[', ']' or spaces."""
    return _UNSAFE_BLOCK_CHARS.sub("_", domain)


def _domain_blocks(topology, options, node_filter, warn):
    """Blocks named after their domain, in physical order, with placeholders in place."""
    domains = topology.domains()
    order = options.domain_order if options.domain_order is not None else topology.domain_order
    seen = set()
    for index, domain in enumerate(order):
        if domain in seen:
            raise TopologyError(f"domain_order[{index}]: domain {domain!r} is listed twice")
        seen.add(domain)
    unlisted = sorted((d for d in domains if d not in seen), key=hostlist.natural_key)
    if order and unlisted:
        warn(f"domains not in domain_order are appended after it, sorted: {', '.join(unlisted)}")
    blocks, names = [], {}
    for domain in list(order) + unlisted:
        members = domains.get(domain, [])
        if node_filter is not None:
            members = [node for node in members if node in node_filter]
        name = sanitize_block_name(domain)
        if name in names:
            raise TopologyError(f"domains {names[name]!r} and {domain!r} both give block name {name!r}")
        names[name] = domain
        blocks.append(Block(name, domain, sorted(members, key=hostlist.natural_key)))
    return blocks


def _block_sizes_for(blocks, options, warn):
    sizes = options.block_sizes
    largest = max((len(block.nodes) for block in blocks), default=0)
    if largest == 0:
        raise TopologyError("topology/block needs nodes with an accelerator domain; none were found")
    if sizes is None:
        sizes = [largest]
    base = sizes[0]
    oversized = [block.name for block in blocks if len(block.nodes) > base]
    if oversized:
        warn(f"blocks larger than the base block size {base}: {', '.join(oversized)}; "
             "Slurm sizes them as ceil(nodes / base) base blocks")
    return sizes


def _warn_domainless(topology, node_filter, warn):
    missing = [n.name for n in topology.nodes.values()
               if n.domain is None and (node_filter is None or n.name in node_filter)]
    if missing:
        warn(f"{len(missing)} nodes have no accelerator domain and are in no block: {hostlist.compress(missing)}")


# -- Topograph's block layout (compatibility) ------------------------------------------------

def _topograph_blocks(topology, options, node_filter, prefix_width, warn):
    """Topograph's layout (pkg/translate/block*.go): alphabetical, positional ids, complemented."""
    hosts_by_domain = {}
    sub_of = {}
    for node in topology.nodes.values():
        if node.domain is None or (node_filter is not None and node.name not in node_filter):
            continue
        hosts_by_domain.setdefault(node.domain, []).append(node.name)
        if node.sub_domain is not None:
            sub_of[node.name] = node.sub_domain
    if not hosts_by_domain:
        raise TopologyError("block topology contains no accelerator domains")
    for hosts in hosts_by_domain.values():
        hosts.sort()  # lexical, as Topograph does

    def block_id(index):
        return f"block{index:0{prefix_width}d}" if prefix_width else f"block{index}"

    if options.block_sizes is None and not sub_of:
        # Path A: one block per domain, ids alphabetical, placed in tree order.
        ids = {domain: block_id(i + 1) for i, domain in enumerate(sorted(hosts_by_domain))}
        order = []
        domain_of = {n.name: n.domain for n in topology.nodes.values() if n.domain in hosts_by_domain}
        for node in tree_walk.node_order(tree_walk.walk(topology, node_filter=node_filter)):
            domain = domain_of.get(node)
            if domain is not None and domain not in order:
                order.append(domain)
        order += [d for d in sorted(hosts_by_domain) if d not in order]
        blocks = [Block(ids[d], d, hosts_by_domain[d]) for d in order]
        smallest = min(len(b.nodes) for b in blocks)
        levels = int(math.log2(len(blocks)))
        return blocks, [smallest << level for level in range(levels + 1)]

    sizes = options.block_sizes
    if sizes is None:
        largest_sub = max(_count_by(sub_of.values()).values())
        largest_domain = max(len(h) for h in hosts_by_domain.values())
        aggregate = largest_sub
        while aggregate < largest_domain:
            aggregate *= 2
        sizes = [largest_sub] if aggregate == largest_sub else [largest_sub, aggregate]
    base, last = sizes[0], sizes[-1]
    pieces = []  # (label, hosts) per base block, None label for empty
    capacities = []
    dual = bool(sub_of)
    largest_domain = max(len(h) for h in hosts_by_domain.values())
    for domain in sorted(hosts_by_domain):
        hosts = hosts_by_domain[domain]
        if dual:
            subs = {}
            for host in hosts:
                subs.setdefault(sub_of.get(host, domain), []).append(host)
            filled = []
            for sub in sorted(subs):
                filled += _cut(sub, subs[sub], base)
            if any(host in sub_of for host in hosts) or largest_domain <= last:
                slot = _slot_capacity(min(last, largest_domain), base) // base
                if len(filled) > slot:
                    slot = -(-len(filled) // slot) * slot
            else:
                slot = len(filled)
        else:
            filled = _cut(domain, hosts, base)
            slot = len(filled) if len(sizes) == 1 else _slot_capacity(largest_domain, base) // base
        pieces += filled + [(None, [])] * (slot - len(filled))
        capacities.append(slot * base)
    total = sum(capacities)
    step = math.lcm(math.gcd(*capacities), last)
    padding = (-(-total // step) * step - total) // base
    pieces += [(None, [])] * padding
    blocks = [Block(block_id(i + 1), label, hosts) for i, (label, hosts) in enumerate(pieces)]
    return blocks, sizes


def _count_by(values):
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def _cut(label, hosts, base):
    return [(label, hosts[i:i + base]) for i in range(0, len(hosts), base)]


def _slot_capacity(size, base):
    """The smallest base * 2^j that holds ``size`` nodes."""
    capacity = base
    while capacity < size:
        capacity *= 2
    return capacity


# -- topology.conf ---------------------------------------------------------------------------

def _checked(records):
    for record in records:
        if record.children and record.nodes:
            raise TopologyError(
                f"switch {record.id!r} has both child switches and nodes; Slurm rejects that "
                "(move the nodes under a leaf switch of their own)"
            )
    return records


def render_tree_conf(topology, no_topology_switch=tree_walk.NO_TOPOLOGY, skeleton=False, warn=_ignore):
    if no_topology_switch:
        check_name(no_topology_switch, "no_topology_switch")
    display = {sid: (sw.name or sid) for sid, sw in topology.switches.items()}
    lines = []
    for record in _checked(tree_walk.walk(topology, no_topology_switch)):
        # Topograph prints the display name and keeps the raw id in a comment.
        name = record.name or record.id
        comment = [f"# {name}={record.id}"] if record.name else []
        if record.children:
            lines += comment + [f"SwitchName={name} Switches={hostlist.compress(display[c] for c in record.children)}"]
        if record.nodes:
            nodes = "" if skeleton else f" Nodes={hostlist.compress(record.nodes)}"
            lines += comment + [f"SwitchName={name}{nodes}"]
    if not no_topology_switch:
        orphans = [n.name for n in topology.nodes.values() if n.switch is None]
        if orphans:
            warn(f"{len(orphans)} nodes have no switch and are left out of the tree: {hostlist.compress(orphans)}")
    return "\n".join(lines) + "\n"


def plan_blocks(topology, options, node_filter=None, prefix_width=3, warn=_ignore):
    """(blocks, block_sizes) for the whole cluster or for ``node_filter``'s nodes."""
    if options.naming == "topograph":
        blocks, sizes = _topograph_blocks(topology, options, node_filter, prefix_width, warn)
    else:
        blocks = _domain_blocks(topology, options, node_filter, warn)
        sizes = _block_sizes_for(blocks, options, warn)
    _warn_domainless(topology, node_filter, warn)
    _apply_name_pattern(blocks, options.name_pattern)
    return blocks, sizes


def render_block_conf(topology, options, skeleton=False, warn=_ignore):
    return format_block_conf(*plan_blocks(topology, options, warn=warn), skeleton=skeleton)


def format_block_conf(blocks, sizes, skeleton=False):
    lines = []
    for block in blocks:
        if block.label is not None and block.label != block.name and block.nodes:
            lines.append(f"# {block.name}={block.label}")
        if block.nodes and not skeleton:
            lines.append(f"BlockName={block.name} Nodes={hostlist.compress(block.nodes)}")
        else:
            lines.append(f"BlockName={block.name}")
    lines.append("BlockSizes=" + ",".join(str(size) for size in sizes))
    return "\n".join(lines) + "\n"


# -- topology.yaml ---------------------------------------------------------------------------

class TopologySpec:
    """One entry of topology.yaml after partition resolution."""

    def __init__(self, name, plugin, nodes=None, block_sizes=None, cluster_default=False):
        if plugin not in PLUGINS:
            raise TopologyError(f"topologies.{name}.plugin must be one of {', '.join(PLUGINS)}, got {plugin!r}")
        if block_sizes and plugin != "topology/block":
            raise TopologyError(f"topologies.{name}.block_sizes only applies to plugin topology/block")
        self.name = name
        self.plugin = plugin
        self.nodes = nodes  # None = every node of the model
        self.block_sizes = validate_block_sizes(block_sizes, f"topologies.{name}.block_sizes") if block_sizes else None
        self.cluster_default = bool(cluster_default)


_YAML_PLAIN = re.compile(r"^[A-Za-z_./][A-Za-z0-9_.\-/\[\],:@+=]*$")
_YAML_SPECIAL = re.compile(
    r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL|~"
    r"|[-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


def yaml_scalar(value):
    """A string as a YAML scalar that loads back as the same string (quoted when needed).

    In double quotes every character outside printable ASCII is escaped, so no line break
    (including U+0085, U+2028) is ever folded and no control character is written raw.
    """
    if _YAML_PLAIN.fullmatch(value) and not _YAML_SPECIAL.fullmatch(value) and ": " not in value and not value.endswith(":"):
        return value
    return '"' + "".join(_yaml_escape(char) for char in value) + '"'


def _yaml_escape(char):
    if char == "\\" or char == '"':
        return "\\" + char
    if " " <= char <= "~":
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def check_topology_specs(specs):
    if not specs:
        raise TopologyError("topologies must name at least one topology")
    defaults = [spec.name for spec in specs if spec.cluster_default]
    if len(defaults) != 1:
        raise TopologyError(
            "exactly one topology must set cluster_default: true, found "
            + (", ".join(defaults) if defaults else "none")
        )


def render_topology_yaml(topology, specs, options, skeleton=False, warn=_ignore):
    """topology.yaml text: one entry per spec, sorted by name, in Topograph's layout."""
    check_topology_specs(specs)
    out = []
    for spec in sorted(specs, key=lambda s: s.name):
        node_filter = None
        if spec.nodes is not None:
            node_filter = {name for name in spec.nodes if name in topology.nodes}
            unknown = [name for name in spec.nodes if name not in topology.nodes]
            if unknown:
                warn(f"topology {spec.name}: {len(unknown)} nodes are not in the model and are left out: "
                     f"{hostlist.compress(unknown)}")
        out.append(f"- topology: {yaml_scalar(spec.name)}")
        out.append(f"  cluster_default: {'true' if spec.cluster_default else 'false'}")
        if spec.plugin != "topology/flat" and node_filter is not None and not node_filter:
            warn(f"topology {spec.name}: none of its nodes are in the model; written as flat")
            out.append("  flat: true")
        elif spec.plugin == "topology/flat":
            out.append("  flat: true")
        elif spec.plugin == "topology/tree":
            out += _yaml_tree(topology, node_filter, skeleton)
        else:
            out += _yaml_block(topology, options.with_block_sizes(spec.block_sizes), node_filter, skeleton, warn,
                               spec.name)
    return "\n".join(out) + "\n"


def _yaml_tree(topology, node_filter, skeleton):
    # topology.yaml names switches by raw id, as Topograph does.
    lines = ["  tree:", "    switches:"]
    for record in _checked(tree_walk.walk(topology, node_filter=node_filter)):
        lines.append(f"        - switch: {yaml_scalar(record.id)}")
        if record.children:
            lines.append(f"          children: {yaml_scalar(hostlist.compress(record.children))}")
        if record.nodes and not skeleton:
            lines.append(f"          nodes: {yaml_scalar(hostlist.compress(record.nodes))}")
    return lines


def _yaml_block(topology, options, node_filter, skeleton, warn, name):
    def tagged(message):
        warn(f"topology {name}: {message}")

    blocks, sizes = plan_blocks(topology, options, node_filter, prefix_width=0, warn=tagged)
    lines = ["  block:", "    block_sizes:"]
    lines += [f"        - {size}" for size in sizes]
    lines.append("    blocks:")
    for block in blocks:
        lines.append(f"        - block: {yaml_scalar(block.name)}")
        if block.nodes and not skeleton:
            lines.append(f"          nodes: {yaml_scalar(hostlist.compress(block.nodes))}")
    return lines
