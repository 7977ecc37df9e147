#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: segment_capacity
short_description: What jobs a Slurm topology/block cluster can take now, per --segment size
version_added: 0.2.0
description:
  - Lays out the blocks exactly as M(aifactory.topology.slurm_topology) writes them for C(topology/block)
    (O(block_sizes), O(domain_order); empty placeholder blocks count as empty), reads the node states,
    and computes with Slurm 26.05's placement rules for whole-node jobs
    the largest C(sbatch -N) Slurm accepts with each C(--segment) size, the job sizes it accepts without
    C(--segment), and the expected usable share of the cluster when nodes fail at a rate λ.
  - Node states come from C(scontrol show nodes --json) (O(scontrol_path)) or, for what-if planning,
    from O(node_states). Nodes of the topology that Slurm does not list are counted as down, with a warning;
    so are nodes whose state in C(scontrol)'s output has a word the collection does not know (the warning names it).
  - The rules it follows are written out in docs/segment-capacity.md of the collection. The filter
    P(aifactory.topology.segment_report_html#filter) turns the result into a self-contained HTML report.
  - Read-only; it never changes anything.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.provider
  - aifactory.topology.provider.MODEL
  - aifactory.topology.attributes
  - aifactory.topology.attributes.INFO_MODULE
  - aifactory.topology.render.LAYOUT
  - aifactory.topology.scontrol
options:
  node_states:
    description:
      - Node name to Slurm state (V(idle), V(allocated), V(mixed), V(drain), V(drained), V(down), V(fail),
        V(future), combinations such as V(idle+drain), sinfo suffixes such as V(down*)), for what-if planning.
      - Nodes not listed are idle. A node that is not in the topology is an error.
      - When set, C(scontrol) is not run.
    type: dict
  segment_sizes:
    description:
      - The C(--segment) sizes to evaluate, each between 1 and the base block size.
      - Defaults to every size from 1 to the base block size.
    type: list
    elements: int
  unavailability_rates:
    description:
      - Per-node unavailability rates λ (0 to 1) at which the expected usable share is computed.
      - The observed rate of the cluster is always computed as well.
    type: list
    elements: float
    default: [0.0, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.045, 0.05, 0.055, 0.06, 0.065, 0.07,
              0.075, 0.08, 0.085, 0.09, 0.095, 0.1]
  min_share:
    description: The advice lists the segment sizes whose expected usable share at the observed λ is at least this.
    type: float
    default: 0.9
notes:
  - Idle nodes (powered-down cloud nodes included) are usable now; allocated, mixed and completing nodes
    become usable when their jobs end; drained and down (also fail, future, not responding) nodes are not usable.
  - Reservations, partitions, node weights, features and per-node CPU or GRES limits are not modelled.
"""

EXAMPLES = r"""
- name: Segment capacity of the GB200 cluster, states from slurmctld
  aifactory.topology.segment_capacity:
    model: "{{ discovered.topology }}"
    block_sizes: [18, 36, 72, 144]
  register: capacity

- name: What if two trays of rack03 fail?
  aifactory.topology.segment_capacity:
    model: "{{ discovered.topology }}"
    block_sizes: [18, 36, 72]
    node_states:
      gb200-r03-n04: down
      gb200-r03-n11: drain
    segment_sizes: [8, 9, 16, 18]

- name: Write the report on the controller
  ansible.builtin.copy:
    content: "{{ capacity | aifactory.topology.segment_report_html(title='GB200 segment capacity') }}"
    dest: /var/www/reports/segment-capacity.html
    mode: "0644"
  delegate_to: localhost
"""

RETURN = r"""
quarantined:
  description:
    - Nodes left out of the map because their own data was unusable (see C(provider.params.invalid_nodes)), the
      first 1000 (C(summary.quarantined) counts them all where the module returns a summary).
    - Each has C(node) (its name, or null when the name itself is the problem), C(identifier) (the name, or the raw
      value clipped and escaped), C(source), C(reason) and C(kind) (V(invalid) or V(unhealthy)).
  returned: success
  type: list
  elements: dict
  sample: [{"node": null, "identifier": "'gpu-p1-l1-n1,evil'", "source": "infiniband", "kind": "invalid",
            "reason": "ibnetdiscover.gpu01, line 12: HCA 'H-0002c903000e0b72' described ... contains ','"}]
block_sizes:
  description: The block sizes in force, base first.
  returned: success
  type: list
  elements: int
summary:
  description: Totals, for humans and assertions.
  returned: success
  type: dict
  contains:
    nodes:
      description: Nodes in blocks.
      type: int
    idle:
      description: Idle nodes in blocks.
      type: int
    available:
      description: Idle and allocated nodes in blocks (not drained or down).
      type: int
    blocks:
      description: Number of blocks, placeholders included.
      type: int
    placeholders:
      description: Names of the empty placeholder blocks.
      type: list
      elements: str
    quarantined:
      description: Nodes quarantined in this run (all of them; the C(quarantined) list shows the first 1000).
      type: int
    warnings:
      description: The warnings this run emitted (also shown as Ansible warnings).
      type: list
      elements: str
    racks:
      description:
        - The racks the hardware names (nvidia-smi's platform fields, NMX's C(LocationInfo)), one per NVLink domain and
          chassis serial number, the first 1000; only when the topology knows where its trays are.
        - Each has C(rack) (C(<domain> (chassis <serial>))), C(domain), C(chassis_serial_number), C(trays) (its nodes in
          physical order), C(schedulable) (how many are not quarantined), and where they apply C(quarantined) (its
          quarantined nodes), C(expected_trays) and C(missing_trays) (how many trays report nothing).
      type: list
      elements: dict
      returned: when the topology knows where its trays are
      version_added: 0.2.0
state_source:
  description: V(scontrol) or V(node_states).
  returned: success
  type: str
blocks:
  description: One entry per block, in Slurm's order, placeholders included.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: The BlockName.
      type: str
    domain:
      description: The accelerator domain (rack) of the block.
      type: str
    placeholder:
      description: True for an empty placeholder block.
      type: bool
    nodes:
      description: The block's nodes as a hostlist.
      type: str
    node_count:
      description: Number of nodes.
      type: int
    idle:
      description: Idle nodes.
      type: int
    allocated:
      description: Allocated (or mixed, completing) nodes.
      type: int
    drained:
      description: Drained or draining nodes.
      type: int
    down:
      description: Down, failed, future or not responding nodes.
      type: int
    allocated_nodes:
      description: Hostlist of the allocated nodes.
      type: str
    drained_nodes:
      description: Hostlist of the drained nodes.
      type: str
    down_nodes:
      description: Hostlist of the down nodes.
      type: str
segments:
  description: One entry per segment size.
  returned: success
  type: list
  elements: dict
  contains:
    size:
      description: The C(--segment) value.
      type: int
    largest_job_nodes:
      description: The largest C(-N) Slurm accepts now with this segment size, on idle nodes.
      type: int
    largest_job_nodes_available:
      description: The same on available nodes (once running jobs end).
      type: int
    share:
      description: RV(segments[].largest_job_nodes) over RV(summary.nodes).
      type: float
    share_available:
      description: RV(segments[].largest_job_nodes_available) over RV(summary.nodes).
      type: float
expected:
  description: Expected usable share of the nodes per segment size, under independent node failures.
  returned: success
  type: dict
  contains:
    rates:
      description: The λ values.
      type: list
      elements: float
    observed_rate:
      description: Today's λ, drained and down nodes over all nodes in blocks.
      type: float
    sizes:
      description: Per segment size, C(size), C(fractions) (one per rate) and C(at_observed).
      type: list
      elements: dict
advice:
  description: The segment sizes that keep at least O(min_share) at the observed λ.
  returned: success
  type: dict
  contains:
    min_share:
      description: O(min_share).
      type: float
    observed_rate:
      description: Today's λ.
      type: float
    sizes:
      description: The sizes that keep the share.
      type: list
      elements: int
    largest_size:
      description: The largest of them, or null.
      type: int
    text:
      description: One sentence for humans.
      type: str
unsegmented_feasible:
  description: The C(-N) values accepted now without C(--segment), as C([from, to]) ranges (idle nodes).
  returned: success
  type: list
  elements: list
unsegmented_feasible_available:
  description: The same on available nodes.
  returned: success
  type: list
  elements: list
fabric:
  description: The switches above the blocks and each block's switch, for the report's fabric tree.
  returned: success
  type: dict
  contains:
    switches:
      description: C(id), C(name) and C(parent) of each switch.
      type: list
      elements: dict
    block_switch:
      description: Block name to the switch that holds most of its nodes (null for placeholders).
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._engines.segment_capacity import CAPACITY
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import segment_capacity
from ansible_collections.aifactory.topology.plugins.module_utils._base.scontrol import SCONTROL
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import provider_spec


def main():
    spec = provider_spec(model=True).merge(CAPACITY, SCONTROL)
    segment_capacity.run(AnsibleModule(**spec.module_kwargs(), supports_check_mode=True))


if __name__ == "__main__":
    main()
