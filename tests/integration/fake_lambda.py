"""The Lambda topology API's fixtures and the lambda playbook cases (workload identity included).

Shared by ``test_provider_lambda.py`` and ``test_provider_creds_playbook.py`` (a test module never imports
another one).
"""

from __future__ import annotations

import json

from tests.integration.fake_apis import json_reply
from tests.integration.fake_clouds import LAMBDA_PATH as PATH
from tests.integration.fake_clouds import LAMBDA_TOKEN as TOKEN
from tests.integration.fake_clouds import lambda_envelope as envelope
from tests.integration.fake_clouds import lambda_instance as instance
from tests.integration.fake_clouds import lambda_params as params


# -- the -vvvv secret cases of test_provider_creds_playbook.py, and what they need --------------------

ACCOUNT_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dG9wbyJ9.c2lnbmF0dXJl"


MINTED = "lambda-minted-short-lived-key-71"


LRN = "lrn:lambda:iam::ws-42:identity/topology"


def oidc_route(request):
    """The OIDC exchange (the projected token and the identity for a key), then the topology API with that key."""
    if request.path == "/api/v1/oidc/token":
        if request.method != "POST" or json.loads(request.body) != {"token": ACCOUNT_TOKEN, "identity_lrn": LRN}:
            return json_reply({"error": "unauthorized", "echo": request.body.decode()}, status=401)
        return json_reply({"data": {"access_token": MINTED, "expires_in": 3600}})
    if request.headers.get("authorization") != f"Bearer {MINTED}":
        return json_reply({"error": "unauthorized"}, status=401)
    return envelope([instance("i-a", ["l", "s", "c"], "d", "1")])


def playbook_case(start_http, start_grpc):
    server = start_http(lambda request: envelope([instance("i-a", ["l", "s", "c"], "d", "1")]))
    return params(server, [{"region": "r", "instances": {"i-a": "gpu01"}}]), {"token": TOKEN}, [TOKEN], \
        lambda: server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"


def workload_identity_case(start_http, start_grpc, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(ACCOUNT_TOKEN)
    server = start_http(oidc_route)
    return (params(server, [{"region": "r", "instances": {"i-a": "gpu01"}}]),
            {"identity_lrn": LRN, "token_file": str(token_file)}, [ACCOUNT_TOKEN, MINTED],
            lambda: server.paths() == ["/api/v1/oidc/token", PATH])


# Every credential form besides playbook_case's, for the -vvvv secret test (test_provider_creds_playbook.py).
PLAYBOOK_FORMS = {"workload-identity": workload_identity_case}
