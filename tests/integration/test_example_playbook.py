"""The main job, end to end: ansible-playbook playbooks/site.yml on a copy of the example inventory.

Proves: the first run writes both files (validated by the real slurmctld where the test bed is
available); a second run reports no change; after a day-2 edit, --check --diff prints the exact
diff and writes nothing; the real run then fills the placeholder without moving any block; bad
input fails with the field named and writes nothing.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

import slurm_testbed as testbed  # noqa: E402  (tools/ is not a package)
from ansible_run import recap, run_playbook  # noqa: E402

pytestmark = pytest.mark.playbook


def run_site(inventory, *extra):
    result = run_playbook("-i", inventory, REPO / "playbooks/site.yml", *extra)
    return result, recap(result.stdout, "localhost")


@pytest.fixture
def inventory(tmp_path):
    target = tmp_path / "example"
    shutil.copytree(REPO / "inventories" / "example", target, ignore=shutil.ignore_patterns("output"))
    return target


def edit_topology(inventory, change):
    path = inventory / "group_vars" / "all" / "topology.yml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_site_renders_is_idempotent_and_check_diff_writes_nothing(inventory):
    first, (changed, failed) = run_site(inventory)
    assert first.returncode == 0, first.stdout + first.stderr
    # directory, seeded slurm.conf, topology.yaml, cli_filter.lua, slurm.conf settings
    assert (changed, failed) == (5, 0)
    output = inventory / "output"
    topology = yaml.safe_load((output / "topology.yaml").read_text())
    nvl72 = next(entry for entry in topology if entry["topology"] == "nvl72")
    assert [block["block"] for block in nvl72["block"]["blocks"]] == [f"rack{n:02d}" for n in range(1, 9)]
    assert "nodes" not in nvl72["block"]["blocks"][6]  # rack07: a placeholder at its position
    assert nvl72["block"]["block_sizes"] == [18, 36, 72]
    slurm_conf = (output / "slurm.conf").read_text()
    assert "PartitionName=gpu Nodes=gb200-r[01-08]-n[01-18] Default=YES MaxTime=INFINITE State=UP Topology=nvl72" \
        in slurm_conf
    assert "PartitionName=admin Nodes=ALL Hidden=YES State=UP AllowGroups=hpc-admins Topology=admin" in slurm_conf
    assert "SwitchType=switch/nvidia_imex" in slurm_conf
    assert "slurm_cli_pre_submit" in (output / "cli_filter.lua").read_text()
    assert "placeholder racks: rack07" in first.stdout
    assert "19 nodes are not in the model" in first.stdout
    validated = "yes" if testbed.unavailable_reason() is None else "no (test bed not available)"
    assert f"validated by real slurmctld: {validated}" in first.stdout

    second, (changed, failed) = run_site(inventory)
    assert second.returncode == 0 and (changed, failed) == (0, 0), second.stdout

    # Day 2: rack07's trays arrive.
    def rack07_arrives(data):
        rack07 = data["topology_provider"]["params"]["domains"][6]
        assert rack07["name"] == "rack07"
        rack07["nodes"] = "gb200-r07-n[01-18]"

    edit_topology(inventory, rack07_arrives)
    before = {path.name: path.read_bytes() for path in output.iterdir()}
    check, (changed, failed) = run_site(inventory, "--check", "--diff")
    assert check.returncode == 0 and failed == 0, check.stdout
    assert changed == 1
    assert "        - block: rack07\n+          nodes: gb200-r07-n[01-18]\n" in check.stdout
    assert {path.name: path.read_bytes() for path in output.iterdir()} == before

    applied, (changed, failed) = run_site(inventory)
    assert applied.returncode == 0 and changed == 1, applied.stdout
    topology = yaml.safe_load((output / "topology.yaml").read_text())
    nvl72 = next(entry for entry in topology if entry["topology"] == "nvl72")
    assert [block["block"] for block in nvl72["block"]["blocks"]] == [f"rack{n:02d}" for n in range(1, 9)]
    assert nvl72["block"]["blocks"][6] == {"block": "rack07", "nodes": "gb200-r07-n[01-18]"}
    assert "placeholder racks: none" in applied.stdout


def test_bad_inventory_fails_naming_the_field_and_writes_nothing(inventory):
    edit_topology(inventory, lambda data: data["topology_provider"]["params"]["domains"][0].update(
        nodes="gb200-r01-n[01-18"))
    result, (changed, failed) = run_site(inventory)
    assert result.returncode != 0 and failed == 1
    assert "params.domains[0].nodes: unbalanced '['" in result.stdout
    assert not (inventory / "output").exists()


def test_provider_creds_never_appear_in_verbose_output(tmp_path):
    """creds are no_log: not in the module invocation echo, not in results, even at -vvvv."""
    secret = "s3cr3t-token-value-7f1c"
    playbook = tmp_path / "creds.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Discover with credentials", "hosts": "localhost", "gather_facts": False,
        "tasks": [{"name": "Discover", "aifactory.topology.topology_info": {"provider": {
            "name": "simulation", "params": {"model_path": str(REPO / "tests/fixtures/topograph/small-tree.yaml")},
            "creds": {"token": secret}}}, "register": "found"},
            {"name": "Show", "ansible.builtin.debug": {"var": "found"}}],
    }]))
    result = run_playbook("-vvvv", "-i", "localhost,", "-c", "local",
                          "-e", "ansible_python_interpreter={{ ansible_playbook_python }}", playbook)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r'\bnodes"?: 6\b', result.stdout)  # the module really ran and its result was printed
    assert secret not in result.stdout + result.stderr
