"""The slurm_topology rulebook end to end: REAL ansible-rulebook, REAL slurmctld (tools/slurm_testbed.py).

Proves: `scontrol update nodename=... state=down` and then `state=resume` on the live controller
each become exactly one event and one run of site.yml, whose slurm_topology role rewrites
topology.yaml and reconfigures slurmctld: `scontrol show topology` shows what each run discovered.
Also: a wrong scontrol command is a clear error at start, not an idle loop.
"""

from __future__ import annotations

import json

import pytest
import slurm_testbed as testbed
import yaml  # tools/ is on sys.path (tests/conftest.py)

from tests.integration.eda_support import TOKEN, Rulebook, free_port, require_rulebook, tls_files
# slurm_root is a fixture of tests/integration/conftest.py.
from tests.integration.slurm_support import base_slurm_conf, blocks, write_inventory

pytestmark = [pytest.mark.slurm, pytest.mark.playbook]
NODE = "gb200-r01-n01"


def rulebook_vars(root, conf_dir, tmp_path, **extra):
    certfile, keyfile, _cafile = tls_files(tmp_path)
    return {"slurm_topology_scontrol": ["chroot", str(root), "scontrol"],
            "slurm_topology_slurm_conf": f"{conf_dir}/slurm.conf",
            "slurm_topology_poll_interval": 0.5,
            "topology_debounce_delay": 1,
            "topology_regenerate_token": TOKEN, "topology_regenerate_certfile": certfile,
            "topology_regenerate_keyfile": keyfile, "topology_regenerate_port": free_port(), **extra}


def node_changes(events):
    return [(c["name"], c["change"]) for e in events for c in e["changes"] if c["kind"] == "slurm_node"]


# Two trays whose node facts (host name only) site.yml's node_facts.yml gathers, as local hosts: an event about
# NODE must gather NODE's again and leave OTHER's cached entry as it was.
OTHER = "gb200-r02-n01"


def write_inventory_with_facts(path, root, conf_dir, cache, rack03_nodes=None):
    write_inventory(path, root, conf_dir, rack03_nodes)
    inventory = yaml.safe_load(path.read_text())
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    inventory["all"]["children"]["facts_nodes"] = {"hosts": {NODE: local, OTHER: local}}
    inventory["all"]["vars"].update(node_facts_hosts="facts_nodes", node_facts_gather=["hostname"],
                                    node_facts_cache_file=str(cache))
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))


def gathered_at(cache):
    return {host: entry["gathered_at"] for host, entry in json.loads(cache.read_text())["nodes"].items()}


def test_down_and_resume_each_regenerate_once(slurm_root, tmp_path):
    require_rulebook()
    cache = tmp_path / "node-facts.json"
    with testbed.slurmctld(slurm_root, {"slurm.conf": base_slurm_conf()}) as ctld:
        inventory = tmp_path / "inventory.yml"
        write_inventory_with_facts(inventory, slurm_root, ctld.conf_dir, cache)
        with Rulebook("slurm_topology", inventory, rulebook_vars(slurm_root, ctld.conf_dir, tmp_path),
                      tmp_path) as rulebook:
            rulebook.wait_runs(1)  # start-up sync: topology.yaml written, slurmctld reconfigured
            assert blocks(ctld)[2] == ("rack03", "2", "")
            first = gathered_at(cache)  # the start-up run gathered both trays' facts
            assert sorted(first) == sorted([NODE, OTHER])

            # Discovery now sees nine nodes in rack03; the node-down event makes the one run that loads it.
            write_inventory_with_facts(inventory, slurm_root, ctld.conf_dir, cache, rack03_nodes="gb200-r03-n[01-09]")
            ctld.scontrol("update", f"nodename={NODE}", "state=down", "reason=eda-test")
            rulebook.wait_runs(2)
            assert blocks(ctld)[2] == ("rack03", "2", "gb200-r03-n[01-09]")
            assert node_changes(rulebook.events()) == [(NODE, "down")]
            # The event named NODE: its facts were gathered again, OTHER's (younger than a day) were not.
            second = gathered_at(cache)
            assert second[NODE] > first[NODE] and second[OTHER] == first[OTHER]

            write_inventory_with_facts(inventory, slurm_root, ctld.conf_dir, cache, rack03_nodes="gb200-r03-n[01-18]")
            ctld.scontrol("update", f"nodename={NODE}", "state=resume")
            rulebook.wait_runs(3)
            assert blocks(ctld)[2] == ("rack03", "2", "gb200-r03-n[01-18]")
            assert node_changes(rulebook.events()) == [(NODE, "down"), (NODE, "up")]
            assert len(rulebook.events()) == rulebook.runs() == 3
            assert ctld.process.poll() is None  # reconfigured, never restarted


def test_unusable_scontrol_is_an_error_at_start(tmp_path):
    require_rulebook()
    inventory = tmp_path / "inventory.yml"
    write_inventory(inventory, tmp_path, "/nonexistent")
    variables = rulebook_vars(tmp_path, "/nonexistent", tmp_path, slurm_topology_scontrol=["/bin/false"])
    rulebook = Rulebook("slurm_topology", inventory, variables, tmp_path).start()
    try:
        assert rulebook.wait_exit() != 0
    finally:
        rulebook.stop()
    log = rulebook.log()
    assert "aifactory.topology.slurm_nodes: /bin/false show nodes --json failed (exit 1)" in log, log[-3000:]
    assert rulebook.runs() == 0
