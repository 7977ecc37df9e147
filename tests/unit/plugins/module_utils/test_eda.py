"""plugins/module_utils/_events/eda.py: argument checks, the trailing debounce, and what counts as a change."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import jinja2
import jinja2.nativetypes
import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError
from ...conftest_paths import REPO

SPEC = {"interval": {"type": "float", "default": 10.0}, "names": {"type": "list", "elements": "str", "default": ["a"]},
        "flag": {"type": "bool", "default": True}, "port": {"type": "int", "default": 1},
        "token": {"type": "str", "no_log": True}, **_eda.DEBOUNCE_SPEC}


def test_source_args_defaults_conversions_and_errors():
    args = _eda.source_args("src", {"interval": "2.5", "flag": "no", "port": "8080", "eda_feedback_queue": object()},
                            SPEC)
    assert (args["interval"], args["names"], args["flag"], args["port"], args["delay"], args["max_wait"]) == \
        (2.5, ["a"], False, 8080, 15.0, 120.0)
    with pytest.raises(TopologyError, match=r"^src has unknown keys: intervall; known: delay, flag"):
        _eda.source_args("src", {"intervall": 1}, SPEC)
    # ansible-core 2.19 names a type "str"; 2.17 and 2.18 "<class 'str'>".
    is_str = "is of type (str|<class 'str'>)"
    for bad, message in (({"interval": "soon"}, f"src: argument 'interval' {is_str} and we were unable to convert to float"),
                         ({"interval": -1}, "must be >= 0"),
                         ({"flag": "maybe"}, f"src: argument 'flag' {is_str} and we were unable to convert to bool"),
                         ({"port": "80.5"}, f"src: argument 'port' {is_str} and we were unable to convert to int"),
                         ({"names": [""]}, "non-empty strings")):
        with pytest.raises(TopologyError, match=message):
            _eda.source_args("src", bad, SPEC)


def test_source_args_take_none_as_the_default():
    # The rulebooks give an unset variable as ``default(None)``: the option's default, never the text "None".
    args = _eda.source_args("src", {"interval": None, "token": None, "names": None}, SPEC)
    assert (args["interval"], args["token"], args["names"]) == (10.0, None, ["a"])
    with pytest.raises(TopologyError, match="^src has unknown keys: other; known: "):
        _eda.source_args("src", {"other": None}, SPEC)


def test_source_args_refuse_what_the_validator_would_convert():
    # A boolean is no number, infinity no bound, a mapping no string: each an error naming the option.
    for bad, message in (({"port": True}, "src: option 'port' must be a number, not True"),
                         ({"interval": "inf"}, "src: option 'interval' must be >= 0, not 'inf'"),
                         ({"port": -3}, "src: option 'port' must be >= 0, not -3"),
                         ({"token": {"a": "b"}}, "src: option 'token' must be a string")):
        with pytest.raises(TopologyError, match=f"^{message}$"):
            _eda.source_args("src", bad, SPEC)


def test_source_args_mask_no_log_values():
    # The validator quotes a value it cannot convert; a no_log option's value never reaches the message.
    spec = {"token": {"type": "int", "no_log": True}}
    with pytest.raises(TopologyError, match=r"^src: argument 'token'") as info:
        _eda.source_args("src", {"token": "s3cr3t-t0ken-value"}, spec)
    assert "s3cr3t" not in str(info.value)
    # ansible-core 2.19 quotes the value it cannot convert (masked here); 2.17 and 2.18 do not quote it.
    assert "********" in str(info.value) or "cannot be converted to an int" in str(info.value)


def test_a_source_registers_its_no_log_options_within_its_own_scope_and_scrubs_the_error_that_ends_it():
    from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets

    spec = {"token": {"type": "str", "no_log": True}, "auth": {"type": "dict", "default": {}, "no_log": True}}

    @_eda.scrubbed
    async def main(queue, args):
        args = _eda.source_args("src", args, spec)
        raise RemoteAPIError(f"src: the server said: token {args['token']} refused at {args['auth']['host']}")

    with pytest.raises(RemoteAPIError) as info:
        asyncio.run(main(None, {"token": "s3cr3t-t0ken-value", "auth": {"host": "https://api.example:6443"}}))
    # The token masked; a no_log mapping is not masked whole (its host stays readable).
    assert str(info.value) == "src: the server said: token ******** refused at https://api.example:6443"
    assert secrets.scrub("s3cr3t-t0ken-value") == "s3cr3t-t0ken-value"  # the scope ended with the source


def test_undefined_rulebook_variable_is_named():
    # What ansible-rulebook hands over for "{{ name }}" when name is not defined.
    env = jinja2.nativetypes.NativeEnvironment(undefined=jinja2.StrictUndefined)
    undefined = env.from_string("{{ my_token }}").render({})
    with pytest.raises(TopologyError, match="option 'names': the rulebook variable 'my_token' is undefined"):
        _eda.source_args("src", {"names": [undefined]}, SPEC)


# Turns a debouncer that never puts an event into a failure; it measures nothing.
WAIT_LIMIT = 60


class Received(list):
    """The events the debouncer put, in order; ``until`` waits, woken by each put."""

    def __init__(self):
        super().__init__()
        self.arrived = asyncio.Event()

    async def put(self, event):
        self.append(event[_eda.EVENT_KEY])
        self.arrived.set()

    async def until(self, condition, what):
        """Return once ``condition()`` holds; fail naming ``what`` after WAIT_LIMIT seconds without it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_LIMIT
        while not condition():
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), max(0, deadline - loop.time()))
            except asyncio.TimeoutError:
                raise AssertionError(f"the debouncer put no {what} within {WAIT_LIMIT} s; "
                                     f"it put {list(self)}") from None


def run_debouncer(script, delay, max_wait):
    """Run ``script(debouncer, events)`` on a real event loop; the events (a Received) the debouncer put."""
    events = Received()

    async def main():
        debouncer = _eda.Debouncer(events.put, "src", delay=delay, max_wait=max_wait)
        debouncer.start()
        try:
            await script(debouncer, events)
        finally:
            await debouncer.stop()

    asyncio.run(main())
    return events


def test_a_burst_becomes_one_event_with_every_change():
    async def script(debouncer, events):
        for number in range(100):
            debouncer.add({"name": f"n{number}"})
        await events.until(lambda: events, "event for the burst")
        debouncer.add({"name": "later"})
        await events.until(lambda: len(events) == 2, "second event, for the later change")

    events = run_debouncer(script, delay=0.05, max_wait=5)
    assert [e["count"] for e in events] == [100, 1]
    assert [c["name"] for c in events[0]["changes"]] == [f"n{n}" for n in range(100)]
    assert events[1]["changes"] == [{"name": "later"}] and not events[0]["truncated"]


def test_max_wait_bounds_a_burst_that_never_pauses():
    async def script(debouncer, events):
        # A change every 10 ms, longer than max_wait in total; at most WAIT_LIMIT seconds of them.
        for _change in range(WAIT_LIMIT * 100):
            if events:
                return
            debouncer.add({"name": "x"})
            await asyncio.sleep(0.01)
        raise AssertionError(f"the debouncer put no event after {WAIT_LIMIT * 100} changes 10 ms apart")

    events = run_debouncer(script, delay=0.2, max_wait=0.3)
    assert events[0]["count"] >= 2 and events[0]["waited"] >= 0.3


def test_a_huge_burst_keeps_the_event_bounded():
    async def script(debouncer, events):
        for number in range(_eda.MAX_CHANGES_KEPT + 10):
            debouncer.add({"name": number})
        await events.until(lambda: events, "event for the burst")

    event = run_debouncer(script, delay=0.01, max_wait=1)[0]
    assert event["count"] == _eda.MAX_CHANGES_KEPT + 10 and len(event["changes"]) == _eda.MAX_CHANGES_KEPT
    assert event["truncated"]


def test_max_wait_shorter_than_delay_is_refused():
    with pytest.raises(TopologyError, match=r"max_wait \(1 s\) must not be shorter than delay \(2 s\)"):
        _eda.Debouncer(None, "src", delay=2, max_wait=1)


def test_node_changes_only_for_watched_labels():
    watched = ("nvidia.com/gpu.clique",)
    node = {"metadata": {"name": "n1", "labels": {"nvidia.com/gpu.clique": "a.1", "other": "x"}}}
    digest = _eda.node_digest(node, watched)
    assert digest == {"nvidia.com/gpu.clique": "a.1"}
    labels = {"nvidia.com/gpu.clique": "a.1", "other": "y", "fabric.topograph.run/tier-0": "leaf"}
    relabelled = {"metadata": {"name": "n1", "labels": labels}}
    assert _eda.object_change("node", "n1", digest, _eda.node_digest(relabelled, watched)) is None
    moved = _eda.node_digest({"metadata": {"labels": {"nvidia.com/gpu.clique": "a.2"}}}, watched)
    assert _eda.object_change("node", "n1", digest, moved) == {
        "kind": "node", "name": "n1", "change": "modified",
        "fields": {"nvidia.com/gpu.clique": {"old": "a.1", "new": "a.2"}}}
    assert _eda.state_diff("node", {"n1": digest, "n2": {}}, {"n1": moved, "n3": {}}) == [
        _eda.object_change("node", "n1", digest, moved),
        {"kind": "node", "name": "n2", "change": "removed"},
        {"kind": "node", "name": "n3", "change": "added", "labels": {}}]
    assert _eda.pod_digest({"spec": {"nodeName": "n1"}}) == {"node": "n1", "ready": False}
    ready = {"spec": {"nodeName": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert _eda.object_change("pod", "ns/p", _eda.pod_digest({"spec": {"nodeName": "n1"}}), _eda.pod_digest(ready)) \
        == {"kind": "pod", "name": "ns/p", "change": "modified", "fields": {"ready": {"old": False, "new": True}}}


def test_slurm_states_and_changes():
    document = {"nodes": [{"name": "a", "state": ["IDLE", "CLOUD", "POWERED_DOWN"]},
                          {"name": "b", "state": ["DOWN", "NOT_RESPONDING"]},
                          {"name": "c", "state": ["MIXED", "DRAIN"]},
                          {"name": "d", "state": "ALLOCATED"}], "errors": []}
    states = _eda.slurm_nodes(document)
    assert states == {"a": "up", "b": "down", "c": "drain", "d": "up"}
    later = {"a": "up", "b": "up", "c": "up", "e": "up"}
    assert [(c["name"], c["change"]) for c in _eda.slurm_changes(states, later)] == [
        ("b", "up"), ("c", "resume"), ("d", "removed"), ("e", "new")]
    assert _eda.slurm_changes(states, dict(states)) == []
    with pytest.raises(RemoteAPIError, match="no 'nodes' list"):
        _eda.slurm_nodes({"meta": {}})
    with pytest.raises(RemoteAPIError, match="reported errors: Unable to contact slurmctld"):
        _eda.slurm_nodes({"nodes": [], "errors": [{"description": "Unable to contact slurmctld"}]})


def test_a_slurm_state_word_the_collection_does_not_know_is_down_and_said_once_while_it_lasts():
    logged = []
    stats = _eda.SourceStats("scontrol poll", logged.append)
    document = {"nodes": [{"name": "a", "state": ["IDLE", "HIBERNATING"]}, {"name": "b", "state": ["IDLE"]}],
                "errors": []}
    for _poll in range(3):
        assert _eda.slurm_nodes(document, stats.bad, unknown=stats.note) == {"a": "down", "b": "up"}
    assert logged == ["scontrol poll: scontrol show nodes --json: Slurm node state words this collection does not "
                      "know, their nodes counted as down: 'HIBERNATING' (a)"]
    stats.note("something else")
    stats.note("something else")
    assert logged[1:] == ["scontrol poll: something else"]


SOURCES = ("k8s_nodes", "regenerate", "slurm_nodes")


def _bootstrap(text):
    """The lines of a source from its ``try:`` import of _eda to the end of its fallback."""
    lines = text.splitlines()
    start = lines.index("try:")
    end = next(index for index in range(start, len(lines)) if lines[index].startswith("    from ") and index > start + 2)
    return lines[start:end + 1]


def test_every_source_imports_the_collection_when_ansible_rulebook_runs_it_by_path(tmp_path):
    # ansible-rulebook runs a source with runpy.run_path from <dir>/ansible_collections/aifactory/topology/...,
    # where nothing has put <dir> on sys.path: the one fallback, the same in every source, finds it.
    collection = tmp_path / "ansible_collections" / "aifactory"
    collection.mkdir(parents=True)
    (collection / "topology").symlink_to(REPO)
    texts = {name: (REPO / "extensions/eda/plugins/event_source" / f"{name}.py").read_text() for name in SOURCES}
    assert len({tuple(_bootstrap(text)) for text in texts.values()}) == 1
    for name in SOURCES:
        path = collection / "topology/extensions/eda/plugins/event_source" / f"{name}.py"
        env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        result = subprocess.run([sys.executable, "-c", "import runpy, sys; runpy.run_path(sys.argv[1]); "
                                 "import ansible_collections.aifactory.topology as c; print(c.__path__[0])", str(path)],
                                cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.strip() == str(collection / "topology")
