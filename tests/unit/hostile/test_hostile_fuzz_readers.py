"""Fuzz, one test per reader of controller state and of API records not fuzzed elsewhere (issue 40,
deliverable 5): the node-facts cache, the IMEX applied state, the NetQ topology graph and each cloud's instance record. Generated
hostile input ends in a result or the reader's own error naming the source, never another exception.

(The nvidia-smi readers, ibnetdiscover, node names, patterns, config text, Kubernetes answers and the
segment capacity answers have their fuzz tests beside their hostile cases in this folder.)
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._base import fact_cache
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    AifactoryTopologyError,
    RemoteAPIError,
    TopologyError,
)
from ansible_collections.aifactory.topology.plugins.module_utils._engines import imex
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _cloud, aws, gcp, lambda_cloud, netq, nscale

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=12), st.sampled_from(["gpu-01", "1", "", "NaN", "\u00b2", "9" * 5000]))
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=24)
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def state_text(format_number, key, entries):
    return json.dumps({"format": format_number, key: entries}, allow_nan=True)


CACHE_ENTRIES = st.dictionaries(st.sampled_from(["gpu-01", "gpu-02", "gpu-03", ""]), st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries({"gathered_at": SCALARS, "facts": JSON_VALUES},
                          optional={"gather": JSON_VALUES, "stale": SCALARS})), max_size=4)


@given(CACHE_ENTRIES, st.one_of(st.just(fact_cache.CACHE_FORMAT), SCALARS), st.sampled_from([0, 60, 86400]),
       st.floats(0, 1))
@FUZZ
def test_any_node_facts_cache_is_a_selection_and_a_cache_again(entries, format_number, max_age, jitter):
    """Every entry the reader keeps is visited or kept, and merging writes a cache the reader reads back."""
    hosts = ["gpu-01", "gpu-02", "gpu-03"]
    nodes, problem = fact_cache.read_cache(state_text(format_number, "nodes", entries))
    assert problem is None or isinstance(problem, str)
    selection = fact_cache.select(nodes, hosts, ["ansible_default_ipv4"], max_age, now=1_000_000.0, jitter=jitter)
    assert set(selection["visit"]) | set(nodes) >= set(hosts)
    written = fact_cache.merge(selection, {host: {"fresh": True} for host in selection["visit"]})
    again, problem = fact_cache.read_cache(json.dumps(written))
    assert problem is None and {host for host in hosts if host in again} == set(hosts)


@given(st.one_of(st.text(max_size=64), JSON_VALUES.map(lambda value: json.dumps(value, allow_nan=True)),
                 st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4).map(
                     lambda domains: state_text(imex.STATE_FORMAT, "domains", domains))))
@FUZZ
def test_any_imex_applied_state_is_digests_or_an_empty_state_with_a_reason(text):
    domains, problem = imex.read_applied(text)
    assert all(isinstance(name, str) and isinstance(digest, str) for name, digest in domains.items())
    assert problem is None or (isinstance(problem, str) and not domains)


NETQ_NODE = st.one_of(JSON_VALUES, st.fixed_dictionaries(
    {"id": st.one_of(st.sampled_from(["h1", "h2", "l1", "s1"]), SCALARS)},
    optional={"name": st.one_of(st.sampled_from(["gpu-01", "gpu-02", "leaf-1", "spine-1", "bad name", ""]), SCALARS),
              "tier": st.one_of(st.sampled_from([-1, 1, 2]), SCALARS)}))
NETQ_LINK = st.one_of(JSON_VALUES, st.fixed_dictionaries({"id": st.one_of(
    st.sampled_from(["h1-*-l1", "h2-*-l1", "l1-*-s1", "l1-*-l1", "x-*-y", "h1-*-l1-*-s1"]), SCALARS)}))
NETQ_GRAPH = st.one_of(JSON_VALUES, st.lists(st.fixed_dictionaries({
    "nodes": st.one_of(JSON_VALUES, st.lists(st.one_of(JSON_VALUES, st.fixed_dictionaries(
        {"compounded_nodes": st.one_of(JSON_VALUES, st.lists(NETQ_NODE, max_size=6))})), max_size=3)),
    "links": st.one_of(JSON_VALUES, st.lists(NETQ_LINK, max_size=8))}), min_size=1, max_size=2))


@given(NETQ_GRAPH, st.sampled_from([None, {"gpu-01"}]))
@FUZZ
def test_any_netq_topology_graph_is_a_topology_or_an_error_naming_the_graph(graph, wanted):
    warnings = []
    try:
        topology = netq.add_graph(Topology(), graph, wanted=wanted, warn=warnings.append)
    except AifactoryTopologyError as exc:
        assert str(exc).startswith("NetQ topology graph")
        return
    try:
        topology.validate()
    except TopologyError:  # a graph whose tree is not a topology (a cycle, two roots): named by the model
        pass
    assert all(isinstance(name, str) for name in topology.quarantined)
    assert all(isinstance(warning, str) for warning in warnings)


# -- each cloud's instance record (the JSON APIs; Nebius and OCI records come typed from their SDKs) --------

HOP = st.one_of(SCALARS, st.sampled_from(["nn-1", "nn-2", "nn-3", "sw-a", "sw-b"]))
RECORD_PLACERS = {
    "aws": (lambda placed, item: aws._place(placed, item, "us-east-1"), st.fixed_dictionaries(
        {"InstanceId": st.one_of(st.just("i-1"), SCALARS)},
        optional={"NetworkNodes": st.one_of(JSON_VALUES, st.lists(HOP, max_size=4)), "CapacityBlockId": HOP})),
    "gcp": (lambda placed, item: gcp._place(placed, item, "us-central1-a"), st.fixed_dictionaries(
        {"id": st.one_of(st.just("i-1"), SCALARS)},
        optional={"resourceStatus": st.one_of(JSON_VALUES, st.fixed_dictionaries({"physicalHostTopology": st.one_of(
            JSON_VALUES, st.fixed_dictionaries({}, optional={"cluster": HOP, "block": HOP, "subblock": HOP}))}))})),
    "lambda": (lambda placed, item: lambda_cloud._place(placed, item, [], []), st.fixed_dictionaries(
        {"id": st.one_of(st.just("i-1"), SCALARS)},
        optional={"networkPath": st.one_of(JSON_VALUES, st.lists(st.fixed_dictionaries({"id": HOP}), max_size=5)),
                  "nvlink": st.one_of(JSON_VALUES, st.fixed_dictionaries({}, optional={"domain_id": HOP,
                                                                                       "clique_id": HOP}))})),
    "nscale": (lambda placed, item: nscale._place(placed, item, "eu-1"), st.fixed_dictionaries(
        {"instance_id": st.one_of(st.just("i-1"), SCALARS)},
        optional={"network_node_path": st.one_of(JSON_VALUES, st.lists(HOP, max_size=4)), "block_id": HOP})),
}


@given(st.sampled_from(sorted(RECORD_PLACERS)), st.data())
@FUZZ
def test_any_cloud_instance_record_places_quarantines_or_names_the_api(provider, data):
    """One instance's record: placed, its node quarantined by name, missing (warned), or (a record without
    an id, which no node can be blamed for) an error naming the API; the model is built either way."""
    place, records = RECORD_PLACERS[provider]
    item = data.draw(records)
    placed = _cloud.Placements(provider, {"i-1": "gpu-01"})
    try:
        place(placed, item)
    except RemoteAPIError:
        return
    warnings = []
    topology = placed.topology(warnings.append)
    topology.add_node("gpu-02")  # the rest of the cluster: one record never ends the run
    topology.validate()
    assert set(topology.nodes) | set(topology.quarantined) == {"gpu-01", "gpu-02"}
    assert ("gpu-01" in topology.quarantined) == ("i-1" in placed.refused)
