"""The cloud APIs the providers read, as the fake servers answer them, and each provider's contract case.

Each provider's builders (its records, its pages, its params) live here, not in its test module,
so its own tests, the shared contract suite (``test_provider_contract.py``) and the error table
(``test_provider_errors.py``) all import them from one helpers module, never from one another.

``CONTRACT`` maps a provider name (as in ``_providers/_specs.PROVIDERS``) to its ``CloudCase``:
what the contract suite needs to serve that API one good page, a page that repeats itself, a
malformed body, one bad record among good ones and its errors. aws (EC2's XML through botocore),
oci (requests signed by the OCI SDK, the signature checked by the fake server) and nebius (gRPC,
through the Nebius SDK) answer through their own helpers modules (``fake_aws.py``, ``fake_oci.py``,
``fake_nebius.py``).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Callable

from tests.integration import fake_aws, fake_nebius, fake_oci
from tests.integration.fake_apis import NO_WAIT, GrpcAbort, grpc_route, json_reply, text_reply

# -- lambda: GET /api/v1/topology/instance, the envelope {data, page_token} -------------------

LAMBDA_TOKEN = "secret_lambda_token_5d2c"
LAMBDA_PATH = "/api/v1/topology/instance"


def lambda_instance(instance_id, path=(), domain=None, clique=None):
    nvlink = None if domain is None and clique is None else {"domain_id": domain or "", "clique_id": clique or ""}
    return {"id": instance_id, "networkPath": [{"id": hop} for hop in path], "nvlink": nvlink}


def lambda_envelope(data, token=None):
    return json_reply({"data": data, "page_token": token})


def lambda_params(server, instances, **extra):
    return dict(NO_WAIT, instances=instances, workspace_id="ws-42", api_url=server.url, **extra)


# -- gcp: GET /compute/v1/projects/<p>/zones/<z>/instances, {items, nextPageToken} -----------

GCP_TOKEN = "ya29.gcp-token-3e8a"
GCP_ZONE = "us-central1-a"


def gcp_instance(instance_id, name, cluster=None, block=None, subblock=None):
    item = {"kind": "compute#instance", "id": instance_id, "name": name, "status": "RUNNING"}
    if cluster or block or subblock:
        host = {"cluster": cluster, "block": block, "subblock": subblock, "host": f"h-{instance_id}"}
        item["resourceStatus"] = {"physicalHostTopology": {k: v for k, v in host.items() if v}}
    return item


def gcp_instance_list(items, next_token=None):
    body = {"kind": "compute#instanceList", "id": "projects/p/zones/z/instances",
            "selfLink": "https://www.googleapis.com/compute/v1/projects/p/zones/z/instances"}
    if items:
        body["items"] = items
    if next_token:
        body["nextPageToken"] = next_token
    return json_reply(body)


def gcp_params(server, instances, **extra):
    return dict(NO_WAIT, instances=instances, project_id="ml-proj", api_url=server.url, **extra)


# -- nscale: GET /v1/topology?limit=&offset=, a JSON list; an empty page ends it --------------

NSCALE_TOKEN = "nscale-token-a81f"


def nscale_offset_route(fleet):
    def route(request):
        if request.path != "/v1/topology":
            return json_reply({"error": "not found"}, 404)
        offset, limit = int(request.query["offset"]), int(request.query["limit"])
        return json_reply(fleet[offset:offset + limit])
    return route


def nscale_params(server, instances, **extra):
    return dict(NO_WAIT, instances=instances, organization="org-7", api_url=server.url, **extra)


# -- the contract cases ------------------------------------------------------------------------

@dataclass(frozen=True)
class CloudCase:
    """One cloud provider, as the contract suite drives it.

    ``route(records)`` serves ``records`` (provider-shaped) in pages as the API does;
    ``repeating(records)`` answers every request with the same non-final page; ``record(id, good)``
    is one instance's record, placed under a switch ``leaf`` when good, and unusable (its node is
    quarantined, the others mapped) when not; ``params(server, instances)`` and ``creds``
    (holding ``secret``) run the provider against the server. ``error(status, headers, message)``
    is the API's own error reply (default: a JSON body). ``listing(request)`` tells the paged listing
    request from the others (default: every request is one): ``serve`` answers the listing with the
    reply a case injects and every other request as ``route`` does (OCI's availability domains and
    hosts). ``status_words(status)`` and ``timeout_words`` are patterns for how its errors name an
    HTTP status and a timeout. ``grpc`` is the listing's method for an API that speaks gRPC: the
    routes then answer on a gRPC server (``fake_apis.grpc_route``), ``error`` gives the ``GrpcAbort``
    an HTTP status stands for, and ``status_words`` names that code.
    """

    params: Callable
    creds: dict
    secret: str
    region: str
    route: Callable
    repeating: Callable
    repeated_words: str
    record: Callable
    malformed: Callable
    malformed_words: str
    error: Callable = None
    listing: Callable = None
    status_words: Callable = None
    timeout_words: str = r"ReadTimeout(Error)?"
    grpc: str = None

    def start(self, fake_http, fake_grpc, route):
        """The case's fake server (the ``fake_http`` or ``fake_grpc`` fixture) answering through ``route``."""
        if self.grpc is None:
            return fake_http(route)
        return fake_grpc(grpc_route(self.grpc, route))

    def said(self, status):
        """A pattern for how the provider's errors name the HTTP ``status`` (or what stands for it)."""
        return self.status_words(status) if self.status_words is not None else rf"HTTP {status}\b"

    def error_reply(self, status, headers=None, message="error"):
        if self.error is not None:
            return self.error(status, headers, message)
        return json_reply({"error": message}, status, headers)

    def is_listing(self, request):
        return self.listing is None or self.listing(request)

    def serve(self, reply, records=()):
        """A route answering the listing with ``reply`` and the rest of the API with ``records``."""
        if self.listing is None:
            return reply
        rest = self.route(list(records))
        return lambda request: reply(request) if self.listing(request) else rest(request)


def _lambda_record(instance_id, good):
    return lambda_instance(instance_id, ["leaf", "spine"]) if good else \
        {"id": instance_id, "networkPath": [{"id": 7}], "nvlink": None}


def _gcp_record(instance_id, good):
    if good:
        return gcp_instance(instance_id, f"vm-{instance_id}", "c1", "b1", "leaf")
    record = gcp_instance(instance_id, f"vm-{instance_id}")
    record["resourceStatus"] = {"physicalHostTopology": {"cluster": "c1", "block": ["b1"], "subblock": "leaf"}}
    return record


def _gcp_route(records):
    return lambda request: gcp_instance_list(records)


def _nscale_record(instance_id, good):
    return {"instance_id": instance_id, "network_node_path": ["spine", "leaf"] if good else ["spine", 7],
            "block_id": None}


CONTRACT = {
    "lambda": CloudCase(
        params=lambda_params, creds={"token": LAMBDA_TOKEN}, secret=LAMBDA_TOKEN, region="us-east-3",
        route=lambda records: lambda request: lambda_envelope(records),
        repeating=lambda records: lambda request: lambda_envelope(records, token="same"),
        repeated_words="page token 'same' twice",
        record=_lambda_record,
        malformed=lambda request: json_reply([lambda_instance("i-a", ["l"])]),  # a bare list: no envelope
        malformed_words="expected the envelope {data: [...], page_token}"),
    "gcp": CloudCase(
        params=gcp_params, creds={"access_token": GCP_TOKEN}, secret=GCP_TOKEN, region=GCP_ZONE,
        route=_gcp_route,
        repeating=lambda records: lambda request: gcp_instance_list(records, next_token="loop"),
        repeated_words="page token 'loop' twice",
        record=_gcp_record,
        malformed=lambda request: json_reply({"items": {"not": "a list"}}),
        malformed_words="items is not a list"),
    "nscale": CloudCase(
        params=nscale_params, creds={"token": NSCALE_TOKEN}, secret=NSCALE_TOKEN, region="glomfjord",
        route=nscale_offset_route,
        repeating=lambda records: lambda request: json_reply(records),  # a server that ignores the offset
        repeated_words="returned the same instances again",
        record=_nscale_record,
        malformed=lambda request: json_reply({"items": []}),  # an object, not the documented list
        malformed_words="expected a list of instance topologies"),
}


# -- aws: EC2 DescribeInstanceTopology, XML through botocore ------------------------------------

def _aws_code(status):
    return {401: "AuthFailure", 429: "RequestLimitExceeded", 500: "InternalError"}.get(status, "Unavailable")


def _aws_error(status, headers, message):
    return fake_aws.error_reply(status, _aws_code(status), html.escape(message), headers)


def _aws_record(instance_id, good):
    return fake_aws.instance_xml(instance_id, ["spine", "leaf"] if good else ["spine", "le,af"])


CONTRACT["aws"] = CloudCase(
    params=fake_aws.params, creds=fake_aws.CREDS, secret=fake_aws.CREDS["session_token"], region="us-east-1",
    route=lambda records: lambda request: fake_aws.topology_reply(records),
    repeating=lambda records: lambda request: fake_aws.topology_reply(records, next_token="same"),
    repeated_words="page token 'same' twice",
    record=_aws_record,
    malformed=lambda request: text_reply("<html><body>502 from a proxy</body></html>", content_type="text/html"),
    malformed_words="EC2 DescribeInstanceTopology in us-east-1",
    error=_aws_error,
    status_words=lambda status: rf"HTTP {status} {_aws_code(status)}\b")


# -- oci: ListComputeHosts and GetComputeHost, every request's signature checked ---------------

def _oci_record(instance_id, good):
    return fake_oci.host(f"ocid1.computehost.{instance_id}", instance_id, "leaf" if good else "le,af", "nb-1", "hi-1")


def _oci_route(records, listing=None):
    """The signed API: one availability domain, ``records`` (host summary and detail pairs) in one page, each
    host's detail; ``listing`` (a reply, or a route) in place of the host list."""
    def route(request):
        problem = fake_oci.signature_problem(request)
        if problem:
            return json_reply({"code": "NotAuthenticated", "message": problem}, status=401)
        path = request.path.split("/20160918", 1)[-1]
        if path == "/availabilityDomains":
            return json_reply([{"name": fake_oci.AD1, "id": "ocid1.ad.1", "compartmentId": fake_oci.TENANCY}])
        if path == "/computeHosts":
            return listing(request) if listing else json_reply({"items": [summary for summary, _detail in records]})
        for summary, detail in records:
            if path == f"/computeHosts/{summary['id']}":
                return json_reply(detail)
        return json_reply({"code": "NotAuthorizedOrNotFound"}, status=404)
    return route


CONTRACT["oci"] = CloudCase(
    params=fake_oci.params, creds=fake_oci.CREDS, secret=fake_oci.PASSPHRASE, region="us-phoenix-1",
    route=_oci_route,
    repeating=lambda records: _oci_route(records, lambda request: json_reply(
        {"items": [summary for summary, _detail in records]}, headers={"opc-next-page": "same"})),
    repeated_words="page token 'same' twice",
    record=_oci_record,
    malformed=lambda request: json_reply({"data": "not a ComputeHostCollection"}),
    malformed_words="expected a ComputeHostCollection",
    error=lambda status, headers, message: json_reply({"code": "Error", "message": message}, status, headers),
    listing=lambda request: request.path.endswith("/20160918/computeHosts"))


# -- nebius: nebius.compute.v1.InstanceService/List over gRPC ----------------------------------

# The gRPC code the fake server ends a call with where an HTTP API answers the status.
NEBIUS_CODES = {401: "UNAUTHENTICATED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 502: "UNAVAILABLE",
                503: "UNAVAILABLE"}


def _nebius_error(status, headers, message):
    """The status's gRPC code; a Retry-After is gRPC's server pushback (``grpc-retry-pushback-ms``)."""
    seconds = (headers or {}).get("Retry-After")
    trailers = (("grpc-retry-pushback-ms", str(int(float(seconds) * 1000))),) if seconds else None
    return GrpcAbort(NEBIUS_CODES[status], message, trailers)


def _nebius_record(instance_id, good):
    return fake_nebius.instance(instance_id, ["core", "spine", "leaf" if good else "le,af"], "nvlgroup-1")


CONTRACT["nebius"] = CloudCase(
    params=fake_nebius.params, creds={"iam_token": fake_nebius.TOKEN}, secret=fake_nebius.TOKEN, region="eu-north1",
    route=lambda records: lambda request: fake_nebius.page(records),
    repeating=lambda records: lambda request: fake_nebius.page(records, token="same"),
    repeated_words="page token 'same' twice",
    record=_nebius_record,
    malformed=lambda request: b"\x0a\xff\xff\xff\x0f<html>",  # a field length past the end: no message
    malformed_words="the response is not a ListInstancesResponse",
    error=_nebius_error,
    status_words=lambda status: rf"gRPC {NEBIUS_CODES[status]}\b",
    timeout_words="gRPC DEADLINE_EXCEEDED",
    grpc=fake_nebius.METHOD)
