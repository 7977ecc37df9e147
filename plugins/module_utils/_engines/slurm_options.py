# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of the Slurm engines: each concern's argument spec, stated once, and the dataclass it builds.

A module merges these specs into its AnsibleModule (``spec.module_kwargs()``) and hands the engine
``SPEC.build(module.params)``; a test or any caller outside Ansible builds the same dataclass through
the same validator, so a default is never repeated in an engine. Pure data: importing this module
loads no engine (every module that takes a provider imports it through ``_orchestration/common.py``).
"""

from __future__ import annotations

import dataclasses

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec

BLOCK_NAMING = ("domain", "topograph")


@dataclasses.dataclass(frozen=True)
class LayoutOptions:
    """The block layout (``LAYOUT``): what segment_capacity plans with, and the rendering modules too."""

    block_sizes: list | None
    domain_order: list | None


@dataclasses.dataclass(frozen=True)
class RenderOptions(LayoutOptions):
    """The rendering options of slurm_topology and slinky_topology (``RENDER``)."""

    plugin: str | None  # None: topology/tree, unless topologies (topology.yaml) is set
    topologies: dict | None
    block_naming: str
    block_name_pattern: dict | None
    no_topology_switch: str


# The block layout (doc fragment render.LAYOUT): slurm_topology, slinky_topology, segment_capacity.
LAYOUT = ArgumentSpec({
    "block_sizes": {"type": "list", "elements": "int"},
    "domain_order": {"type": "list", "elements": "str"},
}, fragments=["render.LAYOUT"], options_class=LayoutOptions)

# The rendering options (doc fragments render and render.LAYOUT), with their one constraint.
RENDER = ArgumentSpec({
    "plugin": {"type": "str", "choices": ["topology/tree", "topology/block"]},
    "topologies": {"type": "dict"},
    "block_naming": {"type": "str", "choices": list(BLOCK_NAMING), "default": "domain"},
    "block_name_pattern": {"type": "dict", "options": {
        "regexp": {"type": "str", "required": True},
        "format": {"type": "str", "required": True},
    }},
    "no_topology_switch": {"type": "str", "default": "no-topology"},
}, fragments=["render"], mutually_exclusive=[("plugin", "topologies")]).merge(LAYOUT)
RENDER.options_class = RenderOptions
