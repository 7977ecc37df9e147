"""HTTP faults against the providers' client, on a local misbehaving server (tests/fault_http.py).

Each fault must end in an HttpError that says what went wrong, within the client's time limit;
none may hang, raise another exception, or hold an unbounded body in memory.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base import deadline as _deadline
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import HttpClient, HttpError, paginate
from tests.fault_http import FaultServer, gzip_bomb


@pytest.fixture(scope="module")
def faults():
    gzip_bomb()  # built before any client waits for it
    with FaultServer() as server:
        yield server


def client(server, **kwargs):
    settings = {"timeout": 2.0, "attempts": 1, "sleep": lambda seconds: None}
    settings.update(kwargs)
    return HttpClient(server.url(), **settings)


@pytest.mark.parametrize("path, message", [
    ("/drip", r"GET http://127.0.0.1:\d+/drip: no complete response within 2.0 s"),
    ("/drip-headers", r"GET http://127.0.0.1:\d+/drip-headers: no complete response within 2.0 s"),
    ("/silent", r"GET http://127.0.0.1:\d+/silent: ReadTimeout after 1 attempts"),
    ("/loop", r"too many redirects \(a redirect loop\)"),
    ("/loop-a", r"too many redirects \(a redirect loop\)"),
    ("/garbage", r"/garbage: the response is not JSON"),
    ("/not-http", r"/not-http: ConnectionError after 1 attempts"),
    ("/huge", r"/huge: the response is larger than 1048576 bytes; refused"),
    ("/gzip-bomb", r"/gzip-bomb: the response is larger than 1048576 bytes; refused"),
    ("/bad-gzip", r"/bad-gzip: the response body cannot be decoded \(bad gzip or deflate data\)"),
    ("/truncated", r"/truncated: the response body was cut off"),
    ("/bad-chunked", r"/bad-chunked: the response body was cut off"),
    ("/cut-chunked", r"/cut-chunked: the response body was cut off"),
    ("/deep-json", r"/deep-json: the JSON body is nested too deeply"),
])
def test_every_fault_is_a_clear_http_error(faults, path, message):
    http = client(faults, max_response_bytes=1 << 20)
    with pytest.raises(HttpError, match=message):
        http.json("GET", path)


def test_a_retried_drip_stops_at_the_discovery_deadline(faults):
    http = client(faults, attempts=50, timeout=1.0, sleep=__import__("time").sleep, backoff=0.1)
    with _deadline.discovery_deadline(3.0):
        with pytest.raises(HttpError, match="discovery deadline"):
            http.json("GET", "/drip")


def test_endless_paging_with_new_tokens_stops_on_repeated_data_or_the_page_cap(faults):
    http = client(faults)

    def fetch(path):
        def page(token):
            body = http.json("GET", path, params={"token": token or "0"})
            return body["items"], body["next"]
        return page

    with pytest.raises(HttpError, match="same page of items twice under different page tokens"):
        list(paginate(fetch("/same-page")))
    with pytest.raises(HttpError, match="more than 5 pages; stopping"):
        list(paginate(fetch("/pages"), max_pages=5))


@pytest.mark.parametrize("value, problem", [
    ("Bearer tok\n", "contains a line break"),
    ("Bearer tok\r\n", "contains a line break"),
    ("Bearer t\u00f6k", "contains a control or non-ASCII character"),
    ("Bearer \x00tok", "contains a control or non-ASCII character"),
])
def test_a_bad_credential_header_is_refused_without_its_value(faults, value, problem):
    with pytest.raises(HttpError) as info:
        HttpClient(faults.url(), headers={"Authorization": value}).json("GET", "/json")
    assert problem in str(info.value) and "tok" not in str(info.value)
    http = client(faults)
    with pytest.raises(HttpError) as info:
        http.json("GET", "/json", headers={"Authorization": value})
    assert problem in str(info.value) and "tok" not in str(info.value)
    with pytest.raises(HttpError) as info:
        HttpClient(faults.url(), auth=("user", value))
    assert problem in str(info.value) and "tok" not in str(info.value)


@pytest.mark.parametrize("path, message", [
    ("/drip", r"GET /drip/api/v1/nodes: no complete response from http://127.0.0.1:\d+ within 2 s"),
    ("/drip-headers", r"GET /drip-headers/api/v1/nodes: no complete response"),
    ("/garbage", r"GET /garbage/api/v1/nodes: the API server's response is not JSON"),
    ("/deep-json", r"GET /deep-json/api/v1/nodes: the API server's response is not JSON \(or nested too deeply\)"),
])
def test_the_kubernetes_transport_has_a_total_limit_per_request_too(faults, path, message):
    from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s

    config = _k8s.kubernetes_library()[0].Configuration()
    config.host = faults.url()
    client = _k8s.K8sClient(config, timeout=2)
    try:
        with pytest.raises(_k8s.K8sError, match=message):
            client.request("GET", path + "/api/v1/nodes")
    finally:
        client.close()


def test_a_kubernetes_api_key_with_a_newline_is_refused_without_its_value():
    from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
    from ansible_collections.aifactory.topology.plugins.module_utils._model import TopologyError

    with pytest.raises(TopologyError) as info:
        _k8s.configuration({"host": "https://127.0.0.1:6443", "api_key": "sekret-token\n"})
    assert "api_key contains a line break" in str(info.value) and "sekret" not in str(info.value)


def test_an_aws_attempt_has_a_total_limit_too(faults):
    # boto3's read_timeout bounds each socket read: one byte a second would never trip it.
    from ansible_collections.aifactory.topology.plugins.module_utils import _providers

    params = {"instances": [{"region": "us-east-1", "instances": {"i-0123": "node1"}}],
              "endpoint_url": faults.url("/drip"), "timeout": 2.0, "retry_attempts": 1}
    creds = {"access_key_id": "AKIATESTTESTTESTTEST", "secret_access_key": "not-a-real-secret"}
    with pytest.raises(HttpError, match=r"EC2 DescribeInstanceTopology in us-east-1: no complete response within 2 s"):
        _providers.discover("aws", params, creds)


def test_a_post_redirected_to_another_host_is_refused_before_its_body_is_sent_again(faults):
    with FaultServer() as elsewhere:
        http = client(faults)
        with pytest.raises(HttpError, match=r"POST http://127.0.0.1:\d+/redirect: redirected \(HTTP 307\) to another "
                                            r"host \(http://127.0.0.1:\d+\); refused"):
            http.json("POST", "/redirect", params={"to": elsewhere.url("/json")},
                      json={"username": "u", "password": "never-re-posted"})
        assert not elsewhere.requests


def test_a_refusal_that_echoes_the_token_is_quoted_without_it():
    """The shared client's error detail: 200 characters of the body, scrubbed of the run's secrets first."""
    from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets
    from tests.integration.fake_apis import FakeHttpApi, text_reply

    token = 'env-token-"q"%+/=\u00e9'
    echo = f"invalid token {token} ({quote(token, safe='')}, {json.dumps(token)})"
    server = FakeHttpApi(lambda request: text_reply(echo, status=401))
    try:
        with secrets.scope():
            secrets.register(token)
            with pytest.raises(HttpError) as info:
                HttpClient(server.url, attempts=1).json("GET", "/x")
        assert "HTTP 401: invalid token ********" in str(info.value)
        assert all(form not in str(info.value) for form in (token, quote(token, safe=""), json.dumps(token)[1:-1]))
    finally:
        server.close()


@pytest.mark.parametrize("path, message", [
    ("/huge", r"GET http://127.0.0.1:\d+/huge: the response is larger than 262144 bytes; refused"),
    ("/html", r"GET http://127.0.0.1:\d+/html: the response is larger than 262144 bytes; refused"),
    ("/redirect", r"redirected \(HTTP 307\) to another host \(http://127.0.0.2:9\); refused"),
])
def test_an_sdk_session_is_held_to_the_credential_limits(faults, path, message):
    """What an SDK sends through ``bound_session`` (OCI's federation, google-auth's token requests, boto3)."""
    import requests
    from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import bound_session

    session = bound_session(requests.Session(), 2.0)
    with pytest.raises(HttpError, match=message):
        session.get(faults.url(path), timeout=(10, 60))


# A clock at Fri, 31 Dec 1999 23:59:00 GMT for the Retry-After dates below.
CLOCK = 946684740.0


@pytest.mark.parametrize("value, seconds", [
    ("Fri, 31 Dec 1999 23:59:59 GMT", 59.0),       # RFC 9110's own example
    ("Fri, 31 Dec 1999 23:59:59 -0000", 59.0),     # RFC 5322 "UTC, zone unknown"
    ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),        # in the past: retry now, never a negative wait
    ("Fri, 31 Dec 1999 23:00:00 GMT", 0.0),
    ("Fri, 31 Dec 9999 23:59:59 GMT", 253402300799.0 - CLOCK),  # far future: a number the cap bounds
    ("garbage", None),
    ("Fri, 32 Dec 1999 25:61:61 GMT", None),
    ("Fri, 31 Dec 99999 23:59:59 GMT", None),     # past datetime's range
    ("Fri, 31 Dec 1999 23:59:59 GMT" + " " * 64, None),
    ("9" * 400, None),                              # longer than any real header
    ("nan", None),
    ("inf", None),
    ("", None),
    ("\x00\xff", None),
])
def test_a_retry_after_of_any_form_is_a_bounded_wait_or_none(value, seconds):
    from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import retry_after_seconds

    assert retry_after_seconds(value, now=lambda: CLOCK) == seconds


def test_a_far_future_retry_after_date_waits_no_longer_than_the_cap():
    from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import (
        RetryableError, call_with_retries, retry_after_seconds)

    delays, tries = [], []

    def attempt():
        tries.append(1)
        if len(tries) == 1:
            raise RetryableError("HTTP 503", retry_after_seconds("Fri, 31 Dec 9999 23:59:59 GMT"))
        return "ok"

    assert call_with_retries(attempt, "List", attempts=2, max_retry_after=30.0, sleep=delays.append) == "ok"
    assert delays == [30.0]
