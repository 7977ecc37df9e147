"""nscale provider end to end against a local server reproducing the Radar topology API.

``GET /v1/topology?limit=&offset=`` with ``Authorization: Bearer``, ``X-Organization`` and
``X-Region``; the body is a JSON list of ``{instance_id, network_node_path (root first),
block_id}``; an empty page ends the listing.
"""

from __future__ import annotations

from tests.integration.fake_apis import (
    discover,
    placement,
    topology_info_run,
)
from tests.integration.fake_clouds import NSCALE_TOKEN as TOKEN
from tests.integration.fake_clouds import nscale_offset_route as offset_route
from tests.integration.fake_clouds import nscale_params as params
from tests.integration.fake_nscale import FLEET
from tests.integration.fake_nscale import REQUESTED


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


def test_token_from_the_environment(fake_http, monkeypatch):
    monkeypatch.setenv("NSCALE_TOKEN", "env-token")
    server = fake_http(offset_route([]))
    discover("nscale", params(server, REQUESTED))
    assert server.requests[0].headers["authorization"] == "Bearer env-token"
