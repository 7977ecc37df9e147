"""A kube-apiserver stand-in on 127.0.0.1 that answers lists and watches as each test scripts them.

For the event sources' hostile-server tests (tests/unit/hostile/test_hostile_events.py). It speaks
the API's HTTP: ``GET /readyz``, ``GET /api/v1/nodes`` (and pods) as a list, with ``watch=true``
as a chunked stream of lines, as kube-apiserver sends them.

* ``server.lists(query)`` answers a list: a JSON-able value, or ``(status, body bytes)``.
  Default: an empty NodeList at resourceVersion "1".
* ``server.watches(query)`` answers a watch: an iterable of bytes (each written as one chunk;
  the stream ends after the last), ``(status, body bytes)``, or ``HOLD``: keep the stream open
  without a byte until the client goes or the server stops. Default: ``HOLD``.
* ``server.readyz``: ``"ok"`` (default) or ``"drip"``: the status line, then a header byte a
  second, for MAX_FAULT_SECONDS; ``server.readyz_answered`` is set when a ``/readyz`` answer ends.
* ``server.calls``: ``(path, query)`` in order, ``server.authorizations`` each request's
  ``Authorization`` header beside it; ``server.wait_for(predicate)`` waits, bounded,
  until ``predicate()`` holds (no sleeps as synchronisation).

Every answer is bounded in time (``MAX_FAULT_SECONDS``): a client that does not protect itself
fails its test instead of hanging the run.
"""

from __future__ import annotations

import contextlib
import json
import threading
from urllib.parse import urlparse

from tests.fault_http import MAX_FAULT_SECONDS, FaultServer

HOLD = "hold"


def event_lines(*events):
    """The chunks of a watch stream: each event (a dict, or raw bytes) as one line."""
    return [event if isinstance(event, bytes) else json.dumps(event).encode() + b"\n" for event in events]


class OneChunk:
    """``piece`` ``count`` times as ONE chunk of the chunked stream, written piece by piece (never held whole)."""

    def __init__(self, piece, count):
        self.piece, self.count = piece, count


def scripted(answers, then=HOLD):
    """A ``watches``/``lists`` callable that gives ``answers`` in order, then ``then`` forever."""
    answers = list(answers)
    lock = threading.Lock()

    def answer(_query):
        with lock:
            return answers.pop(0) if answers else then
    return answer


def node_list(items=(), version="1", token=None):
    return {"kind": "NodeList", "apiVersion": "v1", "items": list(items),
            "metadata": {"resourceVersion": version, **({"continue": token} if token else {})}}


class FakeApiServer(FaultServer):
    """``with FakeApiServer() as api:``; ``api.url()`` is the ``host`` for the Kubernetes client.

    A FaultServer whose faults are the API's paths: ``/readyz`` and ``/api/...``.
    """

    def __init__(self):
        super().__init__()
        self.calls = []  # (path, query), in order
        self.authorizations = []  # each call's Authorization header, in the same order
        self.lists = lambda query: node_list()
        self.watches = lambda query: HOLD
        self.readyz = "ok"
        self.readyz_answered = threading.Event()
        self._changed = threading.Condition()
        # A client that goes mid-request (its watch stopped) is what the tests do, not an error to print.
        self.httpd.handle_error = lambda request, client_address: None

    def _record(self, handler, query):
        with self._changed:
            self.calls.append((urlparse(handler.path).path, {key: values[0] for key, values in query.items()}))
            self.authorizations.append(handler.headers.get("Authorization"))
            self._changed.notify_all()
        return self.calls[-1][1]

    def _readyz(self, handler, query):
        self._record(handler, query)
        try:
            if self.readyz == "drip":
                self._drip_headers(handler, query)
            else:
                self._send(handler, 200, b"ok")
        finally:
            self.readyz_answered.set()

    def _api(self, handler, query):
        query = self._record(handler, query)
        if query.get("watch") == "true":
            self._answer_watch(handler, self.watches(query))
        else:
            self._answer_list(handler, self.lists(query))

    def watch_requests(self):
        return [query for _path, query in list(self.calls) if query.get("watch") == "true"]

    def list_requests(self):
        return [query for path, query in list(self.calls) if path != "/readyz" and query.get("watch") != "true"]

    def wait_for(self, predicate, timeout=MAX_FAULT_SECONDS):
        """Wait until ``predicate()`` holds, at most ``timeout`` seconds; whether it holds."""
        with self._changed:
            return self._changed.wait_for(predicate, timeout)

    # -- answers ---------------------------------------------------------------------------

    def _answer_list(self, handler, answer):
        status, body = answer if isinstance(answer, tuple) else (200, json.dumps(answer).encode())
        self._send(handler, status, body, {"Content-Type": "application/json"})

    def _answer_watch(self, handler, answer):
        if isinstance(answer, tuple):
            self._answer_list(handler, answer)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        handler.wfile.flush()
        if answer == HOLD:
            self._bounded_sleep(MAX_FAULT_SECONDS)
            handler.close_connection = True
            return
        for chunk in answer:
            if self._stop.is_set():
                break
            if isinstance(chunk, OneChunk):
                handler.wfile.write(b"%x\r\n" % (len(chunk.piece) * chunk.count))
                for _piece in range(chunk.count):
                    handler.wfile.write(chunk.piece)
                handler.wfile.write(b"\r\n")
            elif chunk:
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()


# -- the write side, in memory ----------------------------------------------------------------------


class FakeCluster:
    """A client stand-in (``list``, ``request``) over objects kept by path, for the writers' contract tests
    (tests/unit/plugins/modules/test_k8s_contract.py): GET, POST, DELETE and the three PATCH types (a merge
    patch with its resourceVersion precondition, a JSON Patch of ``add`` operations, a server-side apply merged
    into the stored object); ``dryRun`` stores nothing; ``served`` answers the discovery GET of a group version.

    ``fail_at(index, status)``: the write of that number (0 first, counting dry runs) is refused with ``status``,
    and so is every later write to the same path (a 409 stays a conflict however often it is retried).
    """

    def __init__(self, objects=(), served=None):
        self.objects = {}
        self.served = dict(served or {})  # api version -> resource names
        self.writes = []  # (method, path of the object, dry run), in order
        self.version = 1
        self.fault = None
        for path, body in objects:
            self.store(path, body)

    def store(self, path, body):
        self.version += 1
        body.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        self.objects[path] = body

    def snapshot(self):
        return json.dumps(self.objects, sort_keys=True)

    def stored_writes(self):
        return [write for write in self.writes if not write[2]]

    def sharing_lists(self):
        return contextlib.nullcontext()

    def fail_at(self, index, status):
        self.fault = (index, status, None)

    def list(self, path, label_selector=None, field_selector=None, metadata_only=False):
        wanted = dict(term.split("=", 1) for term in label_selector.split(",")) if label_selector else {}
        return [json.loads(json.dumps(item)) for key, item in sorted(self.objects.items())
                if key.rsplit("/", 1)[0] == path
                and all((item["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())]

    def _error(self, method, path, status):
        from ansible_collections.aifactory.topology.plugins.module_utils._transport.k8s import K8sError
        return K8sError(f"{method} {path}: HTTP {status}", status)

    def request(self, method, path, query=None, body=None, content_type=None):
        query = query or {}
        if method == "GET":
            if path.count("/") == 3 and path.startswith("/apis/"):
                if path[len("/apis/"):] not in self.served:
                    raise self._error(method, path, 404)
                return {"resources": [{"name": name} for name in self.served[path[len("/apis/"):]]]}
            if path not in self.objects:
                raise self._error(method, path, 404)
            return json.loads(json.dumps(self.objects[path]))
        index, dry = len(self.writes), query.get("dryRun") == "All"
        target = f"{path}/{body['metadata']['name']}" if method == "POST" else path  # the object written
        self.writes.append((method, target, dry))
        if self.fault is not None and (index == self.fault[0] or target == self.fault[2]):
            self.fault = (self.fault[0], self.fault[1], target)
            raise self._error(method, path, self.fault[1])
        result = self._write(method, path, body, content_type, dry)
        if result is not None and not dry:
            self.store(target, result)
        return json.loads(json.dumps(result if result is not None else {}))

    def _write(self, method, path, body, content_type, dry):
        current = json.loads(json.dumps(self.objects.get(path))) if path in self.objects else None
        if method == "DELETE":
            if current is None:
                raise self._error(method, path, 404)
            if not dry:
                self.objects.pop(path)
            return None
        if method == "POST":
            if path + "/" + body["metadata"]["name"] in self.objects:
                raise self._error(method, path, 409)
            return json.loads(json.dumps(body))
        if content_type == "application/merge-patch+json":
            if current is None:
                raise self._error(method, path, 404)
            precondition = (body.get("metadata") or {}).get("resourceVersion")
            if precondition and precondition != current["metadata"].get("resourceVersion"):
                raise self._error(method, path, 409)
            return _merge(current, body)
        if content_type == "application/json-patch+json":
            for op in body:  # only "add", what the writers send
                parts = [part.replace("~1", "/").replace("~0", "~") for part in op["path"].split("/")[1:]]
                holder = current
                for part in parts[:-1]:
                    holder = holder.setdefault(part, {})
                holder[parts[-1]] = op["value"]
            return current
        return _merge(current or {}, body)  # server-side apply


def _merge(current, patch):
    merged = dict(current)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged
