# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the IMEX part of site.yml on N simulated GPU nodes, beside a ping play on the same hosts.

N = 18 x racks (``--racks 1,2,4,...,64``: 18 ... 1,152 nodes). Every node is an inventory host with
``ansible_connection: local`` and its own directory as its IMEX paths (as tests/integration/test_role_imex.py
does), in the role's cheapest form (package and service not managed, a driver version file to read). The
topology comes from the ``inventory`` provider, one NVLink domain per rack, as site.yml's discovery play.

For each size, in order, each one ``ansible-playbook`` process (forks ``--forks``):

* ``ping``: one ``ansible.builtin.ping`` task on every node (the floor of any play that visits the nodes);
* ``role, every node``: the imex role on every node, as site.yml ran it before playbooks/imex.yml (new files);
  with ``--collection DIR`` first the same with that copy of the collection (``role (--collection)``);
* ``first run``: discovery + playbooks/imex.yml, nothing applied yet (the state file is new);
* ``steady state``: the same again, nothing changed;
* ``one rack changed``: one node of the first rack gets a new address;
* ``verify all``: ``-e imex_verify=all``, every node visited, nothing to change;
* ``facts: first run``: playbooks/node_facts.yml (``node_facts_gather``: hostname, infiniband, nvlink, network;
  no nvidia-smi or HCA here, so the modules find none), the cache new;
* ``facts: steady state``: the same again, every entry younger than the age;
* ``facts: one rack event``: the same with an Event-Driven Ansible event naming one rack's 18 nodes
  (``ansible_eda.event``, as ansible-rulebook passes it): that rack refreshed;
* ``event path, one rack``: what the slurm_topology rulebook's run of site.yml costs for that event: the
  facts play, the discovery and playbooks/imex.yml (nothing to change in IMEX).

``--goals-only`` runs only the ping, the first run, the steady state and one rack changed (the goals of the
docs, at sizes where every phase would take too long). ``--seeded`` skips every phase that visits all
nodes (the ping play too) and seeds the IMEX applied-state file and the node facts cache instead, with
the same filters that record a full rollout (``imex_fleet`` + ``imex_applied``,
``node_facts_select`` + ``node_facts_merge``): for the steady state and the one-rack phases at sizes where
a full rollout takes too long on this machine.

Wall time and CPU time (user + system of ansible-playbook and every process it starts) of each; the
table gives CPU seconds per node and against the ping play. It only measures and prints (and writes
bench/results/site_scale.json); nothing is asserted. ``--collection DIR`` (a directory holding
ansible_collections/aifactory/topology, e.g. an older commit unpacked with ``git archive``) adds the role
phase with that copy, to compare. Usage: ``python bench/site_scale.py [--racks 1,2,4] [--forks 10]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
RACK_SIZE = 18
PLAYBOOK_BIN = str(Path(sys.executable).parent / "ansible-playbook")


def inventory(root: Path, racks: int, moved: bool = False) -> dict:
    hosts = {}
    for rack in range(1, racks + 1):
        for node in range(1, RACK_SIZE + 1):
            address = f"10.{rack // 256}.{rack % 256}.{node}"
            if moved and rack == 1 and node == 1:
                address = "10.0.1.200"
            hosts[f"gpu-r{rack:02d}-n{node}"] = {"imex_address": address}
    settings = dict(setting.split("=", 1) for setting in ARGS.set)
    return {"all": {"vars": {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "imex_config_dir": f"{root}/hosts/{{{{ inventory_hostname }}}}/etc/nvidia-imex",
        "imex_package_install": False,
        "imex_service_manage": False,
        "imex_driver_version_file": str(root / "nvidia-version"),
        "imex_state_file": str(root / "state" / "imex-applied.json"),
        "node_facts_cache_file": str(root / "state" / "node-facts.json"),
        "node_facts_hosts": "gpu_nodes",
        "node_facts_gather": ["hostname", "infiniband", "nvlink", "network"],
        "topology_provider": {"name": "inventory", "params": {"domains": [
            {"name": f"rack{rack:02d}", "nodes": f"gpu-r{rack:02d}-n[1-{RACK_SIZE}]"} for rack in range(1, racks + 1)]}},
    } | settings, "children": {"gpu_nodes": {"hosts": hosts}}}}


DISCOVER = {"name": "Discover the topology", "hosts": "localhost", "gather_facts": False, "tasks": [{
    "name": "Discover the topology", "register": "topology_discovered",
    "aifactory.topology.topology_info": {"provider": "{{ topology_provider }}"}}]}

PLAYBOOKS = {
    "ping.yml": [{"name": "Ping", "hosts": "gpu_nodes", "gather_facts": False,
                  "tasks": [{"name": "Ping", "ansible.builtin.ping": None}]}],
    "role.yml": [DISCOVER, {"name": "IMEX on every node", "hosts": "gpu_nodes", "gather_facts": False, "roles": [{
        "role": "aifactory.topology.imex", "imex_topology": "{{ hostvars['localhost'].topology_discovered.topology }}"}]}],
    "site.yml": [DISCOVER, {"name": "IMEX", "ansible.builtin.import_playbook": str(REPO / "playbooks" / "imex.yml")}],
    "facts.yml": [{"name": "Node facts", "ansible.builtin.import_playbook": str(REPO / "playbooks" / "node_facts.yml")}],
    "event.yml": [{"name": "Node facts", "ansible.builtin.import_playbook": str(REPO / "playbooks" / "node_facts.yml")},
                  DISCOVER, {"name": "IMEX", "ansible.builtin.import_playbook": str(REPO / "playbooks" / "imex.yml")}],
    # --seeded: the state a full rollout and a full gathering leave, recorded by the filters that record them.
    "seed.yml": [DISCOVER, {"name": "Seed", "hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "Plan every domain", "ansible.builtin.import_role": {"name": "aifactory.topology.imex", "tasks_from": "select.yml"},
         "vars": {"imex_topology": "{{ hostvars['localhost'].topology_discovered.topology }}"}},
        {"name": "Record every domain as applied", "ansible.builtin.copy": {
            "dest": "{{ imex_state_file }}", "mode": "0600",
            "content": "{{ imex__fleet | aifactory.topology.imex_applied(reports) | to_json }}"},
         "vars": {"reports": "{{ dict(imex__fleet.visit | zip(imex__fleet.visit | map('extract', imex__fleet.plan.hosts)"
                             " | map(attribute='domain') | map('extract', imex__fleet.plan.domains)"
                             " | map(attribute='addresses'))) }}"}},
        {"name": "Record every node's facts as gathered", "ansible.builtin.copy": {
            "dest": "{{ node_facts_cache_file }}", "mode": "0600",
            "content": "{{ '' | aifactory.topology.node_facts_select(groups.gpu_nodes, node_facts_gather, 86400)"
                       " | aifactory.topology.node_facts_merge(gathered) | to_json }}"},
         "vars": {"gathered": "{{ dict(groups.gpu_nodes | zip(groups.gpu_nodes | map('extract', hostvars, 'imex_address')"
                              " | map('community.general.dict_kv', 'address') | map('community.general.dict_kv', 'default_ipv4')"
                              " | map('community.general.dict_kv', 'network'))) }}"}},
    ]}],
}


def run(root: Path, playbook: str, collections: str, *extra) -> dict:
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=collections,
               ANSIBLE_FORKS=str(ARGS.forks), ANSIBLE_NOCOLOR="1", ANSIBLE_HOST_KEY_CHECKING="0")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    result = subprocess.run([PLAYBOOK_BIN, "-i", str(root / "inventory.yml"), str(root / playbook), *extra],
                            capture_output=True, text=True, env=env, cwd=root, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        (root / "failed.log").write_text(result.stdout + result.stderr)
        sys.exit(f"{playbook} {' '.join(extra)} failed ({result.returncode}); its output: {root / 'failed.log'}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    visited = sum(1 for line in result.stdout.splitlines() if line.startswith("gpu-r") and " : ok=" in line)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "visited": visited}


def measure(racks: int, collections: str, old_collections: str) -> list[dict]:
    nodes = racks * RACK_SIZE
    root = Path(tempfile.mkdtemp(prefix=f"site-scale-{nodes}-"))
    try:
        version = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.124.06  Release Build  (dvs-builder@U16-I3-B13-3-1)\n"
        (root / "nvidia-version").write_text(version)
        (root / "inventory.yml").write_text(yaml.safe_dump(inventory(root, racks)))
        for name, plays in PLAYBOOKS.items():
            (root / name).write_text(yaml.safe_dump(plays, sort_keys=False))
        # --seeded measures only what does not visit every node: no ping (at 1,152 nodes it alone is minutes).
        rows = [] if ARGS.seeded else [("ping", run(root, "ping.yml", collections))]
        if ARGS.seeded:
            (root / "state").mkdir()
            rows.append(("seed (controller)", run(root, "seed.yml", collections)))
        else:
            if old_collections:
                rows.append(("role (--collection)", run(root, "role.yml", old_collections)))
                shutil.rmtree(root / "hosts")
            if not ARGS.goals_only:
                rows.append(("role, every node", run(root, "role.yml", collections)))
                shutil.rmtree(root / "hosts")
            rows.append(("first run", run(root, "site.yml", collections)))
        rows.append(("steady state", run(root, "site.yml", collections)))
        (root / "inventory.yml").write_text(yaml.safe_dump(inventory(root, racks, moved=True)))
        rows.append(("one rack changed", run(root, "site.yml", collections)))
        if ARGS.goals_only:
            return _rows(racks, nodes, rows)
        if not ARGS.seeded:
            rows.append(("verify all", run(root, "site.yml", collections, "-e", "imex_verify=all")))
            rows.append(("facts: first run", run(root, "facts.yml", collections)))
        rows.append(("facts: steady state", run(root, "facts.yml", collections)))
        event = {"ansible_eda": {"event": {"topology_change": {"source": "slurm_nodes", "count": RACK_SIZE, "changes": [
            {"kind": "slurm_node", "name": f"gpu-r01-n{node}", "change": "down"} for node in range(1, RACK_SIZE + 1)]}}}}
        rows.append(("facts: one rack event", run(root, "facts.yml", collections, "-e", json.dumps(event))))
        rows.append(("event path, one rack", run(root, "event.yml", collections, "-e", json.dumps(event))))
    except SystemExit:
        ARGS.keep = True
        raise
    finally:
        if not ARGS.keep:
            shutil.rmtree(root, ignore_errors=True)
    return _rows(racks, nodes, rows)


def _rows(racks, nodes, rows):
    ping = None if ARGS.seeded else rows[0][1]["cpu_s"]
    return [dict(racks=racks, nodes=nodes, phase=phase, cpu_per_node=round(r["cpu_s"] / nodes, 3),
                 vs_ping=round(r["cpu_s"] / ping, 2) if ping else None, **r) for phase, r in rows]


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--racks", default="1,2,4", help="comma-separated rack counts (18 nodes each), e.g. 1,2,4,8,16,32,64")
    parser.add_argument("--forks", type=int, default=10)
    parser.add_argument("--collection", help="a directory holding ansible_collections/ for the 'role, every node' phase")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="an inventory variable of every node, e.g. imex_driver_branch=570 (no driver detection)")
    parser.add_argument("--keep", action="store_true", help="keep each size's temporary directory")
    parser.add_argument("--seeded", action="store_true",
                        help="seed the state files as a full rollout records them instead of running the full phases")
    parser.add_argument("--goals-only", action="store_true",
                        help="only the phases of the issue's goals: ping, first run, steady state, one rack changed")
    ARGS = parser.parse_args()
    collections = str(REPO / ".collections")
    old = str(Path(ARGS.collection).resolve()) if ARGS.collection else None
    rows = []
    print(f"{'racks':>5} {'nodes':>6}  {'phase':<22} {'visited':>7} {'wall s':>8} {'CPU s':>8} {'CPU s/node':>10} {'x ping':>7}")
    for racks in (int(value) for value in ARGS.racks.split(",")):
        for row in measure(racks, collections, old):
            rows.append(row)
            print(f"{row['racks']:>5} {row['nodes']:>6}  {row['phase']:<22} {row['visited']:>7} {row['wall_s']:>8.1f} "
                  f"{row['cpu_s']:>8.1f} {row['cpu_per_node']:>10.3f} {row['vs_ping'] if row['vs_ping'] is not None else '-':>7}",
                  flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / ("site_scale_seeded.json" if ARGS.seeded else "site_scale.json")).write_text(json.dumps({
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "forks": ARGS.forks, "seeded": ARGS.seeded, "collection_for_role_phase": old, "rows": rows}, indent=1))


ARGS = None

if __name__ == "__main__":
    main()
