# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""topology_facts: this node's host name, HCAs and NVLink clique as the fact ``topology_node``."""

from __future__ import annotations

import os

from ansible_collections.aifactory.topology.plugins.module_utils._base import command as _command
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import CommandError, failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._providers import node_facts as _node_facts

# A node's nvidia-smi answer is one CSV row per GPU (a few KB), its -q report some 60 KB; more is not an answer.
MAX_NVIDIA_SMI_OUTPUT = 1024 * 1024


def run(module):
    """What the module does; exits the module (never changed)."""
    with failing_cleanly(module):
        gather = set(module.params["gather"])
        hostname = os.uname().nodename
        facts = {}
        if "hostname" in gather:
            facts["hostname"] = hostname
        if "infiniband" in gather:
            facts["infiniband"] = _node_facts.infiniband_hcas(module.params["sysfs_root"])
        if "nvlink" in gather:
            facts["nvlink"] = {}
            executable = module.params["nvidia_smi_path"] or module.get_bin_path("nvidia-smi")
            if executable:
                facts["nvlink"], problem = _node_facts.nvlink_facts(
                    hostname, lambda args: _run([executable] + args, module.params["timeout"]),
                    module.params["fabric_health"])
                if problem:
                    module.warn(problem)
    module.exit_json(changed=False, ansible_facts={"topology_node": facts})


def _run(command, timeout):
    """(rc, stdout bytes, stderr), bounded in time (children included) and output (_command).

    Bytes, not text: _node_facts decodes them and reports output that is not UTF-8 for this node.
    A command that cannot run, hangs or floods is this node's problem too, reported the same way.
    """
    try:
        rc, stdout, stderr = _command.run(command, timeout=timeout, max_output=MAX_NVIDIA_SMI_OUTPUT)
    except CommandError as exc:
        return -1, b"", str(exc)
    return rc, stdout, stderr.decode("utf-8", errors="replace")
