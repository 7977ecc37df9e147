# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""topology_graph: the topology as Topograph's graph JSON, returned and optionally written."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._engines.graph import render_graph_json
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import load_topology
from ansible_collections.aifactory.topology.plugins.module_utils._writers.file import ensure_file


def run(module):
    """What the module does; exits the module."""
    with failing_cleanly(module):
        topology = load_topology(module)
        content = render_graph_json(topology)
        result = {"changed": False, "content": content, "quarantined": topology.quarantine_report()}
        if module.params["dest"]:
            result.update(ensure_file(module, module.params["dest"], content, module.params["backup"]))
    module.exit_json(**result)
