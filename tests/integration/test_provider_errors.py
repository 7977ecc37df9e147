"""What a provider raises when a server refuses or answers malformed: RemoteAPIError, never TopologyError.

_errors.py's taxonomy, held by behaviour: each row is one known error path of one provider,
served by the fake APIs; the provider must raise RemoteAPIError (with ``status`` where the server
gave one) and not TopologyError, the kind for the operator's own input. A new error path on a
server's answer belongs in this table.
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from tests.integration.fake_apis import NO_WAIT, GrpcAbort, discover, json_reply, text_reply
from tests.integration.fake_aws import CREDS as AWS_CREDS
from tests.integration.fake_aws import Imds, error_reply, instance_xml, topology_reply, without_ambient_credentials
from tests.integration.fake_gcp import (
    METADATA_TOKEN,
    SUBJECT_TOKEN,
    discover_in_process,
    federation_document,
    metadata_environment,
    metadata_server,
    service_account_key,
    signing_key,
)
from tests.integration.fake_clouds import nscale_offset_route as offset_route
from tests.integration.fake_nebius import METHOD as NEBIUS_METHOD
from tests.integration.fake_nebius import PROJECT as NEBIUS_PROJECT
from tests.integration.fake_nebius import instance as nebius_instance
from tests.integration.fake_nebius import page as nebius_page
from tests.integration.fake_oci import AD1
from tests.integration.fake_oci import CREDS as OCI_CREDS

ONE = {"i-1": "n1"}


def aws(server):
    return dict(NO_WAIT, instances=[{"region": "us-east-1", "instances": ONE}], endpoint_url=server.url)


def gcp(server):
    return dict(NO_WAIT, instances=[{"region": "us-central1-a", "instances": ONE}], project_id="p", api_url=server.url)


def lambda_cloud(server):
    return dict(NO_WAIT, instances=[{"region": "r", "instances": ONE}], workspace_id="ws", api_url=server.url)


def nscale(server):
    return dict(NO_WAIT, instances=[{"region": "r", "instances": ONE}], organization="org", api_url=server.url)


def oci(server):
    return dict(NO_WAIT, instances=[{"region": "us-phoenix-1", "instances": ONE}],
                identity_url=f"{server.url}/{{region}}/identity", compute_url=f"{server.url}/{{region}}/iaas")


def oci_hosts(reply):
    """ListAvailabilityDomains answers one domain; ListComputeHosts answers ``reply``."""
    return lambda request: json_reply([{"name": AD1}]) if request.path.endswith("/availabilityDomains") else reply


# (id, provider, params for the server, creds, reply to every request, message part, status)
HTTP_CASES = [
    ("aws-access-denied", "aws", aws, AWS_CREDS, error_reply(403, "UnauthorizedOperation", "not authorized"),
     "HTTP 403 UnauthorizedOperation", 403),
    ("aws-instance-without-id", "aws", aws, AWS_CREDS,
     topology_reply([instance_xml("i-1", ["a"]).replace("<instanceId>i-1</instanceId>", "")]),
     "an instance without instanceId", None),
    ("gcp-refused", "gcp", gcp, {"access_token": "t"}, json_reply({"error": "forbidden"}, status=403), "HTTP 403", 403),
    ("gcp-not-an-instance-list", "gcp", gcp, {"access_token": "t"}, json_reply([]),
     "expected an InstanceList object", None),
    ("gcp-items-not-a-list", "gcp", gcp, {"access_token": "t"}, json_reply({"items": "x"}), "items is not a list", None),
    ("gcp-instance-without-id", "gcp", gcp, {"access_token": "t"}, json_reply({"items": [{"name": "vm"}]}),
     "an instance without id", None),
    ("lambda-not-an-envelope", "lambda", lambda_cloud, {"token": "t"}, json_reply({"data": "x"}),
     "expected the envelope", None),
    ("lambda-bad-page-token", "lambda", lambda_cloud, {"token": "t"}, json_reply({"data": [], "page_token": 5}),
     "page_token must be a string or null", None),
    ("lambda-instance-without-id", "lambda", lambda_cloud, {"token": "t"}, json_reply({"data": [{"id": 5}]}),
     "an instance without id", None),
    ("nscale-not-a-list", "nscale", nscale, {"token": "t"}, json_reply({"items": []}),
     "expected a list of instance topologies", None),
    ("oci-refused", "oci", oci, OCI_CREDS, json_reply({"code": "NotAuthorizedOrNotFound"}, status=404),
     "HTTP 404", 404),
    ("oci-no-domains", "oci", oci, OCI_CREDS, json_reply({"items": []}), "expected a list of {name}", None),
    ("oci-hosts-not-json", "oci", oci, OCI_CREDS, None, "expected a ComputeHostCollection", None),
    ("oci-hosts-not-a-collection", "oci", oci, OCI_CREDS, None, "expected a ComputeHostCollection", None),
]
OCI_HOST_REPLIES = {"oci-hosts-not-json": text_reply("<html>maintenance</html>"),
                    "oci-hosts-not-a-collection": json_reply({"data": []})}


@pytest.mark.parametrize("case, name, params, creds, reply, message, status", HTTP_CASES,
                         ids=[case[0] for case in HTTP_CASES])
def test_a_server_that_refuses_or_answers_malformed_is_a_remote_api_error(
        fake_http, monkeypatch, case, name, params, creds, reply, message, status):
    monkeypatch.delenv("GOOGLE_OAUTH_ACCESS_TOKEN", raising=False)
    route = oci_hosts(OCI_HOST_REPLIES[case]) if case in OCI_HOST_REPLIES else (lambda request: reply)
    server = fake_http(route)
    with pytest.raises(RemoteAPIError, match=message) as info:
        discover(name, params(server), creds)
    assert not isinstance(info.value, TopologyError)
    assert info.value.status == status


def nebius(server):
    return dict(NO_WAIT, instances=[{"instances": {"computeinstance-1": "n1"}}], project_id=NEBIUS_PROJECT,
                endpoint=server.endpoint, tls=False)


def denied(_request, _metadata):
    raise GrpcAbort("PERMISSION_DENIED", "no access to project")


@pytest.mark.parametrize("handler, message, status", [
    (denied, "gRPC PERMISSION_DENIED: no access to project", "PERMISSION_DENIED"),
    (lambda _request, _metadata: b"\x0a\xff\xff\xff", "the response is not a ListInstancesResponse", None),
], ids=["permission-denied", "not-a-list-response"])
def test_a_grpc_server_that_refuses_or_answers_malformed_is_a_remote_api_error(fake_grpc, handler, message, status):
    server = fake_grpc({NEBIUS_METHOD: handler})
    with pytest.raises(RemoteAPIError, match=message) as info:
        discover("nebius", nebius(server), {"iam_token": "t"})
    assert not isinstance(info.value, TopologyError)
    assert info.value.status == status


TWO = {"i-1": "n1", "i-2": "n2"}


def oci_two_hosts(first):
    """Two requested instances' hosts: i-1's GetComputeHost record is ``first``, i-2's is good."""
    good = {"id": "h2", "instanceId": "i-2", "localBlockId": "lb", "networkBlockId": "nb", "hpcIslandId": "hi"}
    details = {"/20160918/computeHosts/h1": dict({"id": "h1", "instanceId": "i-1"}, **first),
               "/20160918/computeHosts/h2": good}

    def route(request):
        path = request.path.split("/iaas", 1)[-1]
        if request.path.endswith("/availabilityDomains"):
            return json_reply([{"name": AD1}])
        if path == "/20160918/computeHosts":
            return json_reply({"items": [{"id": "h1", "instanceId": "i-1"}, {"id": "h2", "instanceId": "i-2"}]})
        return json_reply(details[path])
    return route


# One requested instance's record is malformed (the other's is good): its node is quarantined, the
# map of the others is built. (id, provider, params, creds, route, reason part)
RECORD_CASES = [
    ("oci-block-id-not-a-string", "oci", lambda server: dict(oci(server), instances=[
        {"region": "us-phoenix-1", "instances": TWO}]), OCI_CREDS,
     oci_two_hosts({"localBlockId": 5, "networkBlockId": "nb", "hpcIslandId": "hi"}), "local_block_id must be a string"),
    ("oci-block-id-not-a-name", "oci", lambda server: dict(oci(server), instances=[
        {"region": "us-phoenix-1", "instances": TWO}]), OCI_CREDS,
     oci_two_hosts({"localBlockId": "lb 1", "networkBlockId": "nb", "hpcIslandId": "hi"}), "'lb 1' contains"),
    ("aws-empty-network-node-between-two", "aws", lambda server: dict(aws(server), instances=[
        {"region": "us-east-1", "instances": TWO}]), AWS_CREDS,
     lambda request: topology_reply([instance_xml("i-1", ["core", "", "leaf"]),
                                     instance_xml("i-2", ["core", "spine", "leaf"])]),
     "networkNodeSet[1] of instance 'i-1' is empty"),
    ("gcp-block-not-a-string", "gcp", lambda server: dict(gcp(server), instances=[
        {"region": "us-central1-a", "instances": TWO}]), {"access_token": "t"},
     lambda request: json_reply({"items": [
         {"id": "i-1", "resourceStatus": {"physicalHostTopology": {"subblock": "sb1", "block": 7, "cluster": "c"}}},
         {"id": "i-2", "resourceStatus": {"physicalHostTopology": {"subblock": "sb2", "block": "b", "cluster": "c"}}},
     ]}), "physicalHostTopology.block of instance 'i-1': name must be a non-empty string, got int 7"),
    ("lambda-nvlink-not-an-object", "lambda", lambda server: dict(lambda_cloud(server), instances=[
        {"region": "r", "instances": TWO}]), {"token": "t"},
     lambda request: json_reply({"data": [{"id": "i-1", "networkPath": [{"id": "leaf"}], "nvlink": "d.c"},
                                          {"id": "i-2", "networkPath": [{"id": "leaf"}]}], "page_token": None}),
     "nvlink must be an object {domain_id, clique_id} or null, got 'd.c'"),
    ("lambda-network-path-not-a-list", "lambda", lambda server: dict(lambda_cloud(server), instances=[
        {"region": "r", "instances": TWO}]), {"token": "t"},
     lambda request: json_reply({"data": [{"id": "i-1", "networkPath": "leaf"},
                                          {"id": "i-2", "networkPath": [{"id": "leaf"}]}], "page_token": None}),
     "networkPath must be a list of {id}"),
    ("nscale-path-not-a-list", "nscale", lambda server: dict(nscale(server), instances=[
        {"region": "r", "instances": TWO}]), {"token": "t"},
     offset_route([{"instance_id": "i-1", "network_node_path": "leaf"},
                   {"instance_id": "i-2", "network_node_path": ["leaf"]}]), "network_node_path must be a list"),
    ("nscale-id-not-a-name", "nscale", lambda server: dict(nscale(server), instances=[
        {"region": "r", "instances": TWO}]), {"token": "t"},
     offset_route([{"instance_id": "i-1", "network_node_path": ["leaf 1"]},
                   {"instance_id": "i-2", "network_node_path": ["leaf"]}]),
     "network_node_path[0] of instance 'i-1': 'leaf 1' contains"),
]


@pytest.mark.parametrize("case, name, params, creds, route, reason", RECORD_CASES, ids=[case[0] for case in RECORD_CASES])
def test_one_malformed_instance_record_quarantines_that_node_and_the_others_are_mapped(
        fake_http, case, name, params, creds, route, reason):
    server = fake_http(route)
    topology, warnings = discover(name, params(server), creds)
    assert isinstance(topology, Topology) and list(topology.nodes) == ["n2"], case
    assert [w for w in warnings if w.startswith("1 nodes quarantined (left out of the map): n1 (")]
    assert list(topology.quarantined) == ["n1"] and topology.quarantined["n1"].source == name
    assert reason in topology.quarantined["n1"].reason


def gcp_key_creds(server, _tmp_path):
    return {"credentials_json": json.dumps(service_account_key(server))}


def gcp_federation_creds(server, tmp_path):
    subject = tmp_path / "subject-token"
    subject.write_text(SUBJECT_TOKEN)
    config = tmp_path / "federation.json"
    config.write_text(json.dumps(federation_document(server, subject)))
    return {"credentials_file": str(config)}


# A credential exchange refused or broken (the token endpoint, STS): (id, creds from the server, reply, message part)
CREDENTIAL_CASES = [
    ("gcp-token-endpoint-refuses-the-assertion", gcp_key_creds,
     json_reply({"error": "invalid_grant", "error_description": "Invalid JWT Signature."}, status=400),
     r"GCP credentials from creds.credentials_json: the token request was refused \(RefreshError\): "
     r"'?invalid_grant: Invalid JWT Signature."),
    ("gcp-token-endpoint-answers-no-token", gcp_key_creds, json_reply({"token_type": "Bearer"}),
     "GCP credentials from creds.credentials_json: the token request was refused"),
    ("gcp-sts-refuses-the-exchange", gcp_federation_creds,
     json_reply({"error": "invalid_grant", "error_description": "The audience does not match."}, status=400),
     r"GCP credentials from creds.credentials_file \(.*federation.json\): the token request was refused "
     r"\(OAuthError\): .*The audience does not match"),
    ("gcp-sts-echoes-the-subject-token", gcp_federation_creds,
     json_reply({"error": "invalid_grant", "error_description": f"Unable to parse {SUBJECT_TOKEN}."}, status=400),
     r"the token request was refused \(OAuthError\): 'Error code invalid_grant: Unable to parse \*{8}\.'"),
    ("gcp-sts-answers-html", gcp_federation_creds, text_reply("<html>proxy error</html>", status=502),
     "GCP credentials from creds.credentials_file"),
]


@pytest.mark.parametrize("case, creds, reply, message", CREDENTIAL_CASES, ids=[case[0] for case in CREDENTIAL_CASES])
def test_a_refused_or_broken_credential_exchange_is_a_remote_api_error(
        fake_http, monkeypatch, tmp_path, sleeps, case, creds, reply, message):
    monkeypatch.delenv("GOOGLE_OAUTH_ACCESS_TOKEN", raising=False)
    server = fake_http(lambda request: reply)
    credentials = creds(server, tmp_path)
    with pytest.raises(RemoteAPIError, match=message) as info:
        discover("gcp", gcp(server), credentials)
    assert not isinstance(info.value, TopologyError), case
    assert signing_key()[0].splitlines()[1] not in str(info.value) and SUBJECT_TOKEN not in str(info.value)
    assert all(request.path in ("/token", "/v1/token") for request in server.requests)  # no API call without a token


@pytest.mark.parametrize("token_status, message", [
    (403, "the token request was refused (HTTP 403); off GCE"),
    # Fetched through the collection's client: its retry policy, then the last failure.
    (500, "the token request failed: GET http://"),
], ids=["metadata-refuses-the-token", "metadata-fails"])
def test_a_metadata_server_that_gives_no_token_is_a_remote_api_error(fake_http, tmp_path, token_status, message):
    meta = metadata_server(fake_http, token_status=token_status)
    api = fake_http(lambda request: json_reply({}))
    result, output = discover_in_process(dict(gcp(api), project_id="p", timeout=1), {},
                                         metadata_environment(meta, tmp_path))
    assert result["error"] == "RemoteAPIError", output
    assert result["message"].startswith(f"GCP credentials from the GCE metadata server: {message}"), output
    assert METADATA_TOKEN not in output and "refused, not" not in output
    assert not api.requests


def test_an_imds_that_refuses_session_tokens_is_a_remote_api_error(fake_http, monkeypatch, tmp_path):
    without_ambient_credentials(monkeypatch, tmp_path)
    imds = Imds(fake_http, refuse_tokens=True)
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
    server = fake_http(lambda request: topology_reply([]))
    with pytest.raises(RemoteAPIError, match=r"the EC2 instance metadata service \(IMDS\) at \S+ gave none") as info:
        discover("aws", aws(server), {})
    assert not isinstance(info.value, TopologyError) and not server.requests


@pytest.mark.parametrize("case, name, params, creds, route, reason", RECORD_CASES, ids=[case[0] for case in RECORD_CASES])
def test_with_invalid_nodes_fail_one_malformed_record_fails_the_run(fake_http, case, name, params, creds, route, reason):
    server = fake_http(route)
    with pytest.raises(TopologyError, match=r"params.invalid_nodes is fail\): n1 \(") as info:
        discover(name, dict(params(server), invalid_nodes="fail"), creds)
    assert reason in str(info.value)


def test_one_nebius_instance_whose_path_holds_a_non_name_is_quarantined_and_fails_with_invalid_nodes_fail(fake_grpc):
    reply = nebius_page([nebius_instance("computeinstance-1", ["core", "spine", "leaf 1"]),
                         nebius_instance("computeinstance-2", ["core", "spine", "leaf"])])
    server = fake_grpc({NEBIUS_METHOD: lambda _request, _metadata: reply})
    params = dict(nebius(server), instances=[{"instances": {"computeinstance-1": "n1", "computeinstance-2": "n2"}}])
    topology, warnings = discover("nebius", params, {"iam_token": "t"})
    assert list(topology.nodes) == ["n2"] and list(topology.quarantined) == ["n1"]
    assert "tier 0 of instance 'computeinstance-1': 'leaf 1' contains" in topology.quarantined["n1"].reason
    assert [w for w in warnings if w.startswith("1 nodes quarantined (left out of the map): n1 (")]
    with pytest.raises(TopologyError, match=r"params.invalid_nodes is fail\): n1 \("):
        discover("nebius", dict(params, invalid_nodes="fail"), {"iam_token": "t"})
