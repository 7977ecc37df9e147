"""gcp provider end to end against a local server reproducing Compute Engine's instances.list.

Request: ``GET /compute/v1/projects/{project}/zones/{zone}/instances?maxResults=&pageToken=``
with a Bearer token; response ``{kind, items: [Instance], nextPageToken}`` (``items`` omitted
when empty), each instance with a numeric-string ``id`` and
``resourceStatus.physicalHostTopology {cluster, block, subblock, host}``.
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
    text_reply,
    topology_info_run,
)

TOKEN = "ya29.gcp-token-3e8a"


def instance(instance_id, name, cluster=None, block=None, subblock=None):
    item = {"kind": "compute#instance", "id": instance_id, "name": name, "status": "RUNNING"}
    if cluster or block or subblock:
        host = {"cluster": cluster, "block": block, "subblock": subblock, "host": f"h-{instance_id}"}
        item["resourceStatus"] = {"physicalHostTopology": {k: v for k, v in host.items() if v}}
    return item


def instance_list(items, next_token=None):
    body = {"kind": "compute#instanceList", "id": "projects/p/zones/z/instances",
            "selfLink": "https://www.googleapis.com/compute/v1/projects/p/zones/z/instances"}
    if items:
        body["items"] = items
    if next_token:
        body["nextPageToken"] = next_token
    return json_reply(body)


def params(server, instances, **extra):
    return dict(NO_WAIT, instances=instances, project_id="ml-proj", api_url=server.url, **extra)


ZONE_A = "us-central1-a"


def route(request):
    if request.path == f"/compute/v1/projects/ml-proj/zones/{ZONE_A}/instances":
        if request.query.get("pageToken") != "p2":
            return instance_list([instance("1101", "vm-a", "c1", "b1", "sb1"),
                                  instance("1102", "vm-b", "c1", "b1", None)],  # no subblock: skipped
                                 next_token="p2")
        return instance_list([instance("1103", "vm-c", "c1", "b2", "sb3"), instance("9999", "other", "c", "b", "s")])
    if request.path == "/compute/v1/projects/ml-proj/zones/us-east5-b/instances":
        return instance_list([])  # a zone without instances: no "items" at all
    return json_reply({"error": {"code": 404, "message": "not found"}}, status=404)


def test_zones_pages_tiers_subblock_domain_and_missing_instances(fake_http, monkeypatch):
    server = fake_http(route)
    instances = [{"region": ZONE_A, "instances": {"1101": "n1101", "1102": "n1102", "1103": "n1103"}},
                 {"region": "us-east5-b", "instances": {1500: "n-cpu"}}]  # YAML may give numeric ids
    result = topology_info_run(monkeypatch, "gcp", params(server, instances, page_size=2), {"access_token": TOKEN})
    assert not result["failed"], result
    assert server.paths() == [f"/compute/v1/projects/ml-proj/zones/{ZONE_A}/instances"] * 2 + [
        "/compute/v1/projects/ml-proj/zones/us-east5-b/instances"]
    assert [r.query.get("pageToken") for r in server.requests] == [None, "p2", None]
    assert {r.query["maxResults"] for r in server.requests} == {"2"}
    assert server.requests[0].query["fields"].startswith("items(")
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in server.requests)
    assert result["summary"]["nodes_without_switch"] == 2 and result["summary"]["nodes"] == 4
    assert "2 of 4 requested instances have no topology data in the gcp API" in result["warnings"][0]
    assert result["warnings"][0].endswith(": n1102,n-cpu")
    topology, _warnings = discover("gcp", params(server, instances), {"access_token": TOKEN})
    assert placement(topology, "n1101") == (["sb1", "b1", "c1"], "sb1", None)
    assert placement(topology, "n1103") == (["sb3", "b2", "c1"], "sb3", None)


def test_a_repeated_page_token_stops_with_an_error(fake_http):
    server = fake_http(lambda request: instance_list([instance("1", "a", "c", "b", "s")], next_token="loop"))
    with pytest.raises(Exception, match="page token 'loop' twice"):
        discover("gcp", params(server, [{"region": ZONE_A, "instances": {"1": "n1"}}]), {"access_token": TOKEN})


def test_throttling_honours_retry_after_then_5xx_backs_off(fake_http, sleeps):
    server = fake_http(Pages(json_reply({"error": {"code": 429}}, 429, {"Retry-After": "3"}),
                             json_reply({"error": {"code": 503}}, 503),
                             instance_list([instance("1", "a", "c", "b", "s")])))
    topology, _warnings = discover("gcp", dict(params(server, [{"region": ZONE_A, "instances": {"1": "n1"}}]),
                                               retry_backoff=0.5, retry_after_max=60), {"access_token": TOKEN})
    assert sleeps == [3.0, 1.0] and len(server.requests) == 3 and topology.nodes["n1"].switch == "s"


def test_5xx_retries_are_bounded(fake_http, sleeps):
    server = fake_http(lambda request: json_reply({"error": {"code": 502}}, 502))
    with pytest.raises(Exception, match="HTTP 502 after 4 attempts"):
        discover("gcp", dict(params(server, [{"region": ZONE_A, "instances": {"1": "n1"}}]), retry_attempts=4),
                 {"access_token": TOKEN})
    assert len(server.requests) == 4 and sleeps == [0, 0, 0]


def test_timeouts_are_retried_then_reported(fake_http, sleeps):
    server = fake_http(lambda request: HANG)
    with pytest.raises(Exception, match="ReadTimeout after 2 attempts"):
        discover("gcp", dict(params(server, [{"region": ZONE_A, "instances": {"1": "n1"}}]), timeout=0.3,
                             retry_attempts=2), {"access_token": TOKEN})
    assert len(server.requests) == 2


def test_a_malformed_body_fails_the_module_and_writes_nothing(fake_http, monkeypatch, tmp_path):
    server = fake_http(lambda request: json_reply({"items": {"not": "a list"}}))
    dest = tmp_path / "topology.conf"
    result = slurm_topology_run(monkeypatch, "gcp", params(server, [{"region": ZONE_A, "instances": {"1": "n1"}}]),
                                dest, {"access_token": TOKEN})
    assert result["failed"] and "items is not a list" in result["msg"] and not dest.exists()


def test_token_and_project_from_the_metadata_server(fake_http):
    def metadata(request):
        assert request.headers["metadata-flavor"] == "Google"
        if request.path.endswith("/service-accounts/default/token"):
            return json_reply({"access_token": "ya29.from-metadata", "expires_in": 3599, "token_type": "Bearer"})
        if request.path == "/computeMetadata/v1/project/project-id":
            return text_reply("meta-proj")
        return text_reply("", status=404)

    meta = fake_http(metadata)
    api = fake_http(lambda request: instance_list([instance("1", "a", "c", "b", "s")]))
    topology, _warnings = discover("gcp", dict(NO_WAIT, instances=[{"region": ZONE_A, "instances": {"1": "n1"}}],
                                               api_url=api.url, metadata_url=meta.url))
    assert api.requests[0].path == f"/compute/v1/projects/meta-proj/zones/{ZONE_A}/instances"
    assert api.requests[0].headers["authorization"] == "Bearer ya29.from-metadata"
    assert topology.nodes["n1"].switch == "s"


def test_token_from_the_environment(fake_http, monkeypatch):
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.from-env")
    server = fake_http(lambda request: instance_list([]))
    discover("gcp", params(server, [{"region": ZONE_A, "instances": {"1": "n1"}}]))
    assert server.requests[0].headers["authorization"] == "Bearer ya29.from-env"


def playbook_case(start_http, start_grpc):
    server = start_http(lambda request: instance_list([instance("1", "a", "c", "b", "s")]))
    return params(server, [{"region": ZONE_A, "instances": {"1": "gpu01"}}]), {"access_token": TOKEN}, [TOKEN], \
        lambda: server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
