# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Deadlines every transport honours: one per discovery, and a total limit per call.

Apart from the HTTP client so that the provider registry and the Kubernetes transport can use
them without importing requests.
"""

from __future__ import annotations

import contextlib
import threading
import time

# Default total time of one discovery (every request, retry and wait of it), in seconds.
DEFAULT_DISCOVERY_TIMEOUT = 600.0


# The deadline of the discovery in progress (time.monotonic() value), set by discovery_deadline().
_deadline = {"at": None}


@contextlib.contextmanager
def discovery_deadline(seconds):
    """Bound every request, retry and backoff inside the block to ``seconds`` in total."""
    previous = _deadline["at"]
    _deadline["at"] = time.monotonic() + seconds if seconds else None
    try:
        yield
    finally:
        _deadline["at"] = previous


def remaining_time():
    """Seconds left before the discovery deadline, or None without one."""
    at = _deadline["at"]
    return None if at is None else at - time.monotonic()


def attempt_budget(timeout):
    """Seconds one attempt may take: ``timeout``, less when the discovery deadline is nearer, 0 past it."""
    left = remaining_time()
    return timeout if left is None else max(0.0, min(timeout, left))


def call_within(function, seconds):
    """``function()``'s result, or TimeoutError once ``seconds`` have passed without one.

    The call runs in a daemon worker thread that is abandoned at the limit: the socket timeouts
    of requests and urllib3 apply to each read, so a server that sends one byte a second never
    trips them, and only a total limit like this one bounds the whole exchange.
    """
    outcome = {}

    def run():
        try:
            outcome["result"] = function()
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="aifactory-bounded-call", daemon=True)
    worker.start()
    worker.join(seconds + 0.2)
    if worker.is_alive():
        raise TimeoutError(f"no result within {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
