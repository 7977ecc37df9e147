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

Options: ``token`` (required, at least 16 characters), ``certfile`` and ``keyfile`` (required:
TLS only), ``host`` (default 127.0.0.1; 0.0.0.0 in an EDA controller activation), ``port``
(default 5443), ``delay`` (15), ``max_wait`` (120), ``stats_interval`` (300: a line with the
counts). A refused request is one bad message: answered, counted, logged (the first few of each
period, with the peer only) and forgotten.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import ssl
import sys
import time

try:
    from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
except ImportError:  # run by ansible-rulebook from <path>/ansible_collections/aifactory/topology/extensions/...
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 7)))
    from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda

from aiohttp import web

SOURCE = "aifactory.topology.regenerate"
LOG = logging.getLogger(SOURCE)
SPEC = dict(
    token={"type": "str", "no_log": True},
    certfile={"type": "str"},
    keyfile={"type": "str"},
    host={"type": "str", "default": "127.0.0.1"},
    port={"type": "int", "default": 5443},
    **_eda.DEBOUNCE_SPEC,
    **_eda.STATS_SPEC,
)
MAX_BODY = 64 * 1024
MIN_TOKEN = 16
PATH = "/v1/generate"


def check(args):
    """The TLS context; every missing or bad option is an error naming it."""
    if not args["token"] or len(args["token"]) < MIN_TOKEN:
        raise _eda.TopologyError(f"{SOURCE}: option 'token' is required and must have at least {MIN_TOKEN} "
                                 "characters")
    for name in ("certfile", "keyfile"):
        if not args[name]:
            raise _eda.TopologyError(f"{SOURCE}: option {name!r} is required (the endpoint serves HTTPS only)")
        if not os.path.isfile(args[name]):
            raise _eda.TopologyError(f"{SOURCE}: {name} {args[name]} does not exist")
    if not 0 < args["port"] < 65536:
        raise _eda.TopologyError(f"{SOURCE}: option 'port' must be 1-65535")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(args["certfile"], args["keyfile"])
    except (ssl.SSLError, OSError) as exc:
        raise _eda.TopologyError(f"{SOURCE}: cannot load certfile/keyfile: {exc.__class__.__name__}") from None
    return context


def authorized(request, token):
    scheme, _space, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


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
        if request.can_read_body:
            too_large = f"body larger than {MAX_BODY} bytes"
            if (request.content_length or 0) > MAX_BODY:
                return refuse(413, too_large, "a body too large")
            raw = await request.content.read(MAX_BODY + 1)
            if len(raw) > MAX_BODY:
                return refuse(413, too_large, "a body too large")
            if raw.strip():
                try:
                    body = json.loads(raw)
                except (ValueError, RecursionError):
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

    app = web.Application(client_max_size=MAX_BODY)
    app.router.add_post(PATH, generate)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    return app


async def main(queue, args):
    args = _eda.source_args(SOURCE, args, SPEC)
    context = check(args)
    if args["stats_interval"] <= 0:
        raise _eda.TopologyError(f"{SOURCE}: option 'stats_interval' must be > 0")
    debouncer = _eda.debouncer_from(args, queue.put, SOURCE)
    debouncer.start()
    stats = _eda.SourceStats("endpoint", lambda message: LOG.warning("%s: %s", SOURCE, message))
    summaries = asyncio.ensure_future(_eda.log_summaries([stats], args["stats_interval"],
                                                         lambda line: LOG.info("%s: %s", SOURCE, line)))
    runner = web.AppRunner(application(debouncer, args["token"], stats), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, args["host"], args["port"], ssl_context=context)
        try:
            await site.start()
        except OSError as exc:
            raise _eda.TopologyError(f"{SOURCE}: cannot listen on {args['host']}:{args['port']}: "
                                     f"{exc.strerror}") from None
        LOG.info("%s: listening on https://%s:%d%s", SOURCE, args["host"], args["port"], PATH)
        await asyncio.Future()  # serve until the rulebook stops
    finally:
        summaries.cancel()
        LOG.info("%s: ending; %s", SOURCE, stats.summary())
        await runner.cleanup()
        await debouncer.stop()
