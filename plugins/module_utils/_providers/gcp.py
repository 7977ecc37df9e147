# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GCP: Compute Engine ``instances.list`` and each instance's ``resourceStatus.physicalHostTopology``.

As in Topograph, each request entry's ``region`` is the **zone** listed. Tiers, closest first:
``subblock``, ``block``, ``cluster``; the accelerator domain is the sub-block (Topograph's
choice). An instance missing any of the three has no topology data. Instance ids are the
numeric ``id`` (what the metadata server's ``instance/id`` returns), not names.

Credentials, the first that is set: ``creds.access_token`` (else ``GOOGLE_OAUTH_ACCESS_TOKEN``),
sent as it is; else google-auth's credentials from a JSON credentials document,
``creds.credentials_json``, ``creds.credentials_file``, ``GOOGLE_APPLICATION_CREDENTIALS`` or
gcloud's application default credentials file (a service-account key, workload identity
federation's ``external_account``, an ``authorized_user``...); else the metadata server's token
(``GCE_METADATA_HOST`` moves it), fetched through the collection's HTTP client (a credential-sized body,
params.timeout, the deadline) and checked (``access_token`` a usable string, ``expires_in`` a positive
number). google-auth's token requests (token_uri, STS, the metadata server for a federation source)
go through a bounded session: MAX_CREDENTIAL_BYTES, the attempt's time and the deadline, and never a
redirect to another host (a token_uri answering 307 would re-post the signed assertion there). With a
credentials document the Compute API is called through google-auth's ``AuthorizedSession`` (which
refreshes an expiring token) inside the collection's HTTP client (its retries, timeouts and deadline);
a fixed token (creds, the environment, the metadata server) is sent as a header. The project: ``params.project_id``, else
``GOOGLE_CLOUD_PROJECT``/``CLOUDSDK_CORE_PROJECT``, else the credentials document's
``project_id``, else the metadata server, as Topograph.
"""

from __future__ import annotations

import contextlib
import os
from urllib.parse import quote

from ansible_collections.aifactory.topology.plugins.module_utils._base import json_text
from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._base.deadline import attempt_budget, call_within
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    AifactoryTopologyError,
    NodeDataError,
    RemoteAPIError,
    TopologyError,
    clip,
    credential_problem,
)
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import (
    MAX_CREDENTIAL_BYTES,
    HttpClient,
    HttpError,
    bound_session,
    paginate,
)
from ansible_collections.aifactory.topology.plugins.module_utils._base.input_file import InputFileError, read_text
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _cloud, _specs

NAME = "gcp"
DEFAULT_API_URL = _specs.GCP_API_URL
DEFAULT_METADATA_HOST = "metadata.google.internal"
DEFAULT_PAGE_SIZE = _specs.GCP_PARAMS.argument_spec["page_size"]["default"]  # maxResults: the API's maximum
FIELDS = "items(id,name,resourceStatus/physicalHostTopology),nextPageToken"
SCOPES = ("https://www.googleapis.com/auth/compute.readonly",)
# A credentials document is a few KiB; anything far larger is not one.
MAX_CREDENTIALS_BYTES = 1 << 20
CREDENTIALS_ENV = "GOOGLE_APPLICATION_CREDENTIALS"
METADATA_SOURCE = "the GCE metadata server"
TIER_KEYS = ("subblock", "block", "cluster")  # of physicalHostTopology, closest first
TIER_FIELDS = tuple(f"physicalHostTopology.{key}" for key in TIER_KEYS)
METADATA_TOKEN_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
# Fields of a token endpoint's answer that are credentials (registered as secrets of the run when seen).
TOKEN_FIELDS = ("access_token", "id_token", "refresh_token", "token")


def discover(params, creds, warn):
    zones, placed = _cloud.placements(params, NAME)
    login = _login(params, creds)
    project = _cloud.setting(params, "project_id", env=("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT")) \
        or login.project or _Metadata(params).project()
    client = _cloud.http_client(params, _cloud.setting(params, "api_url", DEFAULT_API_URL),
                                headers=login.headers, session=login.session)
    size = _cloud.page_size(params, DEFAULT_PAGE_SIZE, warn, maximum=DEFAULT_PAGE_SIZE)
    for zone, _mapping in zones:
        path = f"/compute/v1/projects/{quote(project, safe='')}/zones/{quote(zone, safe='')}/instances"
        with login.refusals():
            for item in paginate(lambda token: _page(client, path, size, token)):
                _place(placed, item, zone)
    return placed.topology(warn)


def _page(client, path, size, token):
    query = {"maxResults": size, "fields": FIELDS}
    if token:
        query["pageToken"] = token
    body = client.json("GET", path, params=query)
    where = f"GET {path}"
    if not isinstance(body, dict):
        raise RemoteAPIError(f"{where}: expected an InstanceList object, got {_secrets.excerpt(str(body), 100)}")
    items = body.get("items", [])  # Google omits an empty list
    if not isinstance(items, list):
        raise RemoteAPIError(f"{where}: items is not a list")
    return items, body.get("nextPageToken")


def _place(placed, item, zone):
    raw_id = item.get("id") if isinstance(item, dict) else None
    if raw_id in (None, "") or isinstance(raw_id, (bool, dict, list)):
        raise RemoteAPIError(f"zone {zone}: an instance without id in the instances.list response: {_secrets.excerpt(str(item))}")
    instance_id = str(raw_id)  # only to find the node a number would name: the record is refused below
    with placed.instance(instance_id):
        if not isinstance(raw_id, str):
            raise NodeDataError(f"zone {zone}: instance {clip(raw_id)}: id must be a string (Compute Engine sends "
                                f"the uint64 as a string), got {type(raw_id).__name__} {clip(raw_id)}")
        status = item.get("resourceStatus") or {}
        topology = (status.get("physicalHostTopology") if isinstance(status, dict) else status) or {}
        if not isinstance(topology, dict):
            raise NodeDataError(f"zone {zone}: instance {instance_id!r}: physicalHostTopology is not an object, "
                                f"got {clip(topology)}")
        tiers = [topology.get(key) for key in TIER_KEYS]
        if all(tier not in (None, "") for tier in tiers):  # Topograph skips an instance missing any of the three
            placed.add(instance_id, tiers, domain=tiers[0], fields=TIER_FIELDS, domain_field=TIER_FIELDS[0])


# -- credentials ----------------------------------------------------------------------------

class _Login:
    """How requests are authorised: a fixed Bearer header, or google-auth credentials in a session."""

    def __init__(self, headers=None, session=None, project=None, source=""):
        self.headers, self.session, self.project, self.source = headers, session, project, source

    def refusals(self):
        if self.session is None:  # a fixed token: HTTP errors only
            return contextlib.nullcontext()
        return _refusals(self.source)


def _google_auth():
    """google-auth, imported only by a run that uses it: an access token needs none of it (docs/performance.md)."""
    # pylint: disable=import-outside-toplevel
    try:
        import google.auth.exceptions
        import google.auth.transport.requests
    except ImportError:
        raise TopologyError("the gcp provider needs the Python library 'google-auth' on the host that runs it "
                            "(or creds.access_token)") from None
    return google


def _login(params, creds):
    token = _cloud.secret(creds, "access_token", env=("GOOGLE_OAUTH_ACCESS_TOKEN",))
    if token:  # no google-auth needed: the token is sent as given
        return _Login(headers={"Authorization": f"Bearer {token}"})
    document, source = _credentials_document(creds)
    if document is None:
        return _Login(headers={"Authorization": f"Bearer {_metadata_token(params)}"}, source=METADATA_SOURCE)
    google = _google_auth()
    transport = _transport(params)
    _register_known_secrets(document)
    credentials = _from_document(document, source)
    project = document.get("project_id") or document.get("quota_project_id") or None
    with _refusals(source):
        # The first token now, within the request timeout: a refusal fails here with its reason.
        budget = attempt_budget(_cloud.client_settings(params)["timeout"] * 2)
        try:
            call_within(lambda: credentials.refresh(transport), budget)
        except TimeoutError:
            raise RemoteAPIError(f"GCP credentials from {source}: no token within {budget:g} s"
                                 f"{_hint(source)}") from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            # google-auth reads a token answer of the wrong shape (a list, a field missing or of another type)
            # without checking it: the source and the field, never the answer.
            field = f" {clip(_secrets.scrub(str(exc.args[0])), 40)}" if isinstance(exc, KeyError) and exc.args else ""
            raise RemoteAPIError(f"GCP credentials from {source}: the token response is not a token object "
                                 f"({type(exc).__name__}{field}: a JSON object with access_token and expires_in "
                                 "is expected)") from None
    _secrets.register(getattr(credentials, "token", None))
    session = google.auth.transport.requests.AuthorizedSession(credentials, auth_request=transport)
    return _Login(session=session, project=project if isinstance(project, str) else None, source=source)


def _credentials_document(creds):
    """(the parsed JSON credentials document, where it came from), or (None, None) for the metadata server."""
    inline = _cloud.secret(creds, "credentials_json", multiline=True)
    if inline:
        return _parse(inline, "creds.credentials_json"), "creds.credentials_json"
    path, source = creds.get("credentials_file"), "creds.credentials_file"
    if not path and os.environ.get(CREDENTIALS_ENV):
        path, source = os.environ[CREDENTIALS_ENV], f"the environment variable {CREDENTIALS_ENV}"
    if not path:
        # gcloud auth application-default login's file, where application default credentials look.
        config = os.environ.get("CLOUDSDK_CONFIG") or os.path.join(os.path.expanduser("~"), ".config", "gcloud")
        candidate = os.path.join(config, "application_default_credentials.json")
        if not os.path.isfile(candidate):
            return None, None
        path, source = candidate, "gcloud's application default credentials"
    try:
        text = read_text(path, source, max_bytes=MAX_CREDENTIALS_BYTES)
    except InputFileError as exc:
        raise TopologyError(str(exc)) from None
    return _parse(text, f"{source} ({path})"), f"{source} ({path})"


def _register_known_secrets(document):
    """What a server's error might echo and no message may repeat: the key, a file-sourced subject token."""
    secrets = [document.get(key) for key in ("private_key", "client_secret", "refresh_token")]
    source = document.get("credential_source")
    if isinstance(source, dict) and isinstance(source.get("file"), str):
        try:
            text = read_text(source["file"], "credential_source.file", path_is_secret=True,
                             max_bytes=MAX_CREDENTIALS_BYTES)
        except InputFileError:
            text = ""  # google-auth reports the unreadable file itself
        secrets += [text, text.strip()] + _json_strings(text)
    _secrets.register(*secrets)


def _json_strings(text):
    """The string values of a JSON subject token file (format type json), if it is one."""
    try:
        document = json_text.loads(text, max_depth=8)
    except ValueError:
        return []
    return [value for value in document.values() if isinstance(value, str)] if isinstance(document, dict) else []


def _parse(text, source):
    try:
        document = json_text.loads(text, max_depth=8)
    except ValueError:
        # Never the parser's message: it quotes the text around the error (part of a key).
        raise TopologyError(f"{source} is not JSON (the content is not shown)") from None
    if not isinstance(document, dict) or not isinstance(document.get("type"), str):
        raise TopologyError(f"{source} is not a Google credentials document (a JSON object with a type)")
    return document


def _from_document(document, source):
    """google-auth credentials for the document's ``type``, with the Compute read-only scope.

    Each type through its own loader (google-auth's advice for configurations of known types).
    """
    kind = document["type"]
    google = _google_auth()
    # pylint: disable=import-outside-toplevel
    try:
        if kind == "external_account":
            # google.auth.load_credentials_from_dict would also look the project up in Cloud Resource
            # Manager (a request we neither need nor bound): the federation types are built directly.
            credential_source = document.get("credential_source") or {}
            if not isinstance(credential_source, dict):
                raise TopologyError(f"{source}: credential_source must be an object")
            if str(credential_source.get("environment_id", "")).startswith("aws"):
                from google.auth import aws as federation
            elif "executable" in credential_source:
                from google.auth import pluggable as federation
            else:
                from google.auth import identity_pool as federation
            return federation.Credentials.from_info(document, scopes=list(SCOPES))
        if kind == "service_account":
            from google.oauth2 import service_account
            return service_account.Credentials.from_service_account_info(document, scopes=list(SCOPES))
        if kind == "authorized_user":
            from google.oauth2 import credentials
            return credentials.Credentials.from_authorized_user_info(document, scopes=list(SCOPES))
    except (google.auth.exceptions.DefaultCredentialsError, ValueError, TypeError, KeyError) as exc:
        # google-auth names the missing or malformed field; a key's bytes are never in its messages.
        raise TopologyError(f"{source}: unusable {kind!r} credentials: {clip(str(exc), 200)}") from None
    raise TopologyError(f"{source}: credentials of type {clip(kind)} are not supported; use a service_account key, "
                        "an external_account (workload identity federation) or authorized_user document")


@contextlib.contextmanager
def _refusals(source):
    """Turn google-auth's errors into RemoteAPIError (a refused or failed token request); no secret shown."""
    google = _google_auth()
    try:
        yield
    except HttpError as exc:  # the bounded session's refusal (too large, a redirect to another host, the deadline)
        raise RemoteAPIError(f"GCP credentials from {source}: {exc}", exc.status) from None
    except google.auth.exceptions.GoogleAuthError as exc:
        reason = _secrets.scrub(_reason(exc))
        refused = isinstance(exc, (google.auth.exceptions.RefreshError, google.auth.exceptions.OAuthError))
        raise RemoteAPIError(f"GCP credentials from {source}: the token request "
                             f"{'was refused' if refused else 'failed'} ({exc.__class__.__name__}): "
                             f"{clip(reason, 300)}{_hint(source)}") from None


def _hint(source):
    if source != METADATA_SOURCE:
        return ""
    return "; off GCE, set creds.access_token, creds.credentials_file or GOOGLE_APPLICATION_CREDENTIALS"


def _reason(exc):
    """google-auth's own words: the innermost message of an error that wraps another, without a response body."""
    while exc.args and isinstance(exc.args[0], Exception):
        exc = exc.args[0]
    reason = str(exc.args[0]) if exc.args else exc.__class__.__name__
    if isinstance(exc, HttpError):
        return str(exc)
    # The metadata client appends the response body: not repeated (what a server sends back is not shown).
    return reason.split(" Response:", 1)[0]


def _transport(params):
    """google-auth's requests transport, held to params.timeout, the deadline and the TLS settings."""
    google = _google_auth()
    import requests  # pylint: disable=import-outside-toplevel

    class Transport(google.auth.transport.requests.Request):
        def __call__(self, url, method="GET", body=None, headers=None, timeout=None, **kwargs):
            budget = attempt_budget(limit)
            if budget <= 0:
                raise google.auth.exceptions.TransportError("the discovery deadline has passed")
            response = super().__call__(url, method=method, body=body, headers=headers,
                                        timeout=min(timeout or budget, budget), **kwargs)
            _register_tokens(response.data)
            return response

    limit = _cloud.client_settings(params)["timeout"]
    # Each token request: a credential-sized body, the attempt's time and the deadline, no redirect to another host.
    session = bound_session(requests.Session(), limit, MAX_CREDENTIAL_BYTES)
    verify, ca_bundle = _cloud.tls_settings(params)
    session.verify = ca_bundle if (verify and ca_bundle) else bool(verify)
    return Transport(session)


def _register_tokens(data):
    """The credentials in a token endpoint's JSON answer are secrets of the run from the moment they arrive."""
    try:
        document = json_text.loads(data)
    except (ValueError, TypeError):
        return
    if isinstance(document, dict):
        _secrets.register(*(document.get(key) for key in TOKEN_FIELDS))


def _metadata_client(params, headers=None):
    host = os.environ.get("GCE_METADATA_HOST") or os.environ.get("GCE_METADATA_ROOT") or DEFAULT_METADATA_HOST
    settings = _cloud.client_settings(params)
    return HttpClient(f"http://{host}", headers=dict({"Metadata-Flavor": "Google"}, **(headers or {})),
                      timeout=settings["timeout"], attempts=settings["attempts"], backoff=settings["backoff"],
                      max_retry_after=settings["max_retry_after"], sleep=settings["sleep"],
                      max_response_bytes=MAX_CREDENTIAL_BYTES)


def _metadata_token(params):
    """The instance service account's token from the metadata server, checked field by field."""
    where = f"GCP credentials from {METADATA_SOURCE}"
    try:
        response = _metadata_client(params).request("GET", METADATA_TOKEN_PATH, params={"scopes": ",".join(SCOPES)})
    except HttpError as exc:
        # Its body is not repeated: a refusal may quote what it refused.
        reason = f"was refused (HTTP {exc.status})" if exc.status else f"failed: {exc}"
        raise RemoteAPIError(f"{where}: the token request {reason}{_hint(METADATA_SOURCE)}", exc.status) from None
    try:
        document = response.json()
    except ValueError:
        raise RemoteAPIError(f"{where}: the token response is not JSON (it is not shown)") from None
    if not isinstance(document, dict):
        raise RemoteAPIError(f"{where}: the token response is not a JSON object (got {type(document).__name__})")
    _register_tokens(response.content)
    token, expires = document.get("access_token"), document.get("expires_in")
    if not isinstance(token, str) or not token:
        raise RemoteAPIError(f"{where}: access_token must be a non-empty string, got {type(token).__name__}")
    problem = credential_problem(token)
    if problem:
        raise RemoteAPIError(f"{where}: access_token {problem}; it is not shown")
    if isinstance(expires, bool) or not isinstance(expires, (int, float)) or not 0 < expires < 10 ** 9:
        raise RemoteAPIError(f"{where}: expires_in must be a positive number of seconds, got "
                             f"{type(expires).__name__} {clip(expires)}")
    kind = document.get("token_type", "Bearer")
    if not isinstance(kind, str) or kind.lower() != "bearer":
        raise RemoteAPIError(f"{where}: token_type must be Bearer, got {clip(kind)}")
    return token


class _Metadata:
    """The GCE metadata server's project id, asked only when nothing else names the project."""

    def __init__(self, params):
        self.params = params

    def project(self):
        client = _metadata_client(self.params)
        try:
            project = client.request("GET", "/computeMetadata/v1/project/project-id").text.strip()
        except AifactoryTopologyError as exc:
            raise RemoteAPIError(f"the gcp provider needs params.project_id (or GOOGLE_CLOUD_PROJECT) when neither "
                                 f"the credentials nor a GCE metadata server name the project; the metadata server "
                                 f"failed: {exc}") from None
        if not project:
            raise RemoteAPIError("the GCE metadata server returned an empty project id")
        return project
