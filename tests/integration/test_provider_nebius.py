"""nebius provider end to end against a local gRPC server serving nebius.compute.v1.InstanceService/List.

The server decodes the request and encodes its answers with the Nebius SDK's own generated
messages (``nebius.api.nebius.compute.v1``; this SDK release ships messages and clients but no
servicers, so the handlers are grpc's generic ones), and every request's ``authorization``
metadata is recorded. For a service-account key the same server answers
``nebius.iam.v1.TokenExchangeService/Exchange`` and verifies the SDK's JWT with the public key;
the metadata service's token endpoint is a local HTTP server. What every cloud provider keeps
(deadlines and UNAVAILABLE retried a bounded number of times, RESOURCE_EXHAUSTED's pushback and its
cap, a repeated page token, a message that does not decode, an echoed token never shown, one bad
instance quarantined) is ``test_provider_contract.py``'s, with ``fake_clouds.CONTRACT["nebius"]``.
"""

from __future__ import annotations

import json

import grpc  # noqa: F401  # pylint: disable=unused-import  # a requirement: its absence fails, never skips
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from nebius.api.nebius.iam.v1 import CreateTokenResponse
from nebius.api.nebius.compute.v1 import ListInstancesRequest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError
from tests.integration.fake_apis import (
    GrpcAbort,
    discover,
    json_reply,
    placement,
    topology_info_run,
)
from tests.integration.fake_nebius import METHOD, PROJECT, instance, page
from tests.integration.fake_nebius import EXCHANGE
from tests.integration.fake_nebius import EXCHANGED
from tests.integration.fake_nebius import PUBLIC_KEY_ID
from tests.integration.fake_nebius import SA_PEM
from tests.integration.fake_nebius import SERVICE_ACCOUNT
from tests.integration.fake_nebius import TOKEN
from tests.integration.fake_nebius import exchange
from tests.integration.fake_nebius import one_instance
from tests.integration.fake_nebius import params


def decoded_requests(server):
    return [ListInstancesRequest.FromString(request) for _method, request, _meta in server.requests]


def paged_list(request, metadata):
    asked = ListInstancesRequest.FromString(request)
    if not asked.page_token:
        return page([instance("computeinstance-a1", ["core-1", "spine-1", "leaf-1"], "nvlgroup-1"),
                     instance("computeinstance-a2", ["core-1", "spine-1", "leaf-2"], "nvlgroup-1"),
                     instance("computeinstance-a3")], token="next-1")  # no infiniband_topology_path
    return page([instance("computeinstance-a4", ["core-1", "spine-2"]),  # 2 entries: ignored
                 instance("computeinstance-zz", ["x", "y", "z"])])  # not requested


def test_pages_root_first_paths_nvl_group_domains_and_missing_instances(fake_grpc, monkeypatch):
    server = fake_grpc({METHOD: paged_list})
    result = topology_info_run(monkeypatch, "nebius", params(server, page_size=3), {"iam_token": TOKEN})
    assert not result["failed"], result
    asked = decoded_requests(server)
    assert [(r.parent_id, r.page_size, r.page_token) for r in asked] == [(PROJECT, 3, ""), (PROJECT, 3, "next-1")]
    assert all(meta["authorization"] == f"Bearer {TOKEN}" for _m, _r, meta in server.requests)
    assert result["summary"]["nodes_without_switch"] == 3
    assert any("without exactly 3 switches are ignored for: h100-04 (2)" in w for w in result["warnings"])
    assert any(w.endswith("no-topology): h100-[03-05]") for w in result["warnings"])
    topology, _warnings = discover("nebius", params(server), {"iam_token": TOKEN})
    assert placement(topology, "h100-01") == (["leaf-1", "spine-1", "core-1"], "nvlgroup-1", None)
    assert placement(topology, "h100-02") == (["leaf-2", "spine-1", "core-1"], "nvlgroup-1", None)


def test_permission_denied_is_not_retried_and_says_why(fake_grpc):
    def denied(request, metadata):
        raise GrpcAbort("PERMISSION_DENIED", "no access to project")

    server = fake_grpc({METHOD: denied})
    with pytest.raises(RemoteAPIError, match="PERMISSION_DENIED: no access to project.*compute.instance.list"):
        discover("nebius", params(server), {"iam_token": TOKEN})
    assert len(server.requests) == 1


def test_token_from_the_environment(fake_grpc, monkeypatch):
    monkeypatch.setenv("NEBIUS_IAM_TOKEN", "env-iam-token")
    server = fake_grpc({METHOD: lambda request, metadata: page([])})
    discover("nebius", params(server))
    assert server.requests[0][2]["authorization"] == "Bearer env-iam-token"


@pytest.mark.parametrize("form", ["inline-key", "key-file", "credentials-file"])
def test_a_service_account_key_is_exchanged_for_a_token_at_the_local_token_service(fake_grpc, tmp_path, form):
    server = fake_grpc({METHOD: one_instance, EXCHANGE: exchange})
    account = {"service_account_id": SERVICE_ACCOUNT, "public_key_id": PUBLIC_KEY_ID}
    if form == "inline-key":
        creds = dict(account, private_key=SA_PEM)
    elif form == "key-file":
        (tmp_path / "sa.pem").write_text(SA_PEM)
        creds = dict(account, private_key_file=str(tmp_path / "sa.pem"))
    else:
        (tmp_path / "credentials.json").write_text(json.dumps({"subject-credentials": {
            "type": "JWT", "alg": "RS256", "private-key": SA_PEM, "kid": PUBLIC_KEY_ID, "iss": SERVICE_ACCOUNT,
            "sub": SERVICE_ACCOUNT}}))
        creds = {"credentials_file": str(tmp_path / "credentials.json")}
    topology, _warnings = discover("nebius", params(server), creds)
    assert placement(topology, "h100-01") == (["leaf-1", "spine-1", "core-1"], "nvlgroup-1", None)
    methods = [method for method, _request, _meta in server.requests]
    assert methods == [EXCHANGE, METHOD]
    assert server.requests[1][2]["authorization"] == f"Bearer {EXCHANGED}"


def test_a_key_the_token_service_refuses_fails_without_the_key(fake_grpc):
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    server = fake_grpc({METHOD: one_instance, EXCHANGE: exchange})
    with pytest.raises(RemoteAPIError, match="no access token from the configured credentials") as info:
        discover("nebius", dict(params(server), timeout=1),
                 {"service_account_id": SERVICE_ACCOUNT, "public_key_id": PUBLIC_KEY_ID, "private_key": other})
    assert "PRIVATE KEY" not in str(info.value) and other.splitlines()[1] not in str(info.value)
    assert [method for method, _request, _meta in server.requests][:1] == [EXCHANGE]
    assert METHOD not in [method for method, _request, _meta in server.requests]


def test_not_a_pem_key_is_named_without_showing_it(fake_grpc):
    server = fake_grpc({METHOD: one_instance, EXCHANGE: exchange})
    with pytest.raises(TopologyError, match="nebius creds.private_key is not an unencrypted PEM RSA private key") as info:
        discover("nebius", params(server), {"service_account_id": SERVICE_ACCOUNT, "public_key_id": PUBLIC_KEY_ID,
                                            "private_key": "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n"})
    assert "c2VjcmV0" not in str(info.value) and not server.requests


def test_the_metadata_service_token_endpoint_gives_the_instance_token(fake_grpc, fake_http):
    metadata = fake_http(lambda request: json_reply({"access_token": TOKEN, "expires_at": "2099-01-01T00:00:00Z"})
                         if request.headers.get("metadata") == "true" else json_reply({}, status=403))
    server = fake_grpc({METHOD: one_instance})
    topology, _warnings = discover("nebius", params(server), {"token_endpoint": f"{metadata.url}/token"})
    assert topology.nodes["h100-01"].domain == "nvlgroup-1"
    # Fetched and checked once before the first call (a token gRPC cannot send is named), then by the call itself.
    assert metadata.paths() == ["/token"] and server.requests[0][2]["authorization"] == f"Bearer {TOKEN}"


def test_without_any_credential_the_forms_are_named(fake_grpc, monkeypatch):
    monkeypatch.delenv("NEBIUS_IAM_TOKEN", raising=False)
    server = fake_grpc({METHOD: one_instance})
    with pytest.raises(TopologyError, match="needs creds.iam_token .* a service-account key .* creds.token_endpoint"):
        discover("nebius", params(server), {})


@pytest.mark.parametrize("bad", ["{}\n", "{}\r\n", "{}\u00e9"], ids=["newline", "crlf", "non-ascii"])
def test_a_service_account_id_or_key_with_a_bad_character_is_refused_by_name(fake_grpc, bad):
    server = fake_grpc({METHOD: one_instance, EXCHANGE: exchange})
    with pytest.raises(TopologyError, match=r"creds.public_key_id contains .*; the value is not shown") as info:
        discover("nebius", params(server), {"service_account_id": SERVICE_ACCOUNT, "private_key": SA_PEM,
                                            "public_key_id": bad.format(PUBLIC_KEY_ID)})
    assert PUBLIC_KEY_ID not in str(info.value)
    # A PEM key may hold line breaks (a YAML block adds one), never a non-ASCII or control character.
    key = SA_PEM.replace("\n", "\u00e9\n", 1) if bad.endswith("\u00e9") else bad.format(SA_PEM)
    if bad.endswith("\u00e9"):
        with pytest.raises(TopologyError, match=r"creds.private_key contains a control or non-ASCII character") as info:
            discover("nebius", params(server), {"service_account_id": SERVICE_ACCOUNT, "private_key": key,
                                                "public_key_id": PUBLIC_KEY_ID})
        assert SA_PEM.splitlines()[1] not in str(info.value)
        assert not server.requests
    else:
        topology, _warnings = discover("nebius", params(server), {"service_account_id": SERVICE_ACCOUNT,
                                                                  "private_key": key, "public_key_id": PUBLIC_KEY_ID})
        assert topology.nodes["h100-01"].domain == "nvlgroup-1"


@pytest.mark.parametrize("issued, problem", [(EXCHANGED + "\n", "contains a line break"),
                                             (EXCHANGED + "\u00e9", "contains a control or non-ASCII character")],
                         ids=["newline", "non-ascii"])
def test_an_exchanged_token_that_cannot_be_sent_is_named_not_used(fake_grpc, issued, problem):
    """gRPC refused such a token with an error about its metadata; the run says what is wrong, never the value."""
    def exchange_badly(request, metadata):
        exchange(request, metadata)  # the key is checked as before
        return CreateTokenResponse(access_token=issued, issued_token_type="urn:ietf:params:oauth:token-type:access_token",
                                   token_type="Bearer", expires_in=3600).SerializeToString()

    server = fake_grpc({METHOD: one_instance, EXCHANGE: exchange_badly})
    with pytest.raises(RemoteAPIError, match=f"Nebius: the token the configured credentials gave is not usable: it "
                                             f"{problem}") as info:
        discover("nebius", params(server), {"service_account_id": SERVICE_ACCOUNT, "public_key_id": PUBLIC_KEY_ID,
                                            "private_key": SA_PEM})
    assert EXCHANGED not in str(info.value)
    assert [method for method, _request, _meta in server.requests] == [EXCHANGE]
