"""The slurm_topology role reads every boolean through `| bool`.

`-e name=value` on the command line and AWX survey answers are strings: `"false"` is a
non-empty string, and ansible-core 2.19 refuses a string as a conditional. Each boolean of the
role is passed here as a string, on the example inventory with the output in a temporary
directory, and its effect is checked on the files written. No slurmctld is needed (the example
only writes files; `scontrol` is replaced by `true` where the handler runs).
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.integration.slurm_support import SEED, run_site

pytestmark = pytest.mark.playbook


def test_string_false_turns_features_off_and_string_true_applies(tmp_path):
    conf_dir = tmp_path / "slurm"
    conf_dir.mkdir()
    # A running cluster already on switch/nvidia_imex: what changes needs only `scontrol reconfigure`.
    (conf_dir / "slurm.conf").write_text(SEED.read_text().replace(
        "SwitchType=switch/none", "SwitchType=switch/nvidia_imex\nSwitchParameters=imex_channel_count=2048"))
    result, (changed, failed) = run_site(
        conf_dir, "-e", "slurm_topology_cli_filter=false", "-e", "slurm_topology_admin_partition=no",
        "-e", "slurm_topology_apply_changes=true", "-e", "slurm_topology_scontrol=true")
    assert result.returncode == 0 and failed == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert not (conf_dir / "cli_filter.lua").exists()
    slurm_conf = (conf_dir / "slurm.conf").read_text()
    assert "PartitionName=admin" not in slurm_conf and "CliFilterPlugins" not in slurm_conf
    assert f"{conf_dir}/cli_filter.lua: not managed" in result.stdout
    # apply_changes "true": the reconfigure handler ran (`true reconfigure`).
    handler = result.stdout.split("RUNNING HANDLER [aifactory.topology.slurm_topology : Reconfigure Slurm]")[1]
    assert handler.split("\n\n")[0].strip().endswith("changed: [localhost]"), handler[:300]


def test_string_allow_restart_and_segment_policy(tmp_path):
    conf_dir = tmp_path / "slurm"
    conf_dir.mkdir()
    # An existing cluster (not seeded by this run) on SwitchType=switch/none: changing it needs a restart.
    shutil.copy(SEED, conf_dir / "slurm.conf")
    refused, (changed, failed) = run_site(conf_dir, "-e", "slurm_topology_allow_restart=false")
    assert refused.returncode != 0 and failed == 1
    assert "Changing SwitchParameters, SwitchType needs slurmctld and every slurmd restarted" in refused.stdout

    policy = ["-e", "slurm_topology_segment_reject_full_domain=false",
              "-e", "slurm_topology_segment_require_above_domain=true",
              "-e", "slurm_topology_segment_police_default_partition=no"]
    # apply_changes "false" (a string, like the example's own false): nothing is restarted here.
    allowed, (changed, failed) = run_site(conf_dir, "-e", "slurm_topology_allow_restart=true",
                                          "-e", "slurm_topology_apply_changes=false", *policy)
    assert allowed.returncode == 0 and failed == 0, allowed.stdout[-4000:]
    assert "SwitchType=switch/nvidia_imex" in (conf_dir / "slurm.conf").read_text()
    lua = (conf_dir / "cli_filter.lua").read_text()
    assert "local REJECT_FULL_DOMAIN = false\n" in lua
    assert "local REQUIRE_ABOVE_DOMAIN = true\n" in lua
    assert "local POLICE_DEFAULT_PARTITION = false\n" in lua


def test_string_force_passes_the_shrink_guard(tmp_path):
    conf_dir = tmp_path / "slurm"
    first, (changed, failed) = run_site(conf_dir)
    assert first.returncode == 0 and failed == 0, first.stdout[-4000:]
    # A provider that lost rack01 and the four service nodes: 22 of 129 nodes, more than
    # slurm_topology_max_node_loss (10 %).
    shrink = ["-e", json.dumps({"topology_provider": {"name": "inventory", "params": {"domains": [
        {"name": f"rack{n:02d}", "nodes": f"gb200-r{n:02d}-n[01-18]"} for n in range(2, 9)]}}})]
    refused, (changed, failed) = run_site(conf_dir, *shrink, "-e", "slurm_topology_force=false")
    assert refused.returncode != 0 and failed == 1, refused.stdout[-3000:]
    assert "refusing to drop 22 of 129 nodes" in refused.stdout and "set force: true to accept" in refused.stdout
    forced, (changed, failed) = run_site(conf_dir, *shrink, "-e", "slurm_topology_force=true")
    assert forced.returncode == 0 and failed == 0, forced.stdout[-4000:]
    assert "gb200-r01" not in (conf_dir / "topology.yaml").read_text()
