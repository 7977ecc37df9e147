"""Google's credential servers as the gcp tests fake them: a service account's key, workload identity
federation's configuration, the GCE metadata server, and discovery in a fresh interpreter.

Shared by ``test_provider_gcp.py``, ``test_provider_errors.py`` and ``test_provider_secrets.py``
(a test module never imports another one).

Its playbook cases (``playbook_case`` and the credential forms) are what
``test_provider_creds_playbook.py`` runs with ``ansible-playbook -vvvv``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from functools import lru_cache

import google.auth.jwt  # the token endpoint checks assertions with the library's own verifier
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.ansible_run import REPO
from tests.integration.fake_apis import json_reply, text_reply, NO_WAIT
from tests.integration.fake_clouds import GCP_ZONE
from tests.integration.fake_clouds import GCP_TOKEN as TOKEN
from tests.integration.fake_clouds import gcp_instance as instance
from tests.integration.fake_clouds import gcp_instance_list as instance_list
from tests.integration.fake_clouds import gcp_params as params


SCOPE = "https://www.googleapis.com/auth/compute.readonly"


SA_EMAIL = "topology@ml-proj.iam.gserviceaccount.com"


# Issued tokens hold characters that JSON, YAML, shells and Jinja treat specially: none may leak anywhere.
SA_TOKEN = 'ya29.sa-"quoted"\\back{{jinja}}%s$HOME\'single\''


STS_TOKEN = "ya29.sts-<xml>&amp;{{ var }}\\n;|`tick`"


METADATA_TOKEN = "ya29.meta-{% raw %}\\u00e9'\"%(x)s"


SUBJECT_TOKEN = "eyJ.subject-token.{{ not_jinja }}\"quote\\"


@lru_cache(maxsize=1)
def signing_key():
    """(private key PEM, public key PEM) of a fresh RSA key: a service account's key pair."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


def service_account_key(token_server, project="key-proj"):
    """A service-account key document (the JSON `gcloud iam service-accounts keys create` writes)."""
    private, _public = signing_key()
    return {"type": "service_account", "project_id": project, "private_key_id": "0123456789abcdef",
            "private_key": private, "client_email": SA_EMAIL, "client_id": "1234567890",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": f"{token_server.url}/token"}


AUDIENCE = "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/gpu/providers/k8s"


def federation_document(sts, subject_file):
    """An external_account configuration (`gcloud iam workload-identity-pools create-cred-config`), file-sourced."""
    return {"type": "external_account", "audience": AUDIENCE,
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": f"{sts.url}/v1/token",
            "credential_source": {"file": str(subject_file)}}


def metadata_server(fake_http, token=METADATA_TOKEN, project="meta-proj", token_status=200, token_document=None):
    """The GCE metadata server: detection ping, service account info, its token and the project id.

    ``token_document``: another answer to the token request (a hostile or broken metadata server).
    """
    def route(request):
        if request.headers.get("metadata-flavor") != "Google":
            return text_reply("Missing Metadata-Flavor:Google header", status=403)
        found = {
            "/": text_reply("computeMetadata/"),
            "/computeMetadata/v1/instance/service-accounts/default/": json_reply(
                {"email": SA_EMAIL, "scopes": [SCOPE], "aliases": ["default"]}),
            "/computeMetadata/v1/instance/service-accounts/default/token": json_reply(
                {"access_token": token, "expires_in": 3599, "token_type": "Bearer"} if token_document is None
                else token_document) if token_status == 200 else
            text_reply(f"refused, not {token}", status=token_status),  # a body that must not be repeated
            "/computeMetadata/v1/project/project-id": text_reply(project),
        }.get(request.path)
        if found is None:
            return text_reply("not found", status=404)
        found.headers["Metadata-Flavor"] = "Google"
        return found
    return fake_http(route)


def metadata_environment(meta, tmp_path):
    """The environment of a process whose google-auth reads the metadata server on ``meta`` (read at import)."""
    host = meta.url.removeprefix("http://")
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("GOOGLE_", "CLOUDSDK_", "GCE_"))}
    return dict(environment, GCE_METADATA_HOST=host, GCE_METADATA_IP=host, CLOUDSDK_CONFIG=str(tmp_path / "no-gcloud"))


DISCOVER_SCRIPT = """
import json, sys
from tests.integration.fake_apis import discover
try:
    topology, warnings = discover("gcp", json.loads(sys.argv[1]), json.loads(sys.argv[2]))
    print(json.dumps({"nodes": {name: node.switch for name, node in topology.nodes.items()}, "warnings": warnings}))
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
"""


def discover_in_process(params, creds, environment):
    """Discovery in a new interpreter, as a module runs: google-auth reads GCE_METADATA_HOST when imported."""
    done = subprocess.run([sys.executable, "-c", DISCOVER_SCRIPT, json.dumps(params), json.dumps(creds)],
                          capture_output=True, text=True, env=environment, cwd=REPO, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stdout + done.stderr


# -- the -vvvv secret cases of test_provider_creds_playbook.py, and what they need --------------------

ZONE_A = GCP_ZONE


def route(request):
    if request.path == f"/compute/v1/projects/ml-proj/zones/{ZONE_A}/instances":
        if request.query.get("pageToken") != "p2":
            return instance_list([instance("1101", "vm-a", "c1", "b1", "sb1"),
                                  instance("1102", "vm-b", "c1", "b1", None)],  # no subblock: skipped
                                 next_token="p2")
        return instance_list([instance("1103", "vm-c", "c1", "b2", "sb3"), instance("9999", "other", "c", "b", "s")])
    if request.path == "/compute/v1/projects/ml-proj/zones/us-east5-b/instances":
        return instance_list([])  # a zone without instances: no "items" at all
    return json_reply({"error": {"code": 404, "message": "not found"}}, status=404)


def playbook_case(start_http, start_grpc):
    server = start_http(lambda request: instance_list([instance("1", "a", "c", "b", "s")]))
    return params(server, [{"region": ZONE_A, "instances": {"1": "gpu01"}}]), {"access_token": TOKEN}, [TOKEN], \
        lambda: server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"


# The assertion's audience is Google's token endpoint whatever token_uri the key names (Google's OAuth 2.0
# for server-to-server applications: "aud ... always https://oauth2.googleapis.com/token").
JWT_AUDIENCE = "https://oauth2.googleapis.com/token"


def token_endpoint(request):
    """Google's OAuth token endpoint for the JWT bearer grant (RFC 7523): the assertion is verified."""
    form = request.form()
    if request.method != "POST" or form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
        return json_reply({"error": "unsupported_grant_type"}, status=400)
    try:
        claims = google.auth.jwt.decode(form["assertion"], certs=signing_key()[1], audience=JWT_AUDIENCE)
    except (ValueError, KeyError):
        return json_reply({"error": "invalid_grant", "error_description": "Invalid JWT Signature."}, status=400)
    now = time.time()
    if claims["iss"] != SA_EMAIL or claims["scope"] != SCOPE or not claims["iat"] - 60 <= now <= claims["exp"] \
            or claims["exp"] - claims["iat"] > 3600:
        return json_reply({"error": "invalid_grant", "error_description": f"bad claims {sorted(claims)}"}, status=400)
    return json_reply({"access_token": SA_TOKEN, "expires_in": 3599, "token_type": "Bearer"})


def api_server(fake_http, token, project="ml-proj"):
    """instances.list that answers only requests authorised with ``token``."""
    def route(request):
        if request.headers.get("authorization") != f"Bearer {token}":
            return json_reply({"error": {"code": 401, "message": "Request had invalid authentication credentials."}},
                              status=401)
        if request.path != f"/compute/v1/projects/{project}/zones/{ZONE_A}/instances":
            return json_reply({"error": {"code": 404}}, status=404)
        return instance_list([instance("1", "a", "c", "b", "s")])
    return fake_http(route)


def adc_params(api, **extra):
    return dict(NO_WAIT, instances=[{"region": ZONE_A, "instances": {"1": "n1"}}], api_url=api.url, **extra)


def sts_endpoint(request):
    """The Security Token Service's token exchange (RFC 8693), as workload identity federation calls it."""
    form = request.form()
    expected = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "subject_token": SUBJECT_TOKEN,
                "audience": AUDIENCE, "scope": SCOPE}
    if {key: form.get(key) for key in expected} != expected:
        return json_reply({"error": "invalid_request", "error_description": "Invalid token exchange request."},
                          status=400)
    return json_reply({"access_token": STS_TOKEN, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                       "token_type": "Bearer", "expires_in": 3600})


def private_key_parts():
    """What of the private key must never be printed: every base64 line of its PEM, and the PEM JSON-escaped."""
    private = signing_key()[0]
    return [line for line in private.splitlines() if "-----" not in line] + [json.dumps(private)[1:-1]]


def credential_chain_cases(start_http, tmp_path):
    """Runs with each credential form google-auth handles, for the -vvvv secret test (the forms in ``secrets``)."""
    base = {"CLOUDSDK_CONFIG": str(tmp_path / "no-gcloud")}
    tokens = start_http(token_endpoint)
    sts = start_http(sts_endpoint)
    meta = metadata_server(start_http)
    refusing_meta = metadata_server(start_http, token_status=403)
    key_file = tmp_path / "key.json"
    key_file.write_text(json.dumps(service_account_key(tokens)))
    subject = tmp_path / "subject-token"
    subject.write_text(SUBJECT_TOKEN)
    federation = tmp_path / "federation.json"
    federation.write_text(json.dumps(federation_document(sts, subject)))
    by_token = {token: api_server(start_http, token, project=project)
                for token, project in ((SA_TOKEN, "key-proj"), (STS_TOKEN, "ml-proj"), (METADATA_TOKEN, "meta-proj"))}
    host = meta.url.removeprefix("http://")

    def used(token):
        return lambda: any(r.headers.get("authorization") == f"Bearer {token}" for r in by_token[token].requests)

    cases = [
        ("gcp-service-account-key-file", adc_params(by_token[SA_TOKEN]), {"credentials_file": str(key_file)}, base,
         private_key_parts() + [SA_TOKEN], used(SA_TOKEN)),
        ("gcp-service-account-key-inline", adc_params(by_token[SA_TOKEN]),
         {"credentials_json": json.dumps(service_account_key(tokens))}, base, private_key_parts() + [SA_TOKEN],
         used(SA_TOKEN)),
        ("gcp-workload-identity-federation", adc_params(by_token[STS_TOKEN], project_id="ml-proj"), {},
         dict(base, GOOGLE_APPLICATION_CREDENTIALS=str(federation)), [SUBJECT_TOKEN, STS_TOKEN], used(STS_TOKEN)),
        ("gcp-metadata-server", adc_params(by_token[METADATA_TOKEN]), {},
         dict(base, GCE_METADATA_HOST=host, GCE_METADATA_IP=host), [METADATA_TOKEN], used(METADATA_TOKEN)),
    ]
    refused_host = refusing_meta.url.removeprefix("http://")
    return [{"id": case, "params": params, "creds": creds, "environment": environment, "secrets": secrets,
             "used": was_used} for case, params, creds, environment, secrets, was_used in cases] + [
        # The metadata server refuses, its error body holding the token: the failure repeats neither.
        {"id": "gcp-metadata-server-refuses", "params": adc_params(by_token[METADATA_TOKEN], project_id="p"),
         "creds": {}, "environment": dict(base, GCE_METADATA_HOST=refused_host, GCE_METADATA_IP=refused_host),
         "secrets": [METADATA_TOKEN], "used": lambda: bool(refusing_meta.requests), "fails": True}]
