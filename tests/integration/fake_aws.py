"""The EC2 API and the instance metadata service (IMDSv2) as the aws tests' fake servers answer them.

Shared by ``test_provider_aws.py``, ``test_provider_errors.py`` and ``test_provider_secrets.py``
(a test module never imports another one).

Its playbook cases (``playbook_case`` and the credential forms) are what
``test_provider_creds_playbook.py`` runs with ``ansible-playbook -vvvv``.
"""

from __future__ import annotations

from tests.integration.fake_apis import json_reply, text_reply, NO_WAIT


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


ROLE = "gpu-topology-reader"


# What the instance role's credentials may hold: characters JSON, YAML, shells and Jinja treat specially.
INSTANCE_CREDS = {"AccessKeyId": "ASIAIMDSROLEEXAMPLE", "SecretAccessKey": 'imds-secret/"q"\\b{{x}}%s$HOME+=',
                  "Token": "IMDSSessionToken//{{ var }}'s\"q\"\\\\|`t`+="}


IMDS_SESSION_TOKEN = "AQAEAImdsV2-session{{x}}\"'\\\\-token=="


class Imds:
    """IMDSv2 as the EC2 documentation defines it, IMDSv1 refused (the instance's HttpTokens=required).

    ``PUT /latest/api/token`` with ``X-aws-ec2-metadata-token-ttl-seconds`` (1-21600) issues a session
    token; every ``GET`` must carry it in ``X-aws-ec2-metadata-token`` (else 401); a PUT that came
    through a proxy (``X-Forwarded-For``) is refused (403).
    """

    def __init__(self, fake_http, refuse_tokens=False, document=None):
        self.refuse_tokens = refuse_tokens
        self.document = document  # the role's credentials document, when a test serves one of another shape
        self.server = fake_http(self.route)
        self.url = self.server.url

    def route(self, request):
        if request.method == "PUT":
            ttl = request.headers.get("x-aws-ec2-metadata-token-ttl-seconds", "")
            if request.path != "/latest/api/token" or "x-forwarded-for" in request.headers or self.refuse_tokens:
                return text_reply("", status=403)
            if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
                return text_reply("", status=400)
            return text_reply(IMDS_SESSION_TOKEN, headers={"X-aws-ec2-metadata-token-ttl-seconds": ttl})
        if request.headers.get("x-aws-ec2-metadata-token") != IMDS_SESSION_TOKEN:
            return text_reply("", status=401)
        if request.path == "/latest/meta-data/iam/security-credentials/":
            return text_reply(ROLE)
        if request.path == f"/latest/meta-data/iam/security-credentials/{ROLE}":
            if self.document is not None:
                return json_reply(self.document)
            return json_reply(dict(INSTANCE_CREDS, Code="Success", LastUpdated="2026-12-02T04:00:00Z",
                                   Type="AWS-HMAC", Expiration="2099-12-02T10:00:00Z"))
        return text_reply("", status=404)


def without_ambient_credentials(monkeypatch, tmp_path):
    """boto3 sees no environment keys, profile, web identity, container or SSO credentials of this machine."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_EC2_METADATA_DISABLED", "AWS_EC2_METADATA_SERVICE_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))


# A refusal with the credentials it would have given but no AccessKeyId: botocore logs such an answer whole.
REFUSED_IMDS_DOCUMENT = {"Code": "AssumeRoleUnauthorizedAccess", "Message": "no", "Type": "AWS-HMAC",
                         "SecretAccessKey": INSTANCE_CREDS["SecretAccessKey"], "Token": INSTANCE_CREDS["Token"]}


# -- the -vvvv secret cases of test_provider_creds_playbook.py, and what they need --------------------

def params(server, instances, **extra):
    return dict(NO_WAIT, instances=instances, endpoint_url=server.url, **extra)


def playbook_case(start_http, start_grpc):
    """A successful run for the -vvvv test: (params, creds, secret values, did the server get them)."""
    server = start_http(lambda request: topology_reply([instance_xml("i-1", ["c", "s", "l"], "cb-1")]))
    return params(server, [{"region": "us-east-1", "instances": {"i-1": "gpu01"}}]), CREDS, [
        CREDS["secret_access_key"], CREDS["session_token"]], lambda: any(
        r.headers.get("x-amz-security-token") == CREDS["session_token"] for r in server.requests)


def credential_chain_cases(start_http, tmp_path):
    """Runs whose credentials boto3's chain finds (no creds given), for the -vvvv secret test."""
    clean = {"AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
             "AWS_CONFIG_FILE": str(tmp_path / "no-config")}
    imds = Imds(start_http)
    api = start_http(lambda request: topology_reply([instance_xml("i-1", ["c", "s", "l"], "cb-1")]))
    instances = [{"region": "us-east-1", "instances": {"i-1": "gpu01"}}]
    shared = tmp_path / "credentials"
    profile_secret = 'profile-secret/"q"\\b{{x}}+='
    shared.write_text(f"[topology]\naws_access_key_id = AKIDNAMEDPROFILE\naws_secret_access_key = {profile_secret}\n")
    return [
        {"id": "aws-imdsv2-instance-profile", "params": params(api, instances), "creds": {},
         "environment": dict(clean, AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url),
         "secrets": [INSTANCE_CREDS["SecretAccessKey"], INSTANCE_CREDS["Token"], IMDS_SESSION_TOKEN],
         "used": lambda: any(r.headers.get("x-amz-security-token") == INSTANCE_CREDS["Token"] for r in api.requests)},
        {"id": "aws-shared-credentials-profile", "params": params(api, instances, profile="topology"), "creds": {},
         "environment": dict(clean, AWS_SHARED_CREDENTIALS_FILE=str(shared), AWS_EC2_METADATA_DISABLED="true"),
         "secrets": [profile_secret],
         "used": lambda: any("Credential=AKIDNAMEDPROFILE/" in r.headers.get("authorization", "") for r in api.requests)},
    ]
