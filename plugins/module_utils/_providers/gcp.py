# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GCP: Compute Engine ``instances.list`` and each instance's ``resourceStatus.physicalHostTopology``.

As in Topograph, each request entry's ``region`` is the **zone** listed. Tiers, closest first:
``subblock``, ``block``, ``cluster``; the accelerator domain is the sub-block (Topograph's
choice). An instance missing any of the three has no topology data. Instance ids are the
numeric ``id`` (what the metadata server's ``instance/id`` returns), not names.

params: ``instances``, ``project_id`` (else ``GOOGLE_CLOUD_PROJECT``/``CLOUDSDK_CORE_PROJECT``,
else the metadata server), ``api_url`` (default https://compute.googleapis.com), ``metadata_url``.
creds: ``access_token`` (else ``GOOGLE_OAUTH_ACCESS_TOKEN``, else the metadata server's token
for the VM's service account).
"""

from __future__ import annotations

from urllib.parse import quote

from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import paginate
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    AifactoryTopologyError,
    NodeDataError,
    RemoteAPIError,
    TopologyError,
)
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _cloud, _specs

NAME = "gcp"
DEFAULT_API_URL = _specs.GCP_API_URL
DEFAULT_METADATA_URL = _specs.GCP_METADATA_URL
DEFAULT_PAGE_SIZE = _specs.GCP_PARAMS["page_size"]["default"]  # maxResults: the API's maximum
FIELDS = "items(id,name,resourceStatus/physicalHostTopology),nextPageToken"


def discover(params, creds, warn):
    zones, placed = _cloud.placements(params, NAME)
    metadata = _Metadata(params)
    token = _cloud.secret(creds, "access_token", env=("GOOGLE_OAUTH_ACCESS_TOKEN",)) or metadata.token()
    project = _cloud.setting(params, "project_id", env=("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT")) \
        or metadata.project()
    client = _cloud.http_client(params, _cloud.setting(params, "api_url", DEFAULT_API_URL),
                                headers={"Authorization": f"Bearer {token}"})
    size = _cloud.page_size(params, DEFAULT_PAGE_SIZE, warn, maximum=DEFAULT_PAGE_SIZE)
    for zone, _mapping in zones:
        path = f"/compute/v1/projects/{quote(project, safe='')}/zones/{quote(zone, safe='')}/instances"
        for item in paginate(lambda token: _page(client, path, size, token)):
            _place(placed, item, zone)
    return placed.topology(warn)


def _page(client, path, size, token):
    query = {"maxResults": size, "fields": FIELDS}
    if token:
        query["pageToken"] = token
    body = client.json("GET", path, params=query)
    where = f"GET {path}"
    if not isinstance(body, dict):
        raise RemoteAPIError(f"{where}: expected an InstanceList object, got {str(body)[:100]}")
    items = body.get("items", [])  # Google omits an empty list
    if not isinstance(items, list):
        raise RemoteAPIError(f"{where}: items is not a list")
    return items, body.get("nextPageToken")


def _place(placed, item, zone):
    if not isinstance(item, dict) or item.get("id") in (None, ""):
        raise RemoteAPIError(f"zone {zone}: an instance without id in the instances.list response: {str(item)[:200]}")
    with placed.instance(str(item["id"])):
        status = item.get("resourceStatus") or {}
        topology = (status.get("physicalHostTopology") if isinstance(status, dict) else status) or {}
        if not isinstance(topology, dict):
            raise NodeDataError(f"zone {zone}: instance {item['id']}: physicalHostTopology is not an object")
        tiers = [topology.get("subblock"), topology.get("block"), topology.get("cluster")]
        if all(tiers):  # Topograph skips an instance missing any of the three
            placed.add(str(item["id"]), tiers, domain=topology["subblock"])


class _Metadata:
    """The GCE metadata server, asked only when the token or project is not given."""

    def __init__(self, params):
        self.params = params
        self._client = None

    def _get(self, path):
        if self._client is None:
            base = _cloud.setting(self.params, "metadata_url", DEFAULT_METADATA_URL)
            self._client = _cloud.http_client(self.params, base, headers={"Metadata-Flavor": "Google"})
        try:
            return self._client.request("GET", f"/computeMetadata/v1/{path}")
        except AifactoryTopologyError as exc:
            raise TopologyError(f"the gcp provider needs creds.access_token (or GOOGLE_OAUTH_ACCESS_TOKEN) and "
                                f"params.project_id when not on a GCE VM; the metadata server failed: {exc}") from None

    def token(self):
        try:
            token = self._get("instance/service-accounts/default/token").json()["access_token"]
        except (ValueError, KeyError, TypeError):
            raise RemoteAPIError("the GCE metadata server returned no access_token") from None
        if not isinstance(token, str) or not token:
            raise RemoteAPIError("the GCE metadata server returned an empty access_token")
        return token

    def project(self):
        project = self._get("project/project-id").text.strip()
        if not project:
            raise RemoteAPIError("the GCE metadata server returned an empty project id")
        return project
