# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slinky (Slurm on Kubernetes): the ConfigMap key content, its annotations, and per-node specs.

The content is the Slurm topology text the slurm engines render (tree, block, or one topology per
partition), without a header, as Topograph's slinky engine writes it (docs/kubernetes.md). With
dynamic nodes, each node gets the ``topology.slinky.slurm.net/spec`` annotation (docs/kubernetes.md).
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm, slurm_files, slurm_options
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError

SPEC_ANNOTATION = "topology.slinky.slurm.net/spec"
ANNOTATION_ENGINE = "topograph.run/engine"
ANNOTATION_MANAGED_BY = "topograph.run/topology-managed-by"
ANNOTATION_LAST_UPDATED = "topograph.run/last-updated"
ANNOTATION_NAMESPACE = "topograph.run/slurm-namespace"
ANNOTATION_PLUGIN = "topograph.run/plugin"
ANNOTATION_BLOCK_SIZES = "topograph.run/block-sizes"
DEFAULT_SCOPE = "default"


def _no_partitions(partition):
    raise TopologyError(f"partition {partition!r}: slinky_topology cannot run scontrol; list the partition's "
                        "nodes in the topology's nodes instead")


def render(topology, params, warn, skeleton=False):
    """(ConfigMap key content, summary): the slurm engines' text for these options, without header."""
    return slurm_files.render(topology, slurm_options.RENDER.build(params), _no_partitions, warn, skeleton=skeleton)


def configmap_annotations(namespace, plugin=None, block_sizes=None, last_updated=None):
    """Topograph's ConfigMap annotations; ``last_updated`` is an RFC 3339 time."""
    annotations = {
        ANNOTATION_ENGINE: "slinky",
        ANNOTATION_MANAGED_BY: "topograph",
        ANNOTATION_NAMESPACE: namespace,
    }
    if last_updated:
        annotations[ANNOTATION_LAST_UPDATED] = last_updated
    if plugin:
        annotations[ANNOTATION_PLUGIN] = plugin
    if block_sizes:
        annotations[ANNOTATION_BLOCK_SIZES] = ",".join(str(size) for size in block_sizes)
    return annotations


def _block_names(topology, options, node_filter, prefix_width):
    blocks = slurm.plan_blocks(topology, options, node_filter, prefix_width=prefix_width)[0]
    return {node: block.name for block in blocks for node in block.nodes}


def _tree_path(topology, node):
    switch = topology.nodes[node].switch
    return ":".join(reversed(topology.path(switch))) if switch is not None else ""


def dynamic_specs(topology, params):
    """Node -> ``topology.slinky.slurm.net/spec`` value; nodes with an empty spec are left out.

    Cluster-wide tree: ``default:<root-first switch ids>``; block: ``default:<block name>``;
    per partition: ``<topology>:<path or block>`` for each topology holding the node, by name.
    """
    render_options = slurm_options.RENDER.build(params)
    options = slurm_files.block_options(render_options)
    topologies = render_options.topologies
    parts = {name: [] for name in topology.nodes}
    if topologies:
        for spec in sorted(slurm_files.build_specs(topologies, _no_partitions), key=lambda s: s.name):
            members = set(topology.nodes) if spec.nodes is None else {n for n in spec.nodes if n in topology.nodes}
            if spec.plugin == "topology/tree":
                for node in members:
                    path = _tree_path(topology, node)
                    if path:
                        parts[node].append(f"{spec.name}:{path}")
            elif spec.plugin == "topology/block" and members:
                names = _block_names(topology, options.with_block_sizes(spec.block_sizes),
                                     None if spec.nodes is None else members, 0)
                for node, block in names.items():
                    parts[node].append(f"{spec.name}:{block}")
    elif render_options.plugin == "topology/block":
        for node, block in _block_names(topology, options, None, 3).items():
            parts[node].append(f"{DEFAULT_SCOPE}:{block}")
    else:
        for node in topology.nodes:
            path = _tree_path(topology, node)
            if path:
                parts[node].append(f"{DEFAULT_SCOPE}:{path}")
    return {node: ",".join(items) for node, items in parts.items() if items}
