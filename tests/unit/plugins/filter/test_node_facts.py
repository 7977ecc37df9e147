from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aifactory.topology.plugins.filter.node_facts import FilterModule
from ansible_collections.aifactory.topology.plugins.module_utils._base import fact_cache

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
    with pytest.raises(AnsibleFilterError, match="max_age must be a number of seconds, got 'a day'"):
        FILTERS["node_facts_select"]("", ["a"], list(GATHER), "a day")
    with pytest.raises(AnsibleFilterError, match="max_age must be >= 0, got -1"):
        FILTERS["node_facts_select"]("", ["a"], list(GATHER), -1)
    with pytest.raises(AnsibleFilterError, match="refresh must be a list of host names"):
        FILTERS["node_facts_select"]("", ["a"], list(GATHER), 1, [1])
    with pytest.raises(AnsibleFilterError, match="must be node_facts_select's result"):
        FILTERS["node_facts_merge"]({}, {})
    selection = FILTERS["node_facts_select"](cache(a=entry(1, 0)), ["a"], list(GATHER), 1)
    with pytest.raises(AnsibleFilterError, match="gathered must be a mapping"):
        FILTERS["node_facts_merge"](selection, [])
