# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.aifactory.topology.plugins.plugin_utils import typed_variables as typing


def typed_variables(values, spec, prefix=""):
    """Variables (name -> value) typed as their argument spec says; see plugin_utils/typed_variables.py."""
    try:
        return typing.typed_variables(values, spec, prefix)
    except typing.VariableError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    def filters(self):
        return {"typed_variables": typed_variables}
