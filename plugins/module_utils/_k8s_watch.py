# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""List-then-watch of Kubernetes Nodes (or Pods) for the ``k8s_nodes`` event source.

One ``ResourceWatcher`` per resource, on a worker thread (the ``kubernetes`` client is blocking):
it lists once, then watches from the list's resourceVersion with the client's ``Watch``, keeps the
last resourceVersion it saw (objects and bookmarks), and resumes from it after a dropped
connection or an API server restart, so no change is lost. ``410 Gone`` (the version is older
than etcd keeps) means: list again and report the difference to what it knew. Connection errors
retry with bounded exponential backoff; 401/403 are fatal (they do not heal by waiting).

Only what the topology reads is reported (``_eda.node_digest``/``pod_digest``): a heartbeat or a
status update changes a Node's resourceVersion but not its digest, and is never an event.
"""

from __future__ import annotations

import threading
import time

from ansible_collections.aifactory.topology.plugins.module_utils import _eda, _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._errors import RemoteAPIError

try:
    import urllib3
    from kubernetes import client as k8s_client
    from kubernetes import watch as k8s_watch
except ImportError:  # pragma: no cover - _k8s reports the missing library
    pass

FATAL_STATUS = (400, 401, 403, 404)
WATCH_TIMEOUT = 300  # the server ends each watch after this many seconds; the watcher resumes it


class WatchFatal(RemoteAPIError):
    """An error that waiting cannot fix (credentials, RBAC, a bad selector)."""


def wait_ready(client, timeout, sleep=time.sleep, clock=time.monotonic):
    """Poll ``/readyz`` until it answers ok; a clear error naming the server after ``timeout`` seconds."""
    deadline = clock() + timeout
    delay, last = 0.2, "no answer"
    while True:
        try:
            method, url, headers = client.api.param_serialize(
                "GET", "/readyz", header_params={"Accept": "text/plain"}, auth_settings=["BearerToken"])[:3]
            response = client.api.call_api(method, url, header_params=headers, _request_timeout=(5, 10))
            body = response.read().decode("utf-8", "replace").strip()
            if response.status == 200:
                return
            if response.status in (401, 403):
                raise WatchFatal(f"the API server {client.host} refused the credentials (HTTP {response.status})")
            last = f"HTTP {response.status} {body[:80]}"
        except urllib3.exceptions.HTTPError as exc:
            cause = getattr(exc, "reason", None) or exc
            if isinstance(cause, urllib3.exceptions.SSLError) or isinstance(exc, urllib3.exceptions.SSLError):
                raise WatchFatal(f"TLS verification of {client.host} failed; set ca_cert to the CA that signed "
                                 "the API server's certificate") from None
            last = cause.__class__.__name__
        if clock() + delay > deadline:
            raise RemoteAPIError(f"the Kubernetes API server {client.host} is not ready after {timeout:g} s "
                                 f"({last}); check host/kubeconfig and that the server runs")
        sleep(delay)
        delay = min(delay * 2, 5.0)


class ResourceWatcher:
    """List then watch one resource; ``emit(change)`` for each topology-relevant change.

    ``kind`` is ``node`` or ``pod``; ``namespace`` only for pods (None: all namespaces).
    """

    def __init__(self, client, kind, emit, label_selector=None, namespace=None, watched_labels=(),
                 backoff_max=30.0, watch_timeout=WATCH_TIMEOUT, log=None):
        self.client = client
        self.kind = kind
        self.emit = emit
        self.label_selector = label_selector
        self.namespace = namespace
        self.watched_labels = tuple(watched_labels)
        self.digest = _eda.node_digest if kind == "node" else _eda.pod_digest
        self.backoff_max = backoff_max
        self.watch_timeout = int(watch_timeout)
        self.log = log or (lambda message: None)
        self.core = k8s_client.CoreV1Api(client.api)
        self.known = {}
        self.resource_version = None
        self.stopped = threading.Event()
        self.watch = None
        self.relists = 0
        self.reconnects = 0

    # -- listing
    def _path(self):
        if self.kind == "node":
            return _k8s.node_path()
        if self.namespace:
            return _k8s.namespaced_path("/api/v1", self.namespace, "pods")
        return "/api/v1/pods"

    def list_state(self):
        """(name -> digest, resourceVersion of the list), page by page."""
        state, token, pages = {}, None, 0
        while True:
            page = self.client.request("GET", self._path(), {"limit": _k8s.LIST_PAGE_SIZE, "continue": token,
                                                             "labelSelector": self.label_selector})
            for item in page.get("items") or []:
                state[self._name(item)] = self.digest(item, self.watched_labels)
            metadata = page.get("metadata") or {}
            token, pages = metadata.get("continue"), pages + 1
            if not token or pages >= _k8s.MAX_PAGES:
                return state, metadata.get("resourceVersion")

    def _name(self, obj):
        metadata = obj.get("metadata") or {}
        return metadata["name"] if self.kind == "node" else f"{metadata.get('namespace')}/{metadata['name']}"

    def relist(self, report=True):
        state, version = self.list_state()
        if report:
            for change in _eda.state_diff(self.kind, self.known, state):
                self.emit(change)
        self.known, self.resource_version = state, version
        self.relists += 1

    # -- watching
    def _watch_func(self):
        if self.kind == "node":
            return self.core.list_node, ()
        if self.namespace:
            return self.core.list_namespaced_pod, (self.namespace,)
        return self.core.list_pod_for_all_namespaces, ()

    def handle(self, event):
        """Apply one watch event (a decoded JSON dict) to the known state."""
        kind, obj = event.get("type"), event.get("object") or {}
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            self.resource_version = version or self.resource_version
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            return
        name = self._name(obj)
        new = None if kind == "DELETED" else self.digest(obj, self.watched_labels)
        change = _eda.object_change(self.kind, name, self.known.get(name), new)
        if new is None:
            self.known.pop(name, None)
        else:
            self.known[name] = new
        if version:
            self.resource_version = version
        if change:
            self.emit(change)

    def watch_once(self):
        """One watch request from the last resourceVersion until the server ends it."""
        func, args = self._watch_func()
        self.watch = k8s_watch.Watch()
        kwargs = {"resource_version": self.resource_version, "allow_watch_bookmarks": True,
                  "timeout_seconds": self.watch_timeout,
                  "_request_timeout": (10, self.watch_timeout + 30)}
        if self.label_selector:
            kwargs["label_selector"] = self.label_selector
        # Deserialised events (the default): with deserialize=False the client's Watch cannot read an
        # ERROR event (KeyError 'raw_object', kubernetes 37), and 410 Gone arrives as one.
        for event in self.watch.stream(func, *args, **kwargs):
            if self.stopped.is_set():
                break
            self.handle({"type": event.get("type"), "object": event.get("raw_object")})

    def run(self, relist_first=True):
        """The watch loop until ``stop()``; raises WatchFatal for errors waiting cannot fix."""
        delay = 0.5
        if relist_first or self.resource_version is None:
            self.relist(report=False)
        while not self.stopped.is_set():
            try:
                if self.resource_version is None:
                    self.relist()
                self.watch_once()
                delay = 0.5
            except k8s_client.ApiException as exc:
                if exc.status == 410:
                    self.log(f"{self.kind} watch: resourceVersion {self.resource_version} is gone (410); listing again")
                    self.resource_version = None
                    continue
                if exc.status in FATAL_STATUS:
                    raise WatchFatal(f"{self.kind} watch on {self.client.host}: HTTP {exc.status} {exc.reason}"
                                     + ("; the watch needs get, list and watch on " + self.kind + "s (docs/rbac)"
                                        if exc.status in (401, 403) else "")) from None
                self._backoff(f"HTTP {exc.status} {exc.reason}", delay)
                delay = min(delay * 2, self.backoff_max)
            except _k8s.K8sError as exc:
                if exc.status in FATAL_STATUS:
                    raise WatchFatal(f"{self.kind} list: {exc}") from None
                self._backoff(str(exc), delay)
                delay = min(delay * 2, self.backoff_max)
            except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
                self._backoff(exc.__class__.__name__, delay)
                delay = min(delay * 2, self.backoff_max)

    def _backoff(self, reason, delay):
        if self.stopped.is_set():
            return
        self.reconnects += 1
        self.log(f"{self.kind} watch interrupted ({reason}); resuming from resourceVersion "
                 f"{self.resource_version} in {delay:g} s")
        self.stopped.wait(delay)

    def stop(self):
        self.stopped.set()
        if self.watch is not None:
            self.watch.stop()
