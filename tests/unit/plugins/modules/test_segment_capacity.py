"""The segment_capacity module: inputs, states from scontrol, and clear errors for bad input."""

from __future__ import annotations

import json
import re

import pytest

from ansible_collections.aifactory.topology.plugins.modules import segment_capacity

from .module_runner import run_module

RACKS = {"name": "inventory", "params": {"domains": [
    {"name": "r1", "nodes": "a[1-4]"}, {"name": "r2"}, {"name": "r3", "nodes": "c[1-4]"}]}}
BASE = {"provider": RACKS, "block_sizes": [4, 8], "domain_order": ["r1", "r2", "r3"]}


@pytest.fixture
def run(monkeypatch):
    def runner(args, **kwargs):
        return run_module(segment_capacity, args, monkeypatch=monkeypatch, **kwargs)
    return runner


def fake_scontrol(tmp_path, body, rc=0):
    path = tmp_path / "scontrol"
    path.write_text(f"#!/bin/sh\ncat <<'JSON'\n{body}\nJSON\nexit {rc}\n", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def test_what_if_states_in_check_mode(run):
    result = run(dict(BASE, node_states={"a1": "drain", "c4": "down*"}, segment_sizes=[2, 4]), check_mode=True)
    assert not result["failed"] and result["changed"] is False
    assert result["state_source"] == "node_states"
    assert [s["largest_job_nodes"] for s in result["segments"]] == [4, 0]
    assert result["summary"]["placeholders"] == ["r2"] and result["summary"]["idle"] == 6
    assert result["unsegmented_feasible"] == [[1, 3]]
    assert result["fabric"]["block_switch"] == {"r1": None, "r2": None, "r3": None}


def test_states_from_scontrol_json(run, tmp_path):
    nodes = [{"name": n, "state": ["IDLE"]} for n in ("a1", "a2", "a3", "a4", "c1", "c2", "c3")]
    nodes[0]["state"] = ["IDLE", "DRAIN"]
    body = json.dumps({"nodes": nodes + [{"name": "login1", "state": ["IDLE"]}], "errors": []})
    result = run(dict(BASE, scontrol_path=fake_scontrol(tmp_path, body)))
    assert not result["failed"], result["msg"]
    assert result["state_source"] == "scontrol"
    # c4 is unknown to Slurm: counted as down, with a warning naming it.
    assert result["blocks"][2]["down_nodes"] == "c4"
    assert any("c4" in w for w in result["summary"]["warnings"])


@pytest.mark.parametrize("args, words", [
    ({"node_states": {"ghost": "down"}}, "node_states: 1 nodes are not in the topology: ghost"),
    ({"node_states": {"a1": "sleepy"}}, "node_states.a1: unknown Slurm node state 'sleepy'"),
    ({"segment_sizes": [0]}, r"segment_sizes\[0\] = 0"),
    ({"segment_sizes": [5]}, r"segment_sizes\[0\] = 5: .* base block size 4"),
    ({"unavailability_rates": [1.5]}, r"unavailability_rates\[0\] = 1.5"),
    ({"min_share": 2.0}, "min_share"),
])
def test_bad_input_fails_naming_it(run, args, words):
    result = run(dict(BASE, **{"node_states": {}, **args}))
    assert result["failed"]
    assert re.search(words, result["msg"]), result["msg"]


@pytest.mark.parametrize("body, rc, words", [
    ("slurm_load_node error: Unable to contact slurm controller", 1, "failed \\(exit 1\\): slurm_load_node error"),
    ("{\"nodes\": [", 0, "did not print valid JSON"),
    ("{\"nodes\": 5}", 0, "no 'nodes' list"),
])
def test_scontrol_failure_or_malformed_json_is_a_clear_error(run, tmp_path, body, rc, words):
    result = run(dict(BASE, scontrol_path=fake_scontrol(tmp_path, body, rc)))
    assert result["failed"]
    assert re.search(words, result["msg"]), result["msg"]
    assert "scontrol" in result["msg"]


def test_a_hung_scontrol_behind_a_wrapper_fails_in_time(run, tmp_path):
    # `ssh ctl scontrol`-like: the wrapper exits, its child hangs holding the pipes.
    wrapper = tmp_path / "scontrol"
    wrapper.write_text("#!/bin/sh\nsleep 300 &\nexit 0\n", encoding="utf-8")
    wrapper.chmod(0o755)
    result = run(dict(BASE, scontrol_path=str(wrapper), scontrol_timeout=1))
    assert result["failed"]
    assert "show nodes --json did not finish within 1 s; it was killed with every process it started" in result["msg"]


def test_an_scontrol_that_cannot_run_fails_the_task_naming_it(run, tmp_path):
    missing = tmp_path / "no-scontrol"
    result = run(dict(BASE, scontrol_path=str(missing)))
    assert result["failed"] and result["msg"] == f"cannot run {missing} show nodes --json: No such file or directory"
