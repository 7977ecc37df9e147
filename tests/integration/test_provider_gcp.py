"""gcp provider end to end against a local server reproducing Compute Engine's instances.list.

Request: ``GET /compute/v1/projects/{project}/zones/{zone}/instances?maxResults=&pageToken=``
with a Bearer token; response ``{kind, items: [Instance], nextPageToken}`` (``items`` omitted
when empty), each instance with a numeric-string ``id`` and
``resourceStatus.physicalHostTopology {cluster, block, subblock, host}``.
"""

from __future__ import annotations

import json

import pytest

from tests.integration.fake_apis import discover, json_reply, placement, text_reply, topology_info_run
from tests.integration.fake_gcp import (
    METADATA_TOKEN,
    SA_TOKEN,
    STS_TOKEN,
    SUBJECT_TOKEN,
    discover_in_process,
    federation_document,
    metadata_environment,
    metadata_server,
    service_account_key,
)
from tests.integration.fake_clouds import GCP_TOKEN as TOKEN
from tests.integration.fake_clouds import gcp_instance as instance
from tests.integration.fake_clouds import gcp_instance_list as instance_list
from tests.integration.fake_clouds import gcp_params as params
from tests.integration.fake_gcp import ZONE_A
from tests.integration.fake_gcp import adc_params
from tests.integration.fake_gcp import api_server
from tests.integration.fake_gcp import route
from tests.integration.fake_gcp import sts_endpoint
from tests.integration.fake_gcp import token_endpoint


def test_zones_pages_tiers_subblock_domain_and_missing_instances(fake_http, monkeypatch):
    server = fake_http(route)
    instances = [{"region": ZONE_A, "instances": {"1101": "n1101", "1102": "n1102", "1103": "n1103"}},
                 {"region": "us-east5-b", "instances": {1500: "n-cpu"}}]  # YAML may give numeric ids
    result = topology_info_run(monkeypatch, "gcp", params(server, instances, page_size=2), {"access_token": TOKEN})
    assert not result["failed"], result
    assert server.paths() == [f"/compute/v1/projects/ml-proj/zones/{ZONE_A}/instances"] * 2 + [
        "/compute/v1/projects/ml-proj/zones/us-east5-b/instances"]
    assert [r.query.get("pageToken") for r in server.requests] == [None, "p2", None]
    assert {r.query["maxResults"] for r in server.requests} == {"2"}
    assert server.requests[0].query["fields"].startswith("items(")
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in server.requests)
    assert not any("x-goog-api-client" in r.headers for r in server.requests)  # sent as given, not via google-auth
    assert result["summary"]["nodes_without_switch"] == 2 and result["summary"]["nodes"] == 4
    assert "2 of 4 requested instances have no topology data in the gcp API" in result["warnings"][0]
    assert result["warnings"][0].endswith(": n1102,n-cpu")
    topology, _warnings = discover("gcp", params(server, instances), {"access_token": TOKEN})
    assert placement(topology, "n1101") == (["sb1", "b1", "c1"], "sb1", None)
    assert placement(topology, "n1103") == (["sb3", "b2", "c1"], "sb3", None)


def test_token_from_the_environment(fake_http, monkeypatch):
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.from-env")
    server = fake_http(lambda request: instance_list([]))
    discover("gcp", params(server, [{"region": ZONE_A, "instances": {"1": "n1"}}]))
    assert server.requests[0].headers["authorization"] == "Bearer ya29.from-env"


# -- Application Default Credentials: google-auth against local token, STS and metadata servers -----------


def start_token_server(fake_http):
    return fake_http(token_endpoint)


@pytest.fixture
def no_ambient_credentials(monkeypatch, tmp_path):
    """No token, credentials file or gcloud configuration from the machine running the tests."""
    for name in ("GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT",
                 "CLOUDSDK_CORE_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))


def test_a_service_account_key_file_signs_a_jwt_the_token_endpoint_checks(fake_http, tmp_path, no_ambient_credentials):
    tokens = start_token_server(fake_http)
    api = api_server(fake_http, SA_TOKEN, project="key-proj")
    key_file = tmp_path / "key.json"
    key_file.write_text(json.dumps(service_account_key(tokens)))
    topology, _warnings = discover("gcp", adc_params(api), {"credentials_file": str(key_file)})
    assert topology.nodes["n1"].switch == "s"
    assert [(r.method, r.path) for r in tokens.requests] == [("POST", "/token")]  # one token for all the pages
    assert api.requests[0].path.startswith("/compute/v1/projects/key-proj/")  # the project from the key file


def test_google_application_credentials_and_an_inline_document(fake_http, tmp_path, monkeypatch, no_ambient_credentials):
    tokens = start_token_server(fake_http)
    api = api_server(fake_http, SA_TOKEN)
    key_file = tmp_path / "key.json"
    key_file.write_text(json.dumps(service_account_key(tokens)))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    discover("gcp", adc_params(api, project_id="ml-proj"))  # params.project_id wins over the key's
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS")
    discover("gcp", adc_params(api, project_id="ml-proj"), {"credentials_json": json.dumps(service_account_key(tokens))})
    assert len(tokens.requests) == 2 and len(api.requests) == 2


def test_workload_identity_federation_exchanges_a_file_sourced_subject_token(fake_http, tmp_path, no_ambient_credentials):
    sts = fake_http(sts_endpoint)
    api = api_server(fake_http, STS_TOKEN)
    subject = tmp_path / "token"
    subject.write_text(SUBJECT_TOKEN)
    config = tmp_path / "federation.json"
    config.write_text(json.dumps(federation_document(sts, subject)))
    topology, _warnings = discover("gcp", adc_params(api, project_id="ml-proj"), {"credentials_file": str(config)})
    assert topology.nodes["n1"].switch == "s"
    assert [r.path for r in sts.requests] == ["/v1/token"] and api.requests[0].path.startswith("/compute/v1/projects/ml-proj/")


def test_the_metadata_servers_token_and_project_when_nothing_else_is_set(fake_http, tmp_path):
    meta = metadata_server(fake_http)
    api = api_server(fake_http, METADATA_TOKEN, project="meta-proj")
    result, output = discover_in_process(adc_params(api), {}, metadata_environment(meta, tmp_path))
    assert result == {"nodes": {"n1": "s"}, "warnings": []}, output
    assert "/computeMetadata/v1/instance/service-accounts/default/token" in meta.paths()
    assert "/computeMetadata/v1/project/project-id" in meta.paths()
    assert METADATA_TOKEN not in output


def test_an_expired_token_is_refreshed_by_the_authorized_session(fake_http, tmp_path, no_ambient_credentials):
    """A 401 from the API (the token was revoked or expired early): google-auth fetches a new one and retries."""
    tokens = start_token_server(fake_http)
    refused = []

    def route(request):
        if not refused:
            refused.append(request)
            return json_reply({"error": {"code": 401}}, status=401)
        return instance_list([instance("1", "a", "c", "b", "s")])

    api = fake_http(route)
    key_file = tmp_path / "key.json"
    key_file.write_text(json.dumps(service_account_key(tokens)))
    topology, _warnings = discover("gcp", adc_params(api, project_id="ml-proj"), {"credentials_file": str(key_file)})
    assert topology.nodes["n1"].switch == "s" and len(tokens.requests) == 2 and len(api.requests) == 2


@pytest.mark.parametrize("document, message", [
    ("{not json", r"is not JSON \(the content is not shown\)"),
    ('{"type": "service_account", "client_email": "x"}', "unusable 'service_account' credentials"),
    ('["a list"]', "is not a Google credentials document"),
], ids=["not-json", "key-without-private-key", "not-an-object"])
def test_an_unusable_credentials_document_is_the_operators_error_without_its_content(
        document, message, tmp_path, no_ambient_credentials):
    from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
    key_file = tmp_path / "key.json"
    key_file.write_text(document)
    with pytest.raises(TopologyError, match=message) as info:
        discover("gcp", adc_params(type("Api", (), {"url": "http://127.0.0.1:9"})(), project_id="p"),
                 {"credentials_file": str(key_file)})
    assert "not json" not in str(info.value) and "a list" not in str(info.value)


# -- issue 33: a token_uri that redirects, token answers of the wrong shape ---------------------------------------

def test_a_token_uri_that_redirects_to_another_host_never_gets_the_assertion_posted_there(
        fake_http, tmp_path, no_ambient_credentials):
    from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError

    elsewhere = start_token_server(fake_http)
    redirecting = fake_http(lambda request: text_reply("", status=307, headers={"Location": f"{elsewhere.url}/token"}))
    key_file = tmp_path / "key.json"
    key_file.write_text(json.dumps(service_account_key(redirecting)))
    api = api_server(fake_http, SA_TOKEN, project="key-proj")
    with pytest.raises(RemoteAPIError, match=r"GCP credentials from creds.credentials_file .*: POST "
                                             r"http://127.0.0.1:\d+/token: redirected \(HTTP 307\) to another host "
                                             r"\(http://127.0.0.1:\d+\); refused"):
        discover("gcp", adc_params(api), {"credentials_file": str(key_file)})
    assert [r.path for r in redirecting.requests] == ["/token"] and not elsewhere.requests and not api.requests


@pytest.mark.parametrize("document, message", [
    ({"access_token": "ya29.meta", "token_type": "Bearer"}, "expires_in must be a positive number of seconds, got "
                                                            "NoneType None"),
    ({"access_token": "ya29.meta", "expires_in": [3599]}, "expires_in must be a positive number of seconds, got list"),
    ([{"access_token": "ya29.meta", "expires_in": 3599}], "the token response is not a JSON object \\(got list\\)"),
    ({"access_token": 7, "expires_in": 3599}, "access_token must be a non-empty string, got int"),
    ({"access_token": "ya29.meta\n", "expires_in": 3599}, "access_token contains a line break"),
], ids=["no-expires-in", "expires-in-a-list", "a-list", "numeric-token", "token-with-newline"])
def test_a_metadata_token_of_the_wrong_shape_is_a_clear_error(fake_http, tmp_path, document, message):
    meta = metadata_server(fake_http, token_document=document)
    api = fake_http(lambda request: json_reply({}))
    result, output = discover_in_process(adc_params(api, project_id="p"), {}, metadata_environment(meta, tmp_path))
    assert result["error"] == "RemoteAPIError", output
    assert result["message"].startswith(f"GCP credentials from the GCE metadata server: {message.replace(chr(92), '')}"), \
        output
    assert not api.requests and "ya29.meta" not in output


@pytest.mark.parametrize("answer", [[{"access_token": "ya29.listed"}],
                                    {"access_token": ["ya29.listed"], "expires_in": "soon"}],
                         ids=["a-list", "fields-of-other-types"])
def test_a_token_endpoint_answer_of_the_wrong_shape_is_a_clear_error(fake_http, tmp_path, no_ambient_credentials,
                                                                     answer):
    from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError

    tokens = fake_http(lambda request: json_reply(answer))
    key_file = tmp_path / "key.json"
    key_file.write_text(json.dumps(service_account_key(tokens)))
    api = api_server(fake_http, SA_TOKEN, project="key-proj")
    with pytest.raises(RemoteAPIError, match=r"GCP credentials from creds.credentials_file .*: (the token response is "
                                             r"not a token object|the token request)") as info:
        discover("gcp", adc_params(api), {"credentials_file": str(key_file)})
    assert "ya29.listed" not in str(info.value) and not api.requests
