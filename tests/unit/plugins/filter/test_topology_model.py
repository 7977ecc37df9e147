from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aifactory.topology.plugins.filter.topology_model import FilterModule

MODEL = {
    "format": "aifactory.topology/v1",
    "switches": {"leaf1": None},
    "nodes": [
        {"nodes": "n[1-2,10]", "switch": "leaf1", "domain": "rack02"},
        {"nodes": "m[1-2]", "switch": "leaf1", "domain": "rack01"},
        {"nodes": "login01", "switch": "leaf1"},
    ],
    "domain_order": ["rack02", "rack03", "rack01"],
}
FILTERS = FilterModule().filters()


def test_topology_domains_by_domain_and_by_node():
    domains = FILTERS["topology_domains"]
    assert domains(MODEL) == {"rack02": ["n1", "n2", "n10"], "rack01": ["m1", "m2"]}
    assert list(domains(MODEL)) == ["rack02", "rack01"]
    assert domains(MODEL, include_empty=True)["rack03"] == []
    assert domains(MODEL, "node") == {"n1": "rack02", "n2": "rack02", "n10": "rack02", "m1": "rack01", "m2": "rack01"}
    with pytest.raises(AnsibleFilterError, match="by must be 'domain' or 'node', got 'rack'"):
        domains(MODEL, "rack")


def test_invalid_model_fails_naming_the_field():
    with pytest.raises(AnsibleFilterError, match=r"topology model: model.nodes\[0\].nodes: unbalanced"):
        FILTERS["topology_domains"]({**MODEL, "nodes": [{"nodes": "n[1-2"}]})
    with pytest.raises(AnsibleFilterError, match="topology model: model.format must be"):
        FILTERS["imex_peers"]({}, [])


def test_imex_peers_plans_and_checks_records():
    records = [{"host": name, "in_play": True, "address": f"10.0.0.{index}"}
               for index, name in enumerate(["n10", "n2", "n1", "login01"], start=1)]
    plan = FILTERS["imex_peers"](MODEL, records)
    assert plan["errors"] == []
    assert plan["domains"] == {"rack02": {"nodes": ["n1", "n2", "n10"], "hosts": ["n1", "n2", "n10"],
                                          "addresses": ["10.0.0.3", "10.0.0.2", "10.0.0.1"],
                                          "errors": []}}
    assert plan["hosts"]["login01"]["domain"] is None
    with pytest.raises(AnsibleFilterError, match="records must be a list of mappings"):
        FILTERS["imex_peers"](MODEL, {"n1": "10.0.0.1"})
    with pytest.raises(AnsibleFilterError, match=r"records\[1\] has no host"):
        FILTERS["imex_peers"](MODEL, [records[0], {"address": "10.0.0.9"}])


def test_imex_fleet_and_imex_applied_round_trip_through_the_state_file_text():
    records = [{"host": name, "in_play": True, "address": f"10.0.0.{index}"}
               for index, name in enumerate(["n10", "n2", "n1", "login01"], start=1)]
    fleet = FILTERS["imex_fleet"](MODEL, records, {}, "", "r1")
    assert fleet["visit"] == ["n10", "n2", "n1"] and fleet["state_problem"] is None
    addresses = fleet["plan"]["domains"]["rack02"]["addresses"]
    state = FILTERS["imex_applied"](fleet, {host: addresses for host in ("n1", "n2", "n10")})
    assert state == {"format": 1, "domains": {"rack02": fleet["digests"]["rack02"]}}
    again = FILTERS["imex_fleet"](MODEL, records, {}, json.dumps(state), "r1")
    assert again["visit"] == [] and again["status"] == {"rack02": "unchanged"}
    assert FILTERS["imex_fleet"](MODEL, records, {}, "garbage", "r1")["state_problem"].startswith("not JSON")
    with pytest.raises(AnsibleFilterError, match="imex_fleet's result"):
        FILTERS["imex_applied"]({}, {})


def test_imex_driver_branch_reads_the_version_file_and_nvidia_smi_as_imex_config_does():
    branch = FILTERS["imex_driver_branch"]
    version_file = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  "
                    "(dvs-builder@U16-I3-B13-3-1)  Tue Mar 25 21:40:17 UTC 2025\nGCC version:  gcc 12.2.0\n")
    assert branch(version_file) == "570"
    assert branch("580.95.05\n580.95.05\n", from_nvidia_smi=True) == "580"
    assert branch("") == "" and branch("No devices were found\n", True) == ""
    with pytest.raises(AnsibleFilterError, match="imex_driver_branch: the input must be text, got list"):
        branch(["570.1"])


SETTINGS_SPEC = {
    "imex_config": {"type": "dict", "default": {}},
    "imex_config_extra_keys": {"type": "list", "elements": "str", "default": []},
    "imex_nvidia_smi_command": {"type": "list", "elements": "str", "default": ["nvidia-smi"]},
    "imex_mode": {"type": "str", "choices": ["slurm", "k8s"], "default": "slurm"},
    "imex_driver_branch": {"type": "str", "default": ""},
    "imex_nodes_config_path": {"type": "path"},
}
DOCUMENTED = ["LOG_LEVEL", "SERVER_PORT", "IMEX_NODE_CONFIG_FILE"]


def test_imex_settings_types_text_as_the_spec_says():
    settings = FILTERS["imex_settings"]
    typed = settings({"imex_config": '{"LOG_LEVEL": 2, "NEW_KEY": "x"}', "imex_config_extra_keys": "NEW_KEY",
                      "imex_nvidia_smi_command": '["/usr/bin/nvidia-smi", "-q"]', "imex_mode": "slurm",
                      "imex_driver_branch": 570}, SETTINGS_SPEC, DOCUMENTED)
    assert typed == {"config": {"LOG_LEVEL": 2, "NEW_KEY": "x"}, "config_extra_keys": ["NEW_KEY"],
                     "nvidia_smi_command": ["/usr/bin/nvidia-smi", "-q"], "mode": "slurm", "driver_branch": "570"}
    # k8s mode writes no config.cfg: its keys are not checked.
    assert settings({"imex_config": {"ANY": 1}, "imex_mode": "k8s"}, SETTINGS_SPEC, DOCUMENTED) == {
        "config": {"ANY": 1}, "mode": "k8s"}
    # A mode outside the spec's choices is named, as Ansible's check of a role's arguments names it.
    with pytest.raises(AnsibleFilterError, match="value of imex_mode must be one of: slurm, k8s, got: ssh"):
        settings({"imex_mode": "ssh"}, SETTINGS_SPEC, DOCUMENTED)


def test_imex_settings_names_every_problem_of_the_host_at_once():
    settings = FILTERS["imex_settings"]
    with pytest.raises(AnsibleFilterError) as raised:
        settings({"imex_config": {"NOT_A_KEY": 1, "IMEX_NODE_CONFIG_FILE": "/x", "LOG_LEVEL": "two\nlines",
                                  "SERVER_PORT": [1]}, "imex_config_extra_keys": [], "imex_mode": "slurm",
                  "imex_driver_branch": "r570", "imex_nodes_config_path": "/etc/nvidia-imex/nodes_config.cfg"},
                 SETTINGS_SPEC, DOCUMENTED)
    problems = str(raised.value).split("\n")
    assert problems == [
        "imex_config: unknown key(s) NOT_A_KEY. Documented keys: LOG_LEVEL, SERVER_PORT, IMEX_NODE_CONFIG_FILE. "
        "To use a key of a newer IMEX release, add it to imex_config_extra_keys.",
        "imex_config: IMEX_NODE_CONFIG_FILE is set by the role from imex_nodes_config_path (now "
        "/etc/nvidia-imex/nodes_config.cfg), where it writes the peer list; set imex_nodes_config_path instead.",
        "imex_config: the value of SERVER_PORT, LOG_LEVEL must be one line of text, a number, a boolean (written 1 or 0) "
        "or null (key left out).",
        "imex_driver_branch must be the driver's major version such as 570, or empty to detect it; got r570",
    ]
    # A value of the wrong type is named too.
    with pytest.raises(AnsibleFilterError, match="imex_config_extra_keys"):
        settings({"imex_config_extra_keys": {"a": 1}, "imex_mode": "slurm"}, SETTINGS_SPEC, DOCUMENTED)
    # Booleans, numbers and null are values config.cfg can hold; an empty branch means detect it.
    assert settings({"imex_config": {"LOG_LEVEL": True, "SERVER_PORT": 1.5}, "imex_mode": "slurm", "imex_driver_branch": ""},
                    SETTINGS_SPEC, DOCUMENTED)
