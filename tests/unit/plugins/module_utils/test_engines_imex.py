"""IMEX engine: domain members in a stable order, address checks, and the per-domain peer plan."""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._engines import imex
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology


def two_racks(placeholder=True):
    """rack02 before rack01 in physical order, names out of order, a service node, a placeholder rack."""
    topo = Topology()
    for name in ("r02-n10", "r02-n2", "r02-n1"):
        topo.add_node(name, domain="rack02")
    for name in ("r01-n2", "r01-n1", "r01-n10"):
        topo.add_node(name, domain="rack01")
    topo.add_node("login01")
    topo.add_node("x-n1", domain="rack10")
    topo.add_node("x-n2", domain="rack9")
    topo.declare_domain("rack02")
    if placeholder:
        topo.declare_domain("rack03")
    topo.declare_domain("rack01")
    return topo.validate()


def record(host, address=None, *, node=None, in_play=True, source="auto", facts=None, origin="default_ipv4"):
    return {"host": host, "node": node or host, "in_play": in_play, "source": source, "address": address,
            "facts_address": facts, "facts_origin": origin}


RACK01 = {"r01-n1": "10.0.1.1", "r01-n2": "10.0.1.2", "r01-n10": "10.0.1.10"}
RACK02 = {"r02-n1": "10.0.2.1", "r02-n2": "10.0.2.2", "r02-n10": "10.0.2.10"}


def records(addresses, **overrides):
    return [record(host, overrides.get(host, address)) for host, address in addresses.items()]


def test_domain_members_natural_order_physical_domain_order_and_placeholders():
    topo = two_racks()
    assert imex.domain_members(topo) == {
        "rack02": ["r02-n1", "r02-n2", "r02-n10"],
        "rack01": ["r01-n1", "r01-n2", "r01-n10"],
        "rack9": ["x-n2"],  # undeclared domains follow, in natural order: rack9 before rack10
        "rack10": ["x-n1"],
    }
    assert list(imex.domain_members(topo, include_empty=True))[:3] == ["rack02", "rack03", "rack01"]
    assert imex.domain_members(topo, include_empty=True)["rack03"] == []


@pytest.mark.parametrize("value, canonical", [
    ("10.0.0.1", "10.0.0.1"),
    (" 10.0.0.1 ", "10.0.0.1"),
    ("FD00:0:0::0001", "fd00::1"),
    ("169.254.3.4", "169.254.3.4"),
])
def test_normalize_address_accepts_unicast_and_canonicalises(value, canonical):
    assert imex.normalize_address(value) == canonical


@pytest.mark.parametrize("value, message", [
    ("10.0.0.300", "'10.0.0.300' is not a valid IP address"),
    ("10.1", "'10.1' is not a valid IP address"),
    ("10.0.0.1/24", "'10.0.0.1/24' is not a valid IP address"),
    ("gb200-r01-n01", "is not a valid IP address"),
    ("", "'' is not an IP address"),
    (167772161, "167772161 is not an IP address"),
    ("0.0.0.0", "is the unspecified address"),
    ("::", "is the unspecified address"),
    ("127.0.0.1", "is a loopback address"),
    ("::1", "is a loopback address"),
    ("224.0.0.1", "is not a unicast address"),
    ("255.255.255.255", "is not a unicast address"),
    ("fe80::1", "is an IPv6 link-local address"),
])
def test_normalize_address_refuses_what_peers_cannot_use(value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        imex.normalize_address(value)


def test_normalize_address_without_netaddr_says_what_to_install(monkeypatch):
    monkeypatch.setattr(imex, "netaddr", None)
    with pytest.raises(ValueError, match="'netaddr' is required on the Ansible controller"):
        imex.normalize_address("10.0.0.1")


def test_plan_lists_each_domain_in_node_order_and_skips_hosts_without_domain():
    plan = imex.peer_plan(two_racks(), records({**RACK02, **RACK01, "login01": None}))
    assert plan["errors"] == []
    assert plan["domains"] == {
        "rack02": {"nodes": ["r02-n1", "r02-n2", "r02-n10"], "hosts": ["r02-n1", "r02-n2", "r02-n10"],
                   "addresses": ["10.0.2.1", "10.0.2.2", "10.0.2.10"], "errors": []},
        "rack01": {"nodes": ["r01-n1", "r01-n2", "r01-n10"], "hosts": ["r01-n1", "r01-n2", "r01-n10"],
                   "addresses": ["10.0.1.1", "10.0.1.2", "10.0.1.10"], "errors": []},
    }
    assert plan["hosts"]["r01-n10"] == {"node": "r01-n10", "domain": "rack01", "reason": None}
    assert plan["hosts"]["login01"] == {"node": "login01", "domain": None,
                                        "reason": "has no NVLink domain in the topology model"}


def test_plan_is_the_same_whatever_the_order_of_the_records():
    forward = imex.peer_plan(two_racks(), records({**RACK01, **RACK02}))
    backward = imex.peer_plan(two_racks(), list(reversed(records({**RACK01, **RACK02}))))
    assert forward["domains"] == backward["domains"]


def test_plan_only_covers_domains_with_a_member_in_the_play_and_uses_inventory_for_the_rest():
    rack01 = [record("r01-n1", "10.0.1.1"), record("r01-n2", "10.0.1.2", in_play=False),
              record("r01-n10", None, facts="10.0.1.10")]
    # rack02 is broken, but nothing of rack02 is in the play: it is neither planned nor checked.
    rack02 = [record(host, None, in_play=False) for host in RACK02]
    plan = imex.peer_plan(two_racks(), rack01 + rack02 + [record("stranger", "10.9.9.9")])
    assert plan["errors"] == []
    assert list(plan["domains"]) == ["rack01"]
    assert plan["domains"]["rack01"]["addresses"] == ["10.0.1.1", "10.0.1.2", "10.0.1.10"]
    assert plan["hosts"]["stranger"]["reason"] == "is not in the topology model"
    assert "r01-n2" not in plan["hosts"]  # not in the play: it only lends its address


def test_plan_maps_hosts_to_nodes_through_imex_node_name():
    recs = [record(f"{node}.example.org", address, node=node) for node, address in RACK01.items()]
    plan = imex.peer_plan(two_racks(), recs)
    assert plan["errors"] == []
    assert plan["domains"]["rack01"]["hosts"] == ["r01-n1.example.org", "r01-n2.example.org", "r01-n10.example.org"]
    assert plan["hosts"]["r01-n1.example.org"]["domain"] == "rack01"


def errors_for(recs):
    return imex.peer_plan(two_racks(), recs)["errors"]


def test_duplicate_address_in_a_domain_names_both_nodes_and_the_address():
    assert errors_for(records(RACK01, **{"r01-n10": "10.0.1.1"})) == [
        "domain rack01: nodes r01-n1 and r01-n10 have the same address 10.0.1.1"]


def test_same_address_written_differently_is_still_a_duplicate():
    assert errors_for(records({"r01-n1": "fd00::1", "r01-n2": "FD00:0::1", "r01-n10": "fd00::10"})) == [
        "domain rack01: nodes r01-n1 and r01-n2 have the same address fd00::1"]


def test_address_shared_across_domains_is_refused():
    assert errors_for(records({**RACK01, **RACK02}, **{"r02-n2": "10.0.1.2"})) == [
        "domain rack01: node r01-n2 has address 10.0.1.2, which node r02-n2 of domain rack02 has too"]


def test_invalid_and_missing_addresses_name_domain_node_and_value():
    recs = records(RACK01, **{"r01-n2": "10.0.1.300", "r01-n10": None})
    assert errors_for(recs) == [
        "domain rack01: node r01-n2: imex_address: '10.0.1.300' is not a valid IP address",
        "domain rack01: node r01-n10: neither imex_address nor an address in its facts (default_ipv4)",
    ]


def test_mixed_address_families_in_a_domain_are_refused():
    assert errors_for(records(RACK01, **{"r01-n10": "fd00::10"})) == [
        "domain rack01: node r01-n10 has an IPv6 address (fd00::10) but r01-n1 (10.0.1.1) has an IPv4 one; "
        "use one address family per domain"]


def test_member_without_inventory_host_or_claimed_twice():
    recs = records(RACK01)
    assert errors_for(recs[:2]) == [
        "domain rack01: node r01-n10 has no inventory host (no host of that name and no host with "
        "imex_node_name: r01-n10), so its address is unknown"]
    twice = recs + [record("spare", "10.0.1.99", node="r01-n2")]
    assert errors_for(twice) == [
        "domain rack01: node r01-n2 is claimed by several hosts (r01-n2, spare); set imex_node_name so that "
        "each node has one host"]


def test_member_outside_the_play_needs_imex_address():
    recs = records(RACK01)
    recs[1] = record("r01-n2", None, in_play=False, facts="10.0.1.2")  # stale facts are not used
    assert errors_for(recs) == [
        "domain rack01: node r01-n2: not in this play (left out by --limit, unreachable or failed) and no "
        "imex_address in the inventory; run the play on the whole domain or set imex_address"]


def test_source_facts_uses_facts_and_refuses_a_different_imex_address():
    recs = [record(host, None, source="facts", facts=address, origin="interface ib0")
            for host, address in RACK01.items()]
    plan = imex.peer_plan(two_racks(), recs)
    assert plan["errors"] == [] and plan["domains"]["rack01"]["addresses"] == list(RACK01.values())
    recs[0]["address"] = "10.0.1.1"  # agrees: fine
    recs[2]["address"] = "10.0.7.10"
    assert errors_for(recs) == [
        "domain rack01: node r01-n10: imex_address 10.0.7.10 differs from the address in its facts "
        "(interface ib0) 10.0.1.10"]
    recs[2] = record("r01-n10", None, source="facts", origin="interface ib0")
    assert errors_for(recs) == ["domain rack01: node r01-n10: no address in its facts (interface ib0)"]


def test_source_variable_ignores_facts_and_auto_prefers_the_variable():
    recs = [record(host, None, source="variable", facts=address) for host, address in RACK01.items()]
    assert errors_for(recs)[0] == "domain rack01: node r01-n1: no imex_address (imex_address_source: variable)"
    recs = [record(host, address, facts="10.9.9.9") for host, address in RACK01.items()]
    assert imex.peer_plan(two_racks(), recs)["domains"]["rack01"]["addresses"] == list(RACK01.values())
    recs[0]["source"] = "dns"
    assert errors_for(recs) == [
        "domain rack01: node r01-n1: imex_address_source 'dns' is not one of auto, variable, facts"]


def test_every_problem_of_every_domain_is_reported_at_once():
    recs = records({**RACK01, **RACK02}, **{"r01-n1": "127.0.0.1", "r02-n10": "10.0.2.1"})
    assert errors_for(recs) == [
        "domain rack02: nodes r02-n1 and r02-n10 have the same address 10.0.2.1",
        "domain rack01: node r01-n1: imex_address: '127.0.0.1' is a loopback address; peers on other nodes "
        "cannot reach it",
    ]


# -- fleet_selection, applied_after, read_applied: what a run visits and records ----------------------------

def fleet(applied, verify_all=False, settings=None, revision="r1", **overrides):
    return imex.fleet_selection(two_racks(), records({**RACK02, **RACK01, "login01": None}, **overrides),
                                settings or {}, applied, revision, verify_all=verify_all)


def test_fleet_visits_every_member_of_a_domain_never_applied_and_none_in_steady_state():
    first = fleet({})
    assert first["status"] == {"rack02": "new", "rack01": "new"}
    assert first["visit"] == list({**RACK02, **RACK01})  # records' order, the service node left out
    assert first["outside"] == {"login01": "has no NVLink domain in the topology model"}
    steady = fleet(first["digests"])
    assert steady["status"] == {"rack02": "unchanged", "rack01": "unchanged"}
    assert steady["visit"] == [] and steady["visit_domains"] == []
    everything = fleet(first["digests"], verify_all=True)
    assert everything["visit"] == list({**RACK02, **RACK01, "login01": None})


def test_fleet_visits_the_domain_whose_address_settings_or_revision_changed():
    applied = fleet({})["digests"]
    moved = fleet(applied, **{"r02-n2": "10.0.2.20"})
    assert moved["status"] == {"rack02": "changed", "rack01": "unchanged"}
    assert moved["visit"] == list(RACK02)
    tuned = fleet(applied, settings={"r01-n2": {"imex_config": {"LOG_LEVEL": 2}}})
    assert tuned["visit_domains"] == ["rack01"]
    assert fleet(applied, revision="r2")["visit_domains"] == ["rack02", "rack01"]


def test_fleet_visits_a_domain_it_cannot_plan_so_the_node_play_reports_it():
    unplanned = fleet(fleet({})["digests"], **{"r01-n2": None})
    assert unplanned["status"]["rack01"] == "unplanned" and "rack01" not in unplanned["digests"]
    assert unplanned["visit"] == list(RACK01)


def test_applied_after_records_only_domains_whose_every_member_reported_the_planned_peers():
    selection = fleet({"rack09": "kept"})
    selection["applied"] = {"rack09": "kept"}
    rack01 = selection["plan"]["domains"]["rack01"]["addresses"]
    rack02 = selection["plan"]["domains"]["rack02"]["addresses"]
    reports = {host: rack01 for host in RACK01} | {"r02-n1": rack02, "r02-n2": rack02}  # r02-n10 failed or --limit
    after = imex.applied_after({"rack09": "kept"}, selection, reports)
    assert after == {"rack09": "kept", "rack01": selection["digests"]["rack01"]}
    # A node whose own plan differs (its fresh facts against the controller's cached ones): not recorded.
    stale = dict(reports, **{"r01-n1": ["10.0.1.99"] + rack01[1:]})
    assert "rack01" not in imex.applied_after({}, selection, stale)


@pytest.mark.parametrize("text, domains, problem", [
    (None, {}, None), ("", {}, None),
    ('{"format": 1, "domains": {"rack01": "abc"}}', {"rack01": "abc"}, None),
    ("{not json", {}, "not JSON"), ('{"format": 2, "domains": {}}', {}, "not format 1"), ("[]", {}, "not format 1"),
])
def test_read_applied_treats_an_unusable_state_as_nothing_applied(text, domains, problem):
    read, why = imex.read_applied(text)
    assert read == domains
    assert (why is None) if problem is None else why.startswith(problem)


def test_domain_digest_follows_the_rendered_peer_list_not_the_source():
    entry = fleet({})["plan"]["domains"]["rack01"]
    digest = imex.domain_digest(entry, {}, "r1")
    assert imex.domain_digest(dict(entry), {}, "r1") == digest
    original = imex.render_nodes_config
    try:
        # A renderer that writes other text changes what the trays hold: every domain is visited.
        imex.render_nodes_config = lambda addresses: "".join(f"{address} \n" for address in addresses)
        assert imex.domain_digest(entry, {}, "r1") != digest
    finally:
        imex.render_nodes_config = original


def test_role_revision_reads_values_never_source_text():
    """A comment in the role or in the engine must not mark every domain changed (issue 41)."""
    import pathlib
    import yaml
    role = pathlib.Path(__file__).resolve().parents[4] / "roles" / "imex"
    expression = yaml.safe_load((role / "vars" / "main.yml").read_text())["imex__fleet_revision"]
    assert ".py" not in expression
    lookups = expression.count("lookup(")
    assert lookups and expression.count("| from_yaml") == lookups
