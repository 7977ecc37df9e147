"""Node names Ansible treats specially never become hosts of the topology inventory.

Node names come from InfiniBand node descriptions (any host with root on the fabric sets its own),
cloud instance names and model files. A name Ansible reads as an address of the controller, as
one of its own groups or as a host pattern would run tasks on the controller, break the parse or
hijack ``--limit``: the inventory layout skips such a node, with a warning naming it. Checked
against Ansible's own inventory and pattern matching, property-based.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader

from ansible_collections.aifactory.topology.plugins.module_utils._engines.ansible_groups import host_name_problem, layout
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology, name_problem

# What host patterns, resolvers and Ansible's inventory give a meaning to, and plain name characters.
PIECES = st.sampled_from([*"!&~@*?:.-+%()^$|{}<>;/_0x1a", "all", "ungrouped", "localhost", "127", "::", "domain_r1"])
NAMES = st.one_of(st.lists(PIECES, min_size=1, max_size=6).map("".join),
                  st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12))


def inventory_of(names):
    """Ansible's InventoryManager holding the layout of one rack ``r1`` with ``names`` as its nodes."""
    topo = Topology()
    for name in names:
        topo.add_node(name, domain="r1")
    groups = layout(topo.validate())
    manager = InventoryManager(loader=DataLoader(), sources=[])
    for group in groups.group_hosts:
        manager._inventory.add_group(group)
    for group, hosts in groups.group_hosts.items():
        for host in hosts:
            manager._inventory.add_host(host, group)
    manager._inventory.reconcile_inventory()  # what Ansible does once every source is parsed
    return manager, groups


@given(NAMES)
@example("127.0.0.1")
@example("all")
@example("domain_r1")
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_node_that_becomes_a_host_is_exactly_what_its_name_targets(name):
    if name_problem(name) is not None or name == "gb200-r01-n01":
        return
    manager, groups = inventory_of(["gb200-r01-n01", name])
    if name not in groups.hostvars:
        assert host_name_problem(name, groups.group_hosts) is not None
        return
    # --limit NAME, hosts: NAME: the host itself, not a group, not the controller, nothing else.
    assert [host.name for host in manager.get_hosts(pattern=name)] == [name]
    assert sorted(host.name for host in manager.get_hosts(pattern="all")) == sorted(["gb200-r01-n01", name])
    assert sorted(host.name for host in manager.get_hosts(pattern="domain_r1")) == sorted(["gb200-r01-n01", name])


@pytest.mark.parametrize("name", ["127.0.0.1", "::1", "localhost", "127.1", "all", "ungrouped", "domain_r1"])
def test_the_issue_names_never_reach_ansible(name):
    manager, groups = inventory_of(["gb200-r01-n01", name])
    assert list(groups.hostvars) == ["gb200-r01-n01"]
    assert [host.name for host in manager.get_hosts(pattern="domain_r1")] == ["gb200-r01-n01"]


def test_an_hca_described_as_the_controller_address_is_no_host():
    """Any host with root on the fabric sets its HCA's description; ``127.0.0.1 mlx5_5`` is one."""
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover

    from ..conftest_paths import FIXTURES

    text = (FIXTURES / "ibnetdiscover-example.out").read_text()
    assert '# "a08-p1-dgx-04-c17 mlx5_5"' in text
    hostile = text.replace('# "a08-p1-dgx-04-c17 mlx5_5"', '# "127.0.0.1 mlx5_5"')
    topo = discover("infiniband", {"ibnetdiscover": {"n1": hostile}})
    assert "127.0.0.1" in topo.nodes  # a valid Slurm node name: the model keeps it
    warnings = []
    groups = layout(topo, warn=warnings.append)
    assert "127.0.0.1" not in groups.hostvars and "a08-p1-dgx-04-c16" in groups.hostvars
    assert not any("127.0.0.1" in hosts for hosts in groups.group_hosts.values())
    assert warnings == ["node '127.0.0.1' is not made a host: its name is an IP address (the controller itself), "
                        "not a host name (a node description that names no host?)"]
