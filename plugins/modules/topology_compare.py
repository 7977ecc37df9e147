#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: topology_compare
short_description: Compare the designed topology with the discovered one (cabling drift)
version_added: 0.2.0
description:
  - Compares a designed topology (O(expected) or O(expected_file)) with a discovered one (O(provider) or O(model)),
    node by node and link by link, and reports every difference as a finding; it never changes a map.
  - Switches and NVLink domains are matched by what they hold, not by name, so a design may call a leaf
    C(su1-leaf-2) where the fabric names it by its description or GUID, and redundant spines collapsed by the
    discovery are not differences.
  - "Findings: C(node_missing), C(node_quarantined), C(node_unexpected), C(node_unattached), C(node_moved) (under
    another leaf), C(switch_moved) (under another switch), C(switch_missing), C(switch_unexpected), C(domain_moved)
    (a tray in another NVLink domain), C(tray_moved) (another chassis, slot or tray index) and C(rail_crossed)."
  - The rail check needs the switch each HCA of a node is cabled to, which the C(infiniband) provider reports when
    it runs in this task (O(provider)); a compact O(model) does not carry it. In a group of nodes joined through the
    leaves they share, HCA i of most nodes sits on one leaf (rail i's); a node whose HCA i is elsewhere is reported
    with both leaves. A rail with fewer than three nodes, or with no majority, reports nothing.
  - See the collection's docs/verification.md for every finding and how to schedule the comparison.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.provider
  - aifactory.topology.provider.MODEL
  - aifactory.topology.attributes
  - aifactory.topology.attributes.INFO_MODULE
options:
  expected:
    description:
      - The designed topology in the compact form, as M(aifactory.topology.topology_info) returns it (for example
        from the C(inventory) provider).
      - Exactly one of O(expected) and O(expected_file).
    type: dict
  expected_file:
    description:
      - A file holding the designed topology, in the compact form (JSON or YAML) or as an NVIDIA Topograph
        simulation model.
    type: path
  fail_on_mismatch:
    description:
      - Fail the task when there is any finding (the findings are returned either way).
    type: bool
    default: false
  rails:
    description:
      - Check that HCA i of every node of a rail group is on rail i's leaf (where the discovery reports HCAs).
    type: bool
    default: true
  max_findings:
    description:
      - Return at most this many findings; C(summary.cabling_mismatches) counts them all.
    type: int
    default: 1000
notes:
  - Run it once for the cluster, typically with C(run_once) and C(delegate_to=localhost).
  - M(aifactory.topology.topology_metrics) exports C(summary.cabling_mismatches) as
    C(aifactory_topology_cabling_mismatches) when it is given this task's result.
"""

EXAMPLES = r"""
- name: Discover the fabric and compare it with the design
  aifactory.topology.topology_compare:
    expected_file: /etc/topology/design.yaml
    provider:
      name: infiniband
      params:
        ibnetdiscover_files: [/var/lib/topology/ibnetdiscover.out]
  register: cabling
  run_once: true
  delegate_to: localhost

- name: Show what is cabled differently
  ansible.builtin.debug:
    msg: "{{ cabling.findings | map(attribute='message') | list }}"
  run_once: true
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
findings:
  description:
    - Each difference, the first O(max_findings), ordered by kind of check and name.
    - Each has C(kind), C(subject) (a node, a switch, or a node and an HCA), C(expected) and C(observed) (what each
      side says; null where one side has nothing) and C(message).
  returned: success
  type: list
  elements: dict
  sample: [{"kind": "node_moved", "subject": "gpu-07", "expected": "P1-LEAF-2", "observed": "P2-LEAF-1",
            "message": "node gpu-07: the design puts it under P1-LEAF-2; it is cabled to P2-LEAF-1 (with gpu-[08-09])"}]
summary:
  description:
    - C(cabling_mismatches) (every finding, beyond O(max_findings) too), C(counts) (findings per kind),
      C(nodes_expected), C(nodes_observed), C(quarantined) (discovered nodes left out for unusable data),
      C(rails_checked), C(truncated) and C(warnings) (the discovery's).
  returned: success
  type: dict
  sample: {"cabling_mismatches": 1, "counts": {"node_moved": 1}, "nodes_expected": 12, "nodes_observed": 12,
           "quarantined": 0, "rails_checked": true, "truncated": false, "warnings": []}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import topology_compare


def main():
    topology_compare.run(AnsibleModule(**topology_compare.SPEC.module_kwargs(), supports_check_mode=True))


if __name__ == "__main__":
    main()
