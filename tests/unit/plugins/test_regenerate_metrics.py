"""The regenerate endpoint's GET /healthz and GET /metrics: its counts, from a registry of its own."""

from __future__ import annotations

import asyncio

from aiohttp import ClientSession
from aiohttp.test_utils import TestServer
from prometheus_client import REGISTRY, parser

from ansible_collections.aifactory.topology.extensions.eda.plugins.event_source import regenerate
from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda

TOKEN = "a-token-of-32-characters-for-tests"


def samples(text):
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in parser.text_string_to_metric_families(text) for sample in family.samples}


def test_metrics_count_accepted_refused_and_debounced_runs_and_show_no_token():
    emitted = []

    async def put(event):
        emitted.append(event)

    async def main():
        debouncer = _eda.Debouncer(put, regenerate.SOURCE, delay=0, max_wait=0)
        debouncer.start()
        stats = _eda.SourceStats("endpoint", lambda _message: None)
        server = TestServer(regenerate.application(debouncer, TOKEN, stats), host="127.0.0.1")
        await server.start_server()
        try:
            async with ClientSession() as session:
                async with session.get(server.make_url("/metrics")) as answer:
                    before = await answer.text()
                    content_type = answer.headers["Content-Type"]
                for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {TOKEN}"}):
                    async with session.post(server.make_url(regenerate.PATH), headers=headers) as answer:
                        await answer.read()
                for _attempt in range(1000):  # the debouncer's task puts the event on the loop: yield to it
                    if emitted:
                        break
                    await asyncio.sleep(0)
                async with session.get(server.make_url("/healthz")) as answer:
                    health = (answer.status, await answer.text())
                async with session.get(server.make_url("/metrics")) as answer:
                    after = await answer.text()
        finally:
            await server.close()
            await debouncer.stop()
        return before, content_type, health, after

    before, content_type, health, after = asyncio.run(main())
    assert content_type.startswith("text/plain") and health == (200, "ok")
    prefix = regenerate.METRIC_PREFIX
    first = samples(before)
    assert first[(prefix + "requests_accepted_total", ())] == 0
    assert first[(prefix + "last_request_timestamp_seconds", ())] == 0
    found = samples(after)
    assert found[(prefix + "requests_accepted_total", ())] == 1
    assert found[(prefix + "requests_refused_total", (("reason", "a request without a valid token"),))] == 2
    assert found[(prefix + "runs_total", ())] == 1 and len(emitted) == 1
    assert found[(prefix + "pending_changes", ())] == 0
    assert found[(prefix + "last_request_timestamp_seconds", ())] > 0
    assert TOKEN not in after and "wrong" not in after
    # A private registry: nothing of the endpoint's leaks into the process-wide one.
    assert not any(name.startswith(prefix) for name in REGISTRY._names_to_collectors)  # pylint: disable=protected-access
