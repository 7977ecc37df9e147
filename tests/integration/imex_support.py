"""The imex role's test cluster: a temporary inventory, playbook, fact cache and per-host file tree."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import yaml

from tests.ansible_run import ANSIBLE_PLAYBOOK, REPO

# Inventory order on purpose differs from the domain order (n10 first): the files must not.
RACKS = {
    "rack01": {"gb200-r01-n10": "10.0.1.10", "gb200-r01-n2": "10.0.1.2", "gb200-r01-n1": "10.0.1.1"},
    "rack02": {"gb200-r02-n2": "10.0.2.2", "gb200-r02-n1": "10.0.2.1", "gb200-r02-n10": "10.0.2.10"},
}
MEMBERS = [host for rack in RACKS.values() for host in rack]
SERVICE = "login01"
ORDER = ["n1", "n2", "n10"]

PLAYBOOK = [
    {"name": "Discover the topology", "hosts": "localhost", "gather_facts": False, "tasks": [{
        "name": "Discover", "register": "topology_discovered",
        "aifactory.topology.topology_info": {"provider": {"name": "inventory", "params": {
            "domains": [{"name": "rack01", "nodes": "gb200-r01-n[1-2,10]"},
                        {"name": "rack02", "nodes": "gb200-r02-n[1-2,10]"}],
            "nodes": [{"nodes": SERVICE}]}}}}]},
    {"name": "IMEX on the compute nodes", "hosts": "imex_nodes", "gather_facts": False, "roles": [{
        "role": "aifactory.topology.imex",
        "imex_topology": "{{ hostvars['localhost'].topology_discovered.topology }}"}]},
]


class Cluster:
    """A temporary inventory, playbook, fact cache and per-host file tree."""

    def __init__(self, root: Path):
        self.root = root
        self.hosts: dict[str, dict] = {}
        for rack in RACKS.values():
            for host, address in rack.items():
                self.hosts[host] = {"imex_address": address}
        self.hosts[SERVICE] = {}
        self.group_vars = {
            "ansible_connection": "local",
            "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "imex_config_dir": f"{root}/hosts/{{{{ inventory_hostname }}}}/etc/nvidia-imex",
            "imex_package_install": False,
            "imex_service_manage": False,
            # No driver here: a missing version file, and a "nvidia-smi" that prints nothing.
            "imex_driver_version_file": f"{root}/no-driver",
            "imex_nvidia_smi_command": ["true"],
        }
        self.facts: dict[str, dict] = {}
        (root / "playbook.yml").write_text(yaml.safe_dump(PLAYBOOK, sort_keys=False))

    def path(self, host, name="nodes_config.cfg") -> Path:
        return self.root / "hosts" / host / "etc" / "nvidia-imex" / name

    def written(self) -> list[str]:
        hosts = self.root / "hosts"
        return sorted(str(p.relative_to(self.root)) for p in hosts.rglob("*") if p.is_file()) if hosts.exists() else []

    def _write_inventory(self):
        inventory = {"all": {"vars": self.group_vars, "children": {"imex_nodes": {"hosts": self.hosts}}}}
        (self.root / "inventory.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))

    def _env(self):
        env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_FORCE_COLOR="0", ANSIBLE_FORKS="10",
                   # One line per message (no YAML folding or quote doubling) for the assertions.
                   ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_CACHE_PLUGIN="ansible.builtin.jsonfile",
                   ANSIBLE_CACHE_PLUGIN_CONNECTION=str(self.root / "facts"))
        env.pop("ANSIBLE_STDOUT_CALLBACK", None)
        return env

    def seed_facts(self):
        """Put self.facts into the fact cache the way a real gathering would (set_fact cacheable)."""
        seed = [{"name": "Seed facts", "hosts": ",".join(self.facts), "gather_facts": False, "tasks": [{
            "name": "Seed", "ansible.builtin.set_fact": {
                "cacheable": True, "ansible_os_family": "{{ seeded.os_family | default(omit) }}",
                "ansible_default_ipv4": "{{ seeded.default_ipv4 | default(omit) }}",
                "ansible_ib0": "{{ seeded.ib0 | default(omit) }}"},
            "vars": {"seeded": "{{ seed_facts[inventory_hostname] }}"}}]}]
        (self.root / "seed.yml").write_text(yaml.safe_dump(seed))
        result = self.run("-e", json.dumps({"seed_facts": self.facts}), playbook="seed.yml")
        assert result.returncode == 0, result.output

    def run(self, *extra, playbook="playbook.yml"):
        self._write_inventory()
        command = [ANSIBLE_PLAYBOOK, "-i", str(self.root / "inventory.yml"), str(self.root / playbook), *extra]
        result = subprocess.run(command, capture_output=True, text=True, env=self._env(), cwd=REPO, check=False)
        result.recap = {
            match["host"]: {key: int(match[key]) for key in ("ok", "changed", "failed", "skipped")}
            for match in re.finditer(r"^(?P<host>\S+)\s+: ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+"
                                     r"unreachable=\d+\s+failed=(?P<failed>\d+)\s+skipped=(?P<skipped>\d+)",
                                     result.stdout, re.MULTILINE)}
        result.output = result.stdout + result.stderr
        return result
