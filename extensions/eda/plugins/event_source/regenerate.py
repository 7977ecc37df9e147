# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aifactory.topology.regenerate: an HTTPS endpoint that asks for a regeneration (Topograph's POST /v1/generate).

``POST /v1/generate`` with ``Authorization: Bearer <token>`` answers 202 and records one change;
requests are debounced like every source (``delay``, ``max_wait``), so a burst of requests becomes
one run. Without the token, or with a wrong one, the answer is 401 and nothing is recorded.
``GET /healthz`` answers ``ok`` without a token (liveness probes). The optional JSON body
``{"reason": "..."}`` (at most 64 KiB) is carried in the event; the token and the request headers
never are.

Options: ``token`` (required, at least 16 characters), ``certfile`` and ``keyfile`` (required:
TLS only), ``host`` (default 127.0.0.1; 0.0.0.0 in an EDA controller activation), ``port``
(default 5443), ``delay`` (15), ``max_wait`` (120).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import ssl
import sys

try:
    from ansible_collections.aifactory.topology.plugins.module_utils import _eda
except ImportError:  # run by ansible-rulebook from <path>/ansible_collections/aifactory/topology/extensions/...
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 7)))
    from ansible_collections.aifactory.topology.plugins.module_utils import _eda

from aiohttp import web

SOURCE = "aifactory.topology.regenerate"
LOG = logging.getLogger(SOURCE)
SPEC = dict(
    token=("str", None),
    certfile=("str", None),
    keyfile=("str", None),
    host=("str", "127.0.0.1"),
    port=("int", 5443),
    **_eda.DEBOUNCE_SPEC,
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


def application(debouncer, token):
    async def generate(request):
        if not authorized(request, token):
            LOG.warning("%s: refused a request from %s without a valid token", SOURCE, request.remote)
            return web.json_response({"error": "missing or wrong bearer token"}, status=401,
                                     headers={"WWW-Authenticate": "Bearer"})
        reason = ""
        if request.can_read_body:
            if (request.content_length or 0) > MAX_BODY:
                return web.json_response({"error": f"body larger than {MAX_BODY} bytes"}, status=413)
            raw = await request.content.read(MAX_BODY + 1)
            if len(raw) > MAX_BODY:
                return web.json_response({"error": f"body larger than {MAX_BODY} bytes"}, status=413)
            if raw.strip():
                try:
                    body = json.loads(raw)
                except ValueError:
                    return web.json_response({"error": "the body must be JSON"}, status=400)
                if not isinstance(body, dict) or not isinstance(body.get("reason", ""), str):
                    return web.json_response({"error": "the body must be an object with a string 'reason'"},
                                             status=400)
                reason = body.get("reason", "")[:500]
        debouncer.add({"kind": "request", "name": PATH, "change": "regenerate", "reason": reason,
                       "peer": request.remote or ""})
        return web.json_response({"status": "accepted", "pending": debouncer.pending}, status=202)

    async def healthz(_request):
        return web.Response(text="ok")

    app = web.Application(client_max_size=MAX_BODY)
    app.router.add_post(PATH, generate)
    app.router.add_get("/healthz", healthz)
    return app


async def main(queue, args):
    args = _eda.SourceArgs(SOURCE, args, SPEC)
    context = check(args)
    debouncer = _eda.debouncer_from(args, queue.put, SOURCE)
    debouncer.start()
    runner = web.AppRunner(application(debouncer, args["token"]), access_log=None)
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
        await runner.cleanup()
        await debouncer.stop()
