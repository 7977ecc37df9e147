"""The HTTP client against a real HTTP server on 127.0.0.1 (no mocks of requests)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import HttpClient, HttpError, paginate


class Script:
    """Responses served in order; every request is recorded."""

    def __init__(self, responses):
        self.responses = list(responses)
        self.requests = []


@pytest.fixture
def server():
    script = Script([])

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            script.requests.append((self.path, dict(self.headers)))
            status, headers, body = script.responses.pop(0) if script.responses else (200, {}, "{}")
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body.encode())

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield script, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def client(base, **kwargs):
    delays = []
    return HttpClient(base, sleep=delays.append, **kwargs), delays


def test_retries_429_honouring_retry_after_then_succeeds(server):
    script, base = server
    script.responses = [(429, {"Retry-After": "7"}, ""), (503, {}, ""), (200, {}, '{"ok": true}')]
    http, delays = client(base, backoff=0.5)
    assert http.json("GET", "/x") == {"ok": True}
    assert delays == [7.0, 1.0]  # Retry-After, then backoff 0.5 * 2^1
    assert len(script.requests) == 3


def test_retry_after_is_capped_and_attempts_are_bounded(server):
    script, base = server
    script.responses = [(429, {"Retry-After": "99999"}, "")] * 3
    http, delays = client(base, attempts=3, max_retry_after=60)
    with pytest.raises(HttpError, match=r"GET http://127.0.0.1:\d+/x: HTTP 429 after 3 attempts"):
        http.json("GET", "/x")
    assert delays == [60, 60]


def test_client_errors_are_not_retried_and_name_the_url(server):
    script, base = server
    script.responses = [(403, {}, "forbidden: missing permission compute.instances.list")]
    http, delays = client(base)
    with pytest.raises(HttpError, match="HTTP 403: forbidden: missing permission") as info:
        http.json("GET", "/zones/a/instances")
    assert info.value.status == 403 and delays == []


def test_malformed_body_is_a_clear_error(server):
    script, base = server
    script.responses = [(200, {}, "<html>proxy error</html>")]
    http, _delays = client(base)
    with pytest.raises(HttpError, match="the response is not JSON: '<html>proxy error</html>'"):
        http.json("GET", "/x")


def test_timeouts_are_retried_then_reported():
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts the connection, never answers
    try:
        http, delays = client(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.2, attempts=2)
        with pytest.raises(HttpError, match="ReadTimeout after 2 attempts"):
            http.json("GET", "/slow")
        assert delays == [0.5]
    finally:
        listener.close()


def test_paginate_follows_tokens_and_stops_on_a_repeated_one():
    pages = {None: ([1, 2], "a"), "a": ([3], "b"), "b": ([4], None)}
    assert list(paginate(lambda token: pages[token])) == [1, 2, 3, 4]
    looping = {None: ([1], "a"), "a": ([2], "b"), "b": ([3], "a")}
    with pytest.raises(HttpError, match="page token 'a' twice"):
        list(paginate(lambda token: looping[token]))


def test_tls_verification_is_on_by_default_and_ca_bundle_keeps_it_on():
    assert HttpClient("https://x").verify is True
    assert HttpClient("https://x", ca_bundle="/etc/ca.pem").verify == "/etc/ca.pem"
    assert HttpClient("https://x", verify=False, ca_bundle="/etc/ca.pem").verify is False


def test_headers_reach_the_server(server):
    script, base = server
    http, _delays = client(base, headers={"Authorization": "Bearer t0k"})
    http.json("GET", "/x")
    assert script.requests[0][1]["Authorization"] == "Bearer t0k"
    assert json.dumps(script.requests[0][0]) == '"/x"'


def test_call_with_retries_is_one_policy_for_any_client():
    from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import RetryableError, call_with_retries

    outcomes = [RetryableError("gRPC UNAVAILABLE"), RetryableError("HTTP 429", delay=9.0), "done"]
    delays = []

    def attempt():
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert call_with_retries(attempt, "List", backoff=0.25, max_retry_after=5, sleep=delays.append) == "done"
    assert delays == [0.25, 5]  # backoff, then the server's delay capped at max_retry_after

    def failing():
        raise RetryableError("boom")

    with pytest.raises(HttpError, match="^List: boom after 2 attempts$"):
        call_with_retries(failing, "List", attempts=2, sleep=delays.append)


def test_retry_after_seconds_reads_numbers_and_http_dates():
    from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import retry_after_seconds

    assert retry_after_seconds("7") == 7.0 and retry_after_seconds(None) is None
    # RFC 9110's example date, counted from a clock 59 seconds before it
    assert retry_after_seconds("Fri, 31 Dec 1999 23:59:59 GMT", now=lambda: 946684740.0) == 59.0
