# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The topology label keys and node selection, shared by k8s_node_labels and k8s_scheduler_topology.

The argument spec is _orchestration.k8s_module.LABEL_KEYS, so both modules read the same keys the same way.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  node_selector:
    description:
      - Only nodes with all these labels are listed (equality match, as Topograph's C(nodeSelector)).
      - Nodes of the topology outside the selection are left alone, with a warning.
    type: dict
  fabric_labels:
    description:
      - Label keys for the fabric tiers, tier 0 (nearest the node) first, replacing C(fabric.topograph.run/tier-N).
      - Tiers beyond the list get no label.
    type: list
    elements: str
  accelerator_label:
    description: The label key of the accelerator (NVLink) domain.
    type: str
    default: accelerator.topograph.run/domain
  no_topology_value:
    description:
      - The tier-0 value for nodes of the topology without any switch. By default they get no fabric label.
      - V(no-topology) reproduces Topograph, which puts such nodes under a pseudo switch of that name.
    type: str
"""
