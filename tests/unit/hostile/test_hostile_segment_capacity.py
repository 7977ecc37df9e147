"""segment_capacity and its report against hostile input: node states, scontrol's output, forged results.

A state that cannot be read is an error naming the node, never idle; scontrol's answer is read in
one pass whatever its size; every value that reaches the HTML page is checked and escaped, and a
name is never parsed as matplotlib math text.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._engines import capacity
from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError
from ansible_collections.aifactory.topology.plugins.modules import segment_capacity

from ..plugins.modules.module_runner import run_module

MAX_MESSAGE = 600
KNOWN_WORDS = sorted(set(capacity._BASE_WORDS) | set(capacity._FLAG_WORDS))
SUFFIXES = "".join(capacity._SUFFIX_WORDS)
RACKS = {"name": "inventory", "params": {"domains": [{"name": "r1", "nodes": "a[1-4]"}]}}
BASE = {"provider": RACKS, "block_sizes": [4]}


# -- node states -----------------------------------------------------------------------------

def _readable(value):
    """What a state must look like to be classified: words Slurm prints, each with optional suffixes."""
    if isinstance(value, str):
        words = value.replace("|", "+").split("+")
    elif isinstance(value, (list, tuple)):
        words = list(value)
    else:
        return False
    return bool(words) and all(isinstance(word, str) and word.strip().lower().rstrip(SUFFIXES) in KNOWN_WORDS
                               for word in words)


_WORD = st.one_of(st.sampled_from(KNOWN_WORDS).map(str.upper), st.sampled_from(KNOWN_WORDS),
                  st.text(max_size=8)).flatmap(lambda word: st.text(SUFFIXES, max_size=3).map(lambda tail: word + tail))
STATE_VALUES = st.one_of(
    _WORD, st.lists(_WORD, max_size=4), st.lists(_WORD, min_size=1, max_size=4).map("+".join),
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.dictionaries(st.text(max_size=3), _WORD),
    st.lists(st.one_of(st.integers(), st.none()), min_size=1, max_size=2),
)


@given(STATE_VALUES)
@example([])            # issue 22: an empty list was taken as idle
@example(())
@example("~")
@example(["IDLE", 4])
@settings(max_examples=400, deadline=None)
def test_a_state_is_classified_only_when_every_word_is_one_slurm_prints(value):
    if _readable(value):
        assert capacity.classify_state(value, "node_states.n7") in capacity.STATES
        return
    with pytest.raises(TopologyError) as info:
        capacity.classify_state(value, "node_states.n7")
    assert str(info.value).startswith("node_states.n7: ") and len(str(info.value)) < MAX_MESSAGE


@pytest.mark.parametrize("suffix, expected", [("~", "idle"), ("*", "down"), ("~#!$@-", "idle"), ("~*", "down")])
def test_a_long_suffix_is_read_in_one_pass(suffix, expected):
    # Stripping one character at a time copies the word once per character: at a million characters
    # that alone does not finish in a test run. The message quotes only the start of the value.
    value = "idle" + suffix * (1_000_000 // len(suffix))
    assert capacity.classify_state(value, "n1") == expected
    with pytest.raises(TopologyError) as info:
        capacity.classify_state(value + "x", "n1")
    assert len(str(info.value)) < MAX_MESSAGE


def scontrol_printing(tmp_path, nodes):
    """A stand-in scontrol that prints ``show nodes --json`` with these node entries."""
    data = tmp_path / "nodes.json"
    data.write_text(json.dumps({"nodes": nodes, "errors": []}), encoding="utf-8")
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(f"#!/bin/sh\nexec cat {data}\n", encoding="utf-8")
    scontrol.chmod(0o755)
    return str(scontrol)


@pytest.fixture
def run(monkeypatch):
    def runner(args, **kwargs):
        return run_module(segment_capacity, dict(BASE, **args), monkeypatch=monkeypatch, **kwargs)
    return runner


@pytest.mark.parametrize("state", [[], None, 5, True, {"idle": 1}, "", "sleepy", ["IDLE", None]])
def test_a_malformed_node_states_value_fails_naming_the_node(run, state):
    result = run({"node_states": {"a1": "idle", "a3": state}})
    assert result["failed"] and result["msg"].startswith("node_states.a3: "), result["msg"]


@pytest.mark.parametrize("state", [[], None, 5, {"name": "IDLE"}, ["IDLE", ""]])
def test_a_malformed_scontrol_state_fails_naming_the_node(run, tmp_path, state):
    nodes = [{"name": name, "state": ["IDLE"]} for name in ("a1", "a2", "a4")] + [{"name": "a3", "state": state}]
    result = run({"scontrol_path": scontrol_printing(tmp_path, nodes)})
    assert result["failed"] and "node a3: " in result["msg"], result["msg"]


# -- scontrol's output -------------------------------------------------------------------------

def test_scontrol_output_is_read_by_the_command_runner_not_run_command(run, tmp_path, monkeypatch):
    # AnsibleModule.run_command grows its output with bytes += chunk: quadratic (issue 22 measured
    # 25 MB in 14 s, 50 MB in 70 s; bench/segment_capacity.py --scontrol-mb). _command joins once.
    from ansible.module_utils import basic

    def refuse(*_args, **_kwargs):
        raise AssertionError("scontrol must be run through _command, not AnsibleModule.run_command")

    monkeypatch.setattr(basic.AnsibleModule, "run_command", refuse)
    padding = "x" * 4096
    nodes = [{"name": f"a{i}", "state": ["IDLE"], "extra": padding} for i in range(1, 5)]
    nodes += [{"name": f"other{i}", "state": ["IDLE"], "extra": padding} for i in range(2000)]
    result = run({"scontrol_path": scontrol_printing(tmp_path, nodes)})
    assert not result["failed"], result["msg"]
    assert result["summary"]["idle"] == 4
