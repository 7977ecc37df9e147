# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWS credentials from a metadata service, fetched through the collection's bounded HTTP client.

The two sources of boto3's chain that botocore would fetch with its own client, outside the discovery
deadline and without a byte limit, in botocore's order and with its settings:

* the **container credentials endpoint** (ECS task roles, EKS Pod Identity), when
  ``AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`` (under ``http://169.254.170.2``) or
  ``AWS_CONTAINER_CREDENTIALS_FULL_URI`` is set; plain ``http`` only to a loopback address or the
  container hosts botocore allows; the ``Authorization`` header from
  ``AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`` or ``AWS_CONTAINER_AUTHORIZATION_TOKEN``;
* the **EC2 instance metadata service** (IMDS) unless ``AWS_EC2_METADATA_DISABLED`` is true: IMDSv2
  (``PUT /latest/api/token``, then the role and its credentials with the session token), IMDSv1 only
  when the token request is refused with 403, 404 or 405 and ``ec2_metadata_v1_disabled`` is not set, as
  botocore does. The endpoint, timeout and attempts are botocore's settings
  (``AWS_EC2_METADATA_SERVICE_ENDPOINT``, ``..._ENDPOINT_MODE``, ``AWS_METADATA_SERVICE_TIMEOUT`` (1 s),
  ``AWS_METADATA_SERVICE_NUM_ATTEMPTS`` (1), or the profile's keys of the same names).

Each answer is at most ``MAX_CREDENTIAL_BYTES``, each attempt within its timeout and the discovery
deadline, a redirect to another host refused. A document of the wrong shape (not an object, a field
that is not a non-empty string, an ``Expiration`` that is no ISO 8601 time, credentials already
expired) is a RemoteAPIError naming the source and the field; every value is registered as a secret
of the run before anything can quote it.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from urllib.parse import quote, urlsplit

from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    RemoteAPIError,
    TopologyError,
    clip,
    credential_problem,
)
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import (
    MAX_CREDENTIAL_BYTES,
    HttpClient,
    HttpError,
)
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _cloud

IMDS_IPV4 = "http://169.254.169.254"
IMDS_IPV6 = "http://[fd00:ec2::254]"
IMDS_TOKEN_TTL = "21600"
ROLES_PATH = "/latest/meta-data/iam/security-credentials/"
CONTAINER_HOST = "http://169.254.170.2"
CONTAINER_HOSTS = frozenset({"169.254.170.2", "169.254.170.23", "fd00:ec2::23", "localhost"})
CONTAINER_TIMEOUT = 2.0  # botocore's, per attempt
CONTAINER_ATTEMPTS = 3
RELATIVE_URI = "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"
FULL_URI = "AWS_CONTAINER_CREDENTIALS_FULL_URI"
AUTH_TOKEN = "AWS_CONTAINER_AUTHORIZATION_TOKEN"
AUTH_TOKEN_FILE = "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"
IMDS = "the EC2 instance metadata service (IMDS)"
NO_CREDENTIALS = "the aws provider found no AWS credentials"


def credentials(core, params):
    """``(access key, secret key, token)`` from the container endpoint or IMDS; None when IMDS is disabled."""
    if os.environ.get(RELATIVE_URI) or os.environ.get(FULL_URI):
        return _container(params)
    if os.environ.get("AWS_EC2_METADATA_DISABLED", "false").strip().lower() == "true":
        return None
    return _imds(core, params)


def _client(params, base_url, timeout, attempts):
    settings = _cloud.client_settings(params)
    return HttpClient(base_url, timeout=timeout, attempts=attempts, backoff=settings["backoff"],
                      max_retry_after=settings["max_retry_after"], sleep=settings["sleep"],
                      max_response_bytes=MAX_CREDENTIAL_BYTES)


# -- the container credentials endpoint -------------------------------------------------------------------

def _container(params):
    relative = os.environ.get(RELATIVE_URI)
    url, variable = (CONTAINER_HOST + relative, RELATIVE_URI) if relative else (os.environ[FULL_URI], FULL_URI)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TopologyError(f"{variable} is not an http or https URL")
    if parts.scheme == "http" and not _loopback(parts.hostname) and parts.hostname not in CONTAINER_HOSTS:
        raise TopologyError(f"{variable}: plain http is allowed only to a loopback address or "
                            f"{', '.join(sorted(CONTAINER_HOSTS))} (as in botocore); use https")
    headers = {}
    token = _authorization_token()
    if token:
        headers["Authorization"] = token
    where = f"the container credentials endpoint ({variable})"
    client = _client(params, url, CONTAINER_TIMEOUT, CONTAINER_ATTEMPTS)
    try:
        document = client.json("GET", url, headers=headers)
    except HttpError as exc:
        raise RemoteAPIError(f"{NO_CREDENTIALS}: {where} failed: {exc}", exc.status) from None
    return parse(document, where, token_required=False, expiration_required=False)


def _loopback(host):
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _authorization_token():
    path = os.environ.get(AUTH_TOKEN_FILE)
    if path:
        try:
            token, source = _input_file.read_text(path, AUTH_TOKEN_FILE, path_is_secret=True).strip(), AUTH_TOKEN_FILE
        except _input_file.InputFileError as exc:
            raise TopologyError(str(exc)) from None
    else:
        token, source = (os.environ.get(AUTH_TOKEN) or "").strip(), AUTH_TOKEN
    if not token:
        return None
    _secrets.register(token)
    problem = credential_problem(token)
    if problem:
        raise TopologyError(f"{source} {problem}; the value is not shown")
    return token


# -- the EC2 instance metadata service -------------------------------------------------------------------------

def _imds(core, params):
    endpoint = core.get_config_variable("ec2_metadata_service_endpoint")
    mode = (core.get_config_variable("ec2_metadata_service_endpoint_mode") or "").lower()
    if not endpoint:
        endpoint = IMDS_IPV6 if mode == "ipv6" or core.get_config_variable("imds_use_ipv6") else IMDS_IPV4
    timeout = _number(core, "metadata_service_timeout", 1.0)
    attempts = int(_number(core, "metadata_service_num_attempts", 1))
    client = _client(params, endpoint, timeout, attempts)
    headers = {}
    token, refused = _imds_token(client, core)
    if token:
        headers["X-aws-ec2-metadata-token"] = token
    try:
        listing = client.request("GET", ROLES_PATH, headers=headers).text
    except HttpError as exc:
        if exc.status == 404:
            raise _no_credentials(endpoint, "the instance has no instance profile (IAM role)") from None
        fallback = f" after the session token request was refused (HTTP {refused})" if refused else ""
        raise _no_credentials(endpoint, f"listing the instance profile's role failed{fallback}: {exc}") from None
    role = next((line.strip() for line in listing.splitlines() if line.strip()), "")
    if not role or len(role) > 128 or any(not ("!" <= char <= "~") or char in "/?#%" for char in role):
        raise RemoteAPIError(f"{IMDS} GET {ROLES_PATH}: the role name is not an IAM role name: {clip(role)}")
    path = ROLES_PATH + quote(role, safe="")
    try:
        document = client.json("GET", path, headers=headers)
    except HttpError as exc:
        raise _no_credentials(endpoint, f"the role's credentials could not be read: {exc}") from None
    return parse(document, f"{IMDS} GET {path}", token_required=True, expiration_required=True)


def _number(core, name, default):
    try:
        value = float(core.get_config_variable(name) or default)
    except (TypeError, ValueError):
        raise TopologyError(f"the AWS setting {name} must be a number") from None
    return value if value > 0 else default


def _imds_token(client, core):
    """(the IMDSv2 session token or None for IMDSv1, the HTTP status that refused the token or None)."""
    try:
        token = client.request("PUT", "/latest/api/token",
                               headers={"X-aws-ec2-metadata-token-ttl-seconds": IMDS_TOKEN_TTL}).text.strip()
    except HttpError as exc:
        if exc.status in (403, 404, 405) and not core.get_config_variable("ec2_metadata_v1_disabled"):
            return None, exc.status  # botocore falls back to IMDSv1 here too
        if exc.status == 400:
            raise _no_credentials(client.base_url, "it refused the session token request as bad (HTTP 400)") from None
        raise _no_credentials(client.base_url, f"no IMDSv2 session token: {exc}") from None
    _secrets.register(token)
    problem = credential_problem(token) if token else "is empty"
    if problem:
        raise RemoteAPIError(f"{IMDS} PUT /latest/api/token: the session token {problem}; the value is not shown")
    return token, None


def _no_credentials(endpoint, reason):
    return RemoteAPIError(f"{NO_CREDENTIALS}: {IMDS} at {endpoint} gave none, {reason}; check the instance profile "
                          "and the IMDS hop limit, or set creds")


# -- the credentials document -------------------------------------------------------------------------------

def parse(document, where, token_required, expiration_required):
    """``(AccessKeyId, SecretAccessKey, Token)`` of a metadata credentials document, checked field by field."""
    if not isinstance(document, dict):
        raise RemoteAPIError(f"{where}: expected a JSON object with AccessKeyId, SecretAccessKey, Token and "
                             f"Expiration, got {type(document).__name__}")
    _secrets.register(*(document.get(field) for field in ("AccessKeyId", "SecretAccessKey", "Token")))
    code = document.get("Code")
    if code is not None and code != "Success":
        raise RemoteAPIError(f"{where}: Code is {clip(code)}, not Success (the role's credentials are not available)")
    values = []
    for field, required in (("AccessKeyId", True), ("SecretAccessKey", True), ("Token", token_required)):
        value = document.get(field)
        if value is None and not required:
            values.append(None)
            continue
        if not isinstance(value, str) or not value:
            raise RemoteAPIError(f"{where}: {field} must be a non-empty string, got {type(value).__name__}")
        problem = credential_problem(value)
        if problem:
            raise RemoteAPIError(f"{where}: {field} {problem}; the value is not shown")
        values.append(value)
    expiration = document.get("Expiration")
    if expiration is not None or expiration_required:
        expires = _time(expiration)
        if expires is None:
            raise RemoteAPIError(f"{where}: Expiration is not an ISO 8601 time: {clip(expiration)}")
        if expires <= datetime.datetime.now(datetime.timezone.utc):
            raise RemoteAPIError(f"{where}: the credentials expired at {expiration}")
    return tuple(values)


def _time(value):
    if not isinstance(value, str) or not 0 < len(value) <= 64:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc)
