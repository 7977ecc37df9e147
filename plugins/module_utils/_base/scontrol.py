# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How scontrol is run: one argument spec (``SCONTROL``, doc fragment scontrol) and the options it builds.

The modules that ask Slurm (segment_capacity, slurm_topology) merge ``SCONTROL`` and run scontrol with
``SCONTROL.build(module.params)``; the ``slurm_nodes`` event source builds the same ``ScontrolOptions``
through the same spec (``_events/eda.scontrol_options``), so its ``command_timeout`` has the modules'
``scontrol_timeout`` default. Pure data, in the base layer because both the engines' callers and the
event sources use it.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec


@dataclasses.dataclass(frozen=True)
class ScontrolOptions:
    """How scontrol is run (``SCONTROL``): the modules' ``scontrol_path`` and ``scontrol_timeout``.

    ``command_line``: the ``slurm_nodes`` event source's ``scontrol`` (a list such as ``["ssh", "ctl",
    "scontrol"]``) in place of the path.
    """

    scontrol_path: str
    scontrol_timeout: float
    command_line: tuple = ()

    def command(self, *args):
        """The command line that runs scontrol with ``args``."""
        return [*(self.command_line or (self.scontrol_path,)), *args]


SCONTROL = ArgumentSpec({
    "scontrol_path": {"type": "str", "default": "scontrol"},
    "scontrol_timeout": {"type": "float", "default": 60.0},
}, fragments=["scontrol"], options_class=ScontrolOptions)
