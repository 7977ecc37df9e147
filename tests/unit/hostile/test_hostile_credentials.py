"""Credential chains the SDKs run, against hostile servers on 127.0.0.1 (issue 33, round three).

OCI's resource principal (versions 2.1 and 1.1): the token endpoints and the metadata the chain reads
are held to the collection's limits (256 KiB per answer, the retry policy, the deadline) and a hostile
answer is a short error naming its source. Nebius: a token a metadata token endpoint gives is checked
for what a header can carry before it is used.
"""

from __future__ import annotations

import time
import tracemalloc

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError
from tests.fault_http import FaultServer
from tests.integration.fake_apis import NO_WAIT, FakeHttpApi, discover, json_reply

TENANCY = "ocid1.tenancy.oc1..aaaarptenancy"
RESOURCE = "ocid1.containerinstance.oc1.phx.rp1"
RPT, SPST = "rpt-s3cr3t-VALUE-51d0", "spst-s3cr3t-VALUE-51d0"
RP_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
SESSION = jwt.encode({"sub": RESOURCE, "res_tenant": TENANCY, "exp": int(time.time()) + 3600},
                     "a test key that only the fake token endpoint would hold", algorithm="HS256")
INSTANCES = [{"region": "us-phoenix-1", "instances": {"ocid1.instance.i1": "n1"}}]


class ResourcePrincipalService:
    """The RPT endpoint (GET .../resourcePrincipalTokenV2/<resource>), the RPST endpoint (POST
    /v1/resourcePrincipalSessionToken) and the Identity API on one local server; ``replies`` overrides one."""

    def __init__(self, **replies):
        self.replies = replies

    def __call__(self, request):
        if "/resourcePrincipalTokenV2/" in request.path:
            return self.replies.get("rpt") or json_reply({"resourcePrincipalToken": RPT,
                                                          "servicePrincipalSessionToken": SPST})
        if request.path == "/v1/resourcePrincipalSessionToken":
            return self.replies.get("rpst") or json_reply({"token": SESSION})
        if "availabilityDomains" in request.path:
            return json_reply([])
        return json_reply({"code": "NotAuthorizedOrNotFound", "message": "no"}, status=404)


@pytest.fixture
def resource_principal(monkeypatch):
    """``start(rpt_url, rpst_url)``: the version 2.1 environment pointing at those endpoints."""
    def start(rpt_url, rpst_url, version="2.1"):
        for name, value in {"VERSION": version, "RPT_ENDPOINT": rpt_url, "RPST_ENDPOINT": rpst_url,
                            "RESOURCE_ID": RESOURCE, "PRIVATE_PEM": RP_KEY, "REGION": "us-phoenix-1"}.items():
            monkeypatch.setenv(f"OCI_RESOURCE_PRINCIPAL_{name}", value)
    return start


def oci_params(url, **extra):
    return dict(NO_WAIT, instances=INSTANCES, identity_url=f"{url}/{{region}}/identity",
                compute_url=f"{url}/{{region}}/iaas", **extra)


def test_resource_principal_2_1_signs_with_the_session_token_of_its_endpoints(resource_principal):
    service = FakeHttpApi(ResourcePrincipalService())
    try:
        resource_principal(service.url, service.url)
        discover("oci", oci_params(service.url), {"auth": "resource_principal"})
    finally:
        service.close()
    paths = service.paths()
    assert paths[:2] == [f"/20180711/resourcePrincipalTokenV2/{RESOURCE}", "/v1/resourcePrincipalSessionToken"]
    api = [request for request in service.requests if "availabilityDomains" in request.path]
    assert api and f'keyId="ST${SESSION}"' in api[0].headers["authorization"]
    assert api[0].query == {"compartmentId": TENANCY}  # the tenancy from the session token's res_tenant claim


@pytest.mark.parametrize("endpoint", ["rpt", "rpst"])
@pytest.mark.parametrize("fault", ["huge", "html"])
def test_a_huge_token_endpoint_answer_is_refused_in_bounded_memory_naming_the_source(resource_principal, endpoint,
                                                                                       fault):
    """The SDK read the token endpoints' answers whole (a 1 GB body took gigabytes): now 256 KiB at most."""
    service = FakeHttpApi(ResourcePrincipalService())
    try:
        with FaultServer(every_path=fault) as faults:
            hostile = faults.url()
            resource_principal(hostile if endpoint == "rpt" else service.url,
                               hostile if endpoint == "rpst" else service.url)
            tracemalloc.start()
            try:
                with pytest.raises(RemoteAPIError) as info:
                    discover("oci", oci_params(service.url, timeout=30, discovery_timeout=60),
                             {"auth": "resource_principal"})
                _size, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    finally:
        service.close()
    message = str(info.value)
    assert message.startswith("oci creds (resource_principal 2.1): the token endpoints "
                              "(OCI_RESOURCE_PRINCIPAL_RPT_ENDPOINT ")
    path = f"/20180711/resourcePrincipalTokenV2/{RESOURCE}" if endpoint == "rpt" else "/v1/resourcePrincipalSessionToken"
    assert f"{hostile}{path}: the response is larger than 262144 bytes; refused" in message
    assert len(message) < 600 and "proxy error page" not in message
    assert peak < 32 * 1024 * 1024  # a 1 GB (or 2 MB) body never held


@pytest.mark.parametrize("reply, problem", [
    (json_reply({"resourcePrincipalToken": RPT}), r"the response has no token \(KeyError"),
    (json_reply(["a list"]), r"the response has no token \(TypeError"),
    (json_reply({"token": "not-a-jwt"}, status=200), None),
])
def test_a_token_endpoint_answer_of_the_wrong_shape_is_named_never_shown(resource_principal, reply, problem):
    replies = {"rpt": reply} if problem else {"rpst": reply}
    service = FakeHttpApi(ResourcePrincipalService(**replies))
    try:
        resource_principal(service.url, service.url)
        with pytest.raises(RemoteAPIError, match=problem or r"the token is not a JWT \(DecodeError\); it is not "
                                                            r"shown") as info:
            discover("oci", oci_params(service.url), {"auth": "resource_principal"})
    finally:
        service.close()
    assert "oci creds (resource_principal 2.1): the token endpoints" in str(info.value)
    assert RPT not in str(info.value) and "not-a-jwt" not in str(info.value)


def test_a_token_endpoint_answering_500_is_retried_by_the_policy_then_named(resource_principal):
    """The SDK's default retry strategy held such a run for minutes; the collection's policy: retry_attempts."""
    service = FakeHttpApi(ResourcePrincipalService(rpt=json_reply({"code": "InternalError", "message": "down"},
                                                                  status=500)))
    try:
        resource_principal(service.url, service.url)
        with pytest.raises(RemoteAPIError, match=r"oci creds \(resource_principal 2.1\): the token endpoints .*: "
                                                 r"HTTP 500 after 2 attempts"):
            discover("oci", oci_params(service.url, retry_attempts=2), {"auth": "resource_principal"})
    finally:
        service.close()
    assert service.paths().count(f"/20180711/resourcePrincipalTokenV2/{RESOURCE}") == 2


def test_a_token_endpoint_refusal_names_the_status_without_the_tokens(resource_principal):
    echo = {"code": "NotAuthenticated", "message": f"bad service principal session token {SPST}"}
    service = FakeHttpApi(ResourcePrincipalService(rpst=json_reply(echo, status=401)))
    try:
        resource_principal(service.url, service.url)
        with pytest.raises(RemoteAPIError, match=r"the token endpoints .*: HTTP 401: NotAuthenticated: bad service "
                                                 r"principal session token \*\*\*\*\*\*\*\*") as info:
            discover("oci", oci_params(service.url), {"auth": "resource_principal"})
    finally:
        service.close()
    assert SPST not in str(info.value)


def test_resource_principal_1_1_reads_the_metadata_through_the_bounded_client(resource_principal, monkeypatch):
    """Version 1.1 federates the instance's certificate first: the collection's bounded instance principal."""
    with FaultServer() as faults:
        monkeypatch.setenv("OCI_METADATA_BASE_URL", faults.url("/huge/opc/v2"))
        resource_principal(faults.url(), faults.url(), version="1.1")
        with pytest.raises(RemoteAPIError, match=r"oci creds \(resource_principal 1.1\): the OCI instance metadata "
                                                 r"service failed: GET http://127.0.0.1:\d+/huge/opc/v2/instance/"
                                                 r"region: .*larger than 262144 bytes"):
            discover("oci", oci_params(faults.url("/json"), timeout=30, discovery_timeout=60),
                     {"auth": "resource_principal"})


# -- Nebius: the metadata service's token endpoint ---------------------------------------------------------------

@pytest.mark.parametrize("issued, problem", [("nebius-imds-t0ken-5ec1\n", "contains a line break"),
                                             ("nebius-imds-t0ken-5ec1\x07", "contains a control or non-ASCII"),
                                             ("nebius-imds-t0ken-5ec1\u00e9", "contains a control or non-ASCII")],
                         ids=["newline", "control", "non-ascii"])
def test_a_nebius_token_endpoint_token_that_cannot_be_sent_is_named_not_used(issued, problem):
    from tests.integration.fake_apis import FakeGrpcApi
    from tests.integration.fake_nebius import METHOD, PROJECT, page

    metadata = FakeHttpApi(lambda request: json_reply({"access_token": issued, "expires_at": "2099-01-01T00:00:00Z"}))
    server = FakeGrpcApi({METHOD: lambda request, meta: page([])})
    try:
        with pytest.raises(RemoteAPIError, match=f"Nebius: the token creds.token_endpoint gave is not usable: it "
                                                 f"{problem}") as info:
            discover("nebius", dict(NO_WAIT, instances=[{"instances": {"computeinstance-a1": "n1"}}],
                                    project_id=PROJECT, endpoint=server.endpoint, tls=False),
                     {"token_endpoint": f"{metadata.url}/token"})
    finally:
        metadata.close()
        server.close()
    assert "nebius-imds-t0ken-5ec1" not in str(info.value) and "the value is not shown" in str(info.value)
    assert not server.requests  # never sent
