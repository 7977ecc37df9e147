"""The contract every cloud provider keeps, one suite parametrized over the provider registry.

For each provider of ``_providers/_specs.PROVIDERS`` that takes ``params.instances`` (each must
have a case in ``fake_clouds.CONTRACT``, its API on 127.0.0.1): a timeout is retried a bounded
number of times, then reported; 5xx likewise; a 429's Retry-After is honoured before 5xx backoff,
and capped; a page that repeats itself stops with an error instead of looping; a malformed body
fails the module and writes nothing; an error never shows the credential, even when the server
echoes it; one unusable record quarantines its node only. What is particular to one provider (its
paging parameters, its tiers, its credential chain) stays in its own ``test_provider_<name>.py``.
aws (EC2's XML through botocore) and oci (every request signed by the OCI SDK, the signature
checked by the fake server) keep the contract too, each API answering in its own error format; only
the listing request gets the injected replies (``CloudCase.serve``). nebius keeps it over gRPC (a
local gRPC server, the Nebius SDK's messages): an HTTP status is the gRPC code that stands for it
(503 and 502 UNAVAILABLE, 429 RESOURCE_EXHAUSTED with Retry-After as the server pushback trailer,
401 UNAUTHENTICATED, 500 INTERNAL), a timeout the call's deadline, a malformed body bytes that do
not decode, the echoed credential the ``authorization`` metadata.
"""

from __future__ import annotations

import re

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError
from ansible_collections.aifactory.topology.plugins.module_utils._providers._specs import PROVIDERS
from tests.integration.fake_apis import HANG, Pages, discover, slurm_topology_run
from tests.integration.fake_clouds import CONTRACT

CLOUDS = [name for name, provider in PROVIDERS.items() if "instances" in provider.params.argument_spec]
CASES = [name for name in CLOUDS if name in CONTRACT]


def test_every_cloud_provider_keeps_the_contract():
    """A cloud provider added to the registry without a case fails here, whatever it speaks (HTTP or gRPC)."""
    assert sorted(set(CLOUDS) - set(CONTRACT)) == []
    assert sorted(CONTRACT) == sorted(CLOUDS)


@pytest.fixture
def fake_api(fake_http, fake_grpc):
    """``fake_api(case, route)``: the case's fake server (HTTP or gRPC) answering through ``route``."""
    return lambda case, route: case.start(fake_http, fake_grpc, route)


def listings(case, server):
    """The listing requests ``server`` received."""
    return [request for request in server.requests if case.is_listing(request)]


def requested(case, *ids):
    return [{"region": case.region, "instances": {instance_id: f"n-{instance_id}" for instance_id in ids}}]


@pytest.mark.parametrize("name", CASES)
def test_timeouts_are_retried_a_bounded_number_of_times_then_reported(name, fake_api, sleeps):
    case = CONTRACT[name]
    server = fake_api(case, case.serve(lambda request: HANG))
    with pytest.raises(RemoteAPIError, match=rf"{case.timeout_words} after 2 attempts"):
        discover(name, dict(case.params(server, requested(case, "i-a")), timeout=0.3, retry_attempts=2), case.creds)
    assert len(listings(case, server)) == 2


@pytest.mark.parametrize("name", CASES)
def test_5xx_retries_are_bounded(name, fake_api, sleeps):
    case = CONTRACT[name]
    server = fake_api(case, case.serve(lambda request: case.error_reply(503, message="unavailable")))
    with pytest.raises(RemoteAPIError, match=rf"{case.said(503)} after 3 attempts"):
        discover(name, dict(case.params(server, requested(case, "i-a")), retry_attempts=3), case.creds)
    assert len(listings(case, server)) == 3 and len(sleeps) == 2


@pytest.mark.parametrize("name", CASES)
def test_retry_after_is_honoured_then_5xx_backs_off(name, fake_api, sleeps):
    case = CONTRACT[name]
    records = [case.record("i-a", True)]
    served = case.route(records)
    errors = Pages(case.error_reply(429, {"Retry-After": "3"}, "slow down"), case.error_reply(502, message="oops"))
    server = fake_api(case, case.serve(lambda request: errors(request) if errors.calls < 2 else served(request), records))
    topology, _warnings = discover(name, dict(case.params(server, requested(case, "i-a")), retry_backoff=0.5,
                                              retry_after_max=60), case.creds)
    assert sleeps == [3.0, 1.0] and topology.nodes["n-i-a"].switch == "leaf"


@pytest.mark.parametrize("name", CASES)
def test_retry_after_is_capped(name, fake_api, sleeps):
    case = CONTRACT[name]
    records = [case.record("i-a", True)]
    served = case.route(records)
    errors = Pages(case.error_reply(429, {"Retry-After": "86400"}))
    server = fake_api(case, case.serve(lambda request: errors(request) if errors.calls < 1 else served(request), records))
    discover(name, dict(case.params(server, requested(case, "i-a")), retry_after_max=30), case.creds)
    assert sleeps == [30]


@pytest.mark.parametrize("name", CASES)
def test_a_page_that_repeats_itself_stops_with_an_error(name, fake_api):
    case = CONTRACT[name]
    server = fake_api(case, case.repeating([case.record("i-a", True)]))
    with pytest.raises(RemoteAPIError, match=case.repeated_words):
        discover(name, case.params(server, requested(case, "i-a")), case.creds)
    assert len(listings(case, server)) == 2


@pytest.mark.parametrize("name", CASES)
def test_a_malformed_body_fails_the_module_and_writes_nothing(name, fake_api, monkeypatch, tmp_path):
    case = CONTRACT[name]
    server = fake_api(case, case.serve(case.malformed))
    dest = tmp_path / "topology.conf"
    result = slurm_topology_run(monkeypatch, name, case.params(server, requested(case, "i-a")), dest, case.creds)
    assert result["failed"] and case.malformed_words in result["msg"] and not dest.exists()


@pytest.mark.parametrize("status", [401, 500])
@pytest.mark.parametrize("name", CASES)
def test_an_error_never_shows_the_credential_even_when_the_server_echoes_it(name, status, fake_api, monkeypatch,
                                                                            tmp_path):
    case = CONTRACT[name]
    server = fake_api(case, case.serve(lambda request: case.error_reply(
        status, message=f"bad credential {case.secret} ({request.headers})")))
    with pytest.raises(RemoteAPIError) as caught:
        discover(name, dict(case.params(server, requested(case, "i-a")), retry_attempts=1), case.creds)
    assert case.secret not in str(caught.value) and re.search(case.said(status), str(caught.value))
    result = slurm_topology_run(monkeypatch, name, dict(case.params(server, requested(case, "i-a")), retry_attempts=1),
                                tmp_path / "topology.conf", case.creds)
    assert result["failed"] and case.secret not in repr(result)


@pytest.mark.parametrize("name", CASES)
def test_one_unusable_record_quarantines_its_node_and_the_others_are_mapped(name, fake_api):
    case = CONTRACT[name]
    server = fake_api(case, case.route([case.record("i-a", True), case.record("i-b", False), case.record("i-c", True)]))
    topology, warnings = discover(name, case.params(server, requested(case, "i-a", "i-b", "i-c")), case.creds)
    assert sorted(topology.nodes) == ["n-i-a", "n-i-c"] and topology.nodes["n-i-a"].switch == "leaf"
    assert list(topology.quarantined) == ["n-i-b"]
    assert [entry["source"] for entry in topology.quarantine_report()] == [name]
    assert any("quarantined" in warning and "n-i-b" in warning for warning in warnings)
