"""Google's credential servers as the gcp tests fake them: a service account's key, workload identity
federation's configuration, the GCE metadata server, and discovery in a fresh interpreter.

Shared by ``test_provider_gcp.py``, ``test_provider_errors.py`` and ``test_provider_secrets.py``
(a test module never imports another one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import lru_cache

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.ansible_run import REPO
from tests.integration.fake_apis import json_reply, text_reply


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
