"""The main job, end to end: ansible-playbook playbooks/site.yml on a copy of the example inventory.

Proves: the first run writes both files (validated by the real slurmctld where the test bed is
available); a second run reports no change; after a day-2 edit, --check --diff prints the exact
diff and writes nothing; the real run then fills the placeholder without moving any block; bad
input fails with the field named and writes nothing.
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest
import slurm_testbed as testbed  # tools/ is on sys.path (tests/conftest.py)
import yaml

from tests.ansible_run import REPO, ansible_env, recap, run_playbook
from tests.nvidia_smi_shapes import UNHEALTHY_TRAY, csv, rack

pytestmark = pytest.mark.playbook


def output_of(inventory):
    """Where the tests let the example write: beside the copied inventory, never inside it."""
    return inventory.parent / "output"


def validate_args():
    """What `make example` adds where the Slurm test bed is built: the role's documented validate command."""
    if testbed.unavailable_reason() is not None:
        return []
    command = f"{sys.executable} {REPO / 'tools' / 'slurm_testbed.py'} check %s"
    return ["-e", json.dumps({"slurm_topology_validate_command": command})]


def run_site(inventory, *extra):
    result = run_playbook("-i", inventory, REPO / "playbooks/site.yml",
                          "-e", json.dumps({"slurm_topology_conf_dir": str(output_of(inventory))}),
                          *validate_args(), *extra,
                          # One line per message (no YAML folding of long paths) for the assertions.
                          env=ansible_env(ANSIBLE_CALLBACK_RESULT_FORMAT="json"))
    return result, recap(result.stdout, "localhost")


@pytest.fixture
def inventory(tmp_path):
    target = tmp_path / "example"
    shutil.copytree(REPO / "inventories" / "example", target)
    return target


def test_the_example_keeps_only_inventory_in_its_inventory_directory():
    """Ansible parses every file under an inventory directory: a seed or an output there means warnings."""
    files = sorted(str(path.relative_to(REPO / "inventories" / "example"))
                   for path in (REPO / "inventories" / "example").rglob("*") if path.is_file())
    assert files == ["group_vars/all/topology.yml", "group_vars/slurm_controller/slurm.yml", "hosts.yml"]


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
    # The happy path prints no warning at all (docs/example-cluster.md explains every message).
    assert "[WARNING]" not in first.stdout + first.stderr, first.stdout + first.stderr
    output = output_of(inventory)
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
    assert "warnings: none" in first.stdout
    # The block layout, rack by rack, and the files written.
    assert "  block rack05: gb200-r05-n[01-12,14-18] (17 nodes)" in first.stdout
    assert "  block rack07: placeholder, no nodes yet" in first.stdout
    validated = "yes, by " if validate_args() else "no (slurm_topology_validate_command is empty)"
    assert f"validated before writing: {validated}" in first.stdout
    assert f"{output_of(inventory)}/topology.yaml: changed" in first.stdout
    assert f"{output_of(inventory)}/slurm.conf: seeded, then changed" in first.stdout

    second, (changed, failed) = run_site(inventory)
    assert second.returncode == 0 and (changed, failed) == (0, 0), second.stdout
    assert "[WARNING]" not in second.stdout + second.stderr, second.stdout + second.stderr
    assert "topology.yaml: unchanged" in second.stdout

    # Day 2: rack07's trays arrive.
    def rack07_arrives(data):
        rack07 = data["topology_provider"]["params"]["domains"][6]
        assert rack07["name"] == "rack07"
        rack07["nodes"] = "gb200-r07-n[01-18]"

    edit_topology(inventory, rack07_arrives)
    before = {path.name: path.read_bytes() for path in output.iterdir()}
    check, (changed, failed) = run_site(inventory, "--check", "--diff")
    assert "topology.yaml: would change" in check.stdout
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


def test_quarantined_nodes_are_named_in_the_summary_and_the_others_are_written(inventory):
    """A host whose name Slurm cannot hold and eleven trays out of their NVLink fabric: the run goes on without
    them, and the summary names the first 10 with why, then how many more (the warnings line says it too)."""
    evil = "gb200-r09-n01,evil"
    out_of_fabric = [f"gb200-r01-n{n:02d}" for n in range(1, 12)]
    outputs = {evil: "3bd4c4b2-4a2c-4b1f-9b4e-7a8b1c2d3e4f, 1\n"}  # a valid clique: only the name is wrong
    outputs.update(dict.fromkeys(out_of_fabric, UNHEALTHY_TRAY))
    edit_topology(inventory, lambda data: data["topology_provider"]["params"].update(
        accelerator={"source": "nvidia_smi", "nvidia_smi": outputs}))
    result, (_changed, failed) = run_site(inventory)
    assert result.returncode == 0 and failed == 0, result.stdout + result.stderr
    assert '"quarantined nodes (in no block): 12",' in result.stdout
    # JSON result format: each line of the summary is one JSON string.
    assert f"\"  '{evil}' (invalid, nvidia_smi): " in result.stdout  # the raw identifier, escaped
    for node in out_of_fabric[:9]:
        assert f'"  {node} (unhealthy, nvidia_smi): nvidia-smi output of {node}, row 1: fabric.state is ' \
            in result.stdout
    assert f'"  {out_of_fabric[9]} (' not in result.stdout and '"  and 2 more",' in result.stdout
    # slurm_topology got the model from topology_info: its own warnings report the quarantine too.
    assert f"warnings: 12 nodes quarantined (left out of the map): '{evil}' (" in result.stdout
    topology = (output_of(inventory) / "topology.yaml").read_text()
    nvl72 = next(entry for entry in yaml.safe_load(topology) if entry["topology"] == "nvl72")
    assert [block.get("nodes") for block in nvl72["block"]["blocks"]] == [
        "gb200-r01-n[12-18]", "gb200-r02-n[01-18]", "gb200-r03-n[01-18]", "gb200-r04-n[01-18]",
        "gb200-r05-n[01-12,14-18]", "gb200-r06-n[01-18]", None, "gb200-r08-n[01-18]"]
    assert "evil" not in topology and "gb200-r09" not in topology


def test_racks_not_whole_are_named_in_the_summary(inventory):
    """nvidia-smi's platform fields place rack 1's trays: one tray out of its fabric and one that reports
    nothing make the rack not whole, and the summary says so (the same filter serves k8s.yml)."""
    trays = rack("gb200-r01-n", "4b1d9c3e-7a25-4f60-9e8b-d2c5a7f01e36", "1821124000123", skip=(5,),
                 changes={2: {"fabric__state": "In Progress"}})
    edit_topology(inventory, lambda data: data["topology_provider"]["params"].update(
        accelerator={"source": "nvidia_smi", "nvidia_smi": {node: csv(gpus) for node, gpus in trays.items()}}))
    result, (_changed, failed) = run_site(inventory)
    assert result.returncode == 0 and failed == 0, result.stdout + result.stderr
    assert '"racks by hardware (domain, chassis): 1, not whole: 1",' in result.stdout, result.stdout
    assert ('"  4b1d9c3e-7a25-4f60-9e8b-d2c5a7f01e36.32766 (chassis 1821124000123): 16 of 18 trays schedulable, '
            'quarantined: gb200-r01-n03, missing: 1",') in result.stdout


def test_bad_inventory_fails_naming_the_field_and_writes_nothing(inventory):
    edit_topology(inventory, lambda data: data["topology_provider"]["params"]["domains"][0].update(
        nodes="gb200-r01-n[01-18"))
    result, (changed, failed) = run_site(inventory)
    assert result.returncode != 0 and failed == 1
    assert "params.domains[0].nodes: unbalanced '['" in result.stdout
    assert not output_of(inventory).exists()


def test_provider_creds_never_appear_in_verbose_output(tmp_path):
    """creds are no_log: not in the module invocation echo, not in results or errors, even at -vvvv.

    simulation takes no creds, so the provider's spec rejects the key: the error names it, never its value.
    """
    secret = "s3cr3t-token-value-7f1c"
    playbook = tmp_path / "creds.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Discover with credentials", "hosts": "localhost", "gather_facts": False,
        "tasks": [{"name": "Discover", "aifactory.topology.topology_info": {"provider": {
            "name": "simulation", "params": {"model_path": str(REPO / "tests/fixtures/topograph/small-tree.yaml")},
            "creds": {"token": secret}}}, "register": "found", "ignore_errors": True},
            {"name": "Show", "ansible.builtin.debug": {"var": "found"}}],
    }]))
    result = run_playbook("-vvvv", "-i", "localhost,", "-c", "local",
                          "-e", "ansible_python_interpreter={{ ansible_playbook_python }}", playbook)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "provider simulation: creds has unknown keys: token" in result.stdout  # the module ran and failed
    assert secret not in result.stdout + result.stderr
