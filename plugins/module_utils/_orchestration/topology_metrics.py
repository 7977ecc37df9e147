# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""topology_metrics: a run's health and freshness written as one node_exporter textfile."""

from __future__ import annotations

import time

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._engines import metrics
from ansible_collections.aifactory.topology.plugins.module_utils._writers.file import ensure_file, locked, read_own


def run(module):
    """What the module does: read the previous file, compute and write the new one under a lock; exits the module.

    The textfile directory is one other users may write (node_exporter's): a link there is refused, never
    followed; a previous file that is not ours (another owner, hard links, too big, not UTF-8, not our format)
    is a warning, is neither read nor shown in the diff, and is replaced.
    """
    with failing_cleanly(module):
        options = metrics.METRICS.build(module.params)
        path = metrics.dest(options)
        with locked(path):
            text, problem = read_own(path, metrics.MAX_PREVIOUS_BYTES)
            before = {}
            if problem is None:
                before, problem = metrics.previous(text, options.target)
            if problem is not None:
                module.warn(f"the previous metrics file {path} {problem}: it is neither read nor shown, and it is "
                            "replaced; the last success time and the counts start again")
            values = metrics.metrics(options, before, time.time())
            result = ensure_file(module, path, metrics.render(values, options.target), current=text, follow=False,
                                 withheld=problem)
    result["changed"] = metrics.state_changed(values, before)
    result["metrics"] = {metrics.PREFIX + name: value for name, value in values.items()}
    module.exit_json(**result)
