# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes API access for the Kubernetes modules and providers.

Authentication follows kubernetes.core (option names and ``K8S_AUTH_*`` environment variables,
which AWX's Kubernetes credential injects), with one difference that matters for safety: when
any explicit credential is given, the in-cluster service account is never used instead
(kubernetes.core#1098). Requests go through the ``kubernetes`` client's configuration (TLS,
client certificates, exec and token plugins of kubeconfig files) but bodies are plain JSON, so a
5,000-node list is not turned into typed objects.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import importlib.util
import os
import ssl
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from urllib.parse import quote

from ansible_collections.aifactory.topology.plugins.module_utils._base import json_text
from ansible_collections.aifactory.topology.plugins.module_utils._base.labels import check_label_key, is_valid_label_value
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    RemoteAPIError,
    TopologyError,
    check_known_keys,
    credential_problem,
)
from ansible_collections.aifactory.topology.plugins.module_utils._base.deadline import attempt_budget, call_within
from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._transport.k8s_auth import (  # noqa: F401  pylint: disable=unused-import
    AUTH_ARG_SPEC, AUTH_OPTIONS)

# The kubernetes library takes about 0.3 s to import: it is imported when a client is built, not
# by every module that imports this one.
HAS_KUBERNETES = importlib.util.find_spec("kubernetes") is not None

MISSING_LIBRARY = ("the Python library 'kubernetes' is required on the host that runs this task "
                   "(pip install kubernetes; it is in the collection's requirements.txt)")

FIELD_MANAGER = "aifactory-topology"
LIST_PAGE_SIZE = 500
# A list of only the objects' metadata (PartialObjectMetadataList), as client-go's metadata informers ask
# for it: a Node's status (conditions, images, addresses) is most of its bytes and no label reader needs it.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
MAX_PAGES = 10000  # 5 million objects: a repeated continue token cannot loop forever


class K8sError(RemoteAPIError):
    """A Kubernetes API call that failed; the message names the request and the server's reason."""

    def __init__(self, message, status=None, body=None):
        super().__init__(message, status)
        self.body = body or {}

    @property
    def field_manager_conflict(self):
        causes = (self.body.get("details") or {}).get("causes") or []
        return any(cause.get("type") == "FieldManagerConflict" for cause in causes)


def resolve_auth(options, environ=None):
    """Auth options with ``K8S_AUTH_*`` fallbacks; bool strings as kubernetes.core reads them."""
    environ = os.environ if environ is None else environ
    aliases = {alias: name for name, (spec, _env) in AUTH_OPTIONS.items() for alias in spec.get("aliases", [])}
    check_known_keys(options, set(AUTH_OPTIONS) | set(aliases), "the Kubernetes auth options")
    given = {aliases.get(key, key): value for key, value in options.items() if value not in (None, "")}
    auth = {}
    for name, (spec, env_names) in AUTH_OPTIONS.items():
        value = given.get(name)
        if value is None:
            value = next((environ[env] for env in env_names if environ.get(env)), None)
        if value is not None and spec.get("type") == "bool" and not isinstance(value, bool):
            value = str(value).strip().lower() not in ("0", "false", "no", "off")
        if value is not None and spec.get("type") == "path":
            value = os.path.expanduser(str(value))
        auth[name] = value
    return auth


def configuration(auth):
    """A kubernetes.client.Configuration, and the source it came from.

    Order: host with a token or client certificate (nothing else is read); else a kubeconfig
    file (the ``kubeconfig`` option, else ``KUBECONFIG`` / ``~/.kube/config``) when any option
    is set; else the in-cluster service account, then the default kubeconfig.
    """
    k8s_client, k8s_config, _urllib3 = kubernetes_library()
    explicit = any(auth.get(name) is not None for name in AUTH_OPTIONS)
    direct = auth.get("host") and (auth.get("api_key") or (auth.get("client_cert") and auth.get("client_key")))
    config = k8s_client.Configuration()
    if direct:
        source = "host"
    elif explicit:
        _load_kubeconfig(config, auth)
        source = "kubeconfig"
    else:
        try:
            k8s_config.load_incluster_config(client_configuration=config)
            source = "in-cluster"
        except k8s_config.ConfigException:
            _load_kubeconfig(config, auth)
            source = "kubeconfig"
    if auth.get("host"):
        config.host = auth["host"].rstrip("/")
    if auth.get("api_key"):
        problem = credential_problem(auth["api_key"]) if isinstance(auth["api_key"], str) else "must be a string"
        if problem:
            raise TopologyError(f"api_key {problem}; the value is not shown")
        # The token given wins over the kubeconfig's, including its refresh hook (exec plugins).
        config.api_key = {"BearerToken": "Bearer " + auth["api_key"]}
        config.refresh_api_key_hook = None
    for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file")):
        if auth.get(option):
            if not os.path.isfile(auth[option]):
                raise TopologyError(f"{option}: file {auth[option]} does not exist")
            setattr(config, attribute, auth[option])
    if auth.get("validate_certs") is not None:
        config.verify_ssl = auth["validate_certs"]
    register_credentials(config)
    return config, source


# A client key file larger than this is no key: it is not read for the scrubber (the TLS library refuses it).
MAX_KEY_BYTES = 1024 * 1024


def register_credentials(config):
    """Every credential ``config`` holds, registered with the run's scrubber (``_base/secrets``) where it is
    loaded: the bearer token (``api_key``, a kubeconfig's ``token`` or ``tokenFile``, an exec plugin's, the
    in-cluster service account's), a basic-auth password and the client key (a kubeconfig's
    ``client-key-data`` is written by the library to a temporary file). An API server or proxy that echoes the
    request's ``Authorization`` in its error body then never gets the token printed: ``request`` scrubs every
    message it builds from a body, and the modules' failures are scrubbed too (``failing_cleanly``)."""
    register_token(config)
    if getattr(config, "username", None) and getattr(config, "password", None):
        _secrets.register_basic_auth(config.username, config.password)
    if getattr(config, "key_file", None):
        try:
            _secrets.register(_input_file.read_text(config.key_file, "client_key", path_is_secret=True,
                                                    max_bytes=MAX_KEY_BYTES))
        except _input_file.InputFileError:
            pass  # not readable or not a key: the TLS library says so when it loads it


def register_token(config):
    """The bearer token ``config`` sends (``Bearer <token>`` and the token alone), registered with the scrubber."""
    for value in (getattr(config, "api_key", None) or {}).values():
        if isinstance(value, str):
            _secrets.register(value, value.partition(" ")[2] if value.startswith("Bearer ") else value)


def kubernetes_library():
    """(kubernetes.client, kubernetes.config, urllib3), imported on first use."""
    if not HAS_KUBERNETES:
        raise TopologyError(MISSING_LIBRARY)
    # pylint: disable=import-outside-toplevel
    import urllib3
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    return k8s_client, k8s_config, urllib3


def _load_kubeconfig(config, auth):
    k8s_config = kubernetes_library()[1]
    path = auth.get("kubeconfig")
    if path and not os.path.isfile(path):
        raise TopologyError(f"kubeconfig {path} does not exist")
    if not path:
        default = os.path.expanduser(os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)[0])
        if not os.path.isfile(default):
            raise TopologyError("no Kubernetes credentials: set kubeconfig (or K8S_AUTH_KUBECONFIG), or host with "
                                f"api_key or client_cert/client_key; {default} does not exist and this is not a pod")
        path = default
    try:
        k8s_config.load_kube_config(config_file=path, context=auth.get("context"), client_configuration=config,
                                    persist_config=False)
    except (k8s_config.ConfigException, ValueError, OSError) as exc:
        raise TopologyError(f"cannot use kubeconfig {path}"
                            + (f" context {auth['context']!r}" if auth.get("context") else "") + f": {exc}") from None


def status_message(data):
    """(the decoded Status body or {}, its message): of an error response, whatever its body is."""
    try:
        body = json_text.loads(data or b"{}")
    except ValueError:
        # Scrubbed before it is clipped: a token cut in two by the clip could not be recognised afterwards.
        return {}, _secrets.excerpt((data or b"")[:64 * 1024].decode("utf-8", "replace"))
    if not isinstance(body, dict):
        return {}, _secrets.excerpt(str(body))
    message = body.get("message") or body.get("reason") or ""
    return body, _secrets.scrub(message) if isinstance(message, str) else message


class K8sClient:
    """JSON requests to the API server, with the library's auth; one instance per task, thread-safe."""

    def __init__(self, config, timeout=60.0, concurrency=8, auth=None, source=None):
        k8s_client, _k8s_config, self._urllib3 = kubernetes_library()
        config.connection_pool_maxsize = max(int(concurrency), 1)
        self.host = config.host
        self.api = k8s_client.ApiClient(config)
        self.timeout = timeout
        self.auth = auth  # the resolved auth options it was built from (from_auth), for serves()
        self.source = source  # where its credentials came from (configuration: host, kubeconfig, in-cluster)
        self._lists = None  # query -> items, inside sharing_lists()

    @classmethod
    def from_auth(cls, options, environ=None, **kwargs):
        auth = resolve_auth(options, environ)
        config, source = configuration(auth)
        return cls(config, auth=auth, source=source, **kwargs)

    @classmethod
    def from_options(cls, options, concurrency=8, environ=None):
        """The client of ``ConnectionOptions`` (``k8s_auth.CONNECTION.build``): its auth, its ``request_timeout``;
        ``concurrency``: the connections kept open at once (a module's write concurrency)."""
        return cls.from_auth(options.auth(), environ, timeout=options.request_timeout, concurrency=concurrency)

    def serves(self, options, timeout):
        """True when a client built from auth ``options`` with ``timeout`` would be this one: same resolved
        options (``K8S_AUTH_*`` fallbacks included), same timeout. A caller that gets True may use this client
        instead of building its own, and so share its lists (``sharing_lists``)."""
        if self.auth is None or float(timeout) != float(self.timeout):
            return False
        try:
            return resolve_auth(options or {}) == self.auth
        except TopologyError:  # unknown keys: the caller's own validation reports them
            return False

    @contextlib.contextmanager
    def sharing_lists(self):
        """Within the block, a list asked for again (same path and selectors) is answered from the first
        answer instead of the server: one module that reads the nodes twice (its provider, then its writer)
        lists them once. Writes check their own preconditions (resourceVersion), so a shared list is as safe
        as a second one taken a moment later."""
        self._lists = {}
        try:
            yield self
        finally:
            self._lists = None

    def close(self):
        self.api.close()

    def request(self, method, path, query=None, body=None, content_type=None, accept="application/json"):
        """The decoded JSON response; K8sError for any HTTP error or unreachable server."""
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        query_items = [(key, value) for key, value in (query or {}).items() if value is not None]
        method, url, headers = self.api.param_serialize(
            method, path, query_params=query_items or None, header_params=headers, auth_settings=["BearerToken"])[:3]
        what = f"{method} {path}"
        # The token as sent: a refresh hook (an exec plugin, the service account's rotated token) may have renewed it.
        register_token(self.api.configuration)
        budget = attempt_budget(self.timeout)
        if budget <= 0:
            raise K8sError(f"{what}: the discovery deadline has passed")

        def call():
            response = self.api.call_api(method, url, header_params=headers, body=body, _request_timeout=budget)
            return response, response.read()

        try:
            # A total limit per request: the library's timeout applies to each socket read only.
            response, data = call_within(call, budget)
        except TimeoutError:
            raise K8sError(f"{what}: no complete response from {self.host} within {budget:g} s") from None
        except self._urllib3.exceptions.HTTPError as exc:
            raise K8sError(f"{what}: {transport_problem(exc, self.host)}") from None
        if response.status >= 400:
            body_json, message = status_message(data)
            raise K8sError(f"{what}: HTTP {response.status} {response.reason}: {message}".rstrip(": "),
                           response.status, body_json)
        try:
            return json_text.loads(data) if data else {}
        except ValueError:
            raise K8sError(f"{what}: the API server's response is not JSON (or nested too deeply)") from None

    def pages(self, path, label_selector=None, field_selector=None, max_pages=MAX_PAGES, metadata_only=False):
        """Each page of a list endpoint (a JSON object with a list ``items``), in order.

        A repeated continue token, or more than ``max_pages`` pages, is an error: a server that
        never ends a list cannot hold the caller. Tokens are remembered by digest (they can be long).
        ``metadata_only``: each item is the object's ``metadata`` alone (METADATA_ONLY).
        """
        token, seen = None, set()
        accept = METADATA_ONLY if metadata_only else "application/json"
        for _page in range(max_pages):
            page = self.request("GET", path, {"limit": LIST_PAGE_SIZE, "continue": token,
                                              "labelSelector": label_selector or None,
                                              "fieldSelector": field_selector or None}, accept=accept)
            if not (isinstance(page, dict) and isinstance(page.get("metadata") or {}, dict)
                    and isinstance(page.get("items") or [], list)):
                raise K8sError(f"GET {path}: the API server's answer is not a list (metadata and items)")
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            if not isinstance(token, str):
                raise K8sError(f"GET {path}: the continue token is not a string")
            digest = hashlib.sha256(token.encode("utf-8", "replace")).digest()
            if digest in seen:
                raise K8sError(f"GET {path}: the API server repeated a continue token; stopped paging")
            seen.add(digest)
        raise K8sError(f"GET {path}: more than {max_pages} pages; stopped paging")

    def list(self, path, label_selector=None, field_selector=None, metadata_only=False):
        """Every item of a list endpoint, page by page (``pages``); inside ``sharing_lists`` once per query."""
        query = (path, label_selector or None, field_selector or None, bool(metadata_only))
        if self._lists is not None and query in self._lists:
            return list(self._lists[query])
        items = []
        for page in self.pages(path, label_selector, field_selector, metadata_only=metadata_only):
            items.extend(page.get("items") or [])
        if self._lists is not None:
            self._lists[query] = items
            return list(items)
        return items


def _causes(exc):
    """``exc`` and what it wraps: urllib3's ``reason``, exceptions in its ``args``, ``__cause__``, ``__context__``."""
    found, todo = [], [exc]
    while todo and len(found) < 20:
        error = todo.pop(0)
        if not isinstance(error, BaseException) or any(error is seen for seen in found):
            continue
        found.append(error)
        todo += [getattr(error, "reason", None), *error.args, error.__cause__, error.__context__]
    return found


# The peer ended the connection: during the TLS handshake (EOF, reset) or before an HTTP response.
_DROPPED = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
            http.client.RemoteDisconnected, http.client.IncompleteRead)


def transport_problem(exc, host):
    """What failed below HTTP, in words, from a urllib3 error: only a certificate that does not verify is
    a TLS verification failure; a connection closed or reset (also during the handshake, as a proxy or a
    crashing server does with ``validate_certs: false``) is a connection problem."""
    causes = _causes(exc)
    verify = next((error for error in causes if isinstance(error, ssl.SSLCertVerificationError)), None)
    if verify is not None:
        detail = getattr(verify, "verify_message", None) or verify
        return (f"TLS verification of {host} failed ({detail}); set ca_cert to the CA that signed the API "
                "server's certificate")
    dropped = next((error for error in causes if isinstance(error, _DROPPED)), None)
    if dropped is not None:
        stage = "during the TLS handshake" if isinstance(dropped, ssl.SSLError) else "before a complete response"
        return (f"the connection to the API server {host} was closed or reset {stage} "
                f"({dropped.__class__.__name__}); the server, a proxy or the network dropped it")
    tls = next((error for error in causes if isinstance(error, ssl.SSLError)), None)
    if tls is not None:
        return f"the TLS handshake with {host} failed ({tls.__class__.__name__}: {tls})"
    cause = getattr(exc, "reason", None) or exc  # MaxRetryError wraps the last error
    return f"cannot reach the API server {host} ({cause.__class__.__name__})"


def node_path(name=None):
    return "/api/v1/nodes" + (f"/{quote(name, safe='')}" if name else "")


def namespaced_path(prefix, namespace, resource, name=None):
    """``prefix`` is ``/api/v1`` or ``/apis/<group>/<version>``."""
    path = f"{prefix}/namespaces/{quote(namespace, safe='')}/{resource}"
    return path + (f"/{quote(name, safe='')}" if name else "")


def selector_string(selector, where="node_selector"):
    """A label selector from a mapping (equality terms, as Topograph's nodeSelector)."""
    if not selector:
        return None
    if not isinstance(selector, dict):
        raise TopologyError(f"{where} must be a mapping of label key to value")
    terms = []
    for key, value in sorted(selector.items()):
        check_label_key(key, f"{where} key")
        value = "" if value is None else str(value)
        if not is_valid_label_value(value):
            raise TopologyError(f"{where}[{key!r}]: {value!r} is not a valid label value")
        terms.append(f"{key}={value}")
    return ",".join(terms)


def run_bounded(func, items, concurrency):
    """``func(item)`` for each item on at most ``concurrency`` threads.

    Returns (results in item order, None for items not run) and the first error; after an
    error no new item starts.
    """
    items = list(items)
    results = [None] * len(items)
    if not items:
        return results, None
    # Set by the worker that failed, before it takes its next item: cancelling the pending futures
    # from here alone would race with a worker that already took the next one.
    failed = threading.Event()

    def guarded(item):
        if failed.is_set():
            return None
        try:
            return func(item)
        except BaseException:
            failed.set()
            raise

    with ThreadPoolExecutor(max_workers=max(1, min(int(concurrency), len(items)))) as pool:
        futures = {pool.submit(guarded, item): index for index, item in enumerate(items)}
        done, pending = wait(futures, return_when=FIRST_EXCEPTION)
        error = next((f.exception() for f in done if f.exception() is not None), None)
        if error is not None:
            for future in pending:
                future.cancel()
            wait([f for f in pending if not f.cancelled()])
        for future, index in futures.items():
            if future.done() and not future.cancelled() and future.exception() is None:
                results[index] = future.result()
        if error is None:
            error = next((f.exception() for f in futures if f.done() and not f.cancelled() and f.exception()), None)
    return results, error


def with_conflict_retry(attempt, retries=5, delay=0.05, sleep=time.sleep):
    """Call ``attempt()`` again after an HTTP 409 (stale resourceVersion), up to ``retries`` times.

    ``attempt`` re-reads the object itself, so each try works on fresh state. Field-manager
    conflicts are not stale reads and are raised at once.
    """
    for number in range(retries + 1):
        try:
            return attempt()
        except K8sError as exc:
            if exc.status != 409 or exc.field_manager_conflict or number == retries:
                raise
            sleep(delay * 2 ** number)
    return None  # pragma: no cover - the loop always returns or raises
