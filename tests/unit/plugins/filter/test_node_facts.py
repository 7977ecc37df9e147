from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aifactory.topology.plugins.filter.node_facts import FilterModule
from ansible_collections.aifactory.topology.plugins.module_utils._base import fact_cache
from ansible_collections.aifactory.topology.plugins.module_utils._engines import imex

FILTERS = FilterModule().filters()
GATHER = ("nvlink", "network")


def cache(**entries):
    return json.dumps({"format": 1, "nodes": entries})


def entry(age, now, gather=GATHER, **extra):
    return {"gathered_at": now - age, "gather": sorted(gather), "facts": {"topology_node": {"hostname": "x"}}, **extra}


def test_select_visits_missing_aged_stale_regathered_and_refreshed_nodes():
    nodes = {"fresh": entry(10, 1000), "old": entry(200, 1000), "stale": entry(10, 1000, stale=True),
             "other": entry(10, 1000, gather=["hostname"]), "named": entry(10, 1000)}
    selection = fact_cache.select(nodes, ["new", "fresh", "old", "stale", "other", "named"], GATHER, 100,
                                  ["named"], now=1000)
    assert selection["visit"] == ["new", "old", "stale", "other", "named"]
    assert selection["reasons"] == {"new": "missing", "old": "aged", "stale": "stale", "other": "gather changed",
                                    "named": "refresh"}
    assert fact_cache.select(nodes, ["fresh"], GATHER, 0, now=1000)["visit"] == ["fresh"]


AT_ONCE = {host: entry(0, 0) for host in ("n1", "n2", "n3", "n4", "n5", "n6")}


def test_an_entry_age_is_max_age_less_its_own_share_of_the_jitter():
    # SHA-256 of the host name and the second it was gathered: the same on every run, interpreter and
    # controller (not Python's salted hash()), and another for the next gathering of the same host.
    assert fact_cache.entry_age("n1", 0, 1000, 0.2) == pytest.approx(807.0003200216358)
    assert fact_cache.entry_age("n1", 0.4, 1000, 0.2) == fact_cache.entry_age("n1", 0, 1000, 0.2)
    assert fact_cache.entry_age("n1", 1000, 1000, 0.2) == pytest.approx(995.3610351542791)
    assert fact_cache.entry_age("n2", 0, 1000, 0.2) == pytest.approx(895.1783536972292)
    assert fact_cache.entry_age("n2", 0, 86400, 0) == 86400
    assert fact_cache.entry_age("n2", 0, 0, 0.2) == 0


@pytest.mark.parametrize("now, visit", [
    (800, []),
    (850, ["n1", "n4", "n6"]),
    (900, ["n1", "n2", "n4", "n5", "n6"]),
    (930, ["n1", "n2", "n3", "n4", "n5", "n6"]),
])
def test_entries_gathered_together_age_over_a_window(now, visit):
    """Six entries gathered at 0, max age 1000, jitter 0.2: ages from 800 to 1000 (n1 807, n6 819, n4 840,
    n5 856, n2 895, n3 925), so the hosts are due over several runs instead of one."""
    selection = fact_cache.select(AT_ONCE, list(AT_ONCE), GATHER, 1000, now=now, jitter=0.2)
    assert selection["visit"] == visit and set(selection["reasons"].values()) <= {"aged"}


def test_without_jitter_entries_gathered_together_age_together():
    assert fact_cache.select(AT_ONCE, list(AT_ONCE), GATHER, 1000, now=1000)["visit"] == []
    assert fact_cache.select(AT_ONCE, list(AT_ONCE), GATHER, 1000, now=1000.5)["visit"] == list(AT_ONCE)


def test_jitter_keeps_refresh_stale_missing_and_a_zero_max_age():
    nodes = {**AT_ONCE, "n5": entry(0, 0, stale=True)}
    selection = fact_cache.select(nodes, ["n3", "n5", "n7"], GATHER, 1000, ["n3"], now=1, jitter=0.2)
    assert selection["reasons"] == {"n3": "refresh", "n5": "stale", "n7": "missing"}
    assert fact_cache.select(AT_ONCE, list(AT_ONCE), GATHER, 0, now=0.5, jitter=0.2)["visit"] == list(AT_ONCE)


def test_a_regathered_entry_draws_a_new_age():
    """n1 was gathered again at 1000: its age is now 995, not 807 (a host's age is not the same every day)."""
    nodes = {**AT_ONCE, "n1": entry(0, 1000)}
    assert "n1" not in fact_cache.select(nodes, ["n1"], GATHER, 1000, now=1995, jitter=0.2)["visit"]
    assert fact_cache.select(nodes, ["n1"], GATHER, 1000, now=1996, jitter=0.2)["visit"] == ["n1"]


def hourly_runs(hosts, jitter, hours):
    """How many hosts each of ``hours`` hourly runs visits (max age a day), everything gathered at hour 0."""
    nodes, counts = {}, []
    for hour in range(hours + 1):
        selection = fact_cache.select(nodes, hosts, GATHER, 86400, now=hour * 3600, jitter=jitter)
        nodes = fact_cache.merge(selection, {host: {"network": {}} for host in selection["visit"]})["nodes"]
        counts.append(len(selection["visit"]))
    return counts


def test_a_fleet_gathered_at_once_is_gathered_again_over_several_runs():
    """1,152 hosts (64 racks of 18), hourly runs for a week: without jitter every host is due in the same
    run, every 25 h; with 0.2 the first gathering again spreads over the runs at 20-24 h, and later ones
    further (each gathering draws new ages): no run after the first visits more than 251 hosts, none
    after the fourth day more than 148, for 17 % more gatherings in all (ages 0.8 to 1 day, not 25 h)."""
    hosts = [f"gb200-r{rack:02d}-n{node}" for rack in range(1, 65) for node in range(1, 19)]
    together = hourly_runs(hosts, 0, 7 * 24)
    assert together[0] == 1152 and together[25] == 1152 and set(together[1:25]) == {0}
    assert {count for count in together[1:] if count} == {1152}
    spread = hourly_runs(hosts, 0.2, 7 * 24)
    assert spread[0] == 1152 and set(spread[1:20]) == {0}
    assert spread[20:25] == [204, 234, 223, 240, 251]
    assert max(spread[1:]) == 251 and max(spread[4 * 24:]) == 148
    assert (sum(together[1:]), sum(spread[1:])) == (6 * 1152, 8082)


def test_merge_stamps_the_gathered_keeps_the_rest_and_marks_failures_stale():
    nodes = {"ok": entry(500, 1000), "failed": entry(500, 1000), "kept": entry(5, 1000)}
    selection = fact_cache.select(nodes, ["ok", "failed", "kept", "never"], GATHER, 100, now=1000)
    bad = {"topology_node": {"nvlink": {"unhealthy": "fabric state In Progress"}}}
    selection["visit"].append("sick")
    after = fact_cache.merge(selection, {"ok": {"network": {"default_ipv4": {"address": "10.0.0.1"}}}, "sick": bad})
    assert after["format"] == 1 and list(after["nodes"]) == ["failed", "kept", "ok", "sick"]
    assert after["nodes"]["ok"] == {"gathered_at": 1000, "gather": sorted(GATHER),
                                    "facts": {"network": {"default_ipv4": {"address": "10.0.0.1"}}}}
    assert after["nodes"]["failed"] == {**nodes["failed"], "stale": True}
    assert after["nodes"]["kept"] == nodes["kept"]
    assert after["nodes"]["sick"]["stale"] is True and after["nodes"]["sick"]["facts"] == bad


@pytest.mark.parametrize("text, problem", [
    ("", None), ("{", "not JSON"), ('{"format": 2, "nodes": {}}', "not format 1 of the node facts cache"),
])
def test_an_unusable_cache_visits_every_node(text, problem):
    selection = FILTERS["node_facts_select"](text, "a, b", list(GATHER), "60")
    assert selection["visit"] == ["a", "b"] and set(selection["reasons"].values()) == {"missing"}
    assert (selection["state_problem"] or "").startswith(problem or "") and bool(selection["state_problem"]) == bool(problem)


def test_filters_refuse_bad_arguments():
    for max_age in ("a day", -1, True, "1e3", float("nan"), 1.5, "-5", None):
        with pytest.raises(AnsibleFilterError, match="max_age must be a whole number of seconds, got "):
            FILTERS["node_facts_select"]("", ["a"], list(GATHER), max_age)
    assert FILTERS["node_facts_select"]("", ["a"], list(GATHER), " 60 ", [], "0.25")["visit"] == ["a"]
    for jitter in (1, -0.1, "some", True, None, "1.0", "0.", "nan", "0.2.1", float("inf")):
        with pytest.raises(AnsibleFilterError, match="max_age_jitter must be a fraction from 0 to below 1"):
            FILTERS["node_facts_select"]("", ["a"], list(GATHER), 1, [], jitter)
    with pytest.raises(AnsibleFilterError, match="refresh must be a list of host names"):
        FILTERS["node_facts_select"]("", ["a"], list(GATHER), 1, [1])
    with pytest.raises(AnsibleFilterError, match="must be node_facts_select's result"):
        FILTERS["node_facts_merge"]({}, {})
    selection = FILTERS["node_facts_select"](cache(a=entry(1, 0)), ["a"], list(GATHER), 1)
    with pytest.raises(AnsibleFilterError, match="gathered must be a mapping"):
        FILTERS["node_facts_merge"](selection, [])


def deep(levels):
    """A state file of both kinds (the cache's ``nodes``, the IMEX state's ``domains``) nested ``levels`` deep."""
    nested = "[" * levels + "]" * levels
    return '{"format": 1, "nodes": {"a": ' + nested + '}, "domains": {"d": ' + nested + "}}"


@pytest.mark.parametrize("text, problem", [
    (deep(100_000), "nested deeper than 64 levels"),  # json raises RecursionError: read as an empty state
    (deep(500), "nested deeper than 64 levels"),  # parsed, then refused before anything walks it
    (b'{"format": 1}', "not text but bytes"),
    ('{"format": 1, "nodes": {}, "domains": {}}' + " " * 1_000_000, "larger than 1000000 characters"),
])
def test_a_damaged_state_file_is_an_empty_state_with_a_reason(text, problem, monkeypatch):
    monkeypatch.setattr(fact_cache, "MAX_STATE_BYTES", 1_000_000)  # the bound itself, without 256 MiB of text
    for read in (fact_cache.read_cache, imex.read_applied):
        state, reason = read(text)
        assert state == {} and problem in reason


def test_an_entry_of_the_wrong_shape_costs_its_node_a_visit_only():
    now = 10_000
    good = {"gathered_at": now - 1, "gather": sorted(GATHER), "facts": {}}
    nodes = {"ok": good,
             "gather_number": {**good, "gather": 5},  # sorted(5) raised TypeError for the whole run
             "gather_mixed": {**good, "gather": ["network", 1]},
             "future": {**good, "gathered_at": now + 86400},  # a clock stepped back: never refreshed before
             "nan": {**good, "gathered_at": float("nan")},
             "infinite": {**good, "gathered_at": float("inf")},
             "boolean": {**good, "gathered_at": True},
             "text": {**good, "gathered_at": "9999"}}
    text = json.dumps({"format": 1, "nodes": nodes})  # json writes NaN and Infinity, and reads them back
    cached, problem = fact_cache.read_cache(text)
    assert problem is None
    selection = fact_cache.select(cached, list(nodes), list(GATHER), 3600, now=now)
    assert selection["reasons"] == {"gather_number": "gather changed", "gather_mixed": "gather changed",
                                    "future": "aged", "nan": "aged", "infinite": "aged", "boolean": "aged",
                                    "text": "aged"}
