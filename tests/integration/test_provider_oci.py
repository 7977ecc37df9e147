"""oci provider end to end against a local server reproducing OCI Identity and Core.

The server **verifies** every request's HTTP Signature with the public half of the test key
(signing string ``date``, ``(request-target)``, ``host``), so a wrong signature fails the test
as the real API would (401). Lists: ``GET /20160918/availabilityDomains?compartmentId=`` (a JSON
array), ``GET /20160918/computeHosts?compartmentId=&availabilityDomain=&limit=&page=`` (a
ComputeHostCollection ``{items}`` with the ``opc-next-page`` header), then
``GET /20160918/computeHosts/{id}`` (a ComputeHost).
"""

from __future__ import annotations

import jwt

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError
from tests.integration.fake_apis import discover, json_reply, placement, text_reply, topology_info_run
from tests.integration.fake_oci import AD1, AD2, CREDS, FINGERPRINT, KEY, PASSPHRASE, PEM, TENANCY, USER
from tests.integration.fake_oci import ODD_PASSPHRASE
from tests.integration.fake_oci import InstanceMetadataAndAuth, PublicKeyHolder
from tests.integration.fake_oci import SESSION_KEY
from tests.integration.fake_oci import SESSION_TOKEN
from tests.integration.fake_oci import config_file
from tests.integration.fake_oci import make_route
from tests.integration.fake_oci import params
from tests.integration.fake_oci import pem
from tests.integration.fake_oci import signature_problem


def test_signed_requests_hosts_blocks_fabric_domains_normalised_names(fake_http, monkeypatch):
    server = fake_http(make_route())
    result = topology_info_run(monkeypatch, "oci", params(server, page_size=3), CREDS)
    assert not result["failed"], result
    assert all(signature_problem(request) is None for request in server.requests)
    lists = [r for r in server.requests if r.path.endswith("/computeHosts")]
    assert [(r.query["availabilityDomain"], r.query.get("page"), r.query["limit"]) for r in lists] == [
        (AD1, None, "3"), (AD1, "p2", "3"), (AD2, None, "3")]
    assert all(r.query["compartmentId"] == TENANCY for r in lists)
    assert server.requests[0].path == "/us-phoenix-1/identity/20160918/availabilityDomains"
    details = sorted(r.path.rsplit("/", 1)[-1] for r in server.requests if "/computeHosts/" in r.path)
    assert details == ["ocid1.computehost.h1", "ocid1.computehost.h2", "ocid1.computehost.h3",
                       "ocid1.computehost.h4"]  # never the unrequested h5
    assert result["summary"]["nodes_without_switch"] == 2
    assert result["warnings"][0].endswith("no-topology): gb-n[04-05]")
    topology, _warnings = discover("oci", params(server), CREDS)
    assert placement(topology, "gb-n01") == (["lb-1", "nb-1", "hi-1"], "gmf-1", "gmf-1.R01")
    assert placement(topology, "gb-n02") == (["lb-1", "nb-1", "hi-1"], "gmf-1", None)
    assert placement(topology, "gb-n03") == (["lb-2", "nb-1", "hi-1"], "gmf-2", "gmf-2.R02")
    names = {sid: topology.switches[sid].name for sid in topology.switches}
    assert names == {"hi-1": "switch.3.1", "nb-1": "switch.2.1", "lb-1": "switch.1.1", "lb-2": "switch.1.2"}


def test_a_wrong_key_is_rejected_by_the_server_and_reported(fake_http):
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()).decode()
    server = fake_http(make_route())
    with pytest.raises(RemoteAPIError, match="HTTP 401: .*the signature does not verify"):
        discover("oci", params(server), dict(CREDS, private_key=other, passphrase=""))


def test_a_bad_passphrase_is_a_clear_error_without_the_key(fake_http):
    server = fake_http(make_route())
    with pytest.raises(TopologyError, match="not a PEM RSA private key, or the passphrase is wrong") as info:
        discover("oci", params(server), dict(CREDS, passphrase="not-the-passphrase-5e2"))
    assert "PRIVATE KEY" not in str(info.value) and not server.requests


def test_credentials_from_the_oci_cli_environment(fake_http, monkeypatch, tmp_path):
    key_file = tmp_path / "oci_api_key.pem"
    key_file.write_text(PEM)
    for name, value in {"OCI_CLI_TENANCY": TENANCY, "OCI_CLI_USER": USER, "OCI_CLI_FINGERPRINT": FINGERPRINT,
                        "OCI_CLI_KEY_FILE": str(key_file), "OCI_CLI_PASSPHRASE": PASSPHRASE}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OCI_CLI_KEY_CONTENT", raising=False)
    server = fake_http(make_route())
    topology, _warnings = discover("oci", params(server))
    assert topology.nodes["gb-n01"].switch == "lb-1"


def test_a_config_file_profile_signs_with_its_key_and_the_passphrase_from_creds(fake_http, tmp_path):
    key_file = tmp_path / "api_key.pem"
    key_file.write_text(pem(KEY, ODD_PASSPHRASE))
    path = config_file(tmp_path, f"[DEFAULT]\nregion=us-ashburn-1\n\n[TOPOLOGY]\nuser={USER}\n"
                                 f"fingerprint={FINGERPRINT}\ntenancy={TENANCY}\nkey_file={key_file}\n")
    server = fake_http(make_route())
    topology, _warnings = discover("oci", params(server), {"auth": "config_file", "config_file": path,
                                                           "profile": "TOPOLOGY", "passphrase": ODD_PASSPHRASE})
    assert topology.nodes["gb-n01"].switch == "lb-1"
    assert server.requests and all(signature_problem(request) is None for request in server.requests)


def test_a_missing_profile_or_file_is_named_without_values(fake_http, tmp_path):
    path = config_file(tmp_path, f"[DEFAULT]\nuser={USER}\n")
    server = fake_http(make_route())
    with pytest.raises(TopologyError, match="oci creds.profile 'NOPE' is not in the config file"):
        discover("oci", params(server), {"auth": "config_file", "config_file": path, "profile": "NOPE"})
    with pytest.raises(TopologyError, match=r"oci creds.config_file '.*/missing': No such file or directory"):
        discover("oci", params(server), {"auth": "config_file", "config_file": str(tmp_path / "missing")})
    with pytest.raises(TopologyError, match="oci credentials: fingerprint missing, key_file missing, tenancy missing"):
        discover("oci", params(server), {"auth": "config_file", "config_file": path})
    assert not server.requests


def test_a_session_token_profile_signs_as_st_token_with_the_session_key(fake_http, tmp_path):
    """``oci session authenticate`` writes such a profile: security_token_file and the session key_file."""
    token_file, key_file = tmp_path / "token", tmp_path / "session_key.pem"
    token_file.write_text(SESSION_TOKEN + "\n")
    key_file.write_text(pem(SESSION_KEY))
    path = config_file(tmp_path, f"[SESSION]\nfingerprint={FINGERPRINT}\ntenancy={TENANCY}\nregion=us-phoenix-1\n"
                                 f"key_file={key_file}\nsecurity_token_file={token_file}\n")
    server = fake_http(make_route(key=SESSION_KEY, key_id=f"ST${SESSION_TOKEN}"))
    topology, _warnings = discover("oci", params(server), {"auth": "security_token", "config_file": path,
                                                           "profile": "SESSION"})
    assert topology.nodes["gb-n03"].domain == "gmf-2"
    assert all(signature_problem(request, SESSION_KEY, f"ST${SESSION_TOKEN}") is None for request in server.requests)


def test_resource_principal_v2_2_signs_with_the_rpst_and_its_key(fake_http, monkeypatch, tmp_path):
    """RP 2.2 (functions, container instances): the RPST and the key as files, named by the environment."""
    rpst, key_file = tmp_path / "rpst", tmp_path / "rp_key.pem"
    rpst.write_text(SESSION_TOKEN)
    key_file.write_text(pem(SESSION_KEY))
    for name, value in {"OCI_RESOURCE_PRINCIPAL_VERSION": "2.2", "OCI_RESOURCE_PRINCIPAL_RPST": str(rpst),
                        "OCI_RESOURCE_PRINCIPAL_PRIVATE_PEM": str(key_file),
                        "OCI_RESOURCE_PRINCIPAL_REGION": "us-phoenix-1"}.items():
        monkeypatch.setenv(name, value)
    server = fake_http(make_route(key=SESSION_KEY, key_id=f"ST${SESSION_TOKEN}"))
    topology, _warnings = discover("oci", params(server), {"auth": "resource_principal"})
    assert topology.nodes["gb-n01"].sub_domain == "gmf-1.R01"
    assert server.requests[0].query == {"compartmentId": TENANCY}  # the tenancy from the RPST's res_tenant claim


def test_instance_principal_federates_the_metadata_certificate_and_signs_with_the_session_key(fake_http, monkeypatch):
    service = InstanceMetadataAndAuth()
    server = fake_http(service)
    monkeypatch.setenv("OCI_METADATA_BASE_URL", f"{server.url}/opc/v2")
    topology, _warnings = discover("oci", params(server, federation_url=f"{server.url}/v1/x509"),
                                   {"auth": "instance_principal"})
    assert topology.nodes["gb-n01"].switch == "lb-1" and service.session_public is not None
    paths = server.paths()
    assert "/opc/v2/identity/cert.pem" in paths and paths.count("/v1/x509") == 1
    api = [r for r in server.requests if "/20160918/" in r.path]
    assert api and all(signature_problem(r, PublicKeyHolder(service.session_public), f"ST${service.token}") is None
                       for r in api)
    assert api[0].query == {"compartmentId": TENANCY}  # the tenancy from the leaf certificate


@pytest.mark.parametrize("bad", ["{}\n", "{}\r\n", "{}\u00e9"], ids=["newline", "crlf", "non-ascii"])
def test_a_profile_passphrase_or_session_token_with_a_bad_character_is_refused_by_name(fake_http, tmp_path, bad):
    key_file, token_file = tmp_path / "key.pem", tmp_path / "token"
    key_file.write_text(pem(KEY, ODD_PASSPHRASE))
    token_file.write_text(bad.format(SESSION_TOKEN).replace("\n", "\x07"))  # a control character, not white space
    path = config_file(tmp_path, f"[P]\nuser={USER}\nfingerprint={FINGERPRINT}\ntenancy={TENANCY}\n"
                                 f"key_file={key_file}\nsecurity_token_file={token_file}\n")
    server = fake_http(make_route())
    with pytest.raises(TopologyError, match=r"creds.passphrase contains .*; the value is not shown") as info:
        discover("oci", params(server), {"auth": "config_file", "config_file": path, "profile": "P",
                                         "passphrase": bad.format(ODD_PASSPHRASE)})
    assert ODD_PASSPHRASE not in str(info.value)
    with pytest.raises(TopologyError, match=r"security_token contains .*; the value is not shown") as info:
        discover("oci", params(server), {"auth": "security_token", "config_file": path, "profile": "P"})
    assert SESSION_TOKEN[:12] not in str(info.value) and not server.requests


# -- issue 33: the instance principal's metadata and federation inside the deadline and a byte limit, and shapes ---

@pytest.mark.parametrize("fault, extra, message", [
    # The SDK's own retry strategy held a metadata service answering 500 for 93 s.
    ("status", {"retry_attempts": 2}, r"GET http://127.0.0.1:\d+/status/opc/v2/instance/region: HTTP 500 after 2 "
                                      "attempts"),
    ("drip", {"timeout": 30, "retry_attempts": 5}, "discovery deadline"),
    ("huge", {}, "the response is larger than 262144 bytes; refused"),
])
def test_a_hostile_instance_metadata_service_ends_in_a_clear_error_within_the_deadline(
        monkeypatch, fault, extra, message):
    from tests.fault_http import FaultServer

    with FaultServer() as server:
        monkeypatch.setenv("OCI_METADATA_BASE_URL", server.url(f"/{fault}/opc/v2"))
        with pytest.raises(RemoteAPIError, match=r"oci creds \(instance_principal\): the OCI instance metadata service "
                                                 rf"failed: .*{message}"):
            discover("oci", dict(params(server), discovery_timeout=2, federation_url=server.url("/json"), **extra),
                     {"auth": "instance_principal"})


# The time limits are the bound under test only for the drip; the byte and redirect cases get limits no loaded
# machine reaches, so what ends them is the rule they test, not the machine's speed.
@pytest.mark.parametrize("fault, message, timeout, deadline", [
    ("html?code=401", "the response is larger than 262144 bytes; refused", 30, 60),  # a proxy's 2 MB error page
    ("huge", "the response is larger than 262144 bytes; refused", 30, 60),
    ("redirect", r"redirected \(HTTP 307\) to another host \(http://127.0.0.2:9\); refused", 30, 60),
    ("status", "HTTP 500 after 2 attempts", 30, 60),
    ("drip", "no complete response within|discovery deadline", 2, 6),
])
def test_a_hostile_federation_endpoint_ends_in_a_short_clear_error(fake_http, monkeypatch, fault, message, timeout,
                                                                   deadline):
    from tests.fault_http import FaultServer

    service = InstanceMetadataAndAuth()
    metadata = fake_http(service)
    monkeypatch.setenv("OCI_METADATA_BASE_URL", f"{metadata.url}/opc/v2")
    with FaultServer() as server:
        with pytest.raises(RemoteAPIError, match=message) as info:
            discover("oci", params(metadata, federation_url=server.url(f"/{fault}"), retry_attempts=2, timeout=timeout,
                                   discovery_timeout=deadline), {"auth": "instance_principal"})
    assert len(str(info.value)) < 600 and "proxy error page" not in str(info.value)
    assert "PRIVATE KEY" not in str(info.value)


NO_EXP = jwt.encode({"sub": "ocid1.instance.i1", "res_tenant": TENANCY}, "a test key of 32 bytes or more, say", "HS256")


@pytest.mark.parametrize("reply, message", [
    (json_reply({"token": "not-a-jwt"}), r"the token is not a JWT \(DecodeError\)"),
    (json_reply({"token": NO_EXP}), "the token \\(a JWT\\) has no numeric exp claim"),
    (json_reply({"token": 12345}), r"the token is not a JWT"),
    (json_reply([{"token": "x"}]), "the response has no token"),
    (json_reply({"session": "no token field"}), "the response has no token"),
    (text_reply("<html>200 from a captive portal</html>", content_type="text/html"), "the response is not JSON"),
], ids=["not-a-jwt", "jwt-without-exp", "numeric-token", "a-list", "no-token-field", "html"])
def test_a_federation_answer_of_the_wrong_shape_is_a_clear_error(fake_http, monkeypatch, reply, message):
    service = InstanceMetadataAndAuth()
    service.federation_reply = reply
    server = fake_http(service)
    monkeypatch.setenv("OCI_METADATA_BASE_URL", f"{server.url}/opc/v2")
    with pytest.raises(RemoteAPIError, match=r"oci creds \(instance_principal\): the federation endpoint POST "
                                             rf"http://127.0.0.1:\d+/v1/x509: {message}") as info:
        discover("oci", params(server, federation_url=f"{server.url}/v1/x509"), {"auth": "instance_principal"})
    assert "captive portal" not in str(info.value) and NO_EXP not in str(info.value)
    assert not [r for r in server.requests if "/20160918/" in r.path]


def test_every_oci_api_call_has_a_total_limit_per_attempt(monkeypatch):
    """The SDK's timeouts bound each socket read: an API that drips one byte a second is cut at params.timeout.
    The limit is 2 s, above the drip's 1 s between bytes, so no socket read times out first: the total limit is what
    this proves."""
    from tests.fault_http import FaultServer

    with FaultServer() as server:
        drip = type("Drip", (), {"url": server.url("/drip")})()
        with pytest.raises(RemoteAPIError, match=r"OCI ListAvailabilityDomains in us-phoenix-1: no complete response "
                                                 r"within 2 s after 1 attempts"):
            discover("oci", params(drip, timeout=2, retry_attempts=1, discovery_timeout=6), CREDS)
