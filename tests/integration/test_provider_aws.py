"""aws provider end to end: boto3 against a local server speaking the EC2 Query API.

The server decodes the form-encoded DescribeInstanceTopology request boto3 really sends (with
its SigV4 Authorization header) and answers with the documented XML.
"""

from __future__ import annotations

# Imported here, not skipped: boto3 is a requirement, and its absence fails this suite.
import boto3  # noqa: F401  # pylint: disable=unused-import
import pytest

from tests.integration.fake_apis import (
    HANG,
    NO_WAIT,
    Pages,
    discover,
    placement,
    slurm_topology_run,
    text_reply,
    topology_info_run,
)

CREDS = {"access_key_id": "AKIDTESTEXAMPLE", "secret_access_key": "aws-secret-9c1e7d", "session_token": "aws-session-4b2f"}
XMLNS = "http://ec2.amazonaws.com/doc/2016-11-15/"


def instance_xml(instance_id, nodes=(), capacity_block=None):
    node_items = "".join(f"<item>{node}</item>" for node in nodes)
    block = f"<capacityBlockId>{capacity_block}</capacityBlockId>" if capacity_block else ""
    return (f"<item><instanceId>{instance_id}</instanceId><instanceType>p5.48xlarge</instanceType>"
            f"<groupName>ml-cpg</groupName><networkNodeSet>{node_items}</networkNodeSet>{block}"
            f"<availabilityZone>us-east-1a</availabilityZone><zoneId>use1-az1</zoneId></item>")


def topology_reply(items, next_token=None):
    token = f"<nextToken>{next_token}</nextToken>" if next_token else ""
    return text_reply(f'<?xml version="1.0" encoding="UTF-8"?>\n<DescribeInstanceTopologyResponse xmlns="{XMLNS}">'
                      f"<requestId>59dbff89-35bd-4eac-99ed-be587EXAMPLE</requestId>"
                      f"<instanceSet>{''.join(items)}</instanceSet>{token}</DescribeInstanceTopologyResponse>",
                      content_type="text/xml")


def error_reply(status, code, message="", headers=None):
    return text_reply(f"<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors>"
                      f"<RequestID>ea966190-f9aa-478e-9ede-example</RequestID></Response>",
                      status=status, content_type="text/xml", headers=headers)


def params(server, instances, **extra):
    return dict(NO_WAIT, instances=instances, endpoint_url=server.url, **extra)


def paged_route(request):
    """Two pages: the first answers with a nextToken; the second ends."""
    form = request.form()
    if form.get("NextToken") != "page-2":
        return topology_reply([instance_xml("i-0001", ["nn-core1", "nn-spine1", "nn-leaf1"], "cb-rack1"),
                               instance_xml("i-0002", [])],  # stopped or unsupported type: no nodes
                              next_token="page-2")
    return topology_reply([instance_xml("i-0003", ["nn-core1", "nn-spine1", "nn-leaf2"], "cb-rack1"),
                           instance_xml("i-9999", ["nn-x", "nn-y", "nn-z"])])  # not requested: ignored


def test_explicit_ids_pages_reversed_tiers_capacity_block_domain_and_missing_instances(fake_http, monkeypatch):
    server = fake_http(paged_route)
    instances = [{"region": "us-east-1", "instances": {"i-0001": "gpu01", "i-0002": "gpu02", "i-0003": "gpu03",
                                                       "i-0004": "gpu04"}}]
    result = topology_info_run(monkeypatch, "aws", params(server, instances), CREDS)
    assert not result["failed"], result
    first, second = (request.form() for request in server.requests)
    assert [r.method for r in server.requests] == ["POST", "POST"] and server.paths() == ["/", "/"]
    assert first["Action"] == "DescribeInstanceTopology" and first["Version"] == "2016-11-15"
    assert [first[f"InstanceId.{n}"] for n in range(1, 5)] == ["i-0001", "i-0002", "i-0003", "i-0004"]
    assert "MaxResults" not in first and "NextToken" not in first and second["NextToken"] == "page-2"
    auth = server.requests[0].headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDTESTEXAMPLE/") and "/us-east-1/ec2/aws4_request" in auth
    assert server.requests[0].headers["x-amz-security-token"] == CREDS["session_token"]
    assert result["summary"]["nodes"] == 4 and result["summary"]["nodes_without_switch"] == 2
    assert result["warnings"] == ["2 of 4 requested instances have no topology data in the aws API; they have no "
                                  "switch (the tree topology puts them under no-topology): gpu[02,04]"]
    assert result["topology"]["switches"] == {"nn-core1": None, "nn-leaf1": "nn-spine1", "nn-leaf2": "nn-spine1",
                                              "nn-spine1": "nn-core1"}
    topology, _warnings = discover("aws", params(server, instances), CREDS)
    assert placement(topology, "gpu01") == (["nn-leaf1", "nn-spine1", "nn-core1"], "cb-rack1", None)


def test_more_than_100_instances_page_with_max_results(fake_http):
    wanted = {f"i-{n:04d}": f"gpu{n:03d}" for n in range(150)}
    ids = sorted(wanted)

    def route(request):
        form = request.form()
        start = int(form.get("NextToken", "0"))
        chunk = ids[start:start + int(form["MaxResults"])]
        following = start + len(chunk)
        return topology_reply([instance_xml(i, ["c", "s", f"l{int(i[2:]) // 18}"]) for i in chunk],
                              next_token=str(following) if following < len(ids) else None)

    server = fake_http(route)
    topology, warnings = discover("aws", params(server, [{"region": "eu-west-1", "instances": wanted}],
                                                page_size=60), CREDS)
    forms = [request.form() for request in server.requests]
    assert [form["MaxResults"] for form in forms] == ["60", "60", "60"]
    assert not any(key.startswith("InstanceId.") for form in forms for key in form)
    assert [form.get("NextToken") for form in forms] == [None, "60", "120"]
    assert len(topology.nodes) == 150 and warnings == []
    assert topology.nodes["gpu149"].switch == "l8"


def test_a_repeated_next_token_stops_with_an_error(fake_http):
    server = fake_http(lambda request: topology_reply([instance_xml("i-0001", ["c", "s", "l"])], next_token="again"))
    with pytest.raises(Exception, match="page token 'again' twice"):
        discover("aws", params(server, [{"region": "us-east-1", "instances": {"i-0001": "gpu01"}}]), CREDS)
    assert len(server.requests) == 2


def test_throttling_honours_retry_after_then_5xx_backs_off(fake_http, sleeps):
    pages = Pages(error_reply(429, "RequestLimitExceeded", "Request limit exceeded.", {"Retry-After": "7"}),
                  error_reply(503, "Unavailable"),
                  topology_reply([instance_xml("i-0001", ["c", "s", "l"])]))
    server = fake_http(pages)
    topology, _warnings = discover("aws", dict(params(server, [{"region": "us-east-1", "instances": {"i-0001": "gpu01"}}]),
                                               retry_backoff=0.25, retry_after_max=60), CREDS)
    assert sleeps == [7.0, 0.5] and len(server.requests) == 3
    assert topology.nodes["gpu01"].switch == "l"


def test_5xx_retries_are_bounded(fake_http, sleeps):
    server = fake_http(lambda request: error_reply(500, "InternalError", "We encountered an internal error."))
    with pytest.raises(Exception, match=r"EC2 DescribeInstanceTopology in us-east-1: HTTP 500 InternalError "
                                        r"after 3 attempts"):
        discover("aws", dict(params(server, [{"region": "us-east-1", "instances": {"i-1": "n1"}}]),
                             retry_attempts=3, retry_backoff=1), CREDS)
    assert len(server.requests) == 3 and sleeps == [1, 2]


def test_a_missing_permission_is_not_retried_and_names_it(fake_http):
    server = fake_http(lambda request: error_reply(403, "UnauthorizedOperation", "You are not authorized."))
    with pytest.raises(Exception, match="UnauthorizedOperation.*ec2:DescribeInstanceTopology"):
        discover("aws", params(server, [{"region": "us-east-1", "instances": {"i-1": "n1"}}]), CREDS)
    assert len(server.requests) == 1


def test_timeouts_are_retried_then_reported(fake_http, sleeps):
    server = fake_http(lambda request: HANG)
    with pytest.raises(Exception, match="ReadTimeoutError after 2 attempts"):
        discover("aws", dict(params(server, [{"region": "us-east-1", "instances": {"i-1": "n1"}}]),
                             timeout=0.3, retry_attempts=2), CREDS)
    assert len(server.requests) == 2


def test_a_malformed_body_fails_the_module_and_writes_nothing(fake_http, monkeypatch, tmp_path):
    server = fake_http(lambda request: text_reply("<html><body>502 from a proxy</body></html>", content_type="text/html"))
    dest = tmp_path / "topology.conf"
    requested = [{"region": "us-east-1", "instances": {"i-1": "n1"}}]
    result = slurm_topology_run(monkeypatch, "aws", params(server, requested), dest, CREDS)
    assert result["failed"] and "EC2 DescribeInstanceTopology in us-east-1" in result["msg"]
    assert not dest.exists()


def test_credentials_come_from_the_standard_aws_environment(fake_http, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENVIRONMENT")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    server = fake_http(lambda request: topology_reply([instance_xml("i-1", ["c", "s", "l"])]))
    discover("aws", params(server, [{"region": "ap-south-1", "instances": {"i-1": "n1"}}]))
    assert "Credential=AKIDFROMENVIRONMENT/" in server.requests[0].headers["authorization"]


def playbook_case(start_http, start_grpc):
    """A successful run for the -vvvv test: (params, creds, secret values, did the server get them)."""
    server = start_http(lambda request: topology_reply([instance_xml("i-1", ["c", "s", "l"], "cb-1")]))
    return params(server, [{"region": "us-east-1", "instances": {"i-1": "gpu01"}}]), CREDS, [
        CREDS["secret_access_key"], CREDS["session_token"]], lambda: any(
        r.headers.get("x-amz-security-token") == CREDS["session_token"] for r in server.requests)
