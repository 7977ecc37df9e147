"""slurm_topology's drain_unhealthy against a REAL slurmctld 26.05 (tools/slurm_testbed.py).

Two racks of four nodes; nvidia-smi says n1x1 and n1x2 are out of their NVLink fabric. n1x2 was
already drained by an administrator. The module runs as its own process with ``scontrol_path``
pointing at the chroot's scontrol: Slurm's own answers show what was drained and resumed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import slurm_testbed as testbed  # tools/ is on sys.path (tests/conftest.py)

from ansible_collections.aifactory.topology.plugins.module_utils._engines.slurm_drain import DRAIN_REASON

from tests.integration.slurm_support import scontrol_wrapper
from tests.nvidia_smi_shapes import UNHEALTHY_TRAY

pytestmark = pytest.mark.slurm

MODULE = "ansible_collections.aifactory.topology.plugins.modules.slurm_topology"
NODES = [f"n{rack}x{index}" for rack in (1, 2) for index in range(1, 5)]
UUID = "3bd4c4b2-4a2c-4b1f-9b4e-7a8b1c2d3e4f"


def run_module(args, tmp_path, check_mode=False):
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check_mode)}),
                         encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-m", MODULE, str(args_file)], capture_output=True, text=True,
                          env=env, check=False, timeout=300)
    return json.loads(done.stdout)


def args_for(ctld, tmp_path, unhealthy, **extra):
    outputs = {node: (UNHEALTHY_TRAY if node in unhealthy else f"{UUID}, {node[1]}\n") for node in NODES}
    params = {"switches": {"leaf": None},
              "domains": [{"name": f"rack{rack}", "nodes": f"n{rack}x[1-4]", "switch": "leaf"} for rack in (1, 2)],
              "accelerator": {"source": "nvidia_smi", "nvidia_smi": outputs}}
    return dict({"provider": {"name": "inventory", "params": params}, "plugin": "topology/block",
                 "block_sizes": [2], "dest": str(tmp_path / "topology.conf"), "drain_unhealthy": True,
                 "max_node_loss": 30, "scontrol_path": str(scontrol_wrapper(ctld, tmp_path))}, **extra)


def drain_reasons(ctld):
    data = json.loads(ctld.scontrol("show", "nodes", "--json"))
    return {node["name"]: node.get("reason", "") for node in data["nodes"] if "DRAIN" in node["state"]}


def test_unhealthy_nodes_are_drained_with_our_reason_and_resumed_when_they_recover(slurm_root, tmp_path):
    files = {"slurm.conf": testbed.slurm_conf(NODES, plugin="topology/block"),
             "topology.conf": "BlockName=b1 Nodes=n1x[1-4]\nBlockName=b2 Nodes=n2x[1-4]\nBlockSizes=2\n"}
    with testbed.slurmctld(slurm_root, files) as ctld:
        ctld.scontrol("update", "nodename=n1x2", "state=drain", "reason=admin: new DIMMs")
        args = args_for(ctld, tmp_path, {"n1x1", "n1x2"})

        dry = run_module(args, tmp_path, check_mode=True)
        assert not dry.get("failed"), dry.get("msg")
        assert dry["drained"] == ["n1x1"] and dry["resumed"] == [] and dry["changed"] is True
        assert drain_reasons(ctld) == {"n1x2": "admin: new DIMMs"}

        applied = run_module(args, tmp_path)
        assert not applied.get("failed"), applied.get("msg")
        assert applied["drained"] == ["n1x1"] and [q["node"] for q in applied["quarantined"]] == ["n1x1", "n1x2"]
        assert drain_reasons(ctld) == {"n1x1": DRAIN_REASON, "n1x2": "admin: new DIMMs"}
        assert "n1x1" not in (tmp_path / "topology.conf").read_text()

        again = run_module(args, tmp_path)
        assert again["changed"] is False and again["drained"] == [] and again["resumed"] == []

        recovered = run_module(args_for(ctld, tmp_path, set()), tmp_path)
        assert not recovered.get("failed"), recovered.get("msg")
        assert recovered["resumed"] == ["n1x1"] and recovered["drained"] == []
        assert drain_reasons(ctld) == {"n1x2": "admin: new DIMMs"}  # an administrator's drain is never lifted


def test_a_mass_failure_drains_nothing(slurm_root, tmp_path):
    files = {"slurm.conf": testbed.slurm_conf(NODES, plugin="topology/block"),
             "topology.conf": "BlockName=b1 Nodes=n1x[1-4]\nBlockName=b2 Nodes=n2x[1-4]\nBlockSizes=2\n"}
    with testbed.slurmctld(slurm_root, files) as ctld:
        refused = run_module(args_for(ctld, tmp_path, set(NODES[:3]), max_node_loss=10, dest=None), tmp_path)
        assert refused.get("failed")
        assert refused["msg"].startswith("refusing to drain 3 of 8 nodes quarantined as unhealthy (37.5% > "
                                         "max_node_loss 10%): n1x[1-3]")
        assert drain_reasons(ctld) == {}
        # With a dest, the drain's guard refuses before the file is written, not after.
        with_file = run_module(args_for(ctld, tmp_path, set(NODES[:3]), max_node_loss=10), tmp_path)
        assert with_file.get("failed") and with_file["msg"].startswith("refusing to drain 3 of 8 nodes")
        assert not (tmp_path / "topology.conf").exists() and drain_reasons(ctld) == {}
