# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Command outputs gathered on the nodes by playbook tasks (ibnetdiscover, nvidia-smi)."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError


def command_output(value, where):
    """The text a command printed: ``value`` itself, or the ``stdout`` of its registered result.

    A registered result that failed is an error naming ``where``: its output is not the fabric.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "stdout" in value:
        if value.get("failed") or value.get("rc") not in (None, 0):
            stderr = str(value.get("stderr") or "").strip().replace("\n", " ")
            raise TopologyError(f"{where}: the command failed (rc={value.get('rc')}): {stderr[:200]}")
        return str(value["stdout"])
    raise TopologyError(f"{where} must be the command's output text or its registered result, "
                        f"got {type(value).__name__}")
