# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HTTP for providers: retries, bounded backoff, Retry-After, timeouts, TLS on, guarded paging.

Topograph's history is the list of traps: endless paging on a repeated token, retry storms,
TLS verification turned off. Every provider that speaks HTTP goes through this client.
"""

from __future__ import annotations

import datetime
import email.utils
import hashlib
import json
import time
from urllib.parse import urljoin, urlsplit

from ansible_collections.aifactory.topology.plugins.module_utils._base import json_text
from ansible_collections.aifactory.topology.plugins.module_utils._base.deadline import (
    attempt_budget,
    call_within,
    remaining_time,
)
from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._base.numbers import whole_number_or_none
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError, clip, credential_problem

try:
    import requests

    HAS_REQUESTS = True
except ImportError:  # pragma: no cover - exercised only where requests is missing
    HAS_REQUESTS = False

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# A decoded body larger than this is refused (a gzip bomb or a runaway server), not held in memory.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
# A credential, token or metadata document is a few KiB: a larger answer from a metadata service, a token
# exchange or a federation endpoint is refused (a 300 MB body once took a gigabyte of memory).
MAX_CREDENTIAL_BYTES = 256 * 1024
# 500,000 instances at 100 a page; a server that pages forever is stopped here (or by the deadline).
MAX_PAGES = 5_000
_CHUNK = 64 * 1024


class HttpError(RemoteAPIError):
    """An API that could not be used; the message names the method, URL and what went wrong."""


def check_header_values(headers, what):
    """Header values (credentials among them) must be visible ASCII; errors never show the value.

    requests rejects a value with a line break with an error that quotes it, and a non-ASCII
    one fails deep in http.client: a token pasted with a trailing newline must not be printed.
    """
    for name, value in (headers or {}).items():
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        if not isinstance(value, str):
            raise HttpError(f"{what}: header {name!r} must be a string")
        problem = credential_problem(value)
        if problem:
            raise HttpError(f"{what}: the value of header {name!r} {problem} (the value is not shown)")
        if str(name).lower() in CREDENTIAL_HEADERS and value not in PUBLIC_HEADER_VALUES:
            # The credential, and the credential without its scheme ("Bearer <token>"): secrets of the run.
            _secrets.register(value, value.split(" ", 1)[-1])


# Headers whose values are credentials (registered as secrets of the run, never shown).
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-auth-token", "x-api-key",
                                "x-amz-security-token", "x-aws-ec2-metadata-token"})
# Fixed values a protocol prescribes (OCI's instance metadata service wants "Authorization: Bearer Oracle"):
# no secret, and masking "Oracle" in every message would hide nothing.
PUBLIC_HEADER_VALUES = frozenset({"Bearer Oracle"})


class Response:
    """A fully read response: status_code, headers, url, content (bytes), text and json()."""

    def __init__(self, status_code, headers, url, content, encoding):
        self.status_code = status_code
        self.headers = headers
        self.url = url
        self.content = content
        self.encoding = encoding or "utf-8"

    @property
    def text(self):
        try:
            return self.content.decode(self.encoding, errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")

    def json(self):
        """The decoded JSON body; ValueError for anything else (not JSON, too deeply nested)."""
        try:
            return json_text.loads(self.content)
        except json_text.JSONLimitError as exc:
            if exc.kind == "depth":
                raise ValueError("the JSON body is nested too deeply") from None
            raise


class HttpClient:
    """A small requests wrapper with the retry policy every provider needs.

    ``backoff`` is the first delay in seconds (doubled per attempt); ``sleep`` is injectable so
    tests run without waiting. Credentials belong in ``headers``/``auth`` and never in messages.
    ``timeout`` bounds each attempt as a whole (connect, headers and body: a server that drips
    one byte a second is cut off), the discovery deadline (discovery_deadline) bounds them all.
    """

    def __init__(self, base_url, *, headers=None, auth=None, verify=True, ca_bundle=None, timeout=30.0,
                 attempts=5, backoff=0.5, max_retry_after=300.0, sleep=time.sleep, session=None,
                 max_response_bytes=MAX_RESPONSE_BYTES):
        if not HAS_REQUESTS:
            raise TopologyError("this provider needs the Python library 'requests' on the host that runs it")
        self.base_url = base_url.rstrip("/")
        check_header_values(headers, self.base_url)
        if auth is not None and isinstance(auth, tuple):
            check_header_values({f"basic auth {part}": value for part, value in zip(("user", "password"), auth)},
                                self.base_url)
            _secrets.register_basic_auth(*auth[:2])
        self.session = session or requests.Session()
        self.session.headers.update(headers or {})
        self.session.auth = auth
        # A CA bundle path keeps verification on with a private CA; verify=False is explicit opt-out.
        self.verify = ca_bundle if (verify and ca_bundle) else bool(verify)
        self.timeout = timeout
        self.attempts = max(1, int(attempts))
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self.sleep = sleep
        self.max_response_bytes = max_response_bytes

    def url(self, path):
        if path.startswith(("http://", "https://")):
            return path
        return f"{self.base_url}/{path.lstrip('/')}"

    def request(self, method, path, **kwargs):
        url = self.url(path)
        what = f"{method} {url}"
        check_header_values(kwargs.get("headers"), what)

        def attempt():
            response = self._attempt(method, url, what, kwargs)
            if response.status_code < 400:
                return response
            if response.status_code not in RETRY_STATUS:
                raise HttpError(f"{what}: HTTP {response.status_code}{_detail(response)}", response.status_code)
            raise RetryableError(f"HTTP {response.status_code}", retry_after_seconds(response.headers.get("Retry-After")))

        return call_with_retries(attempt, what, attempts=self.attempts, backoff=self.backoff,
                                 max_retry_after=self.max_retry_after, sleep=self.sleep)

    def _attempt(self, method, url, what, kwargs):
        """One request read to its end within ``timeout`` (and the discovery deadline)."""
        budget = attempt_budget(self.timeout)
        if budget <= 0:
            raise HttpError(f"{what}: the discovery deadline has passed")
        started = time.monotonic()
        try:
            return call_within(lambda: self._fetch(method, url, what, kwargs, started + budget), budget)
        except TimeoutError:
            raise RetryableError(f"no complete response within {budget:.1f} s") from None

    def _fetch(self, method, url, what, kwargs, deadline):
        try:
            response = self.session.request(method, url, timeout=self.timeout, verify=self.verify, stream=True,
                                            hooks={"response": _same_origin_redirects_only}, **kwargs)
        except requests.exceptions.SSLError as exc:
            raise HttpError(f"{what}: TLS verification failed ({exc.__class__.__name__}); "
                            "set ca_bundle to the CA that signed the server's certificate") from None
        except (requests.exceptions.Timeout, requests.exceptions.ConnectionError) as exc:
            raise RetryableError(exc.__class__.__name__) from None
        except requests.exceptions.TooManyRedirects:
            raise HttpError(f"{what}: too many redirects (a redirect loop)") from None
        except (requests.exceptions.RequestException, ValueError, UnicodeError) as exc:
            # Never str(exc): requests quotes header values (credentials) in some of its errors.
            raise HttpError(f"{what}: the request failed ({exc.__class__.__name__})") from None
        try:
            chunks, size = [], 0
            for chunk in response.iter_content(_CHUNK):
                size += len(chunk)
                if size > self.max_response_bytes:
                    raise HttpError(f"{what}: the response is larger than {self.max_response_bytes} bytes; refused")
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise RetryableError("the response was still arriving at the time limit (params.timeout)")
        except requests.exceptions.ContentDecodingError:
            raise HttpError(f"{what}: the response body cannot be decoded (bad gzip or deflate data)") from None
        except requests.exceptions.ChunkedEncodingError:
            raise RetryableError("the response body was cut off (truncated or broken chunked encoding)") from None
        except (requests.exceptions.Timeout, requests.exceptions.ConnectionError) as exc:
            raise RetryableError(exc.__class__.__name__) from None
        except requests.exceptions.RequestException as exc:
            raise HttpError(f"{what}: reading the response failed ({exc.__class__.__name__})") from None
        finally:
            response.close()
        return Response(response.status_code, response.headers, response.url, b"".join(chunks), response.encoding)

    def json(self, method, path, **kwargs):
        response = self.request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            reason = str(exc) if "nested" in str(exc) else "the response is not JSON"
            raise HttpError(f"{method} {self.url(path)}: {reason}: {_secrets.excerpt(response.text)!r}") from None


def _detail(response):
    """What an error message quotes of a refusal's body: scrubbed of the run's secrets, then clipped."""
    text = _secrets.excerpt(response.text or "")
    return f": {text}" if text else ""


def _origin(url):
    parts = urlsplit(url)
    scheme = (parts.scheme or "").lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port


def _shown_origin(url):
    scheme, host, port = _origin(url)
    return f"{scheme}://{host}:{port}" if host else "a URL without a host"


def refuse_cross_origin_redirect(url, response, what):
    """HttpError when ``response`` (to a request for ``url``) redirects to another scheme, host or port.

    A 307 or 308 re-sends the request's body (a signed assertion, a password, a certificate) and a 302
    its query: a credential exchange never follows one to another host. Same-origin redirects are left
    to the caller's redirect limit.
    """
    location = response.headers.get("location")
    if location is None:
        return
    target = urljoin(response.url or url, location)
    if _origin(target) != _origin(response.url or url):
        raise HttpError(f"{what}: redirected (HTTP {response.status_code}) to another host ({_shown_origin(target)}); "
                        "refused: requests with credentials never follow a redirect to another host",
                        response.status_code)


def _same_origin_redirects_only(response, *args, **kwargs):
    if response.is_redirect:
        request = response.request
        refuse_cross_origin_redirect(request.url, response, f"{request.method} {_without_query(request.url)}")
    return response


def _without_query(url):
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _clamped(timeout, budget):
    if isinstance(timeout, tuple):
        return tuple(budget if part is None else min(part, budget) for part in timeout)
    return budget if timeout is None else min(timeout, budget)


def bound_session(session, timeout, max_bytes=MAX_CREDENTIAL_BYTES):
    """Hold every request an SDK sends through ``session`` (requests', or an SDK's vendored copy) to the
    collection's limits; returns ``session``.

    Each exchange: ``timeout`` (and the discovery deadline) as its socket timeouts, its body read at once
    and refused past ``max_bytes``, a redirect to another scheme, host or port refused (the SDK's own
    redirect limit applies to the others). The SDK call itself runs under ``call_within`` in the provider:
    a socket timeout bounds each read, not a server that drips.
    """
    send = session.send

    def bounded_send(request, **kwargs):
        what = f"{request.method} {_without_query(request.url)}"
        budget = attempt_budget(timeout)
        if budget <= 0:
            raise HttpError(f"{what}: the discovery deadline has passed")
        follow = kwargs.pop("allow_redirects", True)
        kwargs["stream"] = True
        kwargs["timeout"] = _clamped(kwargs.get("timeout"), budget)
        response = send(request, allow_redirects=False, **kwargs)
        _read_whole(response, what, max_bytes, time.monotonic() + budget)
        if response.is_redirect:
            refuse_cross_origin_redirect(request.url, response, what)
            if follow:
                chain = [response, *session.resolve_redirects(response, request, **kwargs)]
                response = chain.pop()
                response.history = chain
        return response

    session.send = bounded_send
    return session


def _read_whole(response, what, max_bytes, deadline):
    """Read a streamed response's body into it (``content``), at most ``max_bytes``, before ``deadline``."""
    chunks, size = [], 0
    try:
        for chunk in response.iter_content(_CHUNK):
            size += len(chunk)
            if size > max_bytes:
                raise HttpError(f"{what}: the response is larger than {max_bytes} bytes; refused")
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise HttpError(f"{what}: the response was still arriving at the time limit")
    except HttpError:
        response.close()
        raise
    response._content = b"".join(chunks)  # pylint: disable=protected-access  # what .content returns
    response._content_consumed = True  # pylint: disable=protected-access


class RetryableError(Exception):
    """One failed attempt that may succeed later; ``delay`` is the server's own wait (Retry-After), if any."""

    def __init__(self, reason, delay=None):
        super().__init__(reason)
        self.reason = reason
        self.delay = delay


# Longer than any delta-seconds or IMF-fixdate a server has a reason to send; a longer header is garbage.
MAX_RETRY_AFTER_TEXT = 64


def retry_after_seconds(value, now=time.time):
    """A Retry-After value in seconds: delta-seconds or an HTTP date (RFC 9110 10.2.3); None when absent or unreadable.

    A date is counted from ``now()``; one in the past is 0 (retry now). The caller caps the wait (``max_retry_after``);
    unreadable text (None) leaves our own backoff to apply.
    """
    if value is None:
        return None
    if not isinstance(value, str):  # a header value is text; anything else is no delay we can trust
        return None
    text = value
    if len(text) > MAX_RETRY_AFTER_TEXT:
        return None
    text = text.strip()
    seconds = whole_number_or_none(text)  # RFC 9110: delta-seconds = 1*DIGIT
    if seconds is not None:
        return float(seconds)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):  # what the parser raises on text that is no date
        return None
    if when.tzinfo is None:  # "-0000": a date in UTC with no zone named (RFC 5322)
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(when.timestamp() - now(), 0.0)


def call_with_retries(attempt, what, *, attempts=5, backoff=0.5, max_retry_after=300.0, sleep=time.sleep):
    """``attempt()``'s result, retried while it raises RetryableError, at most ``attempts`` times.

    Between tries it waits the error's own delay (capped at ``max_retry_after``) or
    ``backoff * 2**(try - 1)``. Any client (requests, boto3, gRPC) uses this one policy; ``what``
    names the call in the final error. No wait runs past the discovery deadline.
    """
    attempts = max(1, int(attempts))
    last = None
    for number in range(1, attempts + 1):
        try:
            return attempt()
        except RetryableError as exc:
            last = exc
        if number < attempts:
            if last.delay is None:
                delay = backoff * 2 ** (number - 1)
            else:
                delay = min(max(last.delay, 0.0), max_retry_after)
            left = remaining_time()
            if left is not None and delay >= left:
                raise HttpError(f"{what}: {last.reason}; no time left for another attempt before the "
                                "discovery deadline (params.discovery_timeout)")
            sleep(delay)
    raise HttpError(f"{what}: {last.reason} after {attempts} attempts")


def paginate(fetch, max_pages=MAX_PAGES):
    """Items of every page. ``fetch(token)`` returns ``(items, next_token)``; None or "" ends.

    A token seen before, or a non-empty page identical to an earlier one (a server that hands
    out new tokens for the same data), stops the loop with an error instead of paging forever.
    """
    seen = set()
    pages = set()
    token = None
    for _page in range(max_pages):
        items, token = fetch(token)
        if token and token in seen:
            raise HttpError(f"the API returned page token {clip(token)} twice; stopping instead of looping")
        if items:
            digest = hashlib.sha256(json.dumps(items, sort_keys=True, default=repr).encode()).digest()
            if digest in pages:
                raise HttpError("the API returned the same page of items twice under different page tokens; "
                                "stopping instead of looping")
            pages.add(digest)
        yield from items
        if not token:
            return
        seen.add(token)
    raise HttpError(f"more than {max_pages} pages; stopping")


def require_keys(document, keys, where):
    """Fail clearly on a malformed body: ``where`` names the response and the missing key."""
    if not isinstance(document, dict):
        raise HttpError(f"{where}: expected a JSON object, got {clip(json.dumps(document, default=repr)[:100])}")
    missing = [key for key in keys if key not in document]
    if missing:
        raise HttpError(f"{where}: missing {', '.join(missing)}")
    return document
