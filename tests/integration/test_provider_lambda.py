"""lambda provider end to end against a local server reproducing the Lambda topology API.

``GET /api/v1/topology/instance?workspace_id=&region=&page_size=&page_token=`` with a Bearer
token; the envelope ``{data: [{id, networkPath: [{id}], nvlink: {domain_id, clique_id}|null}],
page_token: str|null}``.
"""

from __future__ import annotations


import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError

from tests.integration.fake_apis import discover, placement, topology_info_run
from tests.integration.fake_clouds import LAMBDA_PATH as PATH
from tests.integration.fake_clouds import LAMBDA_TOKEN as TOKEN
from tests.integration.fake_clouds import lambda_envelope as envelope
from tests.integration.fake_clouds import lambda_instance as instance
from tests.integration.fake_clouds import lambda_params as params
from tests.integration.fake_lambda import ACCOUNT_TOKEN
from tests.integration.fake_lambda import LRN
from tests.integration.fake_lambda import oidc_route


def route(request):
    assert request.path == PATH
    if request.query["region"] == "us-south-2":
        return envelope([])
    if request.query.get("page_token") != "t2":
        return envelope([instance("i-a", ["leaf1", "spine1", "core1"], "nvl7", "3"),
                         instance("i-b", ["leaf1", "spine1", "core1"], "nvl7", "")], token="t2")
    return envelope([instance("i-c", ["leaf2", "spine2"]),
                     instance("i-d", ["l", "s", "c", "too-high"]),
                     instance("i-zzz", ["x"])])


def test_regions_pages_leaf_first_paths_nvlink_domains_and_missing_instances(fake_http, monkeypatch):
    server = fake_http(route)
    instances = [{"region": "us-east-3", "instances": {"i-a": "gh01", "i-b": "gh02", "i-c": "gh03", "i-d": "gh04"}},
                 {"region": "us-south-2", "instances": {"i-e": "gh05"}}]
    result = topology_info_run(monkeypatch, "lambda", params(server, instances, page_size=2), {"token": TOKEN})
    assert not result["failed"], result
    assert [(r.query["region"], r.query.get("page_token")) for r in server.requests] == [
        ("us-east-3", None), ("us-east-3", "t2"), ("us-south-2", None)]
    assert all(r.query["workspace_id"] == "ws-42" and r.query["page_size"] == "2" for r in server.requests)
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in server.requests)
    assert result["summary"]["nodes_without_switch"] == 2
    warnings = result["warnings"]
    assert any("incomplete NVLink data" in w and w.endswith(": gh02") for w in warnings)
    assert any("longer than 3 hops" in w and w.endswith(": gh04") for w in warnings)
    assert any(w.endswith("no-topology): gh[04-05]") for w in warnings)
    topology, _warnings = discover("lambda", params(server, instances), {"token": TOKEN})
    assert placement(topology, "gh01") == (["leaf1", "spine1", "core1"], "nvl7.3", None)
    assert placement(topology, "gh02") == (["leaf1", "spine1", "core1"], None, None)
    assert placement(topology, "gh03") == (["leaf2", "spine2"], None, None)  # a 2-hop path


def test_token_from_the_environment(fake_http, monkeypatch):
    monkeypatch.setenv("LAMBDA_API_TOKEN", "from-env")
    server = fake_http(lambda request: envelope([]))
    discover("lambda", params(server, [{"region": "r", "instances": {"i-a": "n1"}}]))
    assert server.requests[0].headers["authorization"] == "Bearer from-env"


def test_workload_identity_exchanges_the_projected_token_for_a_key(fake_http, monkeypatch, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(ACCOUNT_TOKEN + "\n")
    for name in ("LAMBDA_API_TOKEN", "LAMBDA_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LAMBDA_IDENTITY_LRN", LRN)
    monkeypatch.setenv("LAMBDA_WORKLOAD_IDENTITY_TOKEN_FILE", str(token_file))
    server = fake_http(oidc_route)
    topology, _warnings = discover("lambda", params(server, [{"region": "r", "instances": {"i-a": "gpu01"}}]))
    assert topology.nodes["gpu01"].domain == "d.1"
    assert server.paths() == ["/api/v1/oidc/token", PATH]
    token_file.write_text("another-projected-token")  # refused: the message shows neither token nor body
    with pytest.raises(RemoteAPIError, match=r"workload-identity token exchange for .* failed \(HTTP 401\)") as info:
        discover("lambda", params(server, [{"region": "r", "instances": {"i-a": "gpu01"}}]))
    assert "another-projected-token" not in str(info.value) and "echo" not in str(info.value)


def test_an_explicit_token_wins_over_the_workload_identity(fake_http, monkeypatch):
    monkeypatch.setenv("LAMBDA_IDENTITY_LRN", LRN)
    server = fake_http(lambda request: envelope([]))
    discover("lambda", params(server, [{"region": "r", "instances": {"i-a": "n1"}}]), {"token": TOKEN})
    assert server.paths() == [PATH] and server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"


def test_neither_token_nor_identity_names_both_ways(fake_http, monkeypatch):
    for name in ("LAMBDA_API_TOKEN", "LAMBDA_API_KEY", "LAMBDA_IDENTITY_LRN", "LAMBDA_ROLE_LRN"):
        monkeypatch.delenv(name, raising=False)
    server = fake_http(lambda request: envelope([]))
    with pytest.raises(TopologyError, match="needs creds.token .* or a workload identity: creds.identity_lrn"):
        discover("lambda", params(server, [{"region": "r", "instances": {"i-a": "n1"}}]))
    assert not server.requests


@pytest.mark.parametrize("bad", ["{}\x07", "{}\r\x07", "{}\u00e9"], ids=["bell", "cr", "non-ascii"])
def test_a_projected_token_with_a_bad_character_is_refused_without_showing_it(fake_http, tmp_path, bad):
    token_file = tmp_path / "token"
    token_file.write_text(bad.format(ACCOUNT_TOKEN))
    server = fake_http(oidc_route)
    with pytest.raises(TopologyError, match=r"contains .*; the value is not shown") as info:
        discover("lambda", params(server, [{"region": "r", "instances": {"i-a": "gpu01"}}]),
                 {"identity_lrn": LRN, "token_file": str(token_file)})
    assert ACCOUNT_TOKEN[:12] not in str(info.value) and not server.requests
