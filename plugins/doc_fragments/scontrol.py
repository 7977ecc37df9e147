# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the modules that ask Slurm run scontrol (``_base/scontrol.py``)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  scontrol_path:
    description:
      - The scontrol command, run where the module runs (the module's description says what it asks).
      - A wrapper such as a script that runs C(ssh controller scontrol "$@") works too.
    type: str
    default: scontrol
  scontrol_timeout:
    description:
      - Seconds scontrol may take, until it and every process it started have closed their output.
      - On expiry the task fails naming the command, and the command's whole process group is killed.
    type: float
    default: 60
"""
