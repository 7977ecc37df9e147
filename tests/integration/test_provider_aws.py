"""aws provider end to end: boto3 against a local server speaking the EC2 Query API.

The server decodes the form-encoded DescribeInstanceTopology request boto3 really sends (with
its SigV4 Authorization header) and answers with the documented XML.
"""

from __future__ import annotations

import html
from urllib.parse import quote

# Imported here, not skipped: boto3 is a requirement, and its absence fails this suite.
import boto3  # noqa: F401  # pylint: disable=unused-import
import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError
from tests.integration.fake_apis import NO_WAIT, discover, json_reply, placement, topology_info_run
from tests.integration.fake_aws import (
    CREDS,
    IMDS_SESSION_TOKEN,
    INSTANCE_CREDS,
    REFUSED_IMDS_DOCUMENT,
    ROLE,
    Imds,
    error_reply,
    instance_xml,
    topology_reply,
    without_ambient_credentials,
)
from tests.integration.fake_aws import params


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


def test_a_missing_permission_is_not_retried_and_names_it(fake_http):
    server = fake_http(lambda request: error_reply(403, "UnauthorizedOperation", "You are not authorized."))
    with pytest.raises(RemoteAPIError, match="UnauthorizedOperation.*ec2:DescribeInstanceTopology"):
        discover("aws", params(server, [{"region": "us-east-1", "instances": {"i-1": "n1"}}]), CREDS)
    assert len(server.requests) == 1


def test_credentials_come_from_the_standard_aws_environment(fake_http, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENVIRONMENT")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    server = fake_http(lambda request: topology_reply([instance_xml("i-1", ["c", "s", "l"])]))
    discover("aws", params(server, [{"region": "ap-south-1", "instances": {"i-1": "n1"}}]))
    assert "Credential=AKIDFROMENVIRONMENT/" in server.requests[0].headers["authorization"]


# -- boto3's default credential chain: a local IMDSv2 and a shared credentials file -----------------------


def test_instance_profile_credentials_from_imdsv2_sign_the_requests(fake_http, monkeypatch, tmp_path):
    without_ambient_credentials(monkeypatch, tmp_path)
    imds = Imds(fake_http)
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
    api = fake_http(lambda request: topology_reply([instance_xml("i-1", ["c", "s", "l"])]))
    topology, _warnings = discover("aws", params(api, [{"region": "us-east-1", "instances": {"i-1": "n1"}}]))
    assert topology.nodes["n1"].switch == "l"
    put, *gets = imds.server.requests
    ttl = put.headers["x-aws-ec2-metadata-token-ttl-seconds"]
    assert (put.method, put.path, ttl) == ("PUT", "/latest/api/token", "21600")
    assert [(r.method, r.path) for r in gets] == [
        ("GET", "/latest/meta-data/iam/security-credentials/"),
        ("GET", f"/latest/meta-data/iam/security-credentials/{ROLE}")]
    assert all(r.headers["x-aws-ec2-metadata-token"] == IMDS_SESSION_TOKEN for r in gets)
    signed = api.requests[0].headers
    assert signed["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={INSTANCE_CREDS['AccessKeyId']}/")
    assert signed["x-amz-security-token"] == INSTANCE_CREDS["Token"]


def test_the_local_imds_refuses_imdsv1(fake_http):
    """IMDSv1 (a GET without a session token) is refused, so the test above proves boto3 spoke IMDSv2."""
    import requests
    imds = Imds(fake_http)
    assert requests.get(f"{imds.url}/latest/meta-data/iam/security-credentials/", timeout=5).status_code == 401
    assert requests.put(f"{imds.url}/latest/api/token", timeout=5,
                        headers={"X-aws-ec2-metadata-token-ttl-seconds": "21600",
                                 "X-Forwarded-For": "10.0.0.1"}).status_code == 403


def test_without_a_session_token_no_instance_credentials_and_a_clear_error(fake_http, monkeypatch, tmp_path):
    without_ambient_credentials(monkeypatch, tmp_path)
    imds = Imds(fake_http, refuse_tokens=True)
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
    api = fake_http(lambda request: topology_reply([]))
    with pytest.raises(RemoteAPIError, match=r"found no AWS credentials: the EC2 instance metadata service \(IMDS\) "
                                             r"at http://127.0.0.1:\d+ gave none, listing the instance profile's role "
                                             r"failed after the session token request was refused \(HTTP 403\): "
                                             r"GET .*/security-credentials/: HTTP 401; check the instance profile") as info:
        discover("aws", params(api, [{"region": "us-east-1", "instances": {"i-1": "n1"}}]))
    assert not api.requests and IMDS_SESSION_TOKEN not in str(info.value)
    # boto3 fell back to IMDSv1, which this IMDS refuses: nothing was signed.
    assert [(r.method, r.path) for r in imds.server.requests][:2] == [
        ("PUT", "/latest/api/token"), ("GET", "/latest/meta-data/iam/security-credentials/")]


def test_a_named_profile_from_the_shared_credentials_file(fake_http, monkeypatch, tmp_path):
    without_ambient_credentials(monkeypatch, tmp_path)
    shared = tmp_path / "credentials"
    shared.write_text("[default]\naws_access_key_id = AKIDDEFAULTPROFILE\naws_secret_access_key = d\n"
                      "[topology]\naws_access_key_id = AKIDNAMEDPROFILE\naws_secret_access_key = profile-secret\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(shared))
    api = fake_http(lambda request: topology_reply([instance_xml("i-1", ["c", "s", "l"])]))
    discover("aws", params(api, [{"region": "us-east-1", "instances": {"i-1": "n1"}}], profile="topology"))
    assert "Credential=AKIDNAMEDPROFILE/" in api.requests[0].headers["authorization"]
    with pytest.raises(TopologyError, match="aws params.profile: The config profile \\(missing\\) could not be found"):
        discover("aws", params(api, [{"region": "us-east-1", "instances": {"i-1": "n1"}}], profile="missing"))


# -- issue 33: secrets in error echoes and logs, the chain inside the deadline and a byte limit, wrong shapes ----

def echoing_route(request):
    """EC2 refusing the call with a message that quotes the request's session token, as a proxy or API might."""
    token = request.headers.get("x-amz-security-token", "")
    return error_reply(403, "UnauthorizedOperation", html.escape(f"denied for token {token} ({quote(token, safe='')})"))


AWKWARD_TOKEN = 'FwoGZXIvYXdzE"q\'%+/=AwkwardSessionToken{{x}}'


@pytest.mark.parametrize("form", ["creds", "environment", "imds"])
def test_an_error_that_echoes_the_session_token_never_shows_it(fake_http, monkeypatch, tmp_path, form):
    without_ambient_credentials(monkeypatch, tmp_path)
    api = fake_http(echoing_route)
    creds, token = {}, AWKWARD_TOKEN
    if form == "creds":
        creds = {"access_key_id": "AKIDTESTEXAMPLE", "secret_access_key": "s/e+c=r%et", "session_token": token}
    elif form == "environment":  # as AWX injects a cloud credential
        for name, value in {"AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "env/secret+=",
                            "AWS_SESSION_TOKEN": token}.items():
            monkeypatch.setenv(name, value)
    else:
        imds = Imds(fake_http)
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
        token = INSTANCE_CREDS["Token"]
    with pytest.raises(RemoteAPIError, match=r"HTTP 403 UnauthorizedOperation: denied for token \*{8} \(\*{8}\)") as info:
        discover("aws", params(api, [{"region": "us-east-1", "instances": {"i-1": "n1"}}]), creds)
    assert api.requests[0].headers["x-amz-security-token"] == token  # it was sent, and echoed
    assert token not in str(info.value) and quote(token, safe="") not in str(info.value)


def test_botocore_loggers_keep_their_level_and_nothing_logs_the_instance_credentials(fake_http, monkeypatch, tmp_path):
    """Ansible's log_path is a root handler at INFO: raising botocore's level wrote the IMDS answer to the log file."""
    import logging

    without_ambient_credentials(monkeypatch, tmp_path)
    failing = Imds(fake_http, document=REFUSED_IMDS_DOCUMENT)
    working = Imds(fake_http)
    api = fake_http(lambda request: topology_reply([instance_xml("i-1", ["c", "s", "l"])]))
    records = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    root, level = logging.getLogger(), logging.getLogger().level
    root.addHandler(handler)
    root.setLevel(logging.INFO)  # what ansible's log_path sets up (logging.basicConfig(level=INFO))
    try:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", failing.url)
        with pytest.raises(RemoteAPIError, match="Code is 'AssumeRoleUnauthorizedAccess', not Success"):
            discover("aws", params(api, [{"region": "us-east-1", "instances": {"i-1": "n1"}}]))
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", working.url)
        discover("aws", params(api, [{"region": "us-east-1", "instances": {"i-1": "n1"}}]))
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert all(logging.getLogger(name).level == logging.NOTSET for name in ("botocore", "botocore.utils"))
    logged = "\n".join(records)
    # As written and as a repr (botocore logs the parsed document: its backslashes doubled).
    assert all(form not in logged for secret in (INSTANCE_CREDS["SecretAccessKey"], INSTANCE_CREDS["Token"],
                                                 IMDS_SESSION_TOKEN) for form in (secret, repr(secret)[1:-1]))


@pytest.mark.parametrize("fault, settings, message", [
    # A metadata service that drips holds each attempt until the discovery deadline, never past it.
    ("drip", {"AWS_METADATA_SERVICE_TIMEOUT": "30", "AWS_METADATA_SERVICE_NUM_ATTEMPTS": "5"}, "discovery deadline"),
    ("drip-headers", {"AWS_METADATA_SERVICE_TIMEOUT": "30"}, "discovery deadline|no complete response"),
    ("huge", {}, "the response is larger than 262144 bytes; refused"),
    ("status", {"AWS_METADATA_SERVICE_NUM_ATTEMPTS": "2"}, "HTTP 500 after 2 attempts"),
])
def test_a_hostile_instance_metadata_service_ends_in_a_clear_error_within_the_deadline(
        monkeypatch, tmp_path, fault, settings, message):
    from tests.fault_http import FaultServer

    without_ambient_credentials(monkeypatch, tmp_path)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    with FaultServer() as server:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", server.url(f"/{fault}"))
        with pytest.raises(RemoteAPIError, match=r"found no AWS credentials: the EC2 instance metadata service \(IMDS\) "
                                                 rf"at \S+ gave none, .*({message})"):
            discover("aws", dict(NO_WAIT, instances=[{"region": "us-east-1", "instances": {"i-1": "n1"}}],
                                 endpoint_url=server.url("/json"), discovery_timeout=2))


CONTAINER_TOKEN = 'pod-identity-token"q"%+/='


def container_endpoint(fake_http, document):
    def route(request):
        if request.headers.get("authorization") != CONTAINER_TOKEN:
            return json_reply({"message": "unauthorized"}, status=401)
        return json_reply(document)
    return fake_http(route)


def test_container_credentials_come_through_the_bounded_client(fake_http, monkeypatch, tmp_path):
    """EKS Pod Identity's form: a full URI on a loopback address and an authorization token file."""
    without_ambient_credentials(monkeypatch, tmp_path)
    endpoint = container_endpoint(fake_http, {"AccessKeyId": "ASIACONTAINER", "SecretAccessKey": "container/se+cret=",
                                              "Token": "container-session-token", "Expiration": "2099-01-01T00:00:00Z"})
    token_file = tmp_path / "eks-pod-identity-token"
    token_file.write_text(CONTAINER_TOKEN + "\n")
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", f"{endpoint.url}/v1/credentials")
    monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", str(token_file))
    api = fake_http(lambda request: topology_reply([instance_xml("i-1", ["c", "s", "l"])]))
    topology, _warnings = discover("aws", params(api, [{"region": "us-east-1", "instances": {"i-1": "n1"}}]))
    assert topology.nodes["n1"].switch == "l" and endpoint.paths() == ["/v1/credentials"]
    assert api.requests[0].headers["x-amz-security-token"] == "container-session-token"


def test_a_container_endpoint_on_another_host_over_http_or_one_that_answers_300_mb_is_refused(monkeypatch, tmp_path):
    from tests.fault_http import FaultServer

    without_ambient_credentials(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://203.0.113.7/creds")
    with pytest.raises(TopologyError, match="plain http is allowed only to a loopback address"):
        discover("aws", dict(NO_WAIT, instances=[{"region": "us-east-1", "instances": {"i-1": "n1"}}]))
    with FaultServer() as server:
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", server.url("/huge/creds"))
        with pytest.raises(RemoteAPIError, match=r"the container credentials endpoint .* failed: .*larger than 262144"):
            discover("aws", dict(NO_WAIT, instances=[{"region": "us-east-1", "instances": {"i-1": "n1"}}],
                                 discovery_timeout=3))


def test_sts_inside_the_chain_goes_through_the_bounded_session(monkeypatch, tmp_path):
    """Web identity (IRSA): botocore's own STS call, held to the credential byte limit by the before-send hook."""
    from tests.fault_http import FaultServer

    without_ambient_credentials(monkeypatch, tmp_path)
    token_file = tmp_path / "web-identity-token"
    token_file.write_text("eyJ.web-identity.token")
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(token_file))
    monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/topology")
    with FaultServer() as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL_STS", server.url("/huge"))
        with pytest.raises(RemoteAPIError, match=r"POST http://127.0.0.1:\d+/huge/?: the response is larger than "
                                                 r"262144 bytes; refused"):
            discover("aws", dict(NO_WAIT, instances=[{"region": "us-east-1", "instances": {"i-1": "n1"}}],
                                 discovery_timeout=3))
        assert server.requests and all(path.startswith("/huge") for path in server.requests)


IMDS_DOCUMENT = {"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": "ASIAX", "SecretAccessKey": "imds/se+cret=",
                 "Token": "imds-token", "Expiration": "2099-12-02T10:00:00Z"}


@pytest.mark.parametrize("document, message", [
    (dict(IMDS_DOCUMENT, AccessKeyId=12345), "AccessKeyId must be a non-empty string, got int"),
    (dict(IMDS_DOCUMENT, Expiration="next tuesday"), "Expiration is not an ISO 8601 time: 'next tuesday'"),
    (dict(IMDS_DOCUMENT, Expiration=["2099"]), r"Expiration is not an ISO 8601 time: <list>"),
    (dict(IMDS_DOCUMENT, Expiration="2001-01-01T00:00:00Z"), "the credentials expired at 2001-01-01T00:00:00Z"),
    (dict(IMDS_DOCUMENT, Token=None), "Token must be a non-empty string, got NoneType"),
    (dict(IMDS_DOCUMENT, SecretAccessKey="imds-s\u00e9cret"), "SecretAccessKey contains a control or non-ASCII"),
    (dict(IMDS_DOCUMENT, Code="AssumeRoleUnauthorizedAccess"), "Code is 'AssumeRoleUnauthorizedAccess', not Success"),
    ([IMDS_DOCUMENT], "expected a JSON object with AccessKeyId, SecretAccessKey, Token and Expiration, got list"),
], ids=["numeric-key-id", "garbage-expiration", "list-expiration", "expired", "no-token", "non-ascii-secret",
        "code-not-success", "a-list"])
def test_an_imds_document_of_the_wrong_shape_is_a_clear_error_naming_the_field(
        fake_http, monkeypatch, tmp_path, document, message):
    without_ambient_credentials(monkeypatch, tmp_path)
    imds = Imds(fake_http, document=document)
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
    api = fake_http(lambda request: topology_reply([]))
    with pytest.raises(RemoteAPIError, match=r"the EC2 instance metadata service \(IMDS\) GET "
                                             rf"/latest/meta-data/iam/security-credentials/{ROLE}: {message}") as info:
        discover("aws", params(api, [{"region": "us-east-1", "instances": {"i-1": "n1"}}]))
    assert not api.requests and "se+cret" not in str(info.value) and "s\u00e9cret" not in str(info.value)
