"""The regenerate endpoint's real ``main()`` on 127.0.0.1, and raw TLS clients of the same event loop.

For the webhook's hostile tests (tests/unit/hostile/test_hostile_webhook.py) and the campaign's
webhook cases (tests/hostile_cases.py). The clients run in the loop that serves them, so a client
answered while another holds its connection shows that the server keeps serving the others.
Every wait is bounded (``WAIT``) and ends on what the server does (an answer, a closed
connection, its "listening" log line), never on the clock.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pty
import select
import signal
import ssl
import sys
import time
from pathlib import Path

TOOLS = str(Path(__file__).resolve().parents[1] / "tools")
if TOOLS not in sys.path:  # the bench runs without tests/conftest.py
    sys.path.insert(0, TOOLS)

import k8s_testbed  # noqa: E402  # pylint: disable=wrong-import-position

from ansible_collections.aifactory.topology.extensions.eda.plugins.event_source import (  # noqa: E402
    regenerate,
)
from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda  # noqa: E402

TOKEN = "a-token-of-32-characters-for-tests"
WAIT = 30  # seconds: a bound on every wait, never a measure


def tls_files(directory):
    """(certfile, keyfile, cafile) of a loopback server certificate in ``directory``."""
    ca = k8s_testbed.CertificateAuthority(Path(directory))
    cert, key = ca.issue("regenerate", "127.0.0.1", server=True)
    return str(cert), str(key), str(ca.cert_file)


def source_args(tls, **overrides):
    certfile, keyfile, _cafile = tls
    args = {"token": TOKEN, "certfile": certfile, "keyfile": keyfile, "port": k8s_testbed.free_port(),
            "delay": 0, "max_wait": 0}
    return _eda.source_args(regenerate.SOURCE, dict(args, **overrides), regenerate.SPEC)


class _Listening(logging.Handler):
    def __init__(self, event):
        super().__init__()
        self.event = event

    def emit(self, record):
        if "listening on" in record.getMessage():
            self.event.set()


async def serving(tls, clients, **overrides):
    """Run ``clients(port, context)`` against the source's main() once it listens; its result."""
    args = source_args(tls, **overrides)
    listening = asyncio.Event()
    handler = _Listening(listening)
    regenerate.LOG.addHandler(handler)
    regenerate.LOG.setLevel(logging.INFO)
    source = asyncio.ensure_future(regenerate.main(asyncio.Queue(), args))
    try:
        await asyncio.wait_for(asyncio.wait([source, asyncio.ensure_future(listening.wait())],
                                            return_when=asyncio.FIRST_COMPLETED), WAIT)
        if source.done():
            source.result()  # its error at start
        context = ssl.create_default_context(cafile=tls[2])
        return await asyncio.wait_for(clients(args["port"], context), WAIT)
    finally:
        source.cancel()
        await asyncio.gather(source, return_exceptions=True)
        regenerate.LOG.removeHandler(handler)


async def exchange(port, context, *writes):
    """Send each of ``writes`` (bytes) as its own write, then read the answer to its end: (status, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        for data in writes:
            writer.write(data)
            await writer.drain()
        answer = await reader.read()  # to its end: the server closes each connection after one answer
    finally:
        writer.close()
    head, _blank, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]) if head else None, body


def head(body_length=None, token=TOKEN, extra=b""):
    """A POST /v1/generate request head; ``token`` a str (as a bearer token) or the raw header value."""
    authorization = b"Bearer " + token.encode() if isinstance(token, str) else token
    lines = [b"POST /v1/generate HTTP/1.1", b"Host: 127.0.0.1", b"Authorization: " + authorization]
    if body_length is not None:
        lines += [b"Content-Type: application/json", b"Content-Length: %d" % body_length]
    return b"\r\n".join(lines) + b"\r\n" + extra + b"\r\n"


async def stalled_while_another_is_served(port, context, partial):
    """A client sends ``partial`` (b"": TCP only, no TLS handshake) and stops; another client posts.

    (the other's answer, what the stalled client read until the server closed it, GET /metrics's body).
    """
    if partial:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
        writer.write(partial)
        await writer.drain()
    else:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        served = await exchange(port, context, head(2) + b"{}")
        try:
            held = await reader.read()  # ends when the server closes it (bounded by WAIT in serving)
        except (ConnectionError, ssl.SSLError):
            held = b""
    finally:
        writer.close()
    _status, metrics = await exchange(port, context, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    return served, held, metrics


def check_on_a_terminal(args):
    """``regenerate.check(args)`` in a child whose controlling terminal is a pseudo-terminal, as an
    operator's shell is: (exit code, what it wrote); exit code None if it was still waiting (for a
    pass phrase) after WAIT seconds, then it is killed. Exit 0: loaded; 3: the collection's error."""
    pid, terminal = pty.fork()
    if pid == 0:  # the child: nothing of the test's process but this call
        code = 0
        try:
            regenerate.check(args)
            message = "loaded"
        except _eda.AifactoryTopologyError as exc:
            code, message = 3, str(exc)
        except BaseException as exc:  # pylint: disable=broad-except  # reported as unhandled by the caller
            code, message = 4, f"{type(exc).__name__}: {exc}"
        os.write(1, message.encode("utf-8", "replace"))
        os._exit(code)
    output, deadline = b"", time.monotonic() + WAIT
    try:
        while True:
            ready, _w, _x = select.select([terminal], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return None, output.decode("utf-8", "replace")
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # EIO: the child ended and closed the terminal
                chunk = b""
            if not chunk:
                break
            output += chunk
    finally:
        os.close(terminal)
    _pid, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), output.decode("utf-8", "replace")
