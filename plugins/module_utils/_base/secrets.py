# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The secrets of the discovery in progress, and the one scrubber that keeps them out of every message.

A secret is registered where it becomes known, whatever its source:

* every ``no_log`` value of a provider's creds (``_providers.discover``, before the provider runs);
* every value ``_cloud.secret`` reads, from creds or from the environment (AWX injects tokens there);
* every header credential and basic-auth pair the HTTP client sends (``_transport.http``);
* every key, token or credential a provider obtains from a metadata service or a token exchange
  (the provider registers it the moment it has it).

``scrub(text)`` replaces each secret, and its common encodings (URL-encoded, JSON-escaped, Python-quoted,
HTML-escaped, base64, its UTF-8 bytes read as ISO-8859-1, and each line of a multi-line value such as a
PEM key), with ``MASK``.
``_providers.discover`` scrubs every warning and the error a provider raises before it leaves the
provider; ``excerpt`` scrubs text a server sent before it is clipped into a message (a secret cut in two
by the clip could not be recognised afterwards).

The registry lives while a scope is open (``scope``: one discovery, or an event source's life): a
long-running process (the inventory plugin in the controller) keeps no secret of an earlier run. Values shorter than ``MIN_LENGTH`` are
not registered: masking every ``p`` of a message would make it unreadable and hide nothing.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import threading
from urllib.parse import quote, quote_plus

MASK = "********"
MIN_LENGTH = 4
# A line of a multi-line secret (a PEM key's base64 lines are 64 characters) is masked on its own from this length.
MIN_LINE_LENGTH = 16

_lock = threading.Lock()
# The texts to mask while any scope is open (None when none is), and how many scopes are open.
_state = {"forms": None, "open": 0}


@contextlib.contextmanager
def scope():
    """A registry for one discovery, or for an event source's life.

    Scopes may nest, and overlap across threads and tasks (two event sources in one ansible-rulebook process):
    a secret stays masked until the last open scope ends, never dropped while another scope may still print it.
    """
    with _lock:
        _state["open"] += 1
        if _state["forms"] is None:
            _state["forms"] = set()
    try:
        yield
    finally:
        with _lock:
            _state["open"] -= 1
            if not _state["open"]:
                _state["forms"] = None


def register(*values):
    """Remember ``values`` (strings or bytes; others are ignored) as secrets of the scope in progress."""
    forms = set()
    for value in values:
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        if not isinstance(value, str):
            continue
        parts = {value, value.strip()}
        if "\n" in value:
            parts |= {line.strip() for line in value.splitlines() if len(line.strip()) >= MIN_LINE_LENGTH}
        for part in parts:
            if len(part) >= MIN_LENGTH:
                forms |= encodings(part)
    with _lock:
        if _state["forms"] is not None:
            _state["forms"] |= forms


def register_basic_auth(user, password):
    """A ``user:password`` pair: its base64 is what an ``Authorization: Basic`` header carries."""
    if isinstance(user, str) and isinstance(password, str):
        register(password, f"{user}:{password}")


def encodings(value):
    """``value`` as it can appear in a server's answer, a URL, JSON, a Python repr or a header."""
    json_escaped = json.dumps(value)[1:-1]
    forms = {value, quote(value, safe=""), quote(value), quote_plus(value), json_escaped,
             json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(json_escaped)[1:-1], repr(value)[1:-1],
             html.escape(value), html.escape(value, quote=False)}
    raw = value.encode("utf-8", errors="replace")
    if not value.isascii():
        # UTF-8 bytes read as ISO-8859-1: what requests gives for a text/* body without a charset.
        forms.add(raw.decode("latin-1"))
    for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        forms |= {encoded, encoded.rstrip("=")}
    return {form for form in forms if len(form) >= MIN_LENGTH}


def scrub(text):
    """``text`` with every registered secret (in every encoding) replaced by ``MASK``; other values as they are."""
    if not isinstance(text, str):
        return text
    with _lock:
        forms = sorted(_state["forms"] or (), key=len, reverse=True)
    for form in forms:
        if form in text:
            text = text.replace(form, MASK)
    return text


def excerpt(text, width=200):
    """What a message may quote of a text a server sent: scrubbed first, then one line of at most ``width``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = scrub(str(text)).strip().replace("\r", " ").replace("\n", " ")
    return text if len(text) <= width else f"{text[:width]}... ({len(text)} characters)"


def scrub_exception(exc):
    """Scrub the message of ``exc`` and of the exceptions it was raised from, in place."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        try:
            exc.args = tuple(scrub(arg) for arg in exc.args)
        except (AttributeError, TypeError):  # an exception type whose args cannot be set
            pass
        exc = exc.__cause__ or exc.__context__


def scrubbing(warn):
    """``warn`` that scrubs each message first."""
    return lambda message: warn(scrub(message))
