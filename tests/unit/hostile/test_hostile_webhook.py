"""The regenerate endpoint (the webhook) against hostile clients and a hurried operator.

The source's real ``main()`` serves TLS on 127.0.0.1 in the test's own event loop, its clients are
raw sockets of the same loop (tests/webhook_client.py): one client answered while another holds
its connection shows that the server keeps serving the others.
"""

from __future__ import annotations

import asyncio
import json
import ssl

import pytest
from cryptography.hazmat.primitives import serialization

from ansible_collections.aifactory.topology.extensions.eda.plugins.event_source import regenerate
from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
from tests.webhook_client import (
    TOKEN, check_on_a_terminal, exchange, head, serving, source_args, stalled_while_another_is_served, tls_files)


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """(certfile, keyfile, cafile) of a loopback server certificate."""
    return tls_files(tmp_path_factory.mktemp("pki"))


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
        return await stalled_while_another_is_served(port, context, partial)

    served, held, metrics = asyncio.run(serving(tls, clients, request_timeout=1))
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
    # On a terminal OpenSSL's own callback asks for the pass phrase there and waits; ours answers it.
    code, output = check_on_a_terminal(source_args(tls, keyfile=encrypted_key))
    assert code == 3 and "is encrypted; give its pass phrase in option 'keyfile_password'" in output, output
    with pytest.raises(_eda.TopologyError, match=r"cannot load certfile/keyfile: SSLError \(wrong keyfile_password"):
        regenerate.check(source_args(tls, keyfile=encrypted_key, keyfile_password="wrong"))
    assert isinstance(regenerate.check(source_args(tls, keyfile=encrypted_key, keyfile_password="pass phrase 1"))[1],
                      ssl.SSLContext)
