"""slurm_topology_verify against a REAL slurmctld 26.05 (tools/slurm_testbed.py): what it loaded, read back.

The module runs as its own process, with ``scontrol_path`` and ``sbatch_path`` pointing at wrappers that run the
chroot's commands against this controller, and ``path`` at the very file the controller reads. Proved here:

* a topology.yaml of several topologies (a block one with a placeholder, a tree, a flat one) is read back and
  matched, and each block size is asked of ``sbatch --test-only --segment`` and fits in one group of blocks;
* a file changed behind the controller's back (not reconfigured) is reported, block by block, by a run that
  only reads, and nothing is sent to the controller (its log counts no reconfigure);
* with ``reconfigure: true`` a file the controller does not hold is reconfigured and then matched; a second run
  sends no reconfigure;
* a file the controller refuses on reconfigure is reported as not loaded, never as applied.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import slurm_testbed as testbed  # tools/ is on sys.path (tests/conftest.py)

from tests.integration.slurm_support import scontrol_wrapper

pytestmark = pytest.mark.slurm

MODULE = "ansible_collections.aifactory.topology.plugins.modules.slurm_topology_verify"
RECONFIGURE = "Processing Reconfiguration Request"
NODES = {f"n{r}{n:02d}" for r in (1, 2, 3) for n in range(1, 5)}
PARTITIONS = ["PartitionName=gpu Nodes=ALL Default=YES State=UP",
              "PartitionName=tr Nodes=ALL State=UP Topology=tr",
              "PartitionName=admin Nodes=ALL State=UP Topology=fl"]


def topology_yaml(second="n2[01-04]", third=None):
    third_block = f"{{block: b3, nodes: '{third}'}}" if third else "{block: b3}"
    return f"""- topology: blk
  cluster_default: true
  block:
    block_sizes: [4, 8]
    blocks:
      - {{block: b1, nodes: 'n1[01-04]'}}
      - {{block: b2, nodes: '{second}'}}
      - {third_block}
      - {{block: b4, nodes: 'n3[01-04]'}}
- topology: tr
  tree:
    switches:
      - {{switch: s1, children: 'l[1-2]'}}
      - {{switch: l1, nodes: 'n1[01-04],n2[01-04]'}}
      - {{switch: l2, nodes: 'n3[01-04]'}}
- topology: fl
  flat: true
"""


def sbatch_wrapper(ctld, tmp_path):
    path = tmp_path / "sbatch"
    path.write_text(f'#!/bin/sh\nexec chroot {ctld.root} env SLURM_CONF={ctld.conf_dir}/slurm.conf sbatch "$@"\n',
                    encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture
def controller(slurm_root):
    conf = testbed.slurm_conf(NODES, partitions=PARTITIONS)
    with testbed.slurmctld(slurm_root, {"slurm.conf": conf, "topology.yaml": topology_yaml()}) as ctld:
        yield ctld


def verify(ctld, tmp_path, **args):
    args = {"path": str(ctld.root / ctld.conf_dir.lstrip("/") / "topology.yaml"),
            "scontrol_path": str(scontrol_wrapper(ctld, tmp_path)), "sbatch_path": str(sbatch_wrapper(ctld, tmp_path)),
            **args}
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", MODULE, str(args_file)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), check=False, timeout=300)
    return json.loads(done.stdout)


def write(ctld, text):
    (ctld.root / ctld.conf_dir.lstrip("/") / "topology.yaml").write_text(text, encoding="utf-8")


def test_several_topologies_are_read_back_matched_and_each_block_size_fits_one_group(controller, tmp_path):
    result = verify(controller, tmp_path)
    assert not result.get("failed"), result.get("msg")
    assert result["differences"] == [] and result["changed"] is False
    assert result["summary"]["topologies"] == ["blk", "tr", "fl"]
    probes = {record["size"]: record for record in result["probes"]}
    assert set(probes) == {4, 8} and all(record["fits"] for record in probes.values())
    assert all(record["partition"] == "gpu" for record in probes.values())
    assert result["summary"]["probes_asked"] == 2
    assert controller.log().count(RECONFIGURE) == 0


def test_a_file_changed_behind_the_controllers_back_is_reported_by_a_run_that_only_reads(controller, tmp_path):
    write(controller, topology_yaml(second="n2[01-03]", third="n204"))
    result = verify(controller, tmp_path, on_mismatch="warn")
    assert result["changed"] is False and result["summary"]["controller_mismatches"] == 2
    assert result["differences"] == [
        "topology blk, block b2: the controller has n204 in it, the file does not",
        "topology blk, block b3: the file's n204 are not in it on the controller"]
    failed = verify(controller, tmp_path)
    assert failed["failed"] and failed["msg"].startswith("the running slurmctld does not hold ")
    assert "topology blk, block b2" in failed["msg"]
    assert controller.log().count(RECONFIGURE) == 0  # a check never reconfigures


def test_reconfigure_is_sent_only_to_a_controller_that_does_not_hold_the_file(controller, tmp_path):
    assert verify(controller, tmp_path, reconfigure=True)["changed"] is False
    assert controller.log().count(RECONFIGURE) == 0
    write(controller, topology_yaml(second="n2[01-03]", third="n204"))
    checked = verify(controller, tmp_path, reconfigure=True, _ansible_check_mode=True)
    assert checked["changed"] is True and controller.log().count(RECONFIGURE) == 0  # check mode sends nothing
    applied = verify(controller, tmp_path, reconfigure=True)
    assert not applied.get("failed"), applied.get("msg")
    assert applied["changed"] is True and applied["summary"]["reconfigured"] is True
    assert applied["differences"] == []
    assert controller.log().count(RECONFIGURE) == 1
    again = verify(controller, tmp_path, reconfigure=True)
    assert again["changed"] is False and controller.log().count(RECONFIGURE) == 1


def test_a_file_the_controller_refuses_is_reported_not_loaded(controller, tmp_path):
    write(controller, "- topology: blk\n  block:\n    blocks:\n      - {block: b1, nodes: 'nX[1-2]'}\n")
    result = verify(controller, tmp_path, reconfigure=True, reconfigure_timeout=20, probe=False)
    assert result["failed"] and result["summary"]["reconfigured"] is True
    assert result["summary"]["controller_mismatches"] >= 1
    # The test bed's slurmctld runs in the foreground and exits on the file it refuses: no map is a mismatch too.
    assert "after scontrol reconfigure and 20 s: the controller does not answer: scontrol ping says " \
           "'Slurmctld(primary) at " in result["msg"] and result["msg"].endswith(" is DOWN'")
