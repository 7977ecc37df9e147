"""The Nebius compute API's messages as the nebius tests' fake gRPC server answers them.

Shared by ``test_provider_nebius.py``, ``test_provider_errors.py`` and nebius's contract case in
``fake_clouds.py`` (a test module never imports another one).

Its playbook cases (``playbook_case`` and the credential forms) are what
``test_provider_creds_playbook.py`` runs with ``ansible-playbook -vvvv``.
"""

from __future__ import annotations

import json

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from nebius.api.nebius.common.v1 import ResourceMetadata
from nebius.api.nebius.compute.v1 import (
    Instance,
    InstanceSpec,
    InstanceStatus,
    InstanceStatusInfinibandTopologyPath,
    ListInstancesResponse,
)
from nebius.api.nebius.iam.v1 import CreateTokenResponse, ExchangeTokenRequest

from tests.integration.fake_apis import GrpcAbort, NO_WAIT


METHOD = "/nebius.compute.v1.InstanceService/List"


PROJECT = "project-e00abc"


def instance(instance_id, path=None, nvl_group="", state=4):
    status = InstanceStatus(state=state, reconciling=True, reservation_id="res-1")
    if path is not None:
        status = InstanceStatus(state=state, reconciling=True, reservation_id="res-1",
                                infiniband_topology_path=InstanceStatusInfinibandTopologyPath(path=path))
    return Instance(metadata=ResourceMetadata(id=instance_id, parent_id=PROJECT, name=f"vm-{instance_id}",
                                              resource_version=7),
                    spec=InstanceSpec(hostname=f"host-{instance_id[-2:]}", stopped=False,
                                      nvl_instance_group_id=nvl_group),
                    status=status)


def page(items, token=""):
    return ListInstancesResponse(items=items, next_page_token=token).SerializeToString()


# -- the -vvvv secret cases of test_provider_creds_playbook.py, and what they need --------------------

TOKEN = "nebius-iam-token-c0ffee"


REQUESTED = [{"instances": {"computeinstance-a1": "h100-01", "computeinstance-a2": "h100-02",
                            "computeinstance-a3": "h100-03", "computeinstance-a4": "h100-04",
                            "computeinstance-a5": "h100-05"}}]


def params(server, instances=None, **extra):
    return dict(NO_WAIT, instances=instances or REQUESTED, project_id=PROJECT, endpoint=server.endpoint, tls=False,
                **extra)


EXCHANGE = "/nebius.iam.v1.TokenExchangeService/Exchange"


SERVICE_ACCOUNT = "serviceaccount-e00sa"


PUBLIC_KEY_ID = "publickey-e00key"


SA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


SA_PEM = SA_KEY.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()).decode()


EXCHANGED = "nebius-exchanged-access-token-5a"


def exchange(request, metadata):
    """The IAM token service: an RFC 8693 exchange of the account's JWT, verified with its public key."""
    asked = ExchangeTokenRequest.FromString(request)
    if asked.grant_type != "urn:ietf:params:oauth:grant-type:token-exchange" or \
            asked.subject_token_type != "urn:ietf:params:oauth:token-type:jwt":
        raise GrpcAbort("INVALID_ARGUMENT", "not a JWT token exchange")
    try:
        claims = jwt.decode(asked.subject_token, SA_KEY.public_key(), algorithms=["RS256"],
                            audience="token-service.iam.new.nebiuscloud.net")
    except jwt.InvalidTokenError as exc:
        raise GrpcAbort("UNAUTHENTICATED", f"bad subject token: {type(exc).__name__}") from None
    if jwt.get_unverified_header(asked.subject_token).get("kid") != PUBLIC_KEY_ID or \
            claims["iss"] != SERVICE_ACCOUNT or claims["sub"] != SERVICE_ACCOUNT:
        raise GrpcAbort("UNAUTHENTICATED", "unknown key or account")
    return CreateTokenResponse(access_token=EXCHANGED, issued_token_type="urn:ietf:params:oauth:token-type:access_token",
                               token_type="Bearer", expires_in=3600).SerializeToString()


def one_instance(request, metadata):
    if metadata.get("authorization") not in (f"Bearer {TOKEN}", f"Bearer {EXCHANGED}"):
        raise GrpcAbort("UNAUTHENTICATED", "unknown token")
    return page([instance("computeinstance-a1", ["core-1", "spine-1", "leaf-1"], "nvlgroup-1")])


def service_account_case(start_http, start_grpc, tmp_path):
    server = start_grpc({METHOD: one_instance, EXCHANGE: exchange})
    return (params(server), {"service_account_id": SERVICE_ACCOUNT, "public_key_id": PUBLIC_KEY_ID,
                             "private_key": SA_PEM},
            [SA_PEM.splitlines()[1], SA_PEM.splitlines()[-2], EXCHANGED],
            lambda: any(meta.get("authorization") == f"Bearer {EXCHANGED}" for _m, _r, meta in server.requests))


def credentials_file_case(start_http, start_grpc, tmp_path):
    server = start_grpc({METHOD: one_instance, EXCHANGE: exchange})
    path = tmp_path / "credentials.json"
    path.write_text(json.dumps({"subject-credentials": {"alg": "RS256", "private-key": SA_PEM, "kid": PUBLIC_KEY_ID,
                                                        "iss": SERVICE_ACCOUNT, "sub": SERVICE_ACCOUNT}}))
    return (params(server), {"credentials_file": str(path)}, [SA_PEM.splitlines()[1], EXCHANGED],
            lambda: any(meta.get("authorization") == f"Bearer {EXCHANGED}" for _m, _r, meta in server.requests))


# Every credential form besides playbook_case's, for the -vvvv secret test (test_provider_creds_playbook.py).
PLAYBOOK_FORMS = {"service-account-key": service_account_case, "credentials-file": credentials_file_case}


def playbook_case(start_http, start_grpc):
    server = start_grpc({METHOD: lambda request, metadata: page([instance("computeinstance-a1", ["a", "b", "c"])])})
    return params(server), {"iam_token": TOKEN}, [TOKEN], \
        lambda: server.requests[0][2]["authorization"] == f"Bearer {TOKEN}"
