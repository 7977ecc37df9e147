from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._engines.ansible_groups import group_safe, layout
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover

from ...conftest_paths import MODELS


def racks():
    topo = Topology()
    topo.add_switch("spine")
    topo.add_switch("S-2c5eab0300b879c0", parent="spine", name="A09-P1-IBLEAF-02-01")
    topo.add_switch("leaf-2", parent="spine")
    for n in range(1, 3):
        topo.add_node(f"gb200-r01-n{n:02d}", "S-2c5eab0300b879c0", "nvl-r01", "tray.a")
        topo.add_node(f"gb200-r02-n{n:02d}", "leaf-2", "nvl-r02")
    topo.add_node("login01", "leaf-2")
    topo.add_node("orphan")
    topo.declare_domain("nvl-r00")
    return topo.validate()


@pytest.mark.parametrize("name, safe", [
    ("domain_nvl-r01", "domain_nvl_r01"),
    ("switch_MF0;A09:MQM9701/U1", "switch_MF0_A09_MQM9701_U1"),
    ("6a4f2e1c-93b7.32766", "_6a4f2e1c_93b7_32766"),
    ("rack é 1", "rack___1"),
])
def test_group_safe_replaces_what_a_group_name_cannot_hold(name, safe):
    assert group_safe(name) == safe


def test_groups_follow_domains_and_the_switch_tree():
    result = layout(racks())
    assert result.group_hosts["domain_nvl_r01"] == ["gb200-r01-n01", "gb200-r01-n02"]
    assert result.group_hosts["domain_nvl_r02"] == ["gb200-r02-n01", "gb200-r02-n02"]
    assert result.group_hosts["domain_nvl_r00"] == []  # a declared rack without nodes yet
    # Switch groups use the display name and nest along the tree; leaves hold the hosts.
    assert sorted(result.group_children["switch_spine"]) == ["switch_A09_P1_IBLEAF_02_01", "switch_leaf_2"]
    assert result.group_hosts["switch_spine"] == []
    assert result.group_hosts["switch_A09_P1_IBLEAF_02_01"] == ["gb200-r01-n01", "gb200-r01-n02"]
    assert result.group_hosts["switch_leaf_2"] == ["gb200-r02-n01", "gb200-r02-n02", "login01"]
    assert result.hostvars["gb200-r01-n02"] == {
        "topology_domain": "nvl-r01", "topology_sub_domain": "tray.a",
        "topology_switches": ["A09-P1-IBLEAF-02-01", "spine"]}
    assert result.hostvars["orphan"] == {"topology_domain": None, "topology_sub_domain": None,
                                         "topology_switches": []}
    assert sorted(result.hostvars) == sorted(racks().nodes)


def test_prefixes_and_switches_off():
    result = layout(racks(), domain_prefix="rack_", switch_groups=False)
    assert sorted(result.group_hosts) == ["rack_nvl_r00", "rack_nvl_r01", "rack_nvl_r02"]
    assert result.hostvars["login01"]["topology_switches"] == ["leaf-2", "spine"]


def test_names_that_collide_after_sanitising_are_an_error_naming_both():
    topo = Topology()
    topo.add_node("a", domain="nvl-r01")
    topo.add_node("b", domain="nvl_r01")
    with pytest.raises(TopologyError, match="domain 'nvl-r01' and domain 'nvl_r01' both become group 'domain_nvl_r01'"):
        layout(topo.validate())
    topo = Topology()
    topo.add_switch("leaf.1")
    topo.add_switch("leaf-1")
    topo.add_node("a", "leaf.1")
    with pytest.raises(TopologyError, match="switch 'leaf-1' and switch 'leaf.1' both become group 'switch_leaf_1'"):
        layout(topo.validate())


def test_a_domain_and_a_switch_with_the_same_prefix_collide_and_reserved_names_are_refused():
    topo = Topology()
    topo.add_switch("r01")
    topo.add_node("a", "r01", "r01")
    with pytest.raises(TopologyError, match="switch 'r01' and domain 'r01' both become group 'x_r01'"):
        layout(topo.validate(), domain_prefix="x_", switch_prefix="x_")
    topo = Topology()
    topo.add_node("a", domain="all")
    with pytest.raises(TopologyError, match="domain 'all' would become the reserved group 'all'"):
        layout(topo.validate(), domain_prefix="")


def test_topograph_model_hosts_switch_paths_tier_0_first():
    result = layout(discover("simulation", {"model_path": str(MODELS / "medium.yaml")}))
    assert result.hostvars["1202"]["topology_switches"] == ["sw12", "sw21", "sw3"]
    assert result.group_children["switch_sw3"] == ["switch_sw21", "switch_sw22"]
    assert result.group_hosts["domain_nvl2"] == ["1201", "1202"]


def _nodes(*names, domain="rack02"):
    topo = Topology()
    topo.add_switch("leaf")
    for name in names:
        topo.add_node(name, "leaf", domain)
    return topo.validate()


@pytest.mark.parametrize("name, reason", [
    ("127.0.0.1", "is an IP address (the controller itself), not a host name"),
    ("::1", "is an IP address (the controller itself)"),
    ("10.0.0.5", "is an IP address, not a host name"),
    ("fe80::1%eth0", "is an IP address, not a host name"),
    ("localhost", "names the controller itself (a localhost name)"),
    ("LocalHost.", "names the controller itself (a localhost name)"),
    ("gpu.localhost", "names the controller itself (a localhost name)"),
    ("ip6-loopback", "names the controller itself (a localhost name)"),
    ("127.1", "names the controller itself (the resolver reads it as 127.0.0.1)"),
    ("0x7f000001", "names the controller itself (the resolver reads it as 127.0.0.1)"),
    ("0", "names the controller itself (the resolver reads it as 0.0.0.0)"),
    ("all", "is the name of Ansible's own group 'all'"),
    ("ungrouped", "is the name of Ansible's own group 'ungrouped'"),
    ("domain_rack02", "is the name of a group of this inventory too"),
    ("switch_leaf", "is the name of a group of this inventory too"),
    ("~gb200.*", "cannot be named in a host pattern"),
    ("!gpu01", "cannot be named in a host pattern"),
    ("&gpu01", "cannot be named in a host pattern"),
    ("@hosts.txt", "cannot be named in a host pattern"),
    ("gpu*", "cannot be named in a host pattern"),
    ("gpu?", "cannot be named in a host pattern"),
    ("gpu:22", "cannot be named in a host pattern"),
])
def test_a_node_ansible_treats_specially_is_skipped_with_a_warning_naming_it(name, reason):
    warnings = []
    result = layout(_nodes("gb200-r02-n01", name), warn=warnings.append)
    assert sorted(result.hostvars) == ["gb200-r02-n01"]
    assert result.group_hosts["domain_rack02"] == ["gb200-r02-n01"] == result.group_hosts["switch_leaf"]
    assert len(warnings) == 1 and warnings[0].startswith(f"node {name!r} is not made a host: its name {reason}")


@pytest.mark.parametrize("name", ["1201", "gb200-r01-n01", "node.cluster.example", "localhost-gpu01", "127.0.0.1x",
                                  "999.1.1.1", "domain_rack03", "all-gpus", "a!b", "10.0.0"])
def test_names_that_are_hosts_stay_hosts(name):
    warnings = []
    assert name in layout(_nodes(name), warn=warnings.append).hostvars and warnings == []


def test_a_group_name_is_refused_only_when_that_group_is_made():
    assert "domain_rack02" in layout(_nodes("domain_rack02", "a"), domain_groups=False).hostvars


def test_only_a_topology_whose_every_node_is_refused_fails():
    with pytest.raises(TopologyError, match=r"every node \(2\) has a name Ansible treats specially.*'127.0.0.1', is an IP"):
        layout(_nodes("127.0.0.1", "all"))


def test_many_refused_nodes_give_bounded_warnings():
    warnings = []
    names = [f"10.0.0.{n}" for n in range(1, 31)] + ["~" + "x" * 250]
    layout(_nodes("good", *names), warn=warnings.append)
    assert len(warnings) == 21 and "11 more nodes are not made hosts for such names: " in warnings[-1]
    assert max(len(message) for message in warnings) < 600
