"""The roles' list and dict variables given as text, as `-e name=value` and AWX surveys give them.

Ansible checks each role's meta/argument_specs.yml before its tasks but keeps the values as
given; the roles read them typed (aifactory.topology.typed_variables). Each case runs the real
ansible-playbook and checks the files written: `-e slurm_topology_admin_allow_groups=wheel` is
`AllowGroups=wheel` (it was `AllowGroups=w,h,e,e,l`), `-e slurm_topology_segment_partitions=gpu`
polices the partition gpu (it was `g`, `p`, `u`), a dict as JSON text is that dict (it failed after
slurm.conf was seeded, and the rerun then refused a restart), and a value that is none of these
fails before any file is written, naming the variable. No slurmctld is needed (the example only
writes files).
"""

from __future__ import annotations

import json

import pytest
import yaml

from tests.integration.slurm_support import run_site
from tests.integration.imex_support import Cluster

pytestmark = pytest.mark.playbook


def test_slurm_topology_lists_and_dicts_from_e_strings(tmp_path):
    conf_dir = tmp_path / "slurm"  # a new cluster: slurm.conf is seeded by this run
    result, (changed, failed) = run_site(
        conf_dir, "-e", "slurm_topology_admin_allow_groups=wheel",
        "-e", "slurm_topology_admin_allow_accounts=ops,hpc",
        "-e", "slurm_topology_segment_partitions=gpu",
        "-e", 'slurm_topology_partitions={"gpu":"nvl72","debug":"fabric"}',  # -e key=value splits at spaces
        "-e", "slurm_topology_block_sizes=18,36,72",
        "-e", '{"slurm_topology_domain_order": "[rack01, rack02, rack03, rack04, rack05, rack06, rack07, rack08]"}')
    assert result.returncode == 0 and failed == 0, result.stdout[-4000:] + result.stderr[-2000:]
    slurm_conf = (conf_dir / "slurm.conf").read_text()
    admin = next(line for line in slurm_conf.splitlines() if line.startswith("PartitionName=admin"))
    assert " AllowGroups=wheel " in f"{admin} " and " AllowAccounts=ops,hpc " in f"{admin} ", admin
    assert "PartitionName=gpu Nodes=gb200-r[01-08]-n[01-18] Default=YES MaxTime=INFINITE State=UP Topology=nvl72" \
        in slurm_conf
    assert "PartitionName=debug Nodes=gb200-r01-n[01-18] MaxTime=01:00:00 State=UP Topology=fabric" in slurm_conf
    lua = (conf_dir / "cli_filter.lua").read_text()
    assert '["gpu"] = true' in lua and '["g"]' not in lua, lua[:800]
    topology = yaml.safe_load((conf_dir / "topology.yaml").read_text())
    nvl72 = next(entry for entry in topology if entry["topology"] == "nvl72")
    assert nvl72["block"]["block_sizes"] == [18, 36, 72]
    assert [block["block"] for block in nvl72["block"]["blocks"]][:3] == ["rack01", "rack02", "rack03"]


@pytest.mark.parametrize("extra, message", [
    # The role's first task (typed_variables): a list's text that is neither JSON nor comma-separated words.
    (["-e", json.dumps({"slurm_topology_admin_allow_groups": '["wheel", "hpc'})],
     "slurm_topology_admin_allow_groups: '[\"wheel\", \"hpc' starts like a list but is not JSON or YAML"),
    # Ansible's own check of the argument spec, before the role's first task: a dict's text must be JSON
    # or key=value, and a JSON list of numbers is split at its commas there ('[18' is no number).
    (["-e", json.dumps({"slurm_topology_partitions": "{gpu: nvl72"})],
     "argument 'slurm_topology_partitions' is of type str and we were unable to convert to dict"),
    (["-e", "slurm_topology_topologies=[nvl72]"],
     "argument 'slurm_topology_topologies' is of type str and we were unable to convert to dict"),
    (["-e", "slurm_topology_block_sizes=[18,36]"],
     "Elements value for option 'slurm_topology_block_sizes' is of type str and we were unable to convert to int"),
], ids=["list-not-json", "dict-not-json", "list-for-a-dict", "json-list-of-numbers"])
def test_a_value_that_is_no_list_or_dict_fails_before_any_change(tmp_path, extra, message):
    conf_dir = tmp_path / "slurm"
    result, (changed, failed) = run_site(conf_dir, *extra)
    assert result.returncode != 0 and failed == 1
    assert message in result.stdout, result.stdout[-4000:]
    assert not conf_dir.exists()  # not even the seeded slurm.conf: a rerun is a first run again


def test_imex_lists_and_dicts_from_e_strings(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.group_vars.pop("imex_nvidia_smi_command")
    result = cluster.run("-e", "imex_nvidia_smi_command=true", "-e", 'imex_config={"LOG_LEVEL":5}',
                         "-e", "imex_config_extra_keys=IMEX_CONN_WAIT_TIMEOUT,IMEX_OTHER")
    assert result.returncode == 0, result.output[-4000:]
    config = cluster.path("gb200-r01-n1", "config.cfg").read_text()
    assert "LOG_LEVEL=5\n" in config
    # A survey's text answer, whole (an -e key=value would be cut at the spaces).
    refused = cluster.run("-e", json.dumps({"imex_config": '{"IMEX_CONN_WAIT_TIMEOUT": 70, "NOT_A_KEY": 1}'}),
                          "-e", "imex_config_extra_keys=IMEX_CONN_WAIT_TIMEOUT")
    assert refused.returncode != 0 and "imex_config: unknown key(s) NOT_A_KEY." in refused.output, refused.output[-3000:]
