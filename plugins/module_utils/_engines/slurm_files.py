# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm files from the rendering options of slurm_topology and slinky_topology: options -> file content.

Pure, like every engine: partitions are resolved through a callable the caller provides.
"""

from __future__ import annotations

import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, check_known_keys, clip

DEFAULT_HEADER = "# Managed by Ansible (aifactory.topology.slurm_topology). Local edits are overwritten."
TOPOLOGY_KEYS = {"plugin", "block_sizes", "nodes", "partition", "cluster_default"}


def block_options(options):
    """The checked ``slurm.BlockOptions`` of ``options`` (``slurm_options.RenderOptions`` or ``LayoutOptions``)."""
    return slurm.BlockOptions(options.block_sizes, options.domain_order, getattr(options, "block_naming", "domain"),
                              getattr(options, "block_name_pattern", None))


def build_specs(topologies, resolve_partition):
    """TopologySpec objects from the ``topologies`` option; partitions resolved through scontrol."""
    if not isinstance(topologies, dict) or not topologies:
        raise TopologyError("topologies must be a mapping of topology name to its settings")
    specs = []
    for name, settings in topologies.items():
        where = f"topologies.{name}"
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", str(name)):
            raise TopologyError(f"{where}: topology names may use letters, digits, '_', '.' and '-' only")
        settings = settings or {}
        if not isinstance(settings, dict):
            raise TopologyError(f"{where} must be a mapping")
        check_known_keys(settings, TOPOLOGY_KEYS, where)
        if settings.get("nodes") and settings.get("partition"):
            raise TopologyError(f"{where}: set nodes or partition, not both")
        nodes = None
        if settings.get("nodes"):
            try:
                nodes = hostlist.expand(settings["nodes"])
            except hostlist.HostlistError as exc:
                raise TopologyError(f"{where}.nodes: {exc}") from None
        elif settings.get("partition"):
            nodes = resolve_partition(str(settings["partition"]))
        cluster_default = settings.get("cluster_default", False)
        if not isinstance(cluster_default, bool):
            raise TopologyError(f"{where}.cluster_default must be true or false")
        specs.append(slurm.TopologySpec(str(name), settings.get("plugin") or "", nodes,
                                        settings.get("block_sizes"), cluster_default))
    return specs


def parse_partition_nodes(partition, scontrol_output):
    """Node names from ``scontrol show partition -o <p>``; None when the partition holds ALL nodes."""
    match = re.search(r"(?:^|\s)Nodes=(\S*)", scontrol_output)
    if match is None:
        raise TopologyError(f"partition {partition!r}: scontrol printed no Nodes= field")
    value = match.group(1)
    if value in ("", "NONE", "(null)"):
        return []
    if value == "ALL":
        return None
    try:
        return hostlist.expand(value)
    except hostlist.HostlistError as exc:
        raise TopologyError(f"partition {partition!r}: scontrol printed Nodes={value}, which is not a hostlist: "
                            f"{exc}") from None


def render(topology, options, resolve_partition, warn, skeleton=False):
    """(content without header, summary) for ``options`` (``slurm_options.RenderOptions``); ``skeleton`` leaves nodes out (Slinky)."""
    block_opts = block_options(options)
    if options.topologies is not None:
        if not options.topologies:
            raise TopologyError("topologies is empty: name at least one topology for topology.yaml, or leave "
                                "topologies out (and set plugin) for topology.conf")
        if options.plugin:
            raise TopologyError("set plugin (topology.conf) or topologies (topology.yaml), not both")
        specs = build_specs(options.topologies, resolve_partition)
        content = slurm.render_topology_yaml(topology, specs, block_opts, skeleton=skeleton, warn=warn)
        summary = {"format": "topology.yaml", "topologies": sorted(spec.name for spec in specs)}
    elif options.plugin == "topology/block":
        blocks, sizes = slurm.plan_blocks(topology, block_opts, warn=warn)
        content = slurm.format_block_conf(blocks, sizes, skeleton=skeleton)
        summary = {
            "format": "topology.conf", "plugin": "topology/block",
            "blocks": len(blocks),
            "placeholders": [block.name for block in blocks if not block.nodes],
        }
    else:
        if options.block_sizes:
            raise TopologyError("block_sizes applies to plugin topology/block only")
        content = slurm.render_tree_conf(topology, options.no_topology_switch, skeleton=skeleton, warn=warn)
        summary = {"format": "topology.conf", "plugin": "topology/tree"}
    summary.update(topology.summary())
    return content, summary


def with_header(content, header):
    """``header`` above ``content``; it is written verbatim, so every line must be a ``#`` comment."""
    if not header:
        return content
    for number, line in enumerate(header.split("\n"), start=1):
        if not line.startswith("#"):
            raise TopologyError(f"header line {number} must be a comment starting with '#' (it is written "
                                f"verbatim into the file), got {clip(line)}")
        if any(not char.isprintable() and char != "\t" for char in line):
            raise TopologyError(f"header line {number} contains a control character: {clip(line)}")
    return f"{header}\n{content}"
