# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the segment_capacity module does: the topology, Slurm's node states (scontrol), the analysis (an engine)."""

from __future__ import annotations

import gc

from ansible_collections.aifactory.topology.plugins.module_utils._base import command as _command
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._engines import segment_capacity
from ansible_collections.aifactory.topology.plugins.module_utils._base.scontrol import SCONTROL
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import load_topology, warning_collector


def run(module):
    """What the module does: the topology, Slurm's node states, the analysis; exits the module (never changed)."""
    params = module.params
    warn, warnings = warning_collector(module)

    scontrol = SCONTROL.build(params)

    def read_scontrol_json():
        return _command.run_checked(scontrol.command("show", "nodes", "--json"), timeout=scontrol.scontrol_timeout)

    # Hundreds of thousands of small objects and no cycles: the cyclic collector only costs time here.
    gc.disable()
    try:
        with failing_cleanly(module):
            topology = load_topology(module, warn)
            result = segment_capacity.analyse(topology, segment_capacity.CAPACITY.build(params),
                                              read_scontrol_json, warn)
            result["quarantined"] = topology.quarantine_report()
            result["summary"]["quarantined"] = len(topology.quarantined)
            if topology.locations:  # the racks the hardware names, for the report's rack map
                result["summary"]["racks"] = topology.summary()["racks"]
    finally:
        gc.enable()
    result["summary"]["warnings"] = warnings
    module.exit_json(changed=False, **result)
