"""The regenerate endpoint (the webhook) against hostile clients and a hurried operator.

The source's real ``main()`` serves TLS on 127.0.0.1 in the test's own event loop; the clients are
raw sockets of the same loop, so a test that sees one client answered while another holds its
connection shows that the server keeps serving others. Waits are bounded (``WAIT``) and end on
what the server does (an answer, a closed connection, a log line), never on the clock.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl

import k8s_testbed  # tools/ is on sys.path (tests/conftest.py)
import pytest
from cryptography.hazmat.primitives import serialization

from ansible_collections.aifactory.topology.extensions.eda.plugins.event_source import regenerate
from ansible_collections.aifactory.topology.plugins.module_utils import _eda

TOKEN = "a-token-of-32-characters-for-tests"
WAIT = 30  # seconds: a bound on every wait, never a measure


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """(certfile, keyfile, cafile) of a loopback server certificate."""
    ca = k8s_testbed.CertificateAuthority(tmp_path_factory.mktemp("pki"))
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
    lines = [b"POST /v1/generate HTTP/1.1", b"Host: 127.0.0.1", b"Authorization: Bearer " + token.encode()
             if isinstance(token, str) else b"Authorization: " + token]
    if body_length is not None:
        lines += [b"Content-Type: application/json", b"Content-Length: %d" % body_length]
    return b"\r\n".join(lines) + b"\r\n" + extra + b"\r\n"


def test_a_body_in_two_writes_is_read_whole(tls):
    body = json.dumps({"reason": "rack 7 replaced " + "x" * 20_000}).encode()

    async def clients(port, context):
        # One write of the head with half the body, then the other half: two TLS records.
        return await exchange(port, context, head(len(body)) + body[:len(body) // 2], body[len(body) // 2:])

    status, answer = asyncio.run(serving(tls, clients))
    assert status == 202, answer


@pytest.mark.parametrize("writes, status, error", [
    ([head(extra=b"Transfer-Encoding: chunked\r\n"), b'f\r\n{"reason": "x"}\r\n0\r\n\r\n'], 411, "Content-Length"),
    ([head(regenerate.MAX_BODY + 1)], 413, "larger than"),
    ([head(10 ** 18)], 413, "larger than"),
    ([head(60_000) + b"[" * 60_000], 400, "nests deeper than"),
    ([head(None, token=b"Bearer \xff\xfe" + TOKEN.encode()[2:])], 401, "bearer token"),
    ([head(None, token=b"\xc3(\xa0\xa1 " + TOKEN.encode())], 401, "bearer token"),
], ids=["chunked", "too-large", "huge-length", "deep", "token-not-utf8", "scheme-not-utf8"])
def test_a_bad_request_is_answered_and_the_next_one_is_served(tls, writes, status, error):
    deep = b'{"reason": "ok", "x": ' + b"[" * 40 + b"]" * 40 + b"}"
    brackets_in_text = json.dumps({"reason": "[" * 1000}).encode()

    async def clients(port, context):
        first = await exchange(port, context, *writes)
        return first, [await exchange(port, context, head(len(body)) + body) for body in (deep, brackets_in_text)]

    (got_status, answer), after = asyncio.run(serving(tls, clients, request_timeout=2))
    assert got_status == status
    assert error in json.loads(answer)["error"] and TOKEN not in answer.decode("utf-8", "replace")
    assert after[0][0] == 400 and b"nests deeper than" in after[0][1]
    assert after[1][0] == 202  # brackets inside a string are text, not nesting


@pytest.mark.parametrize("partial", [
    b"",  # TCP only: no TLS handshake at all
    b"POST /v1/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthori",  # headers, then nothing (a drip)
    head(1000) + b'{"reason": ',  # a body that stops
], ids=["no-handshake", "dripped-headers", "dripped-body"])
def test_a_client_that_stalls_is_closed_at_the_deadline_while_others_are_served(tls, partial):
    async def clients(port, context):
        if partial:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
            writer.write(partial)
            await writer.drain()
        else:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            # Served while the stalled client holds its connection.
            served = await exchange(port, context, head(2) + b"{}")
            held = await reader.read()  # ends when the server closes it (bounded by WAIT in serving)
        except (ConnectionError, ssl.SSLError):
            held = b""
        finally:
            writer.close()
        metrics = await exchange(port, context, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        return served, held, metrics

    served, held, (_status, metrics) = asyncio.run(serving(tls, clients, request_timeout=1))
    assert served[0] == 202 and held == b""
    if partial:
        assert b'reason="a request not complete within request_timeout"} 1.0' in metrics


def test_a_token_with_a_trailing_newline_is_refused_at_start_without_showing_it(tls):
    for token in (TOKEN + "\n", TOKEN + " ", "Bearer " + TOKEN, TOKEN + "\u00e9"):
        with pytest.raises(_eda.TopologyError, match="must be one bearer token.*strip it") as info:
            regenerate.check(source_args(tls, token=token))
        assert TOKEN not in str(info.value)


@pytest.fixture
def encrypted_key(tls, tmp_path):
    key = serialization.load_pem_private_key(open(tls[1], "rb").read(), None)  # noqa: SIM115
    path = tmp_path / "encrypted.key"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.BestAvailableEncryption(b"pass phrase 1")))
    return str(path)


def test_an_encrypted_key_without_its_password_is_an_error_never_a_prompt(tls, encrypted_key):
    # The password callback answers OpenSSL: it never reads the terminal, whatever stdin is.
    with pytest.raises(_eda.TopologyError, match="is encrypted; give its pass phrase in option 'keyfile_password'"):
        regenerate.check(source_args(tls, keyfile=encrypted_key))
    with pytest.raises(_eda.TopologyError, match=r"cannot load certfile/keyfile: SSLError \(wrong keyfile_password"):
        regenerate.check(source_args(tls, keyfile=encrypted_key, keyfile_password="wrong"))
    assert isinstance(regenerate.check(source_args(tls, keyfile=encrypted_key, keyfile_password="pass phrase 1")),
                      ssl.SSLContext)
