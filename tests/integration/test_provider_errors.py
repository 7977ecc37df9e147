"""What a provider raises when a server refuses or answers malformed: RemoteAPIError, never TopologyError.

_errors.py's taxonomy, held by behaviour: each row is one known error path of one provider,
served by the fake APIs; the provider must raise RemoteAPIError (with ``status`` where the server
gave one) and not TopologyError, the kind for the operator's own input. A new error path on a
server's answer belongs in this table.
"""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from tests.integration.fake_apis import NO_WAIT, GrpcAbort, discover, json_reply, text_reply
from tests.integration.test_provider_aws import CREDS as AWS_CREDS
from tests.integration.test_provider_aws import error_reply, instance_xml, topology_reply
from tests.integration.test_provider_nscale import offset_route
from tests.integration.test_provider_nebius import METHOD as NEBIUS_METHOD
from tests.integration.test_provider_nebius import PROJECT as NEBIUS_PROJECT
from tests.integration.test_provider_oci import AD1
from tests.integration.test_provider_oci import CREDS as OCI_CREDS

ONE = {"i-1": "n1"}


def aws(server):
    return dict(NO_WAIT, instances=[{"region": "us-east-1", "instances": ONE}], endpoint_url=server.url)


def gcp(server):
    return dict(NO_WAIT, instances=[{"region": "us-central1-a", "instances": ONE}], project_id="p", api_url=server.url)


def gcp_metadata(server):
    return dict(NO_WAIT, instances=[{"region": "us-central1-a", "instances": ONE}], api_url=server.url,
                metadata_url=server.url)


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
    ("gcp-metadata-without-token", "gcp", gcp_metadata, {}, json_reply({"token_type": "Bearer"}),
     "the GCE metadata server returned no access_token", None),
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
    ("oci-hosts-not-json", "oci", oci, OCI_CREDS, None, "the response is not JSON", None),
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
# One requested instance's record is malformed (the other's is good): its node is quarantined, the
# map of the others is built. (id, provider, params, creds, route, reason part)
RECORD_CASES = [
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
                   {"instance_id": "i-2", "network_node_path": ["leaf"]}]), "tier 0 of instance 'i-1': 'leaf 1' contains"),
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
