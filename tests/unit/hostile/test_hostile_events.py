"""The event sources against a hostile kube-apiserver (tests/fault_k8s.py) and a hostile scontrol.

One bad message is one bad message: counted, logged (clipped) and skipped, and the source keeps
watching. Floods are bounded: a huge line is dropped as it streams, endless continue tokens and
endless new objects stop at their caps, and a server that fails every watch is retried with a
growing wait, never in a busy loop. Each class has its test here; the watcher runs on a thread
against the local server and the test waits on the server's requests, never on the clock.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import tracemalloc

import pytest
from aiohttp import ClientSession
from aiohttp.test_utils import TestServer

from ansible_collections.aifactory.topology.extensions.eda.plugins.event_source import (
    k8s_nodes,
    regenerate,
    slurm_nodes,
)
from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._events import k8s_watch as _k8s_watch
from tests.fault_k8s import FakeApiServer, OneChunk, event_lines, node_list, scripted
from tests.unit.helpers import gone_or_zombie


CLIQUE = "nvidia.com/gpu.clique"
WAIT = 30  # seconds: a bound on every wait, never a measure


def node(name, version, clique="a.1", **extra):
    return dict({"metadata": {"name": name, "resourceVersion": version, "labels": {CLIQUE: clique}}}, **extra)


def added(name, version, clique="a.1"):
    return {"type": "ADDED", "object": node(name, version, clique)}


@pytest.fixture
def api():
    with FakeApiServer() as server:
        yield server


class Running:
    """A ResourceWatcher's ``run`` on a thread, as the source runs it; ``stop()`` ends it and returns its error."""

    def __init__(self, api, kind="node", **kwargs):
        config, _origin = _k8s.configuration({"host": api.url(), "api_key": "t0ken-never-logged"})
        self.client = _k8s.K8sClient(config, timeout=10)
        self.emitted, self.logged, self.errors = [], [], []
        settings = {"watched_labels": [CLIQUE], "backoff_min": 0, "backoff_max": 0, "log": self.logged.append}
        settings.update(kwargs)
        self.watcher = _k8s_watch.ResourceWatcher(self.client, kind, self.emitted.append, **settings)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        try:
            self.watcher.run()
        except BaseException as exc:  # pylint: disable=broad-exception-caught  # the test asserts on it
            self.errors.append(exc)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self.watcher.stop()
        self.thread.join(WAIT)
        self.client.close()
        assert not self.thread.is_alive(), "the watcher did not stop"
        return self.errors


def watching_again(api, count):
    """Wait until the watcher made its ``count``-th watch request: it has handled every earlier stream."""
    assert api.wait_for(lambda: len(api.watch_requests()) >= count, WAIT), api.calls


# -- one bad message is one bad message ------------------------------------------------------

BAD_LINES = [
    (b"\x00\xff this is no JSON {\n", "not a watch event (JSON with type and object)"),
    (b"[1, 2, 3]\n", "not a watch event (JSON with type and object)"),
    (b'{"type": "ADDED"}\n', "not a watch event (JSON with type and object)"),
    (b"[" * 100_000 + b"]" * 100_000 + b"\n", "not a watch event (JSON with type and object)"),
    (b'{"type": "ADDED", "object": [1]}\n', "a ADDED event whose object is not an object"),
    (b'{"type": "EXPLODED", "object": {}}\n', "an unknown event type"),
    (b'{"type": "ERROR", "object": {"kind": "Status", "reason": "Expired"}}\n',
     "an ERROR event without an integer code"),
    (b'{"type": "ERROR", "object": {"code": "410"}}\n', "an ERROR event without an integer code"),
    (json.dumps({"type": "ADDED", "object": {"metadata": {"labels": {}}}}).encode() + b"\n",
     "metadata.name is not a name of 1-253 characters"),
    (json.dumps({"type": "ADDED", "object": {"metadata": {"name": "n" * 254}}}).encode() + b"\n",
     "metadata.name is not a name of 1-253 characters"),
    (json.dumps({"type": "ADDED", "object": {"metadata": "n1"}}).encode() + b"\n", "metadata is not an object"),
    (json.dumps({"type": "MODIFIED", "object": {"metadata": {"name": "n1", "labels": ["x"]}}}).encode() + b"\n",
     "metadata.labels is not an object"),
    (json.dumps({"type": "MODIFIED", "object": node("n1", "9", clique=7)}).encode() + b"\n",
     f"label {CLIQUE} is not a string"),
    (json.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": ["9"]}}}).encode() + b"\n",
     "metadata.resourceVersion is not a resourceVersion"),
]


@pytest.mark.parametrize("line, reason", BAD_LINES, ids=[
    "garbage", "json-list", "no-object", "deep-json", "object-not-object", "unknown-type", "error-without-code",
    "error-code-string", "no-name", "long-name", "metadata-string", "labels-list", "label-not-string",
    "bookmark-version-list"])
def test_one_bad_line_is_counted_logged_and_skipped_and_the_watch_goes_on(api, line, reason):
    api.lists = lambda query: node_list([node("n1", "1")], version="5")
    api.watches = scripted([event_lines(line, added("n2", "6"), b"\n")])
    with Running(api) as running:
        watching_again(api, 2)
        errors = running.stop()
    assert errors == []
    assert running.watcher.stats.bad_messages == {reason: 1}
    assert [(c["name"], c["change"]) for c in running.emitted] == [("n2", "added")]
    assert api.watch_requests()[1]["resourceVersion"] == "6"  # resumed after the good event
    assert running.watcher.known == {"n1": {CLIQUE: "a.1"}, "n2": {CLIQUE: "a.1"}}
    [log] = running.logged
    assert log.startswith(f"node watch: skipped a bad message ({reason})") and len(log) < 400


def test_a_flood_of_bad_lines_is_counted_and_only_the_first_are_logged(api):
    api.watches = scripted([event_lines(*[b"garbage %d\n" % n for n in range(1000)], added("n1", "2"))])
    with Running(api) as running:
        watching_again(api, 2)
    assert running.watcher.stats.bad_messages == {"not a watch event (JSON with type and object)": 1000}
    assert len(running.logged) == _eda.LOGGED_BAD_MESSAGES
    assert "more in this period are only counted" in running.logged[-1]
    summary = running.watcher.stats.summary()
    assert "1000 bad messages (1000 not a watch event" in summary and "1 events" in summary
    running.watcher.stats.bad(_eda.BadMessage("later"))  # a new period logs again
    assert running.logged[-1].startswith("node watch: skipped a bad message (later)")


def test_list_items_that_are_not_objects_are_bad_messages_and_the_rest_is_listed(api):
    api.lists = lambda query: node_list([1, "n9", None, [node("x", "1")], {"metadata": {}}, node("n1", "3")])
    with Running(api) as running:
        watching_again(api, 1)
    assert running.watcher.known == {"n1": {CLIQUE: "a.1"}}
    assert sum(running.watcher.stats.bad_messages.values()) == 5


def test_pod_objects_of_the_wrong_shape_are_bad_messages(api):
    pod = {"metadata": {"name": "slurmd-0", "namespace": "slurm", "resourceVersion": "2"},
           "spec": {"nodeName": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    bad = [dict(pod, status=["Ready"]), dict(pod, spec={"nodeName": 5}), dict(pod, metadata={"name": "p"}),
           dict(pod, status={"conditions": "Ready"})]
    api.lists = lambda query: {"kind": "PodList", "items": [], "metadata": {"resourceVersion": "1"}}
    api.watches = scripted([event_lines(*[{"type": "ADDED", "object": obj} for obj in bad + [pod]])])
    with Running(api, kind="pod", namespace="slurm") as running:
        watching_again(api, 2)
    assert running.watcher.stats.bad_messages == {"status is not an object": 1, "spec.nodeName is not a name of "
                                                  "1-253 characters": 1, "metadata.namespace is not a name of "
                                                  "1-253 characters": 1, "status.conditions is not a list": 1}
    assert running.emitted == [{"kind": "pod", "name": "slurm/slurmd-0", "change": "added", "node": "n1",
                                "ready": True}]


def test_label_values_of_megabytes_are_clipped_in_events(api):
    huge = "c" * (1 << 20)
    api.watches = scripted([event_lines(added("n1", "2", clique=huge))])
    with Running(api) as running:
        watching_again(api, 2)
    [change] = running.emitted
    assert change["labels"][CLIQUE] == "c" * 63 + f"... ({1 << 20} characters)"


def test_an_error_event_with_a_code_still_ends_the_watch_as_the_api_says(api):
    # 403 in the stream: the credentials were refused, which the docs say ends the source.
    error = {"type": "ERROR", "object": {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "no"}}
    api.watches = scripted([event_lines(error)])
    with Running(api) as running:
        running.thread.join(WAIT)
    [error] = running.errors
    assert isinstance(error, _k8s_watch.WatchFatal) and "HTTP 403 Forbidden: no" in str(error)


# -- floods: bounded memory -------------------------------------------------------------------

@pytest.mark.parametrize("chunks", ["many-chunks", "one-chunk"])
def test_a_huge_line_is_dropped_as_it_streams_without_being_held(api, chunks):
    size, piece = 32 << 20, b"x" * (64 << 10)
    body = [piece] * (size // len(piece)) if chunks == "many-chunks" else [OneChunk(piece, size // len(piece))]
    api.watches = scripted([[*body, b"\n", *event_lines(added("n1", "2"))]])
    tracemalloc.start()
    try:
        with Running(api, max_line=1 << 20) as running:
            watching_again(api, 2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert running.watcher.stats.bad_messages == {"a line of more than 1048576 bytes": 1}
    assert [c["name"] for c in running.emitted] == ["n1"]
    assert peak < 12 << 20, f"{peak} bytes at the peak for a {size}-byte line"


def test_a_repeated_continue_token_stops_paging(api):
    api.lists = lambda query: node_list([node(f"n{query.get('continue', '0')}", "1")], token="same")
    with pytest.raises(_k8s.K8sError, match="repeated a continue token; stopped paging"):
        Running(api).watcher.list_state()
    assert len(api.list_requests()) == 2


def test_endless_new_continue_tokens_stop_at_max_pages(api):
    api.lists = lambda query: node_list([], token=str(int(query.get("continue", "0")) + 1))
    with pytest.raises(_k8s.K8sError, match="more than 7 pages; stopped paging"):
        Running(api, max_pages=7).watcher.list_state()
    assert len(api.list_requests()) == 7


def test_endless_new_objects_stop_at_max_objects(api):
    def pages(query):
        page = int(query.get("continue", "0"))
        return node_list([node(f"n{page}-{i}", "1") for i in range(500)], token=str(page + 1))

    api.lists = pages
    with pytest.raises(_k8s.K8sError, match="more than 1000 nodes match; raise max_objects"):
        Running(api, max_objects=1000).watcher.list_state()
    assert len(api.list_requests()) == 3
    api.lists = lambda query: node_list([node("n1", "1")])
    api.watches = scripted([event_lines(*[added(f"new{n}", str(n + 2)) for n in range(50)])])
    with Running(api, max_objects=10) as running:
        watching_again(api, 2)
    assert len(running.watcher.known) == 10 and len(running.emitted) == 9
    assert running.watcher.stats.bad_messages == {"more than 10 nodes; not remembered": 41}


# -- floods: bounded CPU ------------------------------------------------------------------------

def test_a_heartbeat_flood_makes_no_event_no_log_line_and_no_typed_object(api, monkeypatch):
    deserialized = []
    monkeypatch.setattr("kubernetes.client.ApiClient.deserialize", lambda *args, **kwargs: deserialized.append(1))
    api.lists = lambda query: node_list([node("n1", "1")])
    beats = [{"type": "MODIFIED", "object": node("n1", str(n), status={"conditions": [{"type": "Ready"}]})}
             for n in range(2, 20_002)]
    api.watches = scripted([event_lines(*beats)])
    with Running(api) as running:
        watching_again(api, 2)
    assert running.emitted == [] and running.logged == [] and deserialized == []
    assert running.watcher.stats.counts == {"lists": 1, "events": 20_000}
    assert len(api.list_requests()) == 1 and api.watch_requests()[1]["resourceVersion"] == "20001"


GONE = event_lines({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                                "message": "too old resource version: 1 (2)"}})


REFUSED = event_lines({"type": "ERROR", "object": {"kind": "Status", "code": 400, "reason": "BadRequest",
                                                   "message": "a proxy did not like it"}})


@pytest.mark.parametrize("answer, relists", [
    (GONE, True), ((410, b'{"kind": "Status", "code": 410}'), True), ((500, b"x" * (1 << 20)), False),
    ([], False), (event_lines(b"garbage\n"), False),
    (REFUSED, True), ((404, b'{"kind": "Status", "code": 404, "reason": "NotFound"}'), True)],
    ids=["410-event", "410-status", "500", "closed-at-once", "garbage-only", "400-event", "404-status"])
def test_a_server_that_fails_every_watch_gets_a_growing_wait_not_a_busy_loop(api, answer, relists):
    api.watches = lambda query: answer
    delays = []

    def sleep(seconds):
        delays.append(seconds)
        if len(delays) == 7:
            running.watcher.stop()

    running = Running(api, backoff_min=0.001, backoff_max=0.008, sleep=sleep)
    with running:
        running.thread.join(WAIT)
        assert not running.thread.is_alive(), "a busy loop: the watcher never waited"
    assert running.errors == []
    assert delays == [0.001, 0.002, 0.004, 0.008, 0.008, 0.008, 0.008]
    assert len(api.list_requests()) == (7 if relists else 1)  # the first list, then one per 410, 400 or 404
    assert all(len(line) < 600 for line in running.logged)


@pytest.mark.parametrize("status", [400, 404])
def test_a_refused_watch_lists_again_and_only_a_list_refused_the_same_way_ends_the_source(api, status):
    # One refused watch (a proxy, a server mid-upgrade) is one bad answer; a list refused for what it asks
    # (its selector, the resource) is the source's options, which waiting cannot fix.
    refused = (status, json.dumps({"kind": "Status", "code": status, "reason": "Refused"}).encode())
    api.lists = scripted([node_list([node("n1", "1")]), node_list([node("n1", "1")]), refused])
    api.watches = lambda query: refused
    with Running(api, backoff_min=0.001, backoff_max=0.001, sleep=lambda seconds: None) as running:
        running.thread.join(WAIT)
    [error] = running.errors
    assert isinstance(error, _k8s_watch.WatchFatal)
    assert str(error).startswith("node list: ") and str(status) in str(error)
    assert len(api.watch_requests()) == 2 and len(api.list_requests()) == 3
    assert running.logged[0].startswith(f"node watch: refused (HTTP {status}")


def test_a_readyz_that_drips_is_given_up_at_ready_timeout_not_when_the_server_ends_it(api):
    # The client's timeouts are per socket read: a byte a second never trips them. The probe has
    # what is left of ready_timeout in total, so the wait ends while the server still drips.
    api.readyz = "drip"
    config, _origin = _k8s.configuration({"host": api.url(), "api_key": "t0ken-never-logged"})
    with pytest.raises(_eda.RemoteAPIError, match=r"is not ready after 1 s \(no complete answer in time\)"):
        _k8s_watch.wait_ready(_k8s.K8sClient(config), 1)
    assert not api.readyz_answered.is_set()


def test_an_expired_watch_after_events_lists_again_at_once(api):
    api.lists = scripted([node_list([node("n1", "1")]), node_list([node("n1", "9", "a.2")], version="9")],
                         then=node_list([node("n1", "9", "a.2")], version="9"))
    api.watches = scripted([event_lines(added("n2", "2"), *GONE)])
    with Running(api, sleep=lambda seconds: pytest.fail("waited after an expired watch that delivered events")) \
            as running:
        watching_again(api, 2)
    assert [(c["name"], c["change"]) for c in running.emitted] == [("n2", "added"), ("n1", "modified"),
                                                                   ("n2", "removed")]
    assert api.watch_requests()[1]["resourceVersion"] == "9"


# -- the whole source, as ansible-rulebook runs it -------------------------------------------------

def run_source_until_an_event(source_main, args):
    """Run an event source's ``main`` until it puts its first event; the events (the source must still run)."""
    events = []

    async def main():
        arrived = asyncio.Event()

        class Queue:
            @staticmethod
            async def put(event):
                events.append(event[_eda.EVENT_KEY])
                arrived.set()

        source = asyncio.ensure_future(source_main(Queue(), args))
        await asyncio.wait([source, asyncio.ensure_future(arrived.wait())], timeout=WAIT,
                           return_when=asyncio.FIRST_COMPLETED)
        source.cancel()
        await asyncio.gather(source, return_exceptions=True)
        return source

    source = asyncio.run(main())
    assert source.cancelled(), source.exception()  # still running when the event came: cancelled, not failed
    return events


def test_the_k8s_source_survives_garbage_and_says_what_it_skipped(api, caplog):
    api.lists = lambda query: node_list([node("n1", "1")])
    api.watches = scripted([event_lines(b"garbage\n", {"type": "ADDED", "object": {"metadata": {}}},
                                        {"type": "ERROR", "object": {"reason": "no code"}}, b"[1]\n",
                                        added("n2", "2"))])
    with caplog.at_level(logging.INFO, logger=k8s_nodes.SOURCE):
        events = run_source_until_an_event(k8s_nodes.main, {
            "host": api.url(), "api_key": "t0ken-never-logged", "delay": 0.01, "max_wait": 0.01,
            "initial_sync": False, "backoff_min": 0, "stats_interval": 0.01})
    assert [c["name"] for c in events[0]["changes"]] == ["n2"]
    text = caplog.text
    assert text.count("skipped a bad message") == 4
    assert "ending; node watch: 1 events, 1 lists; 4 bad messages" in text
    assert "t0ken-never-logged" not in text


# -- the Slurm source against a hostile scontrol ----------------------------------------------------

def scontrol(tmp_path, *outputs):
    """An scontrol that prints ``outputs`` (bytes) on successive calls, the last one ever after."""
    for number, output in enumerate(outputs, start=1):
        (tmp_path / f"out{number}").write_bytes(output)
    script = tmp_path / "scontrol"
    script.write_text(f"#!/bin/sh\ncd '{tmp_path}'\nn=$(cat calls 2>/dev/null || echo 0); n=$((n + 1))\n"
                      f"echo $n > calls\n[ $n -gt {len(outputs)} ] && n={len(outputs)}\ncat out$n\n")
    script.chmod(0o755)
    return [str(script)]


def slurm_args(command, **overrides):
    return _eda.source_args(slurm_nodes.SOURCE, dict({"scontrol": command}, **overrides), slurm_nodes.SPEC)


def nodes_json(*records):
    return json.dumps({"nodes": list(records), "errors": []}).encode()


def test_bad_scontrol_node_records_are_one_bad_message_each(tmp_path):
    output = nodes_json({"name": "a", "state": ["IDLE"]}, {"state": ["DOWN"]}, "b", None, {"name": ""},
                        {"name": "n" * 300}, {"name": ["c"]}, {"name": "d", "state": {"odd": 1}})
    logged = []
    stats = _eda.SourceStats("scontrol poll", logged.append)
    # A node whose state cannot be read is never taken as up (issue 32): down, and one bad message.
    assert asyncio.run(slurm_nodes.poll(slurm_args(scontrol(tmp_path, output)), stats)) == {"a": "up", "d": "down"}
    assert stats.bad_messages == {"a node record is not an object": 2, "a node record's name is not a name of "
                                  "1-253 characters": 4, "a node record's state is not a list of Slurm state words": 1}
    assert len(logged) == _eda.LOGGED_BAD_MESSAGES and all(len(line) < 400 for line in logged)


@pytest.mark.parametrize("output, message", [
    (b"[" * 100_000 + b"]" * 100_000, r"scontrol show nodes --json did not print valid JSON: nested too deeply$"),
    (b"\xff\xfe garbage", "scontrol show nodes --json did not print valid JSON: "),
    (json.dumps({"nodes": [], "errors": {"description": "x" * 10_000}}).encode(), r"reported errors: .{1,260}$"),
    (b'{"nodes": "all of them"}', "no 'nodes' list"),
], ids=["deep-json", "garbage", "errors-not-a-list", "nodes-not-a-list"])
def test_unusable_scontrol_output_is_one_failed_poll_with_a_clear_message(tmp_path, output, message):
    with pytest.raises(_eda.RemoteAPIError, match=message):
        asyncio.run(slurm_nodes.poll(slurm_args(scontrol(tmp_path, output))))


def test_endless_scontrol_output_stops_at_max_output_and_the_command_is_killed(tmp_path):
    script = tmp_path / "scontrol"
    script.write_text(f"#!/bin/sh\necho $$ > '{tmp_path}/pid'\nexec yes '{{\"nodes\": ['\n")
    script.chmod(0o755)
    with pytest.raises(_eda.RemoteAPIError, match=r"printed more than 100000 bytes; it was killed \(raise max_output\)"):
        asyncio.run(slurm_nodes.poll(slurm_args([str(script)], max_output=100_000, command_timeout=WAIT)))
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(pid, 0)


def test_a_wrapper_whose_child_holds_the_pipes_is_killed_with_the_child_at_command_timeout(tmp_path):
    # ssh ctl scontrol, a shell script: the wrapper ends, its child keeps stdout open and hangs.
    pidfile = tmp_path / "child.pid"
    wrapper = ["/bin/sh", "-c", f"sleep 300 & echo $! > '{pidfile}'; exit 0", "ssh-like"]
    with pytest.raises(_eda.RemoteAPIError, match="did not finish within 1 s; it was killed with every process it "
                       "started"):
        asyncio.run(slurm_nodes.poll(slurm_args(wrapper, command_timeout=1)))
    assert gone_or_zombie(int(pidfile.read_text()))


def test_a_poll_cancelled_while_scontrol_hangs_kills_it_at_once(tmp_path):
    # The script says its pid through a FIFO: the test knows it runs without waiting on the clock.
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    hung = ["/bin/sh", "-c", f"echo $$ > '{fifo}'; exec sleep 300", "scontrol-like"]

    async def main():
        polling = asyncio.ensure_future(slurm_nodes.poll(slurm_args(hung, command_timeout=300)))
        pid = int(await asyncio.wait_for(asyncio.to_thread(fifo.read_text), WAIT))
        polling.cancel()
        with pytest.raises(asyncio.CancelledError):
            await polling
        return pid

    assert gone_or_zombie(asyncio.run(main()))


def test_the_slurm_source_keeps_polling_through_bad_output_and_says_what_it_skipped(tmp_path, caplog):
    good = nodes_json({"name": "a", "state": ["IDLE"]}, {"name": "b", "state": ["IDLE"]})
    command = scontrol(tmp_path, good, b"no JSON at all", nodes_json({"name": "a", "state": ["DOWN"]}, {"state": 1},
                                                                     {"name": "b", "state": ["IDLE"]}))
    with caplog.at_level(logging.INFO, logger=slurm_nodes.SOURCE):
        events = run_source_until_an_event(slurm_nodes.main, {
            "scontrol": command, "interval": 0.01, "delay": 0.01, "max_wait": 0.01, "initial_sync": False})
    assert [(c["name"], c["change"]) for c in events[0]["changes"]] == [("a", "down")]
    text = caplog.text
    assert text.count("did not print valid JSON") == 1 and text.count("skipped a bad message") >= 1
    assert "ending; scontrol poll: 1 failed polls" in text and "bad messages (" in text


# -- the regenerate endpoint against hostile clients ----------------------------------------------

def test_the_regenerate_endpoint_answers_every_bad_request_counts_it_and_logs_only_the_first(tmp_path):
    token = "a-token-of-32-characters-for-tests"
    changes, logged = [], []

    class Debouncer:
        pending = 0

        @staticmethod
        def add(change):
            changes.append(change)

    stats = _eda.SourceStats("endpoint", logged.append)
    bad = [({}, b""), ({"Authorization": "Bearer wrong"}, b""), ({"Authorization": f"Basic {token}"}, b"")] * 30
    good = {"Authorization": f"Bearer {token}"}
    bad += [(good, b"x" * (regenerate.MAX_BODY + 1)), (good, b"{not json"), (good, b"[" * 50_000),
            (good, b'["reason"]'), (good, b'{"reason": 5}')]

    async def main():
        server = TestServer(regenerate.application(Debouncer(), token, stats), host="127.0.0.1")
        await server.start_server()
        try:
            async with ClientSession() as session:
                statuses = []
                for headers, body in bad + [(good, b'{"reason": "rack 7 replaced"}')]:
                    async with session.post(server.make_url(regenerate.PATH), headers=headers, data=body) as answer:
                        statuses.append(answer.status)
                return statuses
        finally:
            await server.close()

    statuses = asyncio.run(main())
    assert statuses == [401] * 90 + [413, 400, 400, 400, 400, 202]
    assert [c["reason"] for c in changes] == ["rack 7 replaced"]
    assert stats.bad_messages == {"a request without a valid token": 90, "a body too large": 1,
                                  "a body that is not JSON": 1, "a body nested too deeply": 1,
                                  "a body that is not an object with a string reason": 2}
    assert len(logged) == _eda.LOGGED_BAD_MESSAGES and token not in "".join(logged)
    assert "1 requests accepted; 95 bad messages" in stats.summary()
