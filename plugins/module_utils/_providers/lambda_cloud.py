# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lambda: the topology API, ``GET <api_url>/api/v1/topology/instance`` (provider name ``lambda``).

One paged listing per region: query ``workspace_id``, ``region``, ``page_size`` and
``page_token``; the response envelope is ``{data: [...], page_token}`` (null on the last page).
``networkPath[].id`` is already closest-first (leaf first); paths longer than three hops are
reported and ignored, as Topograph does. The accelerator domain is
``<nvlink.domain_id>.<nvlink.clique_id>`` (a warning when either part is empty); an ``nvlink`` that
is neither an object nor null, or a part that is not a string, quarantines the node, as a
``networkPath`` of the wrong shape does.

params: ``instances`` (region = Lambda region), ``workspace_id`` (or creds, or
``LAMBDA_WORKSPACE_ID``), ``api_url`` (default https://cloud.lambda.ai).
creds: ``token`` (else ``LAMBDA_API_TOKEN``, else ``LAMBDA_API_KEY``); without one, Lambda's
Kubernetes workload identity, as Topograph reads it: the identity ``LAMBDA_IDENTITY_LRN`` (or
the older ``LAMBDA_ROLE_LRN``) and the pod's projected service-account token
(``LAMBDA_WORKLOAD_IDENTITY_TOKEN_FILE``, default the webhook's mount) are exchanged at
``POST <api_url>/api/v1/oidc/token`` (``{token, identity_lrn}`` -> ``{data: {access_token}}``)
for a short-lived API key. A refused exchange says so without its body (the API answers a
uniform 401).
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import paginate
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    NodeDataError,
    RemoteAPIError,
    TopologyError,
    clip,
)
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _cloud, _specs

NAME = "lambda"
PATH = "/api/v1/topology/instance"
DEFAULT_API_URL = _specs.LAMBDA_API_URL
DEFAULT_PAGE_SIZE = _specs.LAMBDA_PARAMS.argument_spec["page_size"]["default"]
MAX_TIERS = 3
OIDC_TOKEN_PATH = "/api/v1/oidc/token"
IDENTITY_ENV = ("LAMBDA_IDENTITY_LRN", "LAMBDA_ROLE_LRN")
TOKEN_FILE_ENV = ("LAMBDA_WORKLOAD_IDENTITY_TOKEN_FILE",)
DEFAULT_TOKEN_FILE = "/var/run/secrets/lambda.ai/serviceaccount/token"


def discover(params, creds, warn):
    regions, placed = _cloud.placements(params, NAME)
    workspace = _cloud.secret(creds, "workspace_id") or _cloud.setting(
        params, "workspace_id", env=("LAMBDA_WORKSPACE_ID",), required_by=NAME)
    api_url = _cloud.setting(params, "api_url", DEFAULT_API_URL)
    token = _cloud.secret(creds, "token", env=("LAMBDA_API_TOKEN", "LAMBDA_API_KEY")) or \
        _workload_identity_token(params, creds, api_url)
    client = _cloud.http_client(params, api_url, headers={"Authorization": f"Bearer {token}"})
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


def _workload_identity_token(params, creds, api_url):
    """A short-lived API key for the pod's workload identity (an explicit token takes precedence, as in Topograph)."""
    identity = _cloud.setting(creds, "identity_lrn", env=IDENTITY_ENV)
    if not identity:
        raise TopologyError("the lambda provider needs creds.token (or the environment variable LAMBDA_API_TOKEN or "
                            "LAMBDA_API_KEY), or a workload identity: creds.identity_lrn or LAMBDA_IDENTITY_LRN, which "
                            "lambda-pod-identity-webhook injects into pods whose service account is annotated "
                            "lambda.ai/identity-lrn")
    path = _cloud.setting(creds, "token_file", DEFAULT_TOKEN_FILE, env=TOKEN_FILE_ENV)
    try:
        account_token = _input_file.read_text(path, "lambda creds.token_file", path_is_secret=True).strip()
    except _input_file.InputFileError as exc:
        raise TopologyError(str(exc)) from None
    if not account_token:
        raise TopologyError("lambda creds.token_file: the service-account token file is empty")
    _cloud.secret({"token_file": account_token}, "token_file")  # no line break or control character inside
    client = _cloud.http_client(params, api_url, headers={"Content-Type": "application/json"})
    try:
        body = client.json("POST", OIDC_TOKEN_PATH, json={"token": account_token, "identity_lrn": identity})
    except RemoteAPIError as exc:
        # The body could echo the service-account token: only the status is shown.
        raise RemoteAPIError(f"POST {OIDC_TOKEN_PATH}: the workload-identity token exchange for {identity!r} failed"
                             f"{f' (HTTP {exc.status})' if exc.status else ''}", exc.status) from None
    data = body.get("data") if isinstance(body, dict) else None
    token = data.get("access_token") if isinstance(data, dict) else None
    if not isinstance(token, str) or not token:
        raise RemoteAPIError(f"POST {OIDC_TOKEN_PATH}: the token exchange returned no data.access_token")
    _cloud.secret({"access_token": token}, "access_token")
    return token


def _page(client, query, page):
    body = client.json("GET", PATH, params=dict(query, page_token=page) if page else query)
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise RemoteAPIError(f"GET {PATH} (region {query['region']}): expected the envelope {{data: [...], page_token}}, "
                             f"got {_secrets.excerpt(str(body), 100)}")
    token = body.get("page_token")
    if token is not None and not isinstance(token, str):
        raise RemoteAPIError(f"GET {PATH}: page_token must be a string or null, got {token!r}")
    return body["data"], token


def _place(placed, item, incomplete, too_long):
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
        raise RemoteAPIError(f"GET {PATH}: an instance without id: {_secrets.excerpt(str(item))}")
    if not placed.wants(item["id"]):
        return
    with placed.instance(item["id"]):
        _place_requested(placed, item, incomplete, too_long)


def _place_requested(placed, item, incomplete, too_long):
    """One requested instance's record; a NodeDataError quarantines its node."""
    where = f"GET {PATH}: instance {item['id']!r}"
    path = item.get("networkPath") or []
    if not isinstance(path, list) or not all(isinstance(hop, dict) for hop in path):
        raise NodeDataError(f"{where}: networkPath must be a list of {{id}}, got {clip(path)}")
    nvlink = item.get("nvlink")
    if nvlink is not None and not isinstance(nvlink, dict):  # null or absent: no NVLink data
        raise NodeDataError(f"{where}: nvlink must be an object {{domain_id, clique_id}} or null, got {clip(nvlink)}")
    parts = [(key, (nvlink or {}).get(key)) for key in ("domain_id", "clique_id")]
    for key, value in parts:
        if value is not None and not isinstance(value, str):
            raise NodeDataError(f"{where}: nvlink.{key} must be a string, got {type(value).__name__} {clip(value)}")
    node = placed.requested[item["id"]]
    if len(path) > MAX_TIERS:
        too_long.append(node)
        return
    domain = None
    if nvlink is not None:
        if all(value for _key, value in parts):
            domain = ".".join(value for _key, value in parts)
        else:
            incomplete.append(node)
    # Placements.add checks each hop id (a string, no gap), as for every cloud.
    placed.add(item["id"], [hop.get("id") for hop in path], domain,
               fields=_cloud.path_fields("networkPath[{}].id", len(path)),
               domain_field="nvlink <domain_id>.<clique_id>")
