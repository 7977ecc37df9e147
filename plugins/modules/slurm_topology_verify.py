#!/usr/bin/python
# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_topology_verify
short_description: Prove that the running slurmctld holds the topology file, and ask it where jobs would go
version_added: 0.2.0
description:
  - Reads the topology file (O(path), a topology.yaml or topology.conf) and what the running slurmctld has loaded
    (C(scontrol show topology NAME) for every block or tree topology of a topology.yaml, C(scontrol show topology)
    for a topology.conf), and compares them as node sets per block and per switch, placeholders and block order
    included. A flat topology places nothing and is not compared.
  - Then, with O(probe), asks the controller itself, for each block size of each block topology, where
    C(sbatch --test-only -N SIZE --segment=SIZE) would start a job, in the first partition that is up and uses that
    topology; the answer must fit in one aligned group of blocks. A size that no group has enough idle nodes for
    is not asked (the probe records why).
  - A difference (not loaded, an older map, a block the controller has and the file does not, a probe answered
    across blocks, a controller that does not answer) fails the task with a message naming the topology and the
    blocks or switches, or is a warning with O(on_mismatch=warn).
  - With O(reconfigure), a controller that does not hold the file is sent C(scontrol reconfigure), and the task
    waits (up to O(reconfigure_timeout)) until the controller shows the file; a controller that already holds the
    file is never reconfigured. Without it the module only reads, so a scheduled run reports a controller that
    drifted from the file.
  - See the collection's docs/verification.md.
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - aifactory.topology.scontrol
  - aifactory.topology.attributes
options:
  path:
    description:
      - The topology file the controller should hold, as the controller reads it.
    type: path
    required: true
  sbatch_path:
    description:
      - The sbatch command, for the placement questions.
    type: str
    default: sbatch
  probe:
    description:
      - Ask C(sbatch --test-only) one question per block size of each block topology.
    type: bool
    default: true
  reconfigure:
    description:
      - Send C(scontrol reconfigure) when the controller does not hold the file, then wait until it does.
    type: bool
    default: false
  reconfigure_timeout:
    description:
      - Seconds to wait, after a reconfigure, for the controller to show the file.
    type: float
    default: 120
  on_mismatch:
    description:
      - What a difference does, V(fail) the task or V(warn).
    type: str
    choices: [fail, warn]
    default: fail
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is sent; with O(reconfigure) a difference reports a change (the reconfigure that
        would be sent) and does not fail.
  diff_mode:
    support: none
  idempotent:
    support: full
notes:
  - Run it on a host where scontrol and sbatch reach the controller, with the environment (C(SLURM_CONF)) they need.
"""

EXAMPLES = r"""
- name: Apply the new topology and prove the controller holds it
  aifactory.topology.slurm_topology_verify:
    path: /etc/slurm/topology.yaml
    reconfigure: true

- name: A scheduled check that reports a controller that drifted from the file
  aifactory.topology.slurm_topology_verify:
    path: /etc/slurm/topology.yaml
    on_mismatch: warn
  register: controller
"""

RETURN = r"""
differences:
  description: One line per difference, naming the topology and the blocks or switches; empty when the controller
    holds the file and every probe fit.
  returned: success
  type: list
  elements: str
  sample: ["topology nvl72, block rack03: the file's gb200-r03-n[01-18] are not in it on the controller"]
probes:
  description:
    - The placement questions, each with C(topology), C(size), C(partition), and C(answer) (the nodes sbatch would
      use) and C(fits), or C(skipped) with the reason.
  returned: success
  type: list
  elements: dict
  sample: [{"topology": "nvl72", "size": 18, "partition": "gpu", "answer": "gb200-r01-n[01-18]", "fits": true}]
summary:
  description:
    - C(controller_mismatches) (the differences; 0 in check mode when a reconfigure would be sent), C(topologies)
      (the file's), C(reconfigured) and C(probes_asked).
    - M(aifactory.topology.topology_metrics) exports C(controller_mismatches) as
      C(aifactory_topology_controller_mismatches).
  returned: success
  type: dict
  sample: {"controller_mismatches": 0, "topologies": ["nvl72", "admin"], "reconfigured": true, "probes_asked": 2}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import slurm_topology_verify


def main():
    slurm_topology_verify.run(AnsibleModule(**slurm_topology_verify.SPEC.module_kwargs(), supports_check_mode=True))


if __name__ == "__main__":
    main()
