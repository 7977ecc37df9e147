# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aifactory.topology.regenerate: an HTTPS endpoint that asks for a regeneration (Topograph's POST /v1/generate).

``POST /v1/generate`` with ``Authorization: Bearer <token>`` answers 202 and records one change;
requests are debounced like every source (``delay``, ``max_wait``), so a burst of requests becomes
one run. Without the token, or with a wrong one, the answer is 401 and nothing is recorded.
``GET /healthz`` answers ``ok`` without a token (liveness probes), and ``GET /metrics`` the source's
counts in the Prometheus text format, from the official client ``prometheus-client`` and a
registry of its own (requests accepted, refused by reason, debounced runs, changes pending, the
time of the last accepted request); neither shows a token or a request. The optional JSON body
``{"reason": "..."}`` (at most 64 KiB) is carried in the event; the token and the request headers
never are.

Options: ``token`` (required, at least 16 characters of a bearer token: no white space, no
newline), ``certfile`` and ``keyfile`` (required: TLS only), ``keyfile_password`` (for an encrypted
key; without it an encrypted key is an error at start, never OpenSSL's pass-phrase prompt),
``host`` (default 127.0.0.1; 0.0.0.0 in an EDA controller activation), ``port`` (default 5443),
``request_timeout`` (10: seconds a connection has for its TLS handshake, then for its whole
request), ``delay`` (15), ``max_wait`` (120), ``stats_interval`` (300: a line with the counts). The
endpoint's options are one ``ArgumentSpec`` (``ENDPOINT``), checked by the validator every source's
arguments go through (``_eda.source_args``) and built into ``EndpointOptions``. A refused request
is one bad message: answered, counted, logged (the first few of each period, with the peer only)
and forgotten.

This ``request_timeout`` is the endpoint's own: how long the server gives a client connection (a deadline
against a client that stalls or drips), not the Kubernetes connection's ``request_timeout`` of the modules and
the ``k8s_nodes`` source (how long the collection waits for the API server's answer, 60 s, one spec in
``_transport/k8s_auth.py``). A local client posts a few bytes: 10 s is generous for it and short enough that
held connections cost little, while a list of 5,000 nodes from the API server may need far longer.

Bounds (docs/security.md): a request head of at most 8190 bytes a line and 128 headers (aiohttp's
parser), a body of at most ``MAX_BODY`` bytes announced by Content-Length (411 without one, 413
above it) and nested at most ``MAX_DEPTH`` deep, one request per connection, and every connection
closed ``request_timeout`` seconds after it was accepted whatever it is doing (a client that drips
its headers holds nothing but its own socket: the event loop serves the others meanwhile).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import logging
import os
import re
import ssl
import sys
import time

try:
    from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
except ImportError:  # run by ansible-rulebook from <path>/ansible_collections/aifactory/topology/extensions/...
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 7)))
    from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda

from aiohttp import web

from ansible_collections.aifactory.topology.plugins.module_utils._base import json_text
from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec

SOURCE = "aifactory.topology.regenerate"
LOG = logging.getLogger(SOURCE)


@dataclasses.dataclass(frozen=True)
class EndpointOptions:
    """The endpoint (``ENDPOINT``): the token it asks for, its TLS files, where it listens, and the seconds a
    client connection has (``request_timeout``: the server's deadline on its clients). Neither the token nor
    the key's pass phrase is in the repr."""

    token: str = dataclasses.field(repr=False)
    certfile: str
    keyfile: str
    keyfile_password: str = dataclasses.field(repr=False)
    host: str
    port: int
    request_timeout: float


ENDPOINT = ArgumentSpec({
    "token": {"type": "str", "no_log": True},
    "certfile": {"type": "str"},
    "keyfile": {"type": "str"},
    "keyfile_password": {"type": "str", "no_log": True},
    "host": {"type": "str", "default": "127.0.0.1"},
    "port": {"type": "int", "default": 5443},
    "request_timeout": {"type": "float", "default": 10.0},
}, options_class=EndpointOptions)
SPEC = dict(
    ENDPOINT.argument_spec,
    **_eda.DEBOUNCE_SPEC,
    **_eda.STATS_SPEC,
)
MAX_BODY = 64 * 1024
MAX_DEPTH = 32  # of the JSON body's arrays and objects: {"reason": "..."} needs 1
MIN_TOKEN = 16
# Seconds a refused request's unread body is still drained before its connection closes, so that
# the client reads the answer and not a reset (aiohttp's default is 10).
LINGER = 1.0
PATH = "/v1/generate"


# RFC 6750's b64token: what a client can send after "Bearer " in one header line.
TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


def check(args):
    """(``EndpointOptions``, TLS context) of the source's checked arguments (``_eda.source_args``), built by
    ``ENDPOINT``; every missing or bad option is an error naming it (never showing the token)."""
    endpoint = ENDPOINT.build(args, where=SOURCE)
    token = endpoint.token
    if not token or len(token) < MIN_TOKEN:
        raise _eda.TopologyError(f"{SOURCE}: option 'token' is required and must have at least {MIN_TOKEN} "
                                 "characters")
    if not TOKEN_CHARACTERS.fullmatch(token):
        # A token read from a file keeps its newline: accepted here, it would refuse every request.
        raise _eda.TopologyError(f"{SOURCE}: option 'token' must be one bearer token (letters, digits and "
                                 "-._~+/ then any '='); it has white space, a newline or another character "
                                 "(a file's trailing newline? strip it)")
    for name in ("certfile", "keyfile"):
        path = getattr(endpoint, name)
        if not path:
            raise _eda.TopologyError(f"{SOURCE}: option {name!r} is required (the endpoint serves HTTPS only)")
        if not os.path.isfile(path):
            raise _eda.TopologyError(f"{SOURCE}: {name} {path} does not exist")
    if not 0 < endpoint.port < 65536:
        raise _eda.TopologyError(f"{SOURCE}: option 'port' must be 1-65535")
    if endpoint.request_timeout <= 0:
        raise _eda.TopologyError(f"{SOURCE}: option 'request_timeout' must be > 0")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    asked = []

    def password():
        # Called only for an encrypted key. Without it OpenSSL asks on the terminal and waits.
        asked.append(True)
        if endpoint.keyfile_password is None:
            raise _eda.TopologyError(f"{SOURCE}: keyfile {endpoint.keyfile} is encrypted; give its pass phrase "
                                     "in option 'keyfile_password'")
        return endpoint.keyfile_password

    try:
        context.load_cert_chain(endpoint.certfile, endpoint.keyfile, password=password)
    except (ssl.SSLError, OSError) as exc:
        wrong = " (wrong keyfile_password?)" if asked else ""
        raise _eda.TopologyError(f"{SOURCE}: cannot load certfile/keyfile: {exc.__class__.__name__}{wrong}") from None
    return endpoint, context


def authorized(request, token):
    """Whether the request has ``Authorization: Bearer <token>``; any other header (not UTF-8 too) is not."""
    scheme, _space, given = request.headers.get("Authorization", "").partition(" ")
    # aiohttp keeps bytes that are not UTF-8 as surrogates: they go back to the same bytes, never raise.
    given = given.strip().encode("utf-8", "surrogateescape")
    return scheme.lower() == "bearer" and hmac.compare_digest(given, token.encode())


METRIC_PREFIX = "aifactory_topology_regenerate_"


def metrics_registry(stats, debouncer, last_event):
    """A private registry whose collector reads ``stats``, ``debouncer`` and ``last_event`` at each scrape."""
    try:
        from prometheus_client import CollectorRegistry  # pylint: disable=import-outside-toplevel
        from prometheus_client.core import (  # pylint: disable=import-outside-toplevel
            CounterMetricFamily,
            GaugeMetricFamily,
        )
    except ImportError:
        raise _eda.TopologyError(f"{SOURCE}: GET /metrics needs the Python package prometheus-client "
                                 "(pip install prometheus-client)") from None

    class Collector:
        def collect(self):
            counts, bad = stats.snapshot()
            yield CounterMetricFamily(METRIC_PREFIX + "requests_accepted", "Regenerate requests accepted.",
                                      value=counts.get("requests accepted", 0))
            refused = CounterMetricFamily(METRIC_PREFIX + "requests_refused",
                                          "Requests refused (answered 400, 401 or 413), by reason.", labels=["reason"])
            for reason, number in sorted(bad.items()):
                refused.add_metric([reason], number)
            yield refused
            yield CounterMetricFamily(METRIC_PREFIX + "runs", "Debounced events put on the rulebook's queue "
                                      "(each asks for one run).", value=getattr(debouncer, "emitted", 0))
            yield GaugeMetricFamily(METRIC_PREFIX + "pending_changes", "Accepted requests waiting for the debounce.",
                                    value=debouncer.pending)
            yield GaugeMetricFamily(METRIC_PREFIX + "last_request_timestamp_seconds",
                                    "When the last request was accepted, in seconds since the epoch (0: none yet).",
                                    value=last_event[0])

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector())
    return registry


def application(debouncer, token, stats=None):
    """The endpoint's aiohttp application; each refused request is one bad message of ``stats``."""
    stats = stats or _eda.SourceStats("endpoint", lambda message: LOG.warning("%s: %s", SOURCE, message))
    last_event = [0.0]
    registry = metrics_registry(stats, debouncer, last_event)

    def refuse(status, error, reason, peer=None):
        # The peer only: a request's headers and body may hold a token.
        stats.bad(_eda.BadMessage(reason, peer))
        return web.json_response({"error": error}, status=status,
                                 headers={"WWW-Authenticate": "Bearer"} if status == 401 else None)

    async def generate(request):
        if not authorized(request, token):
            return refuse(401, "missing or wrong bearer token", "a request without a valid token", request.remote)
        reason = ""
        if request.body_exists:
            length = request.content_length
            if length is None:  # chunked: its size is known only once it is read
                return refuse(411, "a body needs a Content-Length", "a body without Content-Length")
            if length > MAX_BODY:
                return refuse(413, f"body larger than {MAX_BODY} bytes", "a body too large")
            try:
                # Exactly Content-Length, however many TCP segments it comes in; the connection's
                # deadline (request_timeout) bounds the wait.
                raw = await request.content.readexactly(length)
            except asyncio.IncompleteReadError:
                return refuse(400, "the body is shorter than its Content-Length", "a body cut short")
            if raw.strip():
                try:
                    body = json_text.loads(raw, MAX_BODY, MAX_DEPTH)
                except json_text.JSONLimitError as exc:
                    if exc.kind == "depth":
                        return refuse(400, f"the body nests deeper than {MAX_DEPTH}", "a body nested too deeply")
                    return refuse(400, "the body must be JSON", "a body that is not JSON")
                if not isinstance(body, dict) or not isinstance(body.get("reason", ""), str):
                    return refuse(400, "the body must be an object with a string 'reason'",
                                  "a body that is not an object with a string reason")
                reason = body.get("reason", "")[:500]
        stats.count("requests accepted")
        last_event[0] = time.time()
        debouncer.add({"kind": "request", "name": PATH, "change": "regenerate", "reason": reason,
                       "peer": request.remote or ""})
        return web.json_response({"status": "accepted", "pending": debouncer.pending}, status=202)

    async def healthz(_request):
        return web.Response(text="ok")

    async def metrics(_request):
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest  # pylint: disable=import-outside-toplevel

        # As the client's own exposition handler answers: its content type, verbatim.
        return web.Response(body=generate_latest(registry),
                            headers={"Content-Type": CONTENT_TYPE_LATEST, "Cache-Control": "no-store"})

    async def one_request_per_connection(_request, response):
        # The connection's deadline then bounds one request head and body, never an idle keep-alive.
        # The header too: aiohttp has chosen its headers before this hook runs.
        response.force_close()
        response.headers["Connection"] = "close"

    app = web.Application(client_max_size=MAX_BODY)
    app.on_response_prepare.append(one_request_per_connection)
    app.router.add_post(PATH, generate)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    return app


class _Deadline(asyncio.Protocol):
    """aiohttp's protocol for one connection, aborted ``seconds`` after the connection was made.

    aiohttp bounds neither the time a request head takes to arrive nor a body's: a client that
    sends a byte a second would hold its connection for ever. Each connection carries one request
    (one_request_per_connection), so this one timer bounds head, body and answer together.
    """

    def __init__(self, protocol, seconds, stats):
        self.protocol, self.seconds, self.stats, self.timer = protocol, seconds, stats, None

    def connection_made(self, transport):
        self.timer = asyncio.get_running_loop().call_later(self.seconds, self._expired, transport)
        self.protocol.connection_made(transport)

    def _expired(self, transport):
        peer = transport.get_extra_info("peername")
        self.stats.bad(_eda.BadMessage("a request not complete within request_timeout", peer and peer[0]))
        transport.abort()

    def connection_lost(self, exc):
        if self.timer:
            self.timer.cancel()
        self.protocol.connection_lost(exc)

    def data_received(self, data):
        self.protocol.data_received(data)

    def eof_received(self):
        return self.protocol.eof_received()

    def pause_writing(self):
        self.protocol.pause_writing()

    def resume_writing(self):
        self.protocol.resume_writing()


@_eda.scrubbed
async def main(queue, args):
    args = _eda.source_args(SOURCE, args, SPEC)
    endpoint, context = check(args)
    if args["stats_interval"] <= 0:
        raise _eda.TopologyError(f"{SOURCE}: option 'stats_interval' must be > 0")
    debouncer = _eda.debouncer_from(args, queue.put, SOURCE)
    debouncer.start()
    stats = _eda.SourceStats("endpoint", lambda message: LOG.warning("%s: %s", SOURCE, message))
    summaries = asyncio.ensure_future(_eda.log_summaries([stats], args["stats_interval"],
                                                         lambda line: LOG.info("%s: %s", SOURCE, line)))
    timeout = endpoint.request_timeout
    runner = web.AppRunner(application(debouncer, endpoint.token, stats), access_log=None, keepalive_timeout=timeout,
                           lingering_time=LINGER)
    await runner.setup()
    server = None
    try:
        try:
            # Not web.TCPSite: each connection is wrapped in its deadline, and the TLS handshake has one too.
            server = await asyncio.get_running_loop().create_server(
                lambda: _Deadline(runner.server(), timeout, stats), endpoint.host, endpoint.port, ssl=context,
                ssl_handshake_timeout=timeout, reuse_address=True)
        except OSError as exc:
            raise _eda.TopologyError(f"{SOURCE}: cannot listen on {endpoint.host}:{endpoint.port}: "
                                     f"{exc.strerror}") from None
        LOG.info("%s: listening on https://%s:%d%s", SOURCE, endpoint.host, endpoint.port, PATH)
        await asyncio.Future()  # serve until the rulebook stops
    finally:
        summaries.cancel()
        LOG.info("%s: ending; %s", SOURCE, stats.summary())
        if server is not None:
            server.close()
        await runner.cleanup()
        await debouncer.stop()
