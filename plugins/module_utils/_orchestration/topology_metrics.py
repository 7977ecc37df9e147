# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""topology_metrics: a run's health and freshness written as one node_exporter textfile."""

from __future__ import annotations

import time

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._engines import metrics
from ansible_collections.aifactory.topology.plugins.module_utils._writers.file import ensure_file, locked, read_text


def run(module):
    """What the module does: read the previous file, compute and write the new one under a lock; exits the module."""
    params = module.params
    with failing_cleanly(module):
        path = metrics.dest(params)
        with locked(path):
            before = metrics.previous(read_text(path), params["target"], module.warn)
            values = metrics.metrics(params, before, time.time())
            result = ensure_file(module, path, metrics.render(values, params["target"]))
    result["changed"] = metrics.state_changed(values, before)
    result["metrics"] = {metrics.PREFIX + name: value for name, value in values.items()}
    module.exit_json(**result)
