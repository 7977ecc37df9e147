"""lambda provider end to end against a local server reproducing the Lambda topology API.

``GET /api/v1/topology/instance?workspace_id=&region=&page_size=&page_token=`` with a Bearer
token; the envelope ``{data: [{id, networkPath: [{id}], nvlink: {domain_id, clique_id}|null}],
page_token: str|null}``.
"""

from __future__ import annotations

import json

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


ACCOUNT_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dG9wbyJ9.c2lnbmF0dXJl"
MINTED = "lambda-minted-short-lived-key-71"
LRN = "lrn:lambda:iam::ws-42:identity/topology"


def oidc_route(request):
    """The OIDC exchange (the projected token and the identity for a key), then the topology API with that key."""
    if request.path == "/api/v1/oidc/token":
        if request.method != "POST" or json.loads(request.body) != {"token": ACCOUNT_TOKEN, "identity_lrn": LRN}:
            return json_reply({"error": "unauthorized", "echo": request.body.decode()}, status=401)
        return json_reply({"data": {"access_token": MINTED, "expires_in": 3600}})
    if request.headers.get("authorization") != f"Bearer {MINTED}":
        return json_reply({"error": "unauthorized"}, status=401)
    return envelope([instance("i-a", ["l", "s", "c"], "d", "1")])


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
    with pytest.raises(Exception, match=r"workload-identity token exchange for .* failed \(HTTP 401\)") as info:
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
    with pytest.raises(Exception, match="needs creds.token .* or a workload identity: creds.identity_lrn"):
        discover("lambda", params(server, [{"region": "r", "instances": {"i-a": "n1"}}]))
    assert not server.requests


def playbook_case(start_http, start_grpc):
    server = start_http(lambda request: envelope([instance("i-a", ["l", "s", "c"], "d", "1")]))
    return params(server, [{"region": "r", "instances": {"i-a": "gpu01"}}]), {"token": TOKEN}, [TOKEN], \
        lambda: server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"


def workload_identity_case(start_http, start_grpc, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(ACCOUNT_TOKEN)
    server = start_http(oidc_route)
    return (params(server, [{"region": "r", "instances": {"i-a": "gpu01"}}]),
            {"identity_lrn": LRN, "token_file": str(token_file)}, [ACCOUNT_TOKEN, MINTED],
            lambda: server.paths() == ["/api/v1/oidc/token", PATH])


# Every credential form besides playbook_case's, for the -vvvv secret test (test_provider_creds_playbook.py).
PLAYBOOK_FORMS = {"workload-identity": workload_identity_case}


@pytest.mark.parametrize("bad", ["{}\x07", "{}\r\x07", "{}\u00e9"], ids=["bell", "cr", "non-ascii"])
def test_a_projected_token_with_a_bad_character_is_refused_without_showing_it(fake_http, tmp_path, bad):
    token_file = tmp_path / "token"
    token_file.write_text(bad.format(ACCOUNT_TOKEN))
    server = fake_http(oidc_route)
    with pytest.raises(Exception, match=r"contains .*; the value is not shown") as info:
        discover("lambda", params(server, [{"region": "r", "instances": {"i-a": "gpu01"}}]),
                 {"identity_lrn": LRN, "token_file": str(token_file)})
    assert ACCOUNT_TOKEN[:12] not in str(info.value) and not server.requests
