# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""List-then-watch of Kubernetes Nodes (or Pods) for the ``k8s_nodes`` event source.

One ``ResourceWatcher`` per resource, on a worker thread (the ``kubernetes`` client is blocking):
it lists once, then watches from the list's resourceVersion with the client's ``Watch``, keeps the
last resourceVersion it saw (objects and bookmarks), and resumes from it after a dropped
connection or an API server restart, so no change is lost. ``410 Gone`` (the version is older
than etcd keeps) means: list again and report the difference to what it knew. Interruptions
retry with bounded exponential backoff. What ends the watcher is what waiting cannot heal: the
credentials refused (401, 403) anywhere, or a list refused for what it asks (400: a selector; 404: the
resource or namespace), i.e. the source's options. A refused watch (400, 404 in its status or as an
ERROR event) is one bad answer: the watcher lists again, and that list decides.

Only what the topology reads is reported (``_eda.node_digest``/``pod_digest``): a heartbeat or a
status update changes a Node's resourceVersion but not its digest, and is never an event.

What a hostile or broken API server can send is bounded: a line longer than ``max_line`` is
dropped as it streams (never held whole), a garbage line, an object without a name or an ERROR
event without a code is one bad message (``_eda.BadMessage``: counted, logged clipped, skipped),
a list stops at a repeated continue token or ``max_pages`` pages, at most ``max_objects`` objects
are remembered, and a watch that ends or fails without delivering an event waits before the next.
"""

from __future__ import annotations

import socket
import threading
import time

from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._base.deadline import call_within
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, clip

try:
    import urllib3
    from kubernetes import client as k8s_client
    from kubernetes import watch as k8s_watch

    _ClientWatch = k8s_watch.Watch
except ImportError:  # pragma: no cover - _k8s reports the missing library when a client is built
    _ClientWatch = object

# Credentials refused: the end of the source wherever they come.
REFUSED_STATUS = (401, 403)
# A list refused for what it asks (a selector, the resource, the namespace): the source's options are wrong.
FATAL_STATUS = (400, 401, 403, 404)
WATCH_TIMEOUT = 300  # the server ends each watch after this many seconds; the watcher resumes it
# One watch event is one object: etcd refuses objects over 1.5 MiB, so 4 MiB leaves room for JSON.
MAX_LINE = 4 * 1024 * 1024
MAX_OBJECTS = 200_000  # remembered per watcher: a 100,000-node cluster twice over
MAX_PAGES = 1_000  # of 500 objects: 2.5 times MAX_OBJECTS
BACKOFF_MIN = 0.5
PROBE_TIMEOUT = 15.0  # one /readyz probe at most, connect and answer together; less when ready_timeout is nearer
MAX_ERROR_BODY = 64 * 1024  # of a refused watch request, for its message
MAX_RESOURCE_VERSION = 256  # etcd's are 20 digits at most; it goes back to the server in every watch URL
READ_SIZE = 64 * 1024
EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR")


class WatchFatal(RemoteAPIError):
    """An error that waiting cannot fix (credentials, RBAC, a bad selector)."""


def wait_ready(client, timeout, sleep=time.sleep, clock=time.monotonic):
    """Poll ``/readyz`` until it answers ok; a clear error naming the server after ``timeout`` seconds.

    Each probe has what is left of ``timeout`` (at most PROBE_TIMEOUT) for connect, headers and
    body together: the client's own timeouts apply to each socket read, so a server that accepts
    and never answers, or drips a byte a second, would hold one probe far beyond ``timeout``.
    """
    deadline = clock() + timeout
    delay, last = 0.2, "no answer"
    method, url, headers = client.api.param_serialize(
        "GET", "/readyz", header_params={"Accept": "text/plain"}, auth_settings=["BearerToken"])[:3]
    while True:
        budget = min(PROBE_TIMEOUT, deadline - clock())

        def probe(budget=budget):
            response = client.api.call_api(method, url, header_params=headers, _request_timeout=(budget, budget))
            return response.status, response.read()[:MAX_ERROR_BODY]

        try:
            if budget <= 0:
                raise TimeoutError
            status, body = call_within(probe, budget)
            if status == 200:
                return
            if status in (401, 403):
                raise WatchFatal(f"the API server {client.host} refused the credentials (HTTP {status})")
            last = f"HTTP {status} {body.decode('utf-8', 'replace').strip()[:80]}"
        except TimeoutError:
            last = "no complete answer in time"
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


class _CappedLines:
    """A watch response that hands on whole lines of at most ``max_line`` bytes.

    The client's ``iter_resp_lines`` buffers until a newline, however long the line is; here a
    longer line is dropped as it arrives and reported once through ``too_long(size)``. Reads are
    ``READ_SIZE`` at most, also within one huge chunk of a chunked response.
    """

    def __init__(self, response, max_line, too_long):
        self.response = response
        self.max_line = max_line
        self.too_long = too_long

    def __getattr__(self, name):  # status, close, release_conn, connection: the response's own
        return getattr(self.response, name)

    def stream(self, amt=None, decode_content=False):  # what Watch calls; the reads are READ_SIZE here
        line, dropped = bytearray(), 0  # dropped: bytes of the over-long line skipped so far
        for chunk in self.response.stream(READ_SIZE, decode_content=False):
            lines, position = bytearray(), 0
            while position < len(chunk):
                newline = chunk.find(b"\n", position)
                end = len(chunk) if newline < 0 else newline
                if dropped or len(line) + end - position > self.max_line:
                    dropped += len(line) + end - position
                    line.clear()
                else:
                    line += chunk[position:end]
                if newline < 0:
                    break
                if dropped:
                    self.too_long(dropped)
                    dropped = 0
                else:
                    lines += line + b"\n"
                    line.clear()
                position = newline + 1
            if lines:
                yield bytes(lines)
        if dropped:  # cut off in the middle of the over-long line
            self.too_long(dropped)


class _Watch(_ClientWatch):
    """The client's Watch, where a line it cannot use becomes a BadMessage event instead of an exception.

    Its own parsing ends the stream with AttributeError, KeyError or TypeError on a line that is
    JSON but not an event, and on an ERROR event without ``code``, ``reason`` or ``message``.
    """

    def get_return_type(self, func):
        # Raw dicts: the watcher reads ``raw_object`` only, and a heartbeat flood should cost one
        # JSON parse per event, not also a typed V1Node.
        return None

    def unmarshal_event(self, data, return_type):
        if not data or data.isspace():
            return None
        try:
            event = super().unmarshal_event(data, return_type)
        except (KeyError, TypeError, ValueError, RecursionError):
            event = None  # JSON, but not an object with "object"; or nested too deeply
        if not isinstance(event, dict):
            return _eda.BadMessage("not a watch event (JSON with type and object)", data)
        kind, obj = event.get("type"), event.get("object")
        if kind not in EVENT_TYPES:
            return _eda.BadMessage("an unknown event type", kind)
        if not isinstance(obj, dict):
            return _eda.BadMessage(f"a {kind} event whose object is not an object", obj)
        if kind == "ERROR":
            code = obj.get("code")
            if not isinstance(code, int) or isinstance(code, bool):
                return _eda.BadMessage("an ERROR event without an integer code", obj)
            # Watch.stream builds its exception from these: present and short.
            status = {"code": code, "reason": str(obj.get("reason") or "")[:200],
                      "message": str(obj.get("message") or "")[:200]}
            event["object"] = event["raw_object"] = status
        return event


class ResourceWatcher:
    """List then watch one resource; ``emit(change)`` for each topology-relevant change.

    ``kind`` is ``node`` or ``pod``; ``namespace`` only for pods (None: all namespaces).
    ``stats`` (an ``_eda.SourceStats``) counts events, relists, reconnects and bad messages.
    ``sleep(seconds)`` waits between attempts (default: until ``stop()`` or the time is up).
    """

    def __init__(self, client, kind, emit, label_selector=None, namespace=None, watched_labels=(),
                 backoff_min=BACKOFF_MIN, backoff_max=30.0, watch_timeout=WATCH_TIMEOUT, log=None,
                 max_line=MAX_LINE, max_objects=MAX_OBJECTS, max_pages=MAX_PAGES, sleep=None):
        self.client = client
        self.kind = kind
        self.emit = emit
        self.label_selector = label_selector
        self.namespace = namespace
        self.watched_labels = tuple(watched_labels)
        self.digest = _eda.node_digest if kind == "node" else _eda.pod_digest
        self.backoff_min = backoff_min
        self.backoff_max = max(backoff_max, backoff_min)
        self.watch_timeout = int(watch_timeout)
        self.max_line = max_line
        self.max_objects = max_objects
        self.max_pages = max_pages
        self.log = log or (lambda message: None)
        self.stats = _eda.SourceStats(f"{kind} watch", self.log)
        self.known = {}
        self.resource_version = None
        self.stopped = threading.Event()
        self.sleep = sleep or self.stopped.wait
        self.watch = None
        self.delivered = 0  # events the last watch request delivered
        self._response = None  # the streaming response of the current watch request
        self._response_lock = threading.Lock()

    # -- listing
    def _path(self):
        if self.kind == "node":
            return _k8s.node_path()
        if self.namespace:
            return _k8s.namespaced_path("/api/v1", self.namespace, "pods")
        return "/api/v1/pods"

    def list_state(self):
        """(name -> digest, resourceVersion of the list), page by page; an unusable item is a bad message."""
        state, metadata = {}, {}
        for page in self.client.pages(self._path(), self.label_selector, max_pages=self.max_pages):
            for item in page.get("items") or []:
                try:
                    name = self._name(item)
                    state[name] = self.digest(item, self.watched_labels)
                except _eda.BadMessage as exc:
                    self.stats.bad(exc)
                    continue
                if len(state) > self.max_objects:
                    raise _k8s.K8sError(f"more than {self.max_objects} {self.kind}s match; raise max_objects "
                                        f"or narrow the {self.kind} selector")
            metadata = page.get("metadata") or {}
        return state, self._version(metadata.get("resourceVersion"), "the list's metadata.resourceVersion")

    def _name(self, obj):
        metadata = _eda.mapping(_eda.mapping(obj, "the object").get("metadata"), "metadata")
        name = _eda.checked_name(metadata.get("name"), "metadata.name")
        if self.kind == "node":
            return name
        return f"{_eda.checked_name(metadata.get('namespace'), 'metadata.namespace')}/{name}"

    def _version(self, version, what):
        if not isinstance(version, str) or not version or len(version) > MAX_RESOURCE_VERSION:
            raise _k8s.K8sError(f"{what} is not a resourceVersion: {clip(version)}")
        return version

    def relist(self, report=True):
        state, version = self.list_state()
        if report:
            for change in _eda.state_diff(self.kind, self.known, state):
                self.emit(change)
        self.known, self.resource_version = state, version
        self.stats.count("lists")

    # -- watching
    def _open(self, **kwargs):
        """The watch request Watch.stream makes (its keyword arguments), through the client's ApiClient.

        Status and bounded error body checked here, so a refused watch is an ApiException with a short
        message; the body goes to Watch through _CappedLines.
        """
        query = [("watch", "true"), ("allowWatchBookmarks", "true"),
                 ("timeoutSeconds", kwargs["timeout_seconds"]), ("resourceVersion", kwargs.get("resource_version")),
                 ("labelSelector", self.label_selector)]
        method, url, headers = self.client.api.param_serialize(
            "GET", self._path(), query_params=[(key, value) for key, value in query if value is not None],
            header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])[:3]
        response = self.client.api.call_api(method, url, header_params=headers,
                                            _request_timeout=kwargs["_request_timeout"]).response
        with self._response_lock:  # stop() between the request and Watch's own hold on the response
            self._response = response
            if self.stopped.is_set():
                _shut_down(response)
        if not 200 <= response.status <= 299:
            try:
                body = response.read(MAX_ERROR_BODY, decode_content=True)
            finally:
                response.release_conn()
            message = str(_k8s.status_message(body)[1])[:200]
            raise k8s_client.ApiException(status=response.status, reason=f"{response.reason} {message}".strip())
        return _CappedLines(response, self.max_line, self._line_too_long)

    def _line_too_long(self, size):
        self.stats.bad(_eda.BadMessage(f"a line of more than {self.max_line} bytes", f"{size} bytes dropped"))

    def handle(self, event):
        """Apply one watch event (``type`` and the decoded ``object``) to the known state.

        BadMessage for an object the watcher cannot use; the state is then unchanged.
        """
        kind, obj = event.get("type"), event.get("object")
        metadata = _eda.mapping(_eda.mapping(obj, "the object").get("metadata"), "metadata")
        version = metadata.get("resourceVersion")
        if version is not None:
            try:
                version = self._version(version, "metadata.resourceVersion")
            except _k8s.K8sError:
                raise _eda.BadMessage("metadata.resourceVersion is not a resourceVersion", version) from None
        if kind == "BOOKMARK":
            self.resource_version = version or self.resource_version
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            return
        name = self._name(obj)
        new = None if kind == "DELETED" else self.digest(obj, self.watched_labels)
        old = self.known.get(name)
        if old is None and new is not None and len(self.known) >= self.max_objects:
            raise _eda.BadMessage(f"more than {self.max_objects} {self.kind}s; not remembered", name)
        change = _eda.object_change(self.kind, name, old, new)
        if new is None:
            self.known.pop(name, None)
        else:
            self.known[name] = new
        if version:
            self.resource_version = version
        if change:
            self.emit(change)

    def watch_once(self):
        """One watch request from the last resourceVersion until the server ends it; the events it delivered."""
        self.watch = _Watch()
        delivered = 0
        kwargs = {"resource_version": self.resource_version, "timeout_seconds": self.watch_timeout,
                  "_request_timeout": (10, self.watch_timeout + 30)}
        try:
            for event in self.watch.stream(self._open, **kwargs):
                if self.stopped.is_set():
                    break
                if event is None:  # an empty line
                    continue
                try:
                    if isinstance(event, _eda.BadMessage):
                        raise event
                    self.handle(event)
                except _eda.BadMessage as exc:
                    self.stats.bad(exc)
                    continue
                delivered += 1
                self.stats.count("events")
        finally:
            self.delivered = delivered
        return delivered

    def run(self, relist_first=True):
        """The watch loop until ``stop()``; raises WatchFatal for errors waiting cannot fix.

        A watch that delivered events resets the backoff; one that ended or failed without any
        (410 right after a list, a server that closes at once) waits, the wait doubling from
        ``backoff_min`` to ``backoff_max``, so a broken server never becomes a busy loop.
        """
        delay = self.backoff_min
        if relist_first or self.resource_version is None:
            self.relist(report=False)
        while not self.stopped.is_set():
            self.delivered = 0
            try:
                if self.resource_version is None:
                    self.relist()
                if self.watch_once():
                    delay = self.backoff_min
                    continue
                reason = "the watch ended without an event"
            except k8s_client.ApiException as exc:
                if exc.status in REFUSED_STATUS:
                    raise WatchFatal(f"{self.kind} watch on {self.client.host}: HTTP {exc.status} {exc.reason}"
                                     f"; the watch needs get, list and watch on {self.kind}s (docs/rbac)") from None
                reason = f"HTTP {exc.status} {exc.reason}"
                if exc.status in FATAL_STATUS:
                    # One refused watch is one bad answer: list again (after the backoff); a list refused
                    # the same way is the source's options and ends it (the K8sError branch below).
                    self.log(f"{self.kind} watch: refused ({reason}); listing again")
                    self.resource_version = None
                    self.stats.count(f"watch refused ({exc.status})")
                elif exc.status == 410:
                    self.log(f"{self.kind} watch: resourceVersion {self.resource_version} is gone (410); listing again")
                    self.resource_version = None
                    self.stats.count("gone (410)")
                    if self.delivered:  # an old watch expired: list again at once
                        delay = self.backoff_min
                        continue
            except _k8s.K8sError as exc:
                if exc.status in FATAL_STATUS:
                    raise WatchFatal(f"{self.kind} list: {exc}") from None
                reason = str(exc)
            except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
                reason = exc.__class__.__name__
            if self.delivered:
                delay = self.backoff_min
            self._backoff(reason, delay)
            delay = min(delay * 2, self.backoff_max)

    def _backoff(self, reason, delay):
        if self.stopped.is_set():
            return
        self.stats.count("reconnects")
        self.log(f"{self.kind} watch interrupted ({reason}); resuming from resourceVersion "
                 f"{self.resource_version} in {delay:g} s")
        self.sleep(delay)

    def stop(self):
        """End ``run``: a blocked read returns at once (its socket is shut down)."""
        self.stopped.set()
        with self._response_lock:
            if self._response is not None:
                _shut_down(self._response)
        if self.watch is not None:
            self.watch.stop()


def _shut_down(response):
    """Shut down the socket under a streaming response, as the client's Watch.stop does: close() alone
    would wait for a read blocked on it."""
    sock = getattr(getattr(response, "connection", None), "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
