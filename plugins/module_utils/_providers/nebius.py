# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nebius: ``nebius.compute.v1.InstanceService/List`` over gRPC, through the ``nebius`` SDK.

The SDK (imported only when this provider runs) sends ``ListInstancesRequest{parent_id = project,
page_size, page_token}`` and decodes ``ListInstancesResponse`` with its generated messages. Each
``Instance`` gives ``metadata.id`` (the instance id mapped to a node), ``spec.nvl_instance_group_id``
(the accelerator domain) and ``status.infiniband_topology_path.path``: exactly 3 switch ids, root
first, or the instance has no topology data (Topograph's rule).

Credentials, first found: ``creds.iam_token`` (else ``NEBIUS_IAM_TOKEN``); a service-account key
(``service_account_id``, ``public_key_id``, ``private_key`` or ``private_key_file``, or the CLI's
``credentials_file``), which the SDK signs into a JWT and exchanges at the IAM token service
(``nebius.iam.v1.TokenExchangeService/Exchange``); the metadata service's token endpoint
(``token_endpoint``, an instance's service account). The SDK's own retries are off:
``_http.call_with_retries`` applies the collection's one policy (server pushback, backoff).

params: ``instances`` (the region is optional: the project decides), ``project_id`` (else
``NEBIUS_PROJECT_ID``), ``endpoint`` (default: the SDK's addresses under ``api.nebius.cloud``;
another value serves every service, token exchange included), ``tls`` (default true; false only
for a plaintext test server), ``ca_bundle``.
"""

from __future__ import annotations


from ansible_collections.aifactory.topology.plugins.module_utils._base import json_text
from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._base.deadline import attempt_budget
from ansible_collections.aifactory.topology.plugins.module_utils._base.numbers import whole_number_or_none
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import RetryableError, call_with_retries, paginate
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    NodeDataError,
    RemoteAPIError,
    TopologyError,
    credential_problem,
)
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _cloud, _specs

NAME = "nebius"
METHOD = "/nebius.compute.v1.InstanceService/List"
DEFAULT_ENDPOINT = _specs.NEBIUS_ENDPOINT
DEFAULT_PAGE_SIZE = _specs.NEBIUS_PARAMS.argument_spec["page_size"]["default"]
PATH_LENGTH = 3
RETRY_CODES = ("UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "ABORTED")
CLOSE_TIMEOUT = 5.0
USER_AGENT = "aifactory.topology"


def discover(params, creds, warn):
    try:
        import nebius.sdk  # noqa: F401  # pylint: disable=unused-import
    except ImportError:
        raise TopologyError("the nebius provider needs the Python library 'nebius' (the Nebius SDK) on the host "
                            "that runs it") from None
    _regions, placed = _cloud.placements(params, NAME, require_region=False)
    credentials = _credentials(creds)
    project = _cloud.setting(params, "project_id", env=("NEBIUS_PROJECT_ID",), required_by=NAME)
    size = _cloud.page_size(params, DEFAULT_PAGE_SIZE, warn)
    bad_paths = []
    sdk = _sdk(params, credentials)
    try:
        from nebius.api.nebius.compute.v1 import InstanceServiceClient

        if not isinstance(credentials, str):  # a service-account key, or the metadata service's token endpoint
            from_endpoint = creds.get("token_endpoint") and not hasattr(credentials, "read")
            token = _token(sdk, params, "creds.token_endpoint" if from_endpoint else "the configured credentials")
            if from_endpoint:
                # The SDK's bearer asks the endpoint again for every call: the calls carry the token checked here.
                sdk.sync_close(timeout=CLOSE_TIMEOUT)
                sdk = _sdk(params, token)

        service = InstanceServiceClient(sdk)
        for instance in paginate(lambda page: _page(service, params, project, size, page)):
            _place(placed, instance, bad_paths)
    finally:
        sdk.sync_close(timeout=CLOSE_TIMEOUT)
    if bad_paths:
        warn(f"InfiniBand topology paths without exactly {PATH_LENGTH} switches are ignored for: {', '.join(bad_paths)}")
    return placed.topology(warn)


def _credentials(creds):
    """What the SDK's Channel takes as ``credentials``; messages never show a value."""
    token = _cloud.secret(creds, "iam_token", env=("NEBIUS_IAM_TOKEN",))
    if token:
        return token
    from nebius.base.service_account.service_account import ServiceAccount
    from nebius.base.service_account.static import Reader

    account = _cloud.secret(creds, "service_account_id")
    if account:
        key_id = _cloud.secret(creds, "public_key_id", required_by=NAME)
        pem = _cloud.secret(creds, "private_key", multiline=True)
        if not pem:
            path = _cloud.secret(creds, "private_key_file", required_by=NAME)
            pem = _read(path, "nebius creds.private_key_file")
        return Reader(ServiceAccount(_rsa_key(pem, "creds.private_key"), key_id, account))
    if creds.get("credentials_file"):
        return Reader(_credentials_file(creds["credentials_file"]))
    endpoint = creds.get("token_endpoint")
    if endpoint:
        from nebius.aio.token.imds import Bearer

        return Bearer(endpoint)
    raise TopologyError("the nebius provider needs creds.iam_token (or the environment variable NEBIUS_IAM_TOKEN), "
                        "a service-account key (creds.service_account_id, public_key_id, private_key or "
                        "private_key_file), creds.credentials_file, or creds.token_endpoint")


def _credentials_file(path):
    """The Nebius CLI's service-account credentials file: ``{subject-credentials: {alg, private-key, kid, iss, sub}}``."""
    from nebius.base.service_account.service_account import ServiceAccount

    text = _read(path, "nebius creds.credentials_file")
    try:
        subject = json_text.loads(text, max_depth=8)["subject-credentials"]
        fields = {key: subject[key] for key in ("alg", "private-key", "kid", "iss", "sub")}
    except (ValueError, KeyError, TypeError):
        raise TopologyError("nebius creds.credentials_file is not a service-account credentials file "
                            "({subject-credentials: {alg, private-key, kid, iss, sub}}); its content is not shown") from None
    if not all(isinstance(value, str) for value in fields.values()) or fields["alg"] != "RS256" or \
            fields["iss"] != fields["sub"]:
        raise TopologyError("nebius creds.credentials_file: alg must be RS256 and iss equal sub (all strings)")
    for key in ("kid", "sub"):
        _cloud.secret(fields, key)
    return ServiceAccount(_rsa_key(fields["private-key"], "the credentials file's private-key"), fields["kid"],
                          fields["sub"])


def _rsa_key(pem, what):
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    try:
        key = serialization.load_pem_private_key(pem.encode(), None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        # Never echo the key: name only what is wrong with it.
        raise TopologyError(f"nebius {what} is not an unencrypted PEM RSA private key") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise TopologyError(f"nebius {what} must be an RSA key (Nebius service-account keys are RSA)")
    return key


def _read(path, what, path_is_secret=True):
    try:
        return _input_file.read_text(path, what, path_is_secret=path_is_secret)
    except _input_file.InputFileError as exc:
        raise TopologyError(str(exc)) from None


def _sdk(params, credentials):
    import grpc
    from nebius.base.options import INSECURE
    from nebius.base.resolver import Constant
    from nebius.sdk import SDK

    endpoint = _cloud.setting(params, "endpoint", DEFAULT_ENDPOINT)
    kwargs = {"credentials": credentials, "user_agent_prefix": USER_AGENT}
    if endpoint != DEFAULT_ENDPOINT:
        kwargs["resolver"] = Constant(endpoint)  # one address serves every service (token exchange too)
    if not params["tls"]:
        kwargs["options"] = [(INSECURE, True)]
    else:
        _verify, ca_bundle = _cloud.tls_settings(params)
        if ca_bundle:
            roots = _read(ca_bundle, "params.ca_bundle", path_is_secret=False).encode()  # PEM
            kwargs["tls_credentials"] = grpc.ssl_channel_credentials(root_certificates=roots)
    return SDK(**kwargs)


def _page(service, params, project, size, page):
    from nebius.aio.request import RequestError
    from nebius.api.nebius.compute.v1 import ListInstancesRequest

    settings = _cloud.client_settings(params)
    what = f"Nebius {METHOD} (project {project})"

    def attempt():
        request = service.list(ListInstancesRequest(parent_id=project, page_size=size, page_token=page or ""),
                               timeout=settings["timeout"], auth_timeout=settings["timeout"] * 2, retries=0)
        try:
            return request.wait()
        except RequestError as exc:
            name, details = _status(exc)
            if name in RETRY_CODES:
                raise RetryableError(f"gRPC {name}", _pushback(request)) from None
            hint = " (the caller needs a role that allows compute.instance.list, e.g. viewer)" if name in (
                "UNAUTHENTICATED", "PERMISSION_DENIED") else ""
            raise RemoteAPIError(f"{what}: gRPC {name}: {details}{hint}", name) from None
        except Exception as exc:  # pylint: disable=broad-exception-caught  # the SDK's token and decode errors
            raise RemoteAPIError(f"{what}: {_sdk_problem(exc)}") from None

    response = call_with_retries(attempt, what, attempts=settings["attempts"], backoff=settings["backoff"],
                                 max_retry_after=settings["max_retry_after"], sleep=settings["sleep"])
    from nebius.api.nebius.compute.v1 import ListInstancesResponse

    if not isinstance(response, ListInstancesResponse):  # the SDK gives None for a body that does not decode
        raise RemoteAPIError(f"{what}: the response is not a ListInstancesResponse")
    return list(response.items), response.next_page_token


def _token(sdk, params, source):
    """The token, got first (exchanged for a key, or from the token endpoint), so a refused key says so (the SDK
    would retry it until the call's deadline) and a token gRPC could not send is named by ``source``; the
    message names the failure, never the key or a token."""
    timeout = attempt_budget(_cloud.client_settings(params)["timeout"])
    if timeout <= 0:
        raise RemoteAPIError(f"Nebius: no access token from {source}: the discovery deadline has "
                             "passed")
    try:
        token = sdk.get_token_sync(timeout)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # every SDK token failure is reported
        name, details = _status(exc)
        cause = exc.__cause__ or exc.__context__
        if name == "UNKNOWN" and cause is not None:
            name, details = _status(cause)
        reason = f"gRPC {name}: {details}" if name != "UNKNOWN" else (
            f"{type(exc).__name__}: the token service refused the key or did not answer within "
            f"{timeout:g} s")
        raise RemoteAPIError(f"Nebius: no access token from {source} ({_secrets.scrub(reason)})",
                             name if name != "UNKNOWN" else None) from None
    value = getattr(token, "token", None)
    _secrets.register(value)
    # gRPC would refuse a token with a line break with an error about the metadata: say what is wrong with it.
    problem = "is empty or not text" if not isinstance(value, str) or not value else credential_problem(value)
    if problem:
        raise RemoteAPIError(f"Nebius: the token {source} gave is not usable: it {problem} "
                             "(the value is not shown)")
    return value


def _status(error):
    status = getattr(error, "status", None)
    code = getattr(status, "code", None)
    name = getattr(code, "name", None) or "UNKNOWN"
    return name, _secrets.excerpt(str(getattr(status, "message", "") or ""), 300)


def _sdk_problem(error):
    """A short reason for an SDK failure outside a gRPC status (a token that could not be had, a body that does not
    decode): its type, and its text only when that holds no credential."""
    text = str(error)
    if "decode" in text.lower() or "parse" in text.lower() or type(error).__name__ == "DecodeError":
        return "the response is not a ListInstancesResponse"
    return f"{type(error).__name__}: {_secrets.excerpt(text)}"


def _pushback(request):
    """gRPC's server pushback (``grpc-retry-pushback-ms`` trailer), the analogue of Retry-After."""
    try:
        for key, value in request.trailing_metadata_sync() or ():
            if key == "grpc-retry-pushback-ms":
                # Read whole, however long: call_with_retries caps the wait (retry_after_max), as for Retry-After.
                milliseconds = whole_number_or_none(value)
                return None if milliseconds is None else milliseconds / 1000.0
    except Exception:  # pylint: disable=broad-exception-caught  # no trailers: our backoff applies
        pass
    return None


def _place(placed, instance, bad_paths):
    instance_id = instance.metadata.id
    if not instance_id:
        raise RemoteAPIError(f"Nebius {METHOD}: an instance without metadata.id")
    if not placed.wants(instance_id):
        return
    with placed.instance(instance_id):
        status = instance.status
        if status is None or status.infiniband_topology_path is None:
            return  # no infiniband_topology_path: no topology data
        path = list(status.infiniband_topology_path.path)
        if not path:
            return
        if len(path) != PATH_LENGTH:
            bad_paths.append(f"{placed.requested[instance_id]} ({len(path)})")
            return
        if not all(path):
            raise NodeDataError(f"Nebius instance {instance_id!r}: an empty switch id in infiniband_topology_path")
        group = instance.spec.nvl_instance_group_id if instance.spec is not None else ""
        placed.add(instance_id, list(reversed(path)), group or None)
