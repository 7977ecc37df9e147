#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: topology_metrics
short_description: Write a run's health and freshness as Prometheus metrics for node_exporter's textfile collector
version_added: 0.2.0
description:
  - Writes C(<directory>/aifactory_topology_<target>.prom) atomically (a temporary file in the same directory,
    then a rename), in the Prometheus text format that node_exporter's textfile collector
    (C(--collector.textfile.directory)) reads, formatted by the official Python client C(prometheus-client).
  - Every metric is a gauge with the label C(target) (O(target)); docs/monitoring.md of the collection lists
    them and ships alert rules for them (a stale map, quarantined nodes, a failing refresh).
  - The counts (nodes, blocks, placeholder blocks, quarantined nodes) come from the C(summary) of the registered
    results in O(results) (M(aifactory.topology.slurm_topology), M(aifactory.topology.k8s_node_labels), ...), or
    from O(nodes), O(blocks), O(placeholders), O(quarantined) when set. Quarantined nodes are C(summary.quarantined),
    or the length of the result's C(quarantined) list, else 0.
  - A failed run (O(failed)) keeps the last success time and counts the failures in a row. Its counts are those
    that the results of its tasks that succeeded report (a failed or skipped task reports none), else those of the
    previous file, since the map on disk is still that one.
  - C(changed) reports a change of the map's state (the counts, the failure, the failures in a row), not of
    the timestamps, the duration or the files changed, which differ on every run. Outside check mode the file
    is rewritten on every run all the same, since its freshness is what it is for.
  - The textfile directory may be writable by other users. A symbolic link, FIFO or device at the file is an
    error, never followed. The previous file is read back only when it is one this module wrote (owned by the user
    running the task, one hard link, at most 64 KiB, UTF-8, only this module's lines for O(target)); any other is
    a warning, is not shown in the diff, and is replaced (the last success time and the counts start again).
  - Every count, given or from O(results), must be a whole number from 0 to 2**53.
  - Needs the Python package C(prometheus-client) on the host that writes the file.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: partial
    details:
      - The file is rewritten on every run (its timestamps are new); C(changed) is false when the map's state
        is the same.
options:
  directory:
    description:
      - The textfile directory node_exporter reads (its C(--collector.textfile.directory)). It must exist.
    type: path
    required: true
  target:
    description:
      - What the run refreshed, for example V(slurm) or V(kubernetes). It names the file and is the value of the
        C(target) label; lower-case letters, digits and C(_), starting with a letter, at most 63 characters.
    type: str
    required: true
  failed:
    description: Whether the run failed.
    type: bool
    default: false
  started:
    description:
      - When the run started, in seconds since the epoch (for example C({{ now().timestamp() }}) in a first task).
      - The duration metric is written only when this is set.
    type: float
  results:
    description:
      - Registered results of the run's tasks; their C(summary) gives the counts and those with C(changed) count
        as files changed. Skipped or failed results are ignored.
    type: list
    elements: raw
    default: []
  nodes:
    description: Nodes in the topology, instead of the count from O(results).
    type: int
  blocks:
    description: Blocks written (placeholders included), instead of the count from O(results).
    type: int
  placeholders:
    description: Empty placeholder blocks, instead of the count from O(results).
    type: int
  quarantined:
    description: Quarantined nodes, instead of the count from O(results).
    type: int
requirements:
  - prometheus-client (Python) on the host that writes the file
"""

EXAMPLES = r"""
- name: Note when the run started
  ansible.builtin.set_fact:
    run_started: "{{ now().timestamp() }}"

- name: Refresh the map, then record how it went
  block:
    - name: Render the topology file
      aifactory.topology.slurm_topology:
        model: "{{ discovered.topology }}"
        plugin: topology/block
        block_sizes: [18, 36, 72]
        dest: /etc/slurm/topology.conf
      register: topology_file
  always:
    - name: Write the run's metrics for node_exporter
      aifactory.topology.topology_metrics:
        directory: /var/lib/prometheus/node-exporter
        target: slurm
        started: "{{ run_started }}"
        failed: "{{ topology_file is not defined or topology_file is failed }}"
        results: ["{{ topology_file | default({}) }}"]
"""

RETURN = r"""
dest:
  description: The file written (or, in check mode, that would be).
  returned: success
  type: str
  sample: /var/lib/prometheus/node-exporter/aifactory_topology_slurm.prom
metrics:
  description: The values written, metric name to value (every metric has the label C(target)).
  returned: success
  type: dict
  sample: {"aifactory_topology_nodes": 72, "aifactory_topology_last_run_failed": 0}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._engines.metrics import METRICS
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import topology_metrics


def main():
    topology_metrics.run(AnsibleModule(**METRICS.module_kwargs(), supports_check_mode=True))


if __name__ == "__main__":
    main()
