"""What slurm.conf sets, as _slurm_conf reads it (Include followed): for the tests' assertions only."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._engines.slurm_conf import _entries
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.slurm_conf import LOCAL_FILES
from ansible_collections.aifactory.topology.plugins.module_utils._base.slurm_lines import logical_lines, physical_lines


def current_settings(text, path=None):
    """Key (lower case) -> value of the global settings in ``text`` and the files it includes (the last wins)."""
    values = {}
    for _depth, _source, _number, pairs in _entries(list(logical_lines(physical_lines(text))), path, LOCAL_FILES):
        key = pairs[0][0].lower()
        if key not in ("partitionname", "nodename"):
            values[key] = pairs[0][1]
    return values
