"""Fake cloud APIs on 127.0.0.1 for the provider tests: one HTTP server, one gRPC server, helpers.

The fixtures ``fake_http``, ``fake_grpc`` and ``sleeps`` are in conftest.py.

A test gives a ``route(request)`` function that answers each request from what the request
says (path, query, headers); every request is recorded so the test can assert on what the
client really sent. ``HANG`` makes the server hold the connection without answering (until the
server closes), which is how the timeout tests are built. ``record_sleeps`` replaces waiting
between retries by recording the delays, so no test ever sleeps.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from ansible_collections.aifactory.topology.plugins.module_utils import _providers
from ansible_collections.aifactory.topology.plugins.modules import slurm_topology, topology_info
from tests.unit.plugins.modules.module_runner import run_module

HANG = object()
HANG_LIMIT = 30.0  # a hanging handler gives up after this, in case a test forgot to close


@dataclass
class Request:
    method: str
    path: str
    query: dict  # name -> value (the last one when repeated)
    headers: dict  # lower-case name -> value
    body: bytes
    raw_path: str = ""

    def form(self):
        """The body as an application/x-www-form-urlencoded mapping (EC2 Query API)."""
        return {key: values[-1] for key, values in parse_qs(self.body.decode()).items()}


@dataclass
class Reply:
    status: int = 200
    body: bytes | str = b""
    headers: dict = field(default_factory=dict)


def json_reply(document, status=200, headers=None):
    return Reply(status, json.dumps(document), dict({"Content-Type": "application/json"}, **(headers or {})))


def text_reply(text, status=200, content_type="text/plain", headers=None):
    return Reply(status, text, dict({"Content-Type": content_type}, **(headers or {})))


class FakeHttpApi:
    """A threaded HTTP server on 127.0.0.1:<free port> answering through ``route``."""

    def __init__(self, route):
        self.route = route
        self.requests: list[Request] = []
        self.closing = threading.Event()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _serve(self):
                length = int(self.headers.get("Content-Length") or 0)
                parts = urlsplit(self.path)
                request = Request(self.command, parts.path,
                                  {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()},
                                  {k.lower(): v for k, v in self.headers.items()},
                                  self.rfile.read(length) if length else b"", self.path)
                api.requests.append(request)
                reply = api.route(request)
                if reply is HANG:
                    api.closing.wait(HANG_LIMIT)
                    self.close_connection = True
                    return
                body = reply.body.encode() if isinstance(reply.body, str) else reply.body
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def paths(self):
        return [request.path for request in self.requests]

    def close(self):
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()


def servers(factory):
    """A fixture body: ``start(spec)`` starts a server; all are closed after the test (conftest.py)."""
    servers = []

    def start(spec):
        servers.append(factory(spec))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


class Pages:
    """Serve a sequence of replies, one per call; the last one repeats."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls = 0

    def __call__(self, request=None):
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        return reply


# -- gRPC ----------------------------------------------------------------------------------

class FakeGrpcApi:
    """A gRPC server on 127.0.0.1 with raw-bytes unary handlers: ``{"/pkg.Service/Method": fn}``.

    ``fn(request_bytes, metadata)`` returns response bytes, ``HANG``, or raises ``GrpcAbort``.
    """

    def __init__(self, handlers):
        import grpc
        from concurrent.futures import ThreadPoolExecutor

        self.requests: list[tuple[str, bytes, dict]] = []
        self.closing = threading.Event()
        api = self

        def wrap(method, fn):
            def behaviour(request, context):
                metadata = dict(context.invocation_metadata())
                api.requests.append((method, request, metadata))
                try:
                    reply = fn(request, metadata)
                except GrpcAbort as abort:
                    if abort.trailers:
                        context.set_trailing_metadata(abort.trailers)
                    context.abort(getattr(grpc.StatusCode, abort.code), abort.details)
                if reply is HANG:
                    api.closing.wait(HANG_LIMIT)
                    context.abort(grpc.StatusCode.CANCELLED, "server closing")
                return reply
            return grpc.unary_unary_rpc_method_handler(behaviour)

        routes = {}
        for method, fn in handlers.items():
            service, name = method.lstrip("/").rsplit("/", 1)
            routes.setdefault(service, {})[name] = wrap(method, fn)
        self.server = grpc.server(ThreadPoolExecutor(max_workers=4))
        for service, methods in routes.items():
            self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, methods),))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"127.0.0.1:{self.port}"
        self.server.start()

    def close(self):
        self.closing.set()
        self.server.stop(grace=None)


class GrpcAbort(Exception):
    def __init__(self, code, details="", trailers=None):
        super().__init__(details)
        self.code, self.details, self.trailers = code, details, trailers


def grpc_route(method, route):
    """FakeGrpcApi handlers answering ``method`` through an HTTP-style ``route(request)``.

    The call is given to the route as a ``Request``: a POST of the method, its metadata as the
    headers, the request message's bytes as the body. The route returns the answer's bytes,
    ``HANG``, or a ``GrpcAbort`` (the status the call ends with), so one route serves either server.
    """
    def handler(body, metadata):
        reply = route(Request("POST", method, {}, metadata, body, method))
        if isinstance(reply, GrpcAbort):
            raise reply
        return reply
    return {method: handler}


# -- running providers and modules ----------------------------------------------------------

# Fast, bounded retries for tests that do not look at the delays themselves.
NO_WAIT = {"retry_backoff": 0, "retry_after_max": 0, "timeout": 5}


def discover(name, params, creds=None):
    """Run a provider in-process: (topology, warnings)."""
    warnings = []
    topology = _providers.discover(name, params, creds or {}, warnings.append)
    return topology, warnings


def topology_info_run(monkeypatch, name, params, creds=None):
    """The topology_info module's result (summary, warnings), run in-process."""
    return run_module(topology_info, {"provider": {"name": name, "params": params, "creds": creds or {}}},
                      monkeypatch=monkeypatch)


def slurm_topology_run(monkeypatch, name, params, dest, creds=None):
    """The slurm_topology module writing ``dest`` (tree plugin), run in-process."""
    return run_module(slurm_topology, {"provider": {"name": name, "params": params, "creds": creds or {}},
                                       "plugin": "topology/tree", "dest": str(dest)}, monkeypatch=monkeypatch)


def parents(topology):
    """switch id -> parent id, for assertions."""
    return {sid: switch.parent for sid, switch in topology.switches.items()}


def placement(topology, node):
    """(switch path from tier 0 up, domain, sub_domain) of a node."""
    found = topology.nodes[node]
    return topology.path(found.switch), found.domain, found.sub_domain


# -- secrets in output -----------------------------------------------------------------------

def printed_forms(secret):
    """A secret as the output could show it: as it is, JSON-escaped, Python-quoted, and its longest plain run
    (which survives any escaping of the special characters around it: a bytes repr inside a repr, say)."""
    plain = max(re.findall(r"[A-Za-z0-9+/=._-]+", secret), key=len, default="")
    return {secret, json.dumps(secret)[1:-1], repr(secret)[1:-1]} | ({plain} if len(plain) >= 8 else set())
