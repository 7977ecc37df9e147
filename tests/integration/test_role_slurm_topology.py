"""roles/slurm_topology converged into the Debian sid root with a live slurmctld 26.05.

site.yml runs for real: discovery on localhost, then the role on a controller reached through
the community.general.chroot connection. The role detects the Slurm version in the root, writes
topology.yaml, cli_filter.lua and its slurm.conf settings next to the running controller's
slurm.conf, and reconfigures it with scontrol. Then Slurm itself proves the result:
`sbatch --test-only --segment=18` is refused by the installed cli_filter, `--segment=16` is
placed inside racks, the admin partition is hidden and places jobs flat, and a rack brought up
with rack_bringup.yml appears after `scontrol reconfigure` without a controller restart.
"""

from __future__ import annotations

import hashlib

import pytest
import slurm_testbed as testbed  # tools/ is on sys.path (tests/conftest.py)

from tests.ansible_run import REPO, recap, run_playbook
from tests.integration.slurm_support import base_slurm_conf, blocks, write_inventory

pytestmark = [pytest.mark.slurm, pytest.mark.playbook]

RACKS = ["rack01", "rack02", "rack03"]


def play(inventory, playbook, *extra):
    result = run_playbook("-i", inventory, REPO / "playbooks" / playbook, *extra)
    return result, recap(result.stdout, "ctl")


def digest(directory):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


def test_converge_policy_idempotence_check_mode_and_rack_bringup(slurm_root, tmp_path):
    with testbed.slurmctld(slurm_root, {"slurm.conf": base_slurm_conf()}) as ctld:
        conf_dir = slurm_root / ctld.conf_dir.lstrip("/")
        inventory = tmp_path / "inventory.yml"
        write_inventory(inventory, slurm_root, ctld.conf_dir)
        site_before = (conf_dir / "slurm.conf").read_text()

        first, (changed, failed) = play(inventory, "site.yml")
        assert first.returncode == 0 and failed == 0, first.stdout[-4000:] + first.stderr[-2000:]
        assert changed >= 3  # topology.yaml, cli_filter.lua, slurm.conf (+ the reconfigure handler)
        assert "RUNNING HANDLER [aifactory.topology.slurm_topology : Reconfigure Slurm]" in first.stdout
        assert ctld.process.poll() is None, "the controller must not have been restarted or killed"

        # Only the settings the collection needs changed in slurm.conf.
        slurm_conf = (conf_dir / "slurm.conf").read_text()
        assert [line for line in site_before.splitlines() if not line.startswith("PartitionName=gpu")] == \
            [line for line in slurm_conf.splitlines() if line in site_before]
        assert "PartitionName=gpu Nodes=gb200-r[01-03]-n[01-18] Default=YES MaxTime=INFINITE State=UP Topology=nvl72" \
            in slurm_conf
        # What Slurm made of it, after `scontrol reconfigure`:
        assert blocks(ctld) == [("rack01", "0", "gb200-r01-n[01-18]"), ("rack02", "1", "gb200-r02-n[01-18]"),
                                ("rack03", "2", "")]
        assert "Topology=nvl72" in ctld.scontrol("show", "partition", "gpu")
        admin = ctld.scontrol("show", "partition", "admin")
        assert "Hidden=YES" in admin and "Topology=admin" in admin and "AllowGroups=root" in admin

        refused = ctld.test_only("-p", "gpu", "-N32", "--segment=18")
        assert refused.returncode != 0
        assert "--segment=18 needs every node of an NVLink domain" in refused.stderr
        assert "cli_filter plugin terminated with error" in refused.stderr
        placed = expand_nodes(ctld.placement("-p", "gpu", "-N32", "--segment=16"))
        assert {rack_of(node) for node in placed} == {"r01", "r02"} and len(placed) == 32
        assert sum(1 for node in placed if rack_of(node) == "r01") == 16
        # The admin partition is flat and not policed: --segment=18 passes the filter, the job spans racks.
        spread = expand_nodes(ctld.placement("-p", "admin", "-N36", "--segment=18"))
        assert len(spread) == 36 and len({rack_of(node) for node in spread}) >= 2

        second, (changed, failed) = play(inventory, "site.yml")
        assert second.returncode == 0 and (changed, failed) == (0, 0), second.stdout[-3000:]

        # Check mode with a changed input (rack03 arrives) shows the diff and writes nothing.
        write_inventory(inventory, slurm_root, ctld.conf_dir, rack03_nodes="gb200-r03-n[01-18]")
        before = digest(conf_dir)
        check, (changed, failed) = play(inventory, "site.yml", "--check", "--diff")
        assert check.returncode == 0 and failed == 0 and changed == 1, check.stdout[-3000:]
        assert "+          nodes: gb200-r03-n[01-18]" in check.stdout
        assert digest(conf_dir) == before
        assert blocks(ctld)[2] == ("rack03", "2", ""), ctld.scontrol("show", "topology", "nvl72")

        # Day 2: bring rack03 up. Its block fills in place after `scontrol reconfigure`.
        pid = ctld.process.pid
        bringup, (changed, failed) = play(inventory, "rack_bringup.yml", "-e", "rack=rack03")
        assert bringup.returncode == 0 and failed == 0, bringup.stdout[-4000:]
        assert "rack03 is block 3 of 3" in bringup.stdout
        assert ctld.process.poll() is None and ctld.process.pid == pid  # reconfigured, not restarted
        assert blocks(ctld) == [("rack01", "0", "gb200-r01-n[01-18]"), ("rack02", "1", "gb200-r02-n[01-18]"),
                                ("rack03", "2", "gb200-r03-n[01-18]")]
        placed = expand_nodes(ctld.placement("-p", "gpu", "-N16", "--segment=16", "-x", "gb200-r[01-02]-n[01-18]"))
        assert {rack_of(node) for node in placed} == {"r03"}


def test_switch_type_change_is_refused_without_opt_in_and_nothing_is_written(slurm_root, tmp_path):
    conf = base_slurm_conf().replace("SwitchType=switch/nvidia_imex\n", "SwitchType=switch/none\n")
    with testbed.slurmctld(slurm_root, {"slurm.conf": conf}) as ctld:
        conf_dir = slurm_root / ctld.conf_dir.lstrip("/")
        inventory = tmp_path / "inventory.yml"
        write_inventory(inventory, slurm_root, ctld.conf_dir)
        before = digest(conf_dir)
        refused, (changed, failed) = play(inventory, "site.yml")
        assert refused.returncode != 0 and failed == 1
        assert "Changing SwitchType needs slurmctld and every slurmd restarted" in refused.stdout
        assert digest(conf_dir) == before


def expand_nodes(hostlist):
    from ansible_collections.aifactory.topology.plugins.module_utils._base.hostlist import expand

    return expand(hostlist)


def rack_of(node):
    return node.split("-")[1]


def test_before_25_05_the_role_writes_topology_conf_and_topology_plugin(slurm_root, tmp_path):
    """The pre-25.05 path, loaded by the real slurmctld (26.05 still reads topology.conf + TopologyPlugin)."""
    with testbed.slurmctld(slurm_root, {"slurm.conf": base_slurm_conf()}) as ctld:
        conf_dir = slurm_root / ctld.conf_dir.lstrip("/")
        inventory = tmp_path / "inventory.yml"
        write_inventory(inventory, slurm_root, ctld.conf_dir, slurm_topology_version="24.11",
                        slurm_topology_partitions={})
        result, (changed, failed) = play(inventory, "site.yml")
        assert result.returncode == 0 and failed == 0, result.stdout[-4000:]
        assert not (conf_dir / "topology.yaml").exists()
        assert "BlockName=rack03\nBlockSizes=18,36" in (conf_dir / "topology.conf").read_text()
        slurm_conf = (conf_dir / "slurm.conf").read_text()
        assert "TopologyPlugin=topology/block" in slurm_conf and "Topology=" not in slurm_conf.replace(
            "TopologyPlugin=", "")
        assert ctld.process.poll() is None  # TopologyPlugin applied by scontrol reconfigure, no restart
        assert blocks(ctld, "default")[:2] == [("rack01", "0", "gb200-r01-n[01-18]"),
                                               ("rack02", "1", "gb200-r02-n[01-18]")]
        assert "Hidden=YES" in ctld.scontrol("show", "partition", "admin")


def test_options_newer_than_the_detected_slurm_are_refused_before_writing(slurm_root, tmp_path):
    with testbed.slurmctld(slurm_root, {"slurm.conf": base_slurm_conf()}) as ctld:
        conf_dir = slurm_root / ctld.conf_dir.lstrip("/")
        inventory = tmp_path / "inventory.yml"
        write_inventory(inventory, slurm_root, ctld.conf_dir, slurm_topology_version="25.05",
                        slurm_topology_topology_param="BlockAsNodeRank")
        before = digest(conf_dir)
        refused, (changed, failed) = play(inventory, "site.yml")
        assert refused.returncode != 0 and failed == 1
        assert "Slurm 25.05 has no TopologyParam=BlockAsNodeRank" in refused.stdout
        assert digest(conf_dir) == before
