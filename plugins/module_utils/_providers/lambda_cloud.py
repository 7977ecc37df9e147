# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lambda: the topology API, ``GET <api_url>/api/v1/topology/instance`` (provider name ``lambda``).

One paged listing per region: query ``workspace_id``, ``region``, ``page_size`` and
``page_token``; the response envelope is ``{data: [...], page_token}`` (null on the last page).
``networkPath[].id`` is already closest-first (leaf first); paths longer than three hops are
reported and ignored, as Topograph does. The accelerator domain is
``<nvlink.domain_id>.<nvlink.clique_id>`` (a warning when either part is empty).

params: ``instances`` (region = Lambda region), ``workspace_id`` (or creds, or
``LAMBDA_WORKSPACE_ID``), ``api_url`` (default https://cloud.lambda.ai).
creds: ``token`` (else ``LAMBDA_API_TOKEN``, else ``LAMBDA_API_KEY``).
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import paginate
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _cloud, _specs

NAME = "lambda"
PATH = "/api/v1/topology/instance"
DEFAULT_API_URL = _specs.LAMBDA_API_URL
DEFAULT_PAGE_SIZE = _specs.LAMBDA_PARAMS["page_size"]["default"]
MAX_TIERS = 3


def discover(params, creds, warn):
    regions, placed = _cloud.placements(params, NAME)
    token = _cloud.secret(creds, "token", env=("LAMBDA_API_TOKEN", "LAMBDA_API_KEY"), required_by=NAME)
    workspace = _cloud.secret(creds, "workspace_id") or _cloud.setting(
        params, "workspace_id", env=("LAMBDA_WORKSPACE_ID",), required_by=NAME)
    client = _cloud.http_client(params, _cloud.setting(params, "api_url", DEFAULT_API_URL),
                                headers={"Authorization": f"Bearer {token}"})
    size = _cloud.page_size(params, DEFAULT_PAGE_SIZE, warn)
    incomplete, too_long = [], []
    for region, _mapping in regions:
        query = {"workspace_id": workspace, "region": region, "page_size": size}
        for item in paginate(lambda page: _page(client, query, page)):
            _place(placed, item, incomplete, too_long)
    if incomplete:
        warn(f"incomplete NVLink data (domain_id or clique_id empty), so no accelerator domain for: "
             f"{hostlist.compress(incomplete)}")
    if too_long:
        warn(f"network paths longer than {MAX_TIERS} hops are not supported; ignored for: {hostlist.compress(too_long)}")
    return placed.topology(warn)


def _page(client, query, page):
    body = client.json("GET", PATH, params=dict(query, page_token=page) if page else query)
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise RemoteAPIError(f"GET {PATH} (region {query['region']}): expected the envelope {{data: [...], page_token}}, "
                             f"got {str(body)[:100]}")
    token = body.get("page_token")
    if token is not None and not isinstance(token, str):
        raise RemoteAPIError(f"GET {PATH}: page_token must be a string or null, got {token!r}")
    return body["data"], token


def _place(placed, item, incomplete, too_long):
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
        raise RemoteAPIError(f"GET {PATH}: an instance without id: {str(item)[:200]}")
    if not placed.wants(item["id"]):
        return
    node = placed.requested[item["id"]]
    path = item.get("networkPath") or []
    if not isinstance(path, list) or not all(isinstance(hop, dict) for hop in path):
        placed.refuse(item["id"], f"GET {PATH}: instance {item['id']!r}: networkPath must be a list of {{id}}")
        return
    if len(path) > MAX_TIERS:
        too_long.append(node)
        return
    domain = None
    nvlink = item.get("nvlink")
    if isinstance(nvlink, dict):
        if nvlink.get("domain_id") and nvlink.get("clique_id"):
            domain = f"{nvlink['domain_id']}.{nvlink['clique_id']}"
        else:
            incomplete.append(node)
    tiers = [hop.get("id") for hop in path]
    if any(tiers) or domain:
        placed.add(item["id"], tiers, domain)
