"""Credential chains the SDKs run, against hostile servers on 127.0.0.1 (issue 33, round three).

OCI's resource principal (versions 2.1 and 1.1): the token endpoints and the metadata the chain reads
are held to the collection's limits (256 KiB per answer, the retry policy, the deadline) and a hostile
answer is a short error naming its source. Nebius: a token a metadata token endpoint gives is checked
for what a header can carry before it is used.
"""

from __future__ import annotations

import time
import tracemalloc
from urllib.parse import quote

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError
from tests.fault_http import FaultServer
from tests.integration.fake_apis import NO_WAIT, FakeHttpApi, discover, json_reply, text_reply

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
def test_a_huge_token_endpoint_answer_is_refused_in_bounded_memory_naming_the_source(
        resource_principal, endpoint, fault):
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


class InstanceForResourcePrincipal(ResourcePrincipalService):
    """Version 1.1's other half on the same server: the instance metadata service (``/opc/v2``: a leaf
    certificate naming the tenancy, its key, an intermediate, the region, the instance id) and the federation
    endpoint (``/v1/x509``), whose token signs the request for the resource principal token (RPT path
    ``/20180711/resourcePrincipalToken/<instance id>``)."""

    INSTANCE = "ocid1.instance.oc1.phx.rp-host"

    def __init__(self, **replies):
        import datetime

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.x509.oid import NameOID

        super().__init__(**replies)
        now = datetime.datetime.now(datetime.timezone.utc)
        span = datetime.timedelta(hours=1)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, self.INSTANCE),
                          x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, f"opc-tenant:{TENANCY}")])
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - span).not_valid_after(now + span)
                .sign(key, hashes.SHA256()))
        pem = cert.public_bytes(serialization.Encoding.PEM).decode()
        self.documents = {"/opc/v2/instance/region": "us-phoenix-1", "/opc/v2/instance/id": self.INSTANCE,
                          "/opc/v2/identity/cert.pem": pem, "/opc/v2/identity/intermediate.pem": pem,
                          "/opc/v2/identity/key.pem": key.private_bytes(
                              serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                              serialization.NoEncryption()).decode()}
        self.instance_token = jwt.encode({"sub": self.INSTANCE, "res_tenant": TENANCY,
                                          "exp": int(time.time()) + 3600}, "the fake federation's key of 32 bytes",
                                         algorithm="HS256")

    def __call__(self, request):
        if request.path.startswith("/opc/v2/"):
            return text_reply(self.documents[request.path]) if request.path in self.documents else \
                json_reply({"code": "NotFound"}, status=404)
        if request.path == "/v1/x509":
            return json_reply({"token": self.instance_token})
        if request.path == f"/20180711/resourcePrincipalToken/{self.INSTANCE}":
            return self.replies.get("rpt") or json_reply({"resourcePrincipalToken": RPT,
                                                          "servicePrincipalSessionToken": SPST})
        return super().__call__(request)


def test_nested_resource_principals_are_refused_before_any_request(monkeypatch):
    """Version 3.0 would reach its parents' token endpoints over the SDK's own sessions, which nothing bounds."""
    service = FakeHttpApi(ResourcePrincipalService())
    try:
        for name, value in {"VERSION": "3.0", "VERSION_FOR_LEAF_RESOURCE": "2.1",
                            "RPT_URL_FOR_PARENT_RESOURCE": f"{service.url}/parent",
                            "RPST_ENDPOINT_FOR_PARENT_RESOURCE": service.url}.items():
            monkeypatch.setenv(f"OCI_RESOURCE_PRINCIPAL_{name}", value)
        with pytest.raises(TopologyError, match=r"oci creds \(resource_principal 3\.0\): nested resource principals "
                                                r"are not supported: .* give this resource's own principal"):
            discover("oci", oci_params(service.url), {"auth": "resource_principal"})
    finally:
        service.close()
    assert service.requests == []


def resource_principal_1_1(monkeypatch, server, rpt_url):
    monkeypatch.setenv("OCI_METADATA_BASE_URL", f"{server.url}/opc/v2")
    for name, value in {"VERSION": "1.1", "RPT_ENDPOINT": rpt_url, "RPST_ENDPOINT": server.url}.items():
        monkeypatch.setenv(f"OCI_RESOURCE_PRINCIPAL_{name}", value)
    for name in ("RPT_PATH", "RPT_ID"):
        monkeypatch.delenv(f"OCI_RESOURCE_PRINCIPAL_{name}", raising=False)


def test_resource_principal_1_1_federates_the_instance_then_signs_with_the_session_token(monkeypatch):
    service = InstanceForResourcePrincipal()
    server = FakeHttpApi(service)
    try:
        resource_principal_1_1(monkeypatch, server, server.url)
        discover("oci", oci_params(server.url, federation_url=f"{server.url}/v1/x509"),
                 {"auth": "resource_principal"})
    finally:
        server.close()
    rpt = [request for request in server.requests if request.path.startswith("/20180711/")]
    assert rpt and f'keyId="ST${service.instance_token}"' in rpt[0].headers["authorization"]
    assert "/opc/v2/instance/id" in server.paths() and "/v1/resourcePrincipalSessionToken" in server.paths()
    api = [request for request in server.requests if "availabilityDomains" in request.path]
    assert api and f'keyId="ST${SESSION}"' in api[0].headers["authorization"]
    assert api[0].query == {"compartmentId": TENANCY}


def test_resource_principal_1_1_refuses_a_huge_token_endpoint_answer_naming_it(monkeypatch):
    server = FakeHttpApi(InstanceForResourcePrincipal())
    try:
        with FaultServer(every_path="huge") as faults:
            resource_principal_1_1(monkeypatch, server, faults.url())
            with pytest.raises(RemoteAPIError) as info:
                discover("oci", oci_params(server.url, federation_url=f"{server.url}/v1/x509", timeout=30,
                                           discovery_timeout=60), {"auth": "resource_principal"})
    finally:
        server.close()
    assert str(info.value).startswith("oci creds (resource_principal 1.1): the token endpoints")
    assert f"/20180711/resourcePrincipalToken/{InstanceForResourcePrincipal.INSTANCE}: the response is larger than " \
           "262144 bytes; refused" in str(info.value)


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


# -- Kubernetes: credentials registered with the scrubber where they are loaded ------------------------------------

# Header-safe, awkward: quotes, %, +, /, =, a backslash; one value per form, so a leak names its form.
KUBE_TOKENS = {form: f'kube-{form}-t0ken"q%2B+/=\\X' for form in ("kubeconfig", "token-file", "environment", "provider")}


def echo_apiserver(request):
    """A kube-apiserver (or a proxy in front of it) whose refusal quotes the request's Authorization header."""
    seen = request.headers.get("authorization", "")
    if request.path.startswith("/proxy"):
        return text_reply(f"<html>401: {seen} refused</html>", status=401, content_type="text/html")
    return json_reply({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Unauthorized",
                       "code": 401, "message": f"Unauthorized: {seen} ({quote(seen, safe='')}) is not valid"},
                      status=401)


def kubeconfig(tmp_path, server, user):
    import yaml

    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": server}}], "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
    return str(path)


def k8s_node_labels_run(monkeypatch, auth):
    from ansible_collections.aifactory.topology.plugins.modules import k8s_node_labels
    from tests.unit.plugins.modules.module_runner import run_module

    return run_module(k8s_node_labels, dict({"provider": {"name": "dra", "params": {}, "creds": auth}}, **auth),
                      monkeypatch=monkeypatch)


def assert_never_shown(secret, *texts):
    from tests.integration.fake_apis import printed_forms

    for form in printed_forms(secret) | {quote(secret, safe="")}:
        for text in texts:
            assert form not in text, f"the token appears as {form!r}"


@pytest.mark.parametrize("form", ["kubeconfig", "token-file", "environment"])
def test_a_kubernetes_token_an_api_server_echoes_is_never_in_the_module_failure(tmp_path, monkeypatch, form):
    import json

    token = KUBE_TOKENS[form]
    server = FakeHttpApi(echo_apiserver)
    for name in ("K8S_AUTH_KUBECONFIG", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)
    try:
        if form == "kubeconfig":
            auth = {"kubeconfig": kubeconfig(tmp_path, server.url, {"token": token})}
        elif form == "token-file":  # through a proxy whose HTML error page quotes it
            (tmp_path / "token").write_text(token)
            auth = {"kubeconfig": kubeconfig(tmp_path, f"{server.url}/proxy", {"tokenFile": str(tmp_path / "token")})}
        else:  # what AWX's Kubernetes credential injects
            monkeypatch.setenv("K8S_AUTH_HOST", server.url)
            monkeypatch.setenv("K8S_AUTH_API_KEY", token)
            auth = {}
        result = k8s_node_labels_run(monkeypatch, auth)
    finally:
        server.close()
    assert server.requests and all(request.headers["authorization"] == f"Bearer {token}" for request in server.requests)
    assert result["failed"] and "HTTP 401" in result["msg"] and "********" in result["msg"], result["msg"]
    assert_never_shown(token, result["msg"], json.dumps(result))


def test_a_kubernetes_provider_error_never_shows_the_kubeconfig_token(tmp_path, monkeypatch):
    token = KUBE_TOKENS["provider"]
    server = FakeHttpApi(echo_apiserver)
    monkeypatch.delenv("K8S_AUTH_API_KEY", raising=False)
    try:
        with pytest.raises(RemoteAPIError, match=r"HTTP 401 .*Unauthorized: \*{8}") as info:
            discover("node_labels", {}, {"kubeconfig": kubeconfig(tmp_path, server.url, {"token": token})})
    finally:
        server.close()
    assert_never_shown(token, str(info.value))


def test_a_kubeconfig_client_key_is_registered_where_it_is_loaded(tmp_path):
    """client-key-data never goes on the wire, but a message quoting the key file (a proxy, a library) is scrubbed."""
    import base64

    from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets
    from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s

    line = RP_KEY.splitlines()[1]
    path = kubeconfig(tmp_path, "https://127.0.0.1:9", {
        "client-certificate-data": base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n"
                                                    b"-----END CERTIFICATE-----\n").decode(),
        "client-key-data": base64.b64encode(RP_KEY.encode()).decode()})
    with secrets.scope():
        _k8s.configuration(_k8s.resolve_auth({"kubeconfig": path}, environ={}))
        assert secrets.scrub(f"the key begins {line}") == "the key begins ********"


def test_the_k8s_nodes_event_source_never_shows_the_token_an_api_server_echoes(tmp_path, monkeypatch):
    """The event source runs within its own secrets scope: a list refused with the kubeconfig's token quoted ends the
    source with an error that names the refusal, never the token."""
    import asyncio

    from ansible_collections.aifactory.topology.extensions.eda.plugins.event_source import k8s_nodes

    token = KUBE_TOKENS["kubeconfig"]

    def ready_then_echo(request):
        return text_reply("ok") if request.path == "/readyz" else echo_apiserver(request)

    server = FakeHttpApi(ready_then_echo)
    for name in ("K8S_AUTH_KUBECONFIG", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)
    try:
        with pytest.raises(RemoteAPIError, match=r"k8s_nodes: cannot list nodes: .*HTTP 401.*\*{8}") as info:
            asyncio.run(k8s_nodes.main(asyncio.Queue(), {
                "auth": {"kubeconfig": kubeconfig(tmp_path, server.url, {"token": token})}, "ready_timeout": 5}))
    finally:
        server.close()
    assert any(request.path == "/api/v1/nodes" for request in server.requests)
    assert_never_shown(token, str(info.value))
