"""The one scrubber (_base/secrets.py): what it masks, in which encodings, and for how long."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets

# The characters that make a secret hard to recognise once encoded: quotes, %, +, /, =, a backslash, unicode.
AWKWARD = 'tok"en\'%2F+/=\\é{{x}}'


def test_a_secret_is_masked_as_written_and_in_every_common_encoding():
    with secrets.scope():
        secrets.register(AWKWARD)
        forms = [AWKWARD, quote(AWKWARD, safe=""), quote_plus(AWKWARD), json.dumps(AWKWARD)[1:-1],
                 json.dumps(AWKWARD, ensure_ascii=False)[1:-1], repr(AWKWARD)[1:-1],
                 base64.b64encode(AWKWARD.encode()).decode(), json.dumps(json.dumps(AWKWARD)[1:-1])[1:-1]]
        for form in forms:
            assert secrets.scrub(f"before {form} after") == f"before {secrets.MASK} after", form


def test_basic_auth_pairs_and_pem_lines_are_masked_too():
    pem = "-----BEGIN PRIVATE KEY-----\n" + "A" * 64 + "\n" + "B" * 30 + "\n-----END PRIVATE KEY-----\n"
    with secrets.scope():
        secrets.register_basic_auth("admin", "pa:ss+word")
        secrets.register(pem)
        header = "Basic " + base64.b64encode(b"admin:pa:ss+word").decode()
        assert secrets.scrub(f"Authorization: {header}") == f"Authorization: Basic {secrets.MASK}"
        assert "A" * 64 not in secrets.scrub("line " + "A" * 64) and "B" * 30 not in secrets.scrub("B" * 30)


def test_excerpt_scrubs_before_it_clips_so_a_cut_secret_is_never_half_shown():
    token = "ya29.a-token-that-straddles-the-cut"
    with secrets.scope():
        secrets.register(token)
        text = "x" * 190 + token + "y" * 50
        shown = secrets.excerpt(text)
        assert "ya29" not in shown and shown.startswith("x" * 190 + secrets.MASK)


def test_the_registry_lives_for_one_scope_and_ignores_short_values_and_non_strings():
    with secrets.scope():
        secrets.register("abc", None, 12345, "long-enough-secret")
        assert secrets.scrub("abc long-enough-secret") == f"abc {secrets.MASK}"
    assert secrets.scrub("long-enough-secret") == "long-enough-secret"  # a later run keeps nothing
    secrets.register("outside-any-scope")
    with secrets.scope():
        assert secrets.scrub("outside-any-scope") == "outside-any-scope"


def test_an_exception_and_its_cause_are_scrubbed_in_place():
    with secrets.scope():
        secrets.register("s3cr3t-value")
        try:
            try:
                raise KeyError("inner s3cr3t-value")
            except KeyError as inner:
                raise RuntimeError("outer s3cr3t-value") from inner
        except RuntimeError as outer:
            secrets.scrub_exception(outer)
            assert str(outer) == f"outer {secrets.MASK}" and secrets.MASK in str(outer.__cause__)


def test_overlapping_scopes_keep_every_secret_until_the_last_one_ends():
    """Two event sources in one ansible-rulebook process: the first to end must not unmask the other's secrets."""
    first, second = secrets.scope(), secrets.scope()
    first.__enter__()
    secrets.register("first-source-secret")
    second.__enter__()
    secrets.register("second-source-secret")
    first.__exit__(None, None, None)
    assert secrets.scrub("second-source-secret") == secrets.MASK
    second.__exit__(None, None, None)
    assert secrets.scrub("second-source-secret first-source-secret") == "second-source-secret first-source-secret"
