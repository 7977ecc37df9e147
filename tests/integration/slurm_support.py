"""What the tests against the real slurmctld and the slurm_topology role share: slurm.conf, the inventory,
the example site's run, the blocks Slurm shows, scontrol inside the test bed's root."""

from __future__ import annotations

import json
import re

import slurm_testbed as testbed  # tools/ is on sys.path (tests/conftest.py)
import yaml

from tests.ansible_run import REPO, ansible_env, recap, run_playbook

SEED = REPO / "playbooks" / "files" / "example-slurm.conf"


def base_slurm_conf():
    nodes = {f"gb200-r{r:02d}-n{n:02d}" for r in (1, 2, 3) for n in range(1, 19)}
    conf = testbed.slurm_conf(nodes, partitions=[
        "PartitionName=gpu Nodes=gb200-r[01-03]-n[01-18] Default=YES MaxTime=INFINITE State=UP"])
    # The site's own settings, already in place: the role must keep every other line as it is.
    return conf + "SwitchType=switch/nvidia_imex\nSwitchParameters=imex_channel_count=2048\n"


def provider(rack03_nodes=None):
    domains = [{"name": "rack01", "nodes": "gb200-r01-n[01-18]", "switch": "leaf1"},
               {"name": "rack02", "nodes": "gb200-r02-n[01-18]", "switch": "leaf1"},
               {"name": "rack03", "switch": "leaf2"}]
    if rack03_nodes:
        domains[2]["nodes"] = rack03_nodes
    return {"name": "inventory", "params": {"switches": {"spine": None, "leaf1": "spine", "leaf2": "spine"},
                                            "domains": domains}}


def write_inventory(path, root, conf_dir, rack03_nodes=None, **extra):
    inventory = {"all": {
        "hosts": {"localhost": {"ansible_connection": "local",
                                "ansible_python_interpreter": "{{ ansible_playbook_python }}"}},
        "vars": {"topology_provider": provider(rack03_nodes)},
        "children": {"slurm_controller": {"hosts": {"ctl": {
            "ansible_connection": "community.general.chroot",
            "ansible_host": str(root),
            "ansible_python_interpreter": "/usr/bin/python3",
            "ansible_remote_tmp": "/tmp/.ansible-tmp",
            "slurm_topology_conf_dir": conf_dir,
            "slurm_topology_block_sizes": [18, 36],
            "slurm_topology_partitions": {"gpu": "nvl72"},
            "slurm_topology_admin_allow_groups": ["root"],
            **extra,
        }}}},
    }}
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))


def blocks(ctld, topology="nvl72"):
    shown = ctld.scontrol("show", "topology", topology)
    return re.findall(r"BlockName=(\S+) BlockIndex=(\d+)(?: Nodes=(\S+))?", shown)


def run_site(conf_dir, *extra):
    result = run_playbook("-i", REPO / "inventories" / "example", REPO / "playbooks" / "site.yml",
                          "-e", json.dumps({"slurm_topology_conf_dir": str(conf_dir)}), *extra,
                          # One line per message (no YAML folding of long paths) for the assertions.
                          env=ansible_env(ANSIBLE_CALLBACK_RESULT_FORMAT="json"))
    return result, recap(result.stdout, "localhost")


def scontrol_wrapper(ctld, tmp_path):
    """An executable that runs scontrol inside the chroot against this controller."""
    path = tmp_path / "scontrol"
    path.write_text(f'#!/bin/sh\nexec chroot {ctld.root} env SLURM_CONF={ctld.conf_dir}/slurm.conf scontrol "$@"\n',
                    encoding="utf-8")
    path.chmod(0o755)
    return path
