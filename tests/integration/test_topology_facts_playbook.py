"""topology_facts gathered by a real ansible-playbook on several hosts, each with an nvidia-smi in the shape
its driver prints (tests/nvidia_smi_shapes.py), then the discovery with those facts on the controller:
one query per tray, the racks named by the hardware, HGX and PCIe nodes without a domain and without a
warning, and a tray cabled into another rack than the inventory says reported by name."""

from __future__ import annotations

import json

import yaml

from tests import nvidia_smi_shapes as shapes
from tests.ansible_run import ansible_env, recap, run_playbook

UUID = "4b1d9c3e-7a25-4f60-9e8b-d2c5a7f01e36"
PLAYBOOK = """
- name: Gather the fabric facts of every GPU node
  hosts: gpu
  gather_facts: false
  tasks:
    - name: Gather
      aifactory.topology.topology_facts:
        gather: [hostname, nvlink]
        nvidia_smi_path: "{{ fake_nvidia_smi }}"

- name: Discover with those facts
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Discover
      aifactory.topology.topology_info:
        provider:
          name: inventory
          params:
            domains: "{{ inventory_racks }}"
            hosts: "{{ dict(groups.gpu | zip(groups.gpu | map('extract', hostvars, 'topology_host'))) }}"
            accelerator:
              source: nvidia_smi
              rack_trays: 3
              nvidia_smi: "{{ dict(groups.gpu | zip(groups.gpu | map('extract', hostvars, 'topology_node'))) }}"
      register: discovered

    - name: Save the result
      ansible.builtin.copy:
        content: "{{ discovered | to_json }}"
        dest: "{{ result_file }}"
        mode: "0600"
"""


def run(tmp_path, racks):
    """Four hosts: three GB200 trays (tray 0-2 of one chassis) and an HGX node; ``racks`` the inventory's domains."""
    trays = {f"gb-n0{index + 1}": shapes.tray("gb200", slot=10 + index, tray=index) for index in range(3)}
    trays["hgx-01"] = shapes.tray("hgx")
    hosts = {}
    for name, gpus in trays.items():
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                       "fake_nvidia_smi": shapes.write_fake_nvidia_smi(tmp_path / name, gpus), "topology_host": {}}
    inventory = {"all": {"children": {"gpu": {"hosts": hosts}},
                         "hosts": {"localhost": {"ansible_connection": "local",
                                                 "ansible_python_interpreter": "{{ ansible_playbook_python }}"}},
                         "vars": {"inventory_racks": racks, "result_file": str(tmp_path / "result.json")}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    result = run_playbook("-i", str(tmp_path / "inventory.yml"), str(tmp_path / "play.yml"), env=ansible_env())
    assert result.returncode == 0, result.stdout + result.stderr
    return result, json.loads((tmp_path / "result.json").read_text())


def test_facts_of_a_rack_and_an_hgx_node_give_the_rack_and_no_warning(tmp_path):
    result, discovered = run(tmp_path, [])
    assert "[WARNING]" not in result.stdout + result.stderr
    for name in ("gb-n01", "gb-n02", "gb-n03", "hgx-01"):
        assert (tmp_path / name / "calls.log").read_text().count("\n") == 1  # one nvidia-smi process per node
        assert recap(result.stdout, name) == (0, 0)
    assert discovered["summary"]["racks"] == [{
        "rack": f"{UUID}.32766 (chassis 1821124000123)", "domain": f"{UUID}.32766",
        "chassis_serial_number": "1821124000123", "trays": ["gb-n01", "gb-n02", "gb-n03"], "schedulable": 3,
        "expected_trays": 3}]
    assert discovered["summary"]["nodes_without_domain"] == 1 and discovered["summary"]["quarantined"] == 0


def test_a_tray_the_inventory_puts_in_another_rack_is_named_with_both(tmp_path):
    racks = [{"name": "rack05", "nodes": "gb-n0[1-2]"}, {"name": "rack06", "nodes": "gb-n03"}]
    result, discovered = run(tmp_path, racks)
    warning = (f"NVLink domain {UUID}.32766 contradicts the provider's domains: its nodes are gb-n[01-02] in rack05; "
               "gb-n03 in rack06")
    assert discovered["summary"]["warnings"] == [warning] and warning in result.stdout + result.stderr
