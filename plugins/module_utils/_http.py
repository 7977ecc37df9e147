# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HTTP for providers: retries, bounded backoff, Retry-After, timeouts, TLS on, guarded paging.

Topograph's history is the list of traps: endless paging on a repeated token, retry storms,
TLS verification turned off. Every provider that speaks HTTP goes through this client.
"""

from __future__ import annotations

import json
import time

from ansible_collections.aifactory.topology.plugins.module_utils._errors import RemoteAPIError, TopologyError

try:
    import requests

    HAS_REQUESTS = True
except ImportError:  # pragma: no cover - exercised only where requests is missing
    HAS_REQUESTS = False

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class HttpError(RemoteAPIError):
    """An API that could not be used; the message names the method, URL and what went wrong."""


class HttpClient:
    """A small requests wrapper with the retry policy every provider needs.

    ``backoff`` is the first delay in seconds (doubled per attempt); ``sleep`` is injectable so
    tests run without waiting. Credentials belong in ``headers``/``auth`` and never in messages.
    """

    def __init__(self, base_url, *, headers=None, auth=None, verify=True, ca_bundle=None, timeout=30.0,
                 attempts=5, backoff=0.5, max_retry_after=300.0, sleep=time.sleep, session=None):
        if not HAS_REQUESTS:
            raise TopologyError("this provider needs the Python library 'requests' on the host that runs it")
        self.base_url = base_url.rstrip("/")
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

    def url(self, path):
        if path.startswith(("http://", "https://")):
            return path
        return f"{self.base_url}/{path.lstrip('/')}"

    def request(self, method, path, **kwargs):
        url = self.url(path)

        def attempt():
            try:
                response = self.session.request(method, url, timeout=self.timeout, verify=self.verify, **kwargs)
            except requests.exceptions.SSLError as exc:
                raise HttpError(f"{method} {url}: TLS verification failed ({exc.__class__.__name__}); "
                                "set ca_bundle to the CA that signed the server's certificate") from None
            except (requests.exceptions.Timeout, requests.exceptions.ConnectionError) as exc:
                raise RetryableError(exc.__class__.__name__) from None
            if response.status_code < 400:
                return response
            if response.status_code not in RETRY_STATUS:
                raise HttpError(f"{method} {url}: HTTP {response.status_code}{_detail(response)}",
                                response.status_code)
            raise RetryableError(f"HTTP {response.status_code}", retry_after_seconds(response.headers.get("Retry-After")))

        return call_with_retries(attempt, f"{method} {url}", attempts=self.attempts, backoff=self.backoff,
                                 max_retry_after=self.max_retry_after, sleep=self.sleep)

    def json(self, method, path, **kwargs):
        response = self.request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise HttpError(f"{method} {self.url(path)}: the response is not JSON: {response.text[:200]!r}") from None


def _detail(response):
    text = (response.text or "").strip().replace("\n", " ")
    return f": {text[:200]}" if text else ""


class RetryableError(Exception):
    """One failed attempt that may succeed later; ``delay`` is the server's own wait (Retry-After), if any."""

    def __init__(self, reason, delay=None):
        super().__init__(reason)
        self.reason = reason
        self.delay = delay


def retry_after_seconds(value):
    """A Retry-After value in seconds; None when absent or an HTTP date (our backoff applies)."""
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def call_with_retries(attempt, what, *, attempts=5, backoff=0.5, max_retry_after=300.0, sleep=time.sleep):
    """``attempt()``'s result, retried while it raises RetryableError, at most ``attempts`` times.

    Between tries it waits the error's own delay (capped at ``max_retry_after``) or
    ``backoff * 2**(try - 1)``. Any client (requests, boto3, gRPC) uses this one policy; ``what``
    names the call in the final error.
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
                sleep(backoff * 2 ** (number - 1))
            else:
                sleep(min(max(last.delay, 0.0), max_retry_after))
    raise HttpError(f"{what}: {last.reason} after {attempts} attempts")


def paginate(fetch, max_pages=100_000):
    """Items of every page. ``fetch(token)`` returns ``(items, next_token)``; None or "" ends.

    A token seen before stops the loop with an error instead of paging forever.
    """
    seen = set()
    token = None
    for _page in range(max_pages):
        items, token = fetch(token)
        yield from items
        if not token:
            return
        if token in seen:
            raise HttpError(f"the API returned page token {token!r} twice; stopping instead of looping")
        seen.add(token)
    raise HttpError(f"more than {max_pages} pages; stopping")


def require_keys(document, keys, where):
    """Fail clearly on a malformed body: ``where`` names the response and the missing key."""
    if not isinstance(document, dict):
        raise HttpError(f"{where}: expected a JSON object, got {json.dumps(document)[:100]}")
    missing = [key for key in keys if key not in document]
    if missing:
        raise HttpError(f"{where}: missing {', '.join(missing)}")
    return document
