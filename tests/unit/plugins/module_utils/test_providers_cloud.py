"""The cloud providers' shared parts and codecs, one function at a time (the APIs: tests/integration)."""

from __future__ import annotations


import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import NodeDataError, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import (
    _cloud,
    aws,
    discover,
    gcp,
    lambda_cloud,
    nscale,
    validate,
)

INSTANCES = [{"region": "r", "instances": {"i-1": "n1"}}]


def test_instances_take_topographs_request_form_and_reject_ambiguity():
    regions = _cloud.requested_instances({"instances": [{"region": "r1", "instances": {"a": "n1", 7: "n2"}}]}, "aws")
    assert regions == [("r1", {"a": "n1", "7": "n2"})]
    cases = {
        "needs params.instances: a list of": {},
        r"params.instances\[0\].region is required": {"instances": [{"instances": {"a": "n1"}}]},
        r"params.instances\[1\].instances must be a non-empty mapping": {
            "instances": [{"region": "r", "instances": {"a": "n1"}}, {"region": "r", "instances": []}]},
        r"instance 'a' is listed twice: params.instances\[0\] and params.instances\[1\]": {
            "instances": [{"region": "r", "instances": {"a": "n1"}}, {"region": "s", "instances": {"a": "n2"}}]},
        "node 'n1' is mapped from two instances: 'a' and 'b'": {
            "instances": [{"region": "r", "instances": {"a": "n1", "b": "n1"}}]},
        r"params.instances\[0\].instances\['a'\]: the node name must be a non-empty string": {
            "instances": [{"region": "r", "instances": {"a": ""}}]},
    }
    for message, params in cases.items():
        with pytest.raises(TopologyError, match=message):
            _cloud.requested_instances(params, "aws")
    assert _cloud.requested_instances({"instances": [{"instances": {"a": "n"}}]}, "nebius", require_region=False)


def test_placements_trim_tiers_drop_empty_ids_at_the_top_and_keep_missing_nodes():
    placed = _cloud.Placements("x", {"a": "n1", "b": "n2", "c": "n3", "d": "n4"}, trim_tiers=1)
    # Empty ids above the highest one are a shorter path (Topograph: a short path omits the higher tiers).
    assert placed.add("a", ["leaf", "spine", "core", "", None], "d1", "d1.r1")
    assert not placed.add("zz", ["leaf"])  # not requested
    assert placed.add("b", ["leaf2", "spine"], None, "ignored-without-domain")
    assert placed.add("d", ["", None])  # only empty ids and no domain: no topology data
    warnings = []
    topo = placed.topology(warnings.append)
    assert {sid: sw.parent for sid, sw in topo.switches.items()} == {"leaf": "spine", "spine": None, "leaf2": None}
    assert (topo.nodes["n1"].domain, topo.nodes["n1"].sub_domain) == ("d1", "d1.r1")
    assert topo.nodes["n2"].sub_domain is None and topo.nodes["n3"].switch is None and topo.nodes["n4"].switch is None
    assert not topo.quarantined
    assert warnings == ["2 of 4 requested instances have no topology data in the x API; they have no switch "
                        "(the tree topology puts them under no-topology): n[3-4]"]


def test_an_empty_id_under_an_id_quarantines_the_instance_instead_of_moving_the_ids_above_it_down():
    # Skipped, ["leaf", "", "core"] made core the leaf's parent: alone a mis-tiered map, with the correct
    # neighbour c "switch 'leaf' has two parents" and the whole run failed.
    placed = _cloud.Placements("x", {"a": "n1", "b": "n2", "c": "n3"})
    fields = _cloud.path_fields("path[{}]", 3, root_first=True)
    assert fields == ["path[2]", "path[1]", "path[0]"]
    placed.add("a", ["leaf", "", "core"], fields=fields)
    placed.add("b", [None, "spine", "core"], fields=fields)  # the closest switch missing: the same shift
    placed.add("c", ["leaf", "spine", "core"], fields=fields)
    topo = placed.topology(print).validate()
    assert list(topo.nodes) == ["n3"] and topo.path("leaf") == ["leaf", "spine", "core"]
    assert topo.quarantined["n1"].reason == ("the x API's path[1] of instance 'a' is empty ('') under path[0] 'core': "
                                             "a gap in the path (skipping it would move the ids above it down a tier)")
    assert topo.quarantined["n2"].reason.startswith("the x API's path[2] of instance 'b' is empty (None) under "
                                                    "path[1] 'spine': a gap in the path")


def test_an_id_that_is_not_a_string_quarantines_the_instance_and_is_never_converted():
    placed = _cloud.Placements("x", {"a": "n1", "b": "n2", "c": "n3"})
    placed.add("a", ["leaf", 7], fields=["networkPath[0].id", "networkPath[1].id"])
    placed.add("b", ["leaf", "spine"], domain=5, domain_field="block_id")
    placed.add("c", ["leaf", "spine"])
    topo = placed.topology(print).validate()
    assert list(topo.nodes) == ["n3"] and "7" not in topo.switches
    assert topo.quarantined["n1"].reason == ("the x API's networkPath[1].id of instance 'a': name must be a non-empty "
                                             "string, got int 7")
    assert topo.quarantined["n2"].reason == "the x API's block_id of instance 'b': name must be a non-empty string, got int 5"


def test_an_instance_reported_twice_differently_quarantines_its_node():
    placed = _cloud.Placements("x", {"a": "n1", "b": "n2"})
    placed.add("a", ["l1", "s"])
    placed.add("a", ["l1", "s"])  # the same record again is harmless
    placed.add("b", ["l1", "s"])
    placed.add("a", ["l2", "s"])
    placed.add("a", ["l1", "s"])  # once refused, it stays refused
    topo = placed.topology(print)
    assert list(topo.nodes) == ["n2"] and topo.quarantined["n1"].source == "x"
    assert "instance 'a' twice with different topology" in topo.quarantined["n1"].reason


def test_a_malformed_record_or_an_id_that_is_no_name_quarantines_only_that_instance():
    placed = _cloud.Placements("x", {"a": "n1", "b": "n2", "c": "n3"})
    with placed.instance("a"):
        raise NodeDataError("instance 'a': networkPath must be a list")
    with placed.instance("z"):  # not requested: ignored, as the API's other instances are
        raise NodeDataError("instance 'z': bad")
    placed.add("b", ["leaf 1"])
    placed.add("c", ["l1"], domain="d,1")
    placed.add("d", ["whatever"])
    with pytest.raises(TopologyError, match=r"every node was quarantined \(3\)"):
        placed.topology(print).validate()
    topo = placed.topology(print)
    assert topo.quarantined["n1"].reason == "instance 'a': networkPath must be a list"
    assert topo.quarantined["n2"].reason.startswith("the x API's tier 0 of instance 'b': 'leaf 1' contains white space")
    assert topo.quarantined["n3"].reason.startswith("the x API's domain of instance 'c': 'd,1' contains ','")


def test_settings_validate_and_never_show_secret_values(monkeypatch):
    warnings = []
    assert _cloud.page_size({"page_size": 0}, 100, warnings.append) == 100 and "not positive" in warnings[0]
    assert _cloud.page_size({"page_size": 900}, 500, warnings.append, maximum=500) == 500
    params, _creds = validate("aws", {"instances": INSTANCES, "retry_attempts": 0})
    with pytest.raises(TopologyError, match=r"params.retry_attempts must be at least 1, got 0"):
        _cloud.client_settings(params)
    monkeypatch.delenv("FIRST", raising=False)
    monkeypatch.setenv("SECOND", "from-env")
    assert _cloud.secret({}, "token", env=("FIRST", "SECOND")) == "from-env"
    with pytest.raises(TopologyError, match=r"needs creds.token \(or the environment variable A\)"):
        _cloud.secret({}, "token", env=("A",), required_by="lambda")


# One requested instance's record is bad among good ones, read by each provider with its API's page
# function replaced: the good ones keep their place, the bad one's node is quarantined with a reason
# naming the instance, the field and the value. (provider, module, params, creds, records, reason)
def aws_record(instance_id, nodes):
    return {"InstanceId": instance_id, "NetworkNodes": nodes}


def gcp_record(instance_id, subblock, block, cluster):
    return {"id": instance_id, "resourceStatus": {"physicalHostTopology": {
        "subblock": subblock, "block": block, "cluster": cluster}}}


def lambda_record(instance_id, hops, **extra):
    return dict({"id": instance_id, "networkPath": [{"id": hop} if hop is not None else {} for hop in hops]}, **extra)


def nscale_record(instance_id, path):
    return {"instance_id": instance_id, "network_node_path": path}


AWS = (aws, {}, {"access_key_id": "AKIDEXAMPLE", "secret_access_key": "s"},
       lambda bad: [aws_record("i-1", bad), aws_record("i-2", ["core", "spine", "leaf"]),
                    aws_record("i-3", ["core", "spine", "leaf2"])])
GCP = (gcp, {"project_id": "p"}, {"access_token": "t"},
       lambda bad: [bad, gcp_record("i-2", "leaf", "spine", "core"), gcp_record("i-3", "leaf2", "spine", "core")])
LAMBDA = (lambda_cloud, {"workspace_id": "ws"}, {"token": "t"},
          lambda bad: [bad, lambda_record("i-2", ["leaf", "spine", "core"]),
                       lambda_record("i-3", ["leaf2", "spine", "core"])])
NSCALE = (nscale, {"api_url": "http://127.0.0.1:9", "organization": "org"}, {"token": "t"},
          lambda bad: [nscale_record("i-1", bad), nscale_record("i-2", ["core", "spine", "leaf"]),
                       nscale_record("i-3", ["core", "spine", "leaf2"])])
RECORDS = {
    "aws-empty-id-between-two": ("aws", AWS, ["core", "", "leaf"],
                                 "the aws API's networkNodeSet[1] of instance 'i-1' is empty ('') under "
                                 "networkNodeSet[0] 'core': a gap in the path"),
    "aws-closest-id-empty": ("aws", AWS, ["core", "spine", ""],
                             "the aws API's networkNodeSet[2] of instance 'i-1' is empty ('') under "
                             "networkNodeSet[1] 'spine'"),
    "aws-one-id-at-two-tiers": ("aws", AWS, ["core", "spine", "core"],
                                "the aws API's networkNodeSet[0] of instance 'i-1' is 'core', as is its "
                                "networkNodeSet[2]: one switch at two tiers of one path (a loop)"),
    "nscale-one-id-at-two-tiers": ("nscale", NSCALE, ["spine", "leaf", "spine"],
                                   "the nscale API's network_node_path[0] of instance 'i-1' is 'spine', as is its "
                                   "network_node_path[2]: one switch at two tiers of one path (a loop)"),
    "aws-id-not-a-string": ("aws", AWS, ["core", "spine", 7],
                            "the aws API's networkNodeSet[2] of instance 'i-1': name must be a non-empty string, "
                            "got int 7"),
    "gcp-id-a-number": ("gcp", GCP, dict(gcp_record(1, "leaf", "spine", "core"), id=1),
                        "instance 1: id must be a string (Compute Engine sends the uint64 as a string), got int 1"),
    "gcp-block-not-a-string": ("gcp", GCP, gcp_record("i-1", "leaf", 7, "core"),
                               "the gcp API's physicalHostTopology.block of instance 'i-1': name must be a "
                               "non-empty string, got int 7"),
    "lambda-empty-id-between-two": ("lambda", LAMBDA, lambda_record("i-1", ["leaf", "", "core"]),
                                    "the lambda API's networkPath[1].id of instance 'i-1' is empty ('') under "
                                    "networkPath[2].id 'core': a gap in the path"),
    "lambda-hop-without-id": ("lambda", LAMBDA, lambda_record("i-1", ["leaf", None, "core"]),
                              "the lambda API's networkPath[1].id of instance 'i-1' is empty (None) under "
                              "networkPath[2].id 'core'"),
    "lambda-id-not-a-string": ("lambda", LAMBDA, lambda_record("i-1", ["leaf", 5]),
                               "the lambda API's networkPath[1].id of instance 'i-1': name must be a non-empty "
                               "string, got int 5"),
    "lambda-nvlink-not-an-object": ("lambda", LAMBDA, lambda_record("i-1", ["leaf", "spine"], nvlink="nvl1.c1"),
                                    "instance 'i-1': nvlink must be an object {domain_id, clique_id} or null, "
                                    "got 'nvl1.c1'"),
    "lambda-nvlink-a-list": ("lambda", LAMBDA, lambda_record("i-1", ["leaf", "spine"], nvlink=["nvl1", "c1"]),
                             "instance 'i-1': nvlink must be an object {domain_id, clique_id} or null, got <list>"),
    "lambda-nvlink-id-not-a-string": ("lambda", LAMBDA, lambda_record(
        "i-1", ["leaf", "spine"], nvlink={"domain_id": 4, "clique_id": "c1"}),
        "instance 'i-1': nvlink.domain_id must be a string, got int 4"),
    "nscale-empty-id-between-two": ("nscale", NSCALE, ["core", "", "leaf"],
                                    "the nscale API's network_node_path[1] of instance 'i-1' is empty ('') under "
                                    "network_node_path[0] 'core': a gap in the path"),
    "nscale-id-not-a-string": ("nscale", NSCALE, ["core", 3, "leaf"],
                               "the nscale API's network_node_path[1] of instance 'i-1': name must be a non-empty "
                               "string, got int 3"),
}


def discover_records(monkeypatch, name, case, bad, **extra):
    module, params, creds, records = case
    monkeypatch.setattr(module, "_page", lambda *_args: (records(bad), None))
    requested = {"i-1": "n1", "i-2": "n2", "i-3": "n3"}
    if name == "gcp" and not isinstance(bad.get("id"), str):
        requested = {str(bad["id"]): "n1", "i-2": "n2", "i-3": "n3"}
    warnings = []
    topology = discover(name, dict(params, instances=[{"region": "r", "instances": requested}], **extra), creds,
                        warnings.append)
    return topology, warnings


@pytest.mark.parametrize("name, case, bad, reason", RECORDS.values(), ids=list(RECORDS))
def test_one_bad_cloud_record_quarantines_its_node_and_the_others_keep_their_place(monkeypatch, name, case, bad, reason):
    topology, warnings = discover_records(monkeypatch, name, case, bad)
    assert list(topology.quarantined) == ["n1"] and topology.quarantined["n1"].source == name
    assert reason in topology.quarantined["n1"].reason
    assert sorted(topology.nodes) == ["n2", "n3"]
    assert topology.path(topology.nodes["n2"].switch) == ["leaf", "spine", "core"]
    assert topology.path(topology.nodes["n3"].switch) == ["leaf2", "spine", "core"]
    assert [w for w in warnings if w.startswith("1 nodes quarantined (left out of the map): n1 (")]
    with pytest.raises(TopologyError, match=r"params.invalid_nodes is fail\): n1 \(") as info:
        discover_records(monkeypatch, name, case, bad, invalid_nodes="fail")
    assert reason in str(info.value)


def test_lambda_keeps_topographs_warnings_for_empty_nvlink_ids_and_long_paths(monkeypatch):
    records = [lambda_record("i-1", ["leaf", "spine"], nvlink={"domain_id": "", "clique_id": "c1"}),
               lambda_record("i-2", ["leaf", "spine", "core", "top"], nvlink={"domain_id": "d", "clique_id": "c"}),
               lambda_record("i-3", ["leaf", "spine"], nvlink={"domain_id": "d", "clique_id": "c"}),
               lambda_record("i-4", ["leaf", "spine", ""], nvlink=None)]  # a shorter path: higher tiers omitted
    monkeypatch.setattr(lambda_cloud, "_page", lambda *_args: (records, None))
    warnings = []
    topology = discover("lambda", {"workspace_id": "ws", "instances": [{"region": "r", "instances": {
        "i-1": "n1", "i-2": "n2", "i-3": "n3", "i-4": "n4"}}]}, {"token": "t"}, warnings.append)
    assert not topology.quarantined
    assert {name: (node.switch, node.domain) for name, node in topology.nodes.items()} == {
        "n1": ("leaf", None), "n2": (None, None), "n3": ("leaf", "d.c"), "n4": ("leaf", None)}
    assert "incomplete NVLink data (domain_id or clique_id empty), so no accelerator domain for: n1" in warnings
    assert "network paths longer than 3 hops are not supported; ignored for: n2" in warnings
