"""nscale provider end to end against a local server reproducing the Radar topology API.

``GET /v1/topology?limit=&offset=`` with ``Authorization: Bearer``, ``X-Organization`` and
``X-Region``; the body is a JSON list of ``{instance_id, network_node_path (root first),
block_id}``; an empty page ends the listing.
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

TOKEN = "nscale-token-a81f"
FLEET = [{"instance_id": f"inst-{n}", "network_node_path": ["core-a", f"spine-{n // 4}", f"leaf-{n // 2}"],
          "block_id": f"nvl-{n // 4}"} for n in range(7)] + [
    {"instance_id": "inst-bare", "network_node_path": [], "block_id": None}]


def offset_route(fleet):
    def route(request):
        if request.path != "/v1/topology":
            return json_reply({"error": "not found"}, 404)
        offset, limit = int(request.query["offset"]), int(request.query["limit"])
        return json_reply(fleet[offset:offset + limit])
    return route


def params(server, instances, **extra):
    return dict(NO_WAIT, instances=instances, organization="org-7", api_url=server.url, **extra)


REQUESTED = [{"region": "glomfjord", "instances": {"inst-0": "n0", "inst-1": "n1", "inst-5": "n5",
                                                   "inst-bare": "cpu1", "inst-gone": "cpu2"}}]


def test_offset_paging_root_first_paths_block_domains_and_missing_instances(fake_http, monkeypatch):
    server = fake_http(offset_route(FLEET))
    result = topology_info_run(monkeypatch, "nscale", params(server, REQUESTED, page_size=3), {"token": TOKEN})
    assert not result["failed"], result
    assert [(r.query["offset"], r.query["limit"]) for r in server.requests] == [
        ("0", "3"), ("3", "3"), ("6", "3"), ("8", "3")]
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" and r.headers["x-organization"] == "org-7"
               and r.headers["x-region"] == "glomfjord" for r in server.requests)
    assert result["summary"]["nodes_without_switch"] == 2
    assert result["warnings"][0].endswith("no-topology): cpu[1-2]")
    topology, _warnings = discover("nscale", params(server, REQUESTED), {"token": TOKEN})
    assert placement(topology, "n0") == (["leaf-0", "spine-0", "core-a"], "nvl-0", None)
    assert placement(topology, "n5") == (["leaf-2", "spine-1", "core-a"], "nvl-1", None)


def test_a_server_ignoring_offset_stops_with_an_error(fake_http):
    server = fake_http(lambda request: json_reply(FLEET[:2]))
    with pytest.raises(Exception, match="returned the same instances again"):
        discover("nscale", params(server, REQUESTED), {"token": TOKEN})
    assert len(server.requests) == 2


def test_throttling_honours_retry_after_then_5xx_backs_off(fake_http, sleeps):
    fleet = offset_route(FLEET)
    pages = Pages(json_reply({}, 429, {"Retry-After": "1.5"}), json_reply({}, 502))
    server = fake_http(lambda request: pages(request) if pages.calls < 2 else fleet(request))
    discover("nscale", dict(params(server, REQUESTED), retry_backoff=0.1, retry_after_max=60), {"token": TOKEN})
    assert sleeps == [1.5, 0.2]


def test_5xx_retries_are_bounded(fake_http, sleeps):
    server = fake_http(lambda request: json_reply({}, 503))
    with pytest.raises(Exception, match="HTTP 503 after 2 attempts"):
        discover("nscale", dict(params(server, REQUESTED), retry_attempts=2), {"token": TOKEN})
    assert len(server.requests) == 2


def test_timeouts_are_retried_then_reported(fake_http, sleeps):
    server = fake_http(lambda request: HANG)
    with pytest.raises(Exception, match="ReadTimeout after 2 attempts"):
        discover("nscale", dict(params(server, REQUESTED), timeout=0.3, retry_attempts=2), {"token": TOKEN})


def test_a_malformed_body_fails_the_module_and_writes_nothing(fake_http, monkeypatch, tmp_path):
    server = fake_http(lambda request: json_reply({"items": FLEET}))  # an object, not the documented list
    dest = tmp_path / "topology.conf"
    result = slurm_topology_run(monkeypatch, "nscale", params(server, REQUESTED), dest, {"token": TOKEN})
    assert result["failed"] and "expected a list of instance topologies" in result["msg"] and not dest.exists()


def test_token_from_the_environment(fake_http, monkeypatch):
    monkeypatch.setenv("NSCALE_TOKEN", "env-token")
    server = fake_http(offset_route([]))
    discover("nscale", params(server, REQUESTED))
    assert server.requests[0].headers["authorization"] == "Bearer env-token"


def playbook_case(start_http, start_grpc):
    server = start_http(offset_route(FLEET))
    return params(server, REQUESTED), {"token": TOKEN}, [TOKEN], \
        lambda: server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
