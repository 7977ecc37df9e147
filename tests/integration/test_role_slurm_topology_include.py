"""The slurm_topology role on a slurm.conf that keeps settings in files it `Include`s.

Slurm reads an included file where the `Include` line stands; settings found there are in
effect. A site that keeps `SwitchType` and `SwitchParameters` in an included file must get no
restart plan for them (the role once planned to add them again and refused a restart that was
not needed), and one whose included file says otherwise must be told where, before any write.
Runs playbooks/site.yml on the example inventory with the output in a temporary directory; no
slurmctld is needed (the example only writes files).
"""

from __future__ import annotations

import pytest

from tests.integration.slurm_support import SEED, run_site

pytestmark = pytest.mark.playbook


def test_settings_in_an_included_file_count_and_a_conflict_there_is_named(tmp_path):
    conf_dir = tmp_path / "slurm"
    conf_dir.mkdir()
    # The site's switch settings live in switch.conf; slurm.conf includes it in place of its own line.
    (conf_dir / "switch.conf").write_text("SwitchType=switch/nvidia_imex\nSwitchParameters=imex_channel_count=2048\n")
    site_conf = SEED.read_text().replace("SwitchType=switch/none\n", "Include switch.conf\n")
    (conf_dir / "slurm.conf").write_text(site_conf)
    result, (changed, failed) = run_site(conf_dir)
    assert result.returncode == 0 and failed == 0, result.stdout[-4000:] + result.stderr[-2000:]
    slurm_conf = (conf_dir / "slurm.conf").read_text()
    assert "SwitchType" not in slurm_conf and "SwitchParameters" not in slurm_conf
    assert "Include switch.conf\n" in slurm_conf and "PartitionName=gpu" in slurm_conf

    (conf_dir / "switch.conf").write_text("SwitchType=switch/none\n")
    before = {path.name: path.read_text() for path in conf_dir.iterdir()}
    refused, (changed, failed) = run_site(conf_dir)
    assert refused.returncode != 0 and failed == 1
    assert f"SwitchType is 'switch/none' in {conf_dir}/switch.conf line 1, a file {conf_dir}/slurm.conf includes" \
        in refused.stdout, refused.stdout[-4000:]
    assert {path.name: path.read_text() for path in conf_dir.iterdir()} == before
