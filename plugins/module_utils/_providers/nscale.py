# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nscale: the Radar topology API, ``GET <api_url>/v1/topology?limit=&offset=``.

Headers ``Authorization: Bearer``, ``X-Organization`` and ``X-Region`` (the request entry's
region). The body is a JSON list of ``{instance_id, network_node_path, block_id}``; pages are
read by offset until one comes back empty. ``network_node_path`` is root-first and is reversed
into tiers; ``block_id`` is the accelerator domain. A page that only repeats instances already
seen (a server ignoring ``offset``) stops the loop with an error instead of paging forever.

params: ``instances``, ``api_url`` (the Radar URL; required), ``organization`` (or creds, or
``NSCALE_ORGANIZATION``). creds: ``token`` (else ``NSCALE_TOKEN``), ``organization``.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import paginate
from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import NodeDataError, RemoteAPIError, clip
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _cloud, _specs

NAME = "nscale"
PATH = "/v1/topology"
DEFAULT_PAGE_SIZE = _specs.NSCALE_PARAMS.argument_spec["page_size"]["default"]


def discover(params, creds, warn):
    regions, placed = _cloud.placements(params, NAME)
    token = _cloud.secret(creds, "token", env=("NSCALE_TOKEN",), required_by=NAME)
    organization = _cloud.secret(creds, "organization") or _cloud.setting(
        params, "organization", env=("NSCALE_ORGANIZATION",), required_by=NAME)
    client = _cloud.http_client(params, _cloud.setting(params, "api_url", required_by=NAME),
                                headers={"Authorization": f"Bearer {token}", "X-Organization": organization})
    size = _cloud.page_size(params, DEFAULT_PAGE_SIZE, warn)
    for region, _mapping in regions:
        seen: set[str] = set()
        for item in paginate(lambda offset: _page(client, region, size, int(offset or 0), seen)):
            _place(placed, item, region)
    return placed.topology(warn)


def _page(client, region, size, offset, seen):
    body = client.json("GET", PATH, params={"limit": size, "offset": offset}, headers={"X-Region": region})
    where = f"GET {PATH} (region {region}, offset {offset})"
    if not isinstance(body, list) or not all(isinstance(item, dict) for item in body):
        raise RemoteAPIError(f"{where}: expected a list of instance topologies, got {_secrets.excerpt(str(body), 100)}")
    if not body:
        return [], None
    ids = {str(item.get("instance_id")) for item in body}
    if ids <= seen:
        raise RemoteAPIError(f"{where}: the API returned the same instances again; stopping instead of looping")
    seen |= ids
    return body, str(offset + len(body))


def _place(placed, item, region):
    instance_id = item.get("instance_id")
    if not isinstance(instance_id, str) or not instance_id:
        raise RemoteAPIError(f"GET {PATH} (region {region}): an instance without instance_id: {str(item)[:200]}")
    with placed.instance(instance_id):
        path = item.get("network_node_path") or []
        if not isinstance(path, list):
            raise NodeDataError(f"GET {PATH}: instance {instance_id!r}: network_node_path must be a list of strings, "
                                f"got {clip(path)}")
        domain = item.get("block_id")
        if domain is not None and not isinstance(domain, str):
            raise NodeDataError(f"GET {PATH}: instance {instance_id!r}: block_id must be a string or null, "
                                f"got {clip(domain)}")
        # Root first: reversed into tiers. Placements.add checks each id (a string, no gap), as for every cloud,
        # naming the API's own positions.
        placed.add(instance_id, list(reversed(path)), domain,
                   fields=_cloud.path_fields("network_node_path[{}]", len(path), root_first=True),
                   domain_field="block_id")
