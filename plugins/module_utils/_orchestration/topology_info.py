# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""topology_info: discover or load the topology and return it in compact form."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import load_topology, warning_collector


def run(module):
    """What the module does; exits the module (never changed)."""
    warn, warnings = warning_collector(module)
    with failing_cleanly(module):
        topology = load_topology(module, warn)
    module.exit_json(changed=False, topology=topology.to_compact(), summary=dict(topology.summary(), warnings=warnings),
                     quarantined=topology.quarantine_report())
