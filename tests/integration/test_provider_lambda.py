"""lambda provider end to end against a local server reproducing the Lambda topology API.

``GET /api/v1/topology/instance?workspace_id=&region=&page_size=&page_token=`` with a Bearer
token; the envelope ``{data: [{id, networkPath: [{id}], nvlink: {domain_id, clique_id}|null}],
page_token: str|null}``.
"""

from __future__ import annotations

import pytest

from tests.integration.fake_apis import (
    HANG,
    NO_WAIT,
    Pages,
    discover,
    json_reply,
    placement,
    slurm_topology_run,
    topology_info_run,
)

TOKEN = "secret_lambda_token_5d2c"
PATH = "/api/v1/topology/instance"


def instance(instance_id, path=(), domain=None, clique=None):
    nvlink = None if domain is None and clique is None else {"domain_id": domain or "", "clique_id": clique or ""}
    return {"id": instance_id, "networkPath": [{"id": hop} for hop in path], "nvlink": nvlink}


def envelope(data, token=None):
    return json_reply({"data": data, "page_token": token})


def params(server, instances, **extra):
    return dict(NO_WAIT, instances=instances, workspace_id="ws-42", api_url=server.url, **extra)


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


def test_a_repeated_page_token_stops_with_an_error(fake_http):
    server = fake_http(lambda request: envelope([instance("i-a", ["l"])], token="same"))
    with pytest.raises(Exception, match="page token 'same' twice"):
        discover("lambda", params(server, [{"region": "r", "instances": {"i-a": "n1"}}]), {"token": TOKEN})


def test_throttling_honours_retry_after_then_5xx_backs_off(fake_http, sleeps):
    server = fake_http(Pages(json_reply({"error": "slow down"}, 429, {"Retry-After": "5"}),
                             json_reply({"error": "oops"}, 500), envelope([instance("i-a", ["l"])])))
    discover("lambda", dict(params(server, [{"region": "r", "instances": {"i-a": "n1"}}]), retry_backoff=2,
                            retry_after_max=60), {"token": TOKEN})
    assert sleeps == [5.0, 4] and len(server.requests) == 3


def test_retry_after_is_capped(fake_http, sleeps):
    server = fake_http(Pages(json_reply({}, 429, {"Retry-After": "86400"}), envelope([])))
    discover("lambda", dict(params(server, [{"region": "r", "instances": {"i-a": "n1"}}]), retry_after_max=30),
             {"token": TOKEN})
    assert sleeps == [30]


def test_5xx_retries_are_bounded(fake_http, sleeps):
    server = fake_http(lambda request: json_reply({}, 504))
    with pytest.raises(Exception, match="HTTP 504 after 3 attempts"):
        discover("lambda", dict(params(server, [{"region": "r", "instances": {"i-a": "n1"}}]), retry_attempts=3),
                 {"token": TOKEN})
    assert len(server.requests) == 3


def test_timeouts_are_retried_then_reported(fake_http, sleeps):
    server = fake_http(lambda request: HANG)
    with pytest.raises(Exception, match="ReadTimeout after 2 attempts"):
        discover("lambda", dict(params(server, [{"region": "r", "instances": {"i-a": "n1"}}]), timeout=0.3,
                                retry_attempts=2), {"token": TOKEN})


def test_a_malformed_body_fails_the_module_and_writes_nothing(fake_http, monkeypatch, tmp_path):
    server = fake_http(lambda request: json_reply([instance("i-a", ["l"])]))  # a bare list: no envelope
    dest = tmp_path / "topology.conf"
    result = slurm_topology_run(monkeypatch, "lambda", params(server, [{"region": "r", "instances": {"i-a": "n1"}}]),
                                dest, {"token": TOKEN})
    assert result["failed"] and "expected the envelope {data: [...], page_token}" in result["msg"]
    assert not dest.exists()


def test_token_from_the_environment(fake_http, monkeypatch):
    monkeypatch.setenv("LAMBDA_API_TOKEN", "from-env")
    server = fake_http(lambda request: envelope([]))
    discover("lambda", params(server, [{"region": "r", "instances": {"i-a": "n1"}}]))
    assert server.requests[0].headers["authorization"] == "Bearer from-env"


def playbook_case(start_http, start_grpc):
    server = start_http(lambda request: envelope([instance("i-a", ["l", "s", "c"], "d", "1")]))
    return params(server, [{"region": "r", "instances": {"i-a": "gpu01"}}]), {"token": TOKEN}, [TOKEN], \
        lambda: server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
