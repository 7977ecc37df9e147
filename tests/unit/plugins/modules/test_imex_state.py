"""aifactory.topology.imex_state in process: two imex.yml runs at once cannot record what the trays do not hold."""

from __future__ import annotations

import json
import stat

from ansible_collections.aifactory.topology.plugins.module_utils._engines import imex
from ansible_collections.aifactory.topology.plugins.modules import imex_state
from tests.unit.plugins.modules.module_runner import run_module


def record(monkeypatch, path, read, after, **kwargs):
    return run_module(imex_state, {"path": str(path), "read": read, "after": after, "mode": "0600"},
                      monkeypatch=monkeypatch, **kwargs)


def held(path):
    return json.loads(path.read_text())


def test_records_a_new_domain_in_a_new_private_directory_then_changes_nothing(monkeypatch, tmp_path):
    path = tmp_path / "state" / "imex-applied.json"
    first = record(monkeypatch, path, {}, {"rack01": "d1"})
    assert not first["failed"] and first["changed"], first
    assert held(path) == {"format": imex.STATE_FORMAT, "domains": {"rack01": "d1"}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = record(monkeypatch, path, {"rack01": "d1"}, {"rack01": "d1"})
    assert not again["changed"] and again["conflicts"] == []


def test_nothing_to_record_writes_no_file(monkeypatch, tmp_path):
    path = tmp_path / "state" / "imex-applied.json"
    assert not record(monkeypatch, path, {}, {})["changed"]
    assert not path.parent.exists()


def test_two_runs_from_one_state_leave_the_contested_domain_to_the_next_run(monkeypatch, tmp_path):
    """Both runs planned from the same state; their trays end with either one's files. The first to record
    wins the swap; the second finds another digest than it read and drops the domain, so the next run
    visits it instead of trusting a record of the other run's settings."""
    path = tmp_path / "imex-applied.json"
    record(monkeypatch, path, {}, {"rack01": "old", "rack02": "r2"})
    planned = {"rack01": "old", "rack02": "r2"}
    first = record(monkeypatch, path, planned, {"rack01": "settings-a", "rack02": "r2"})
    assert held(path)["domains"] == {"rack01": "settings-a", "rack02": "r2"} and first["conflicts"] == []
    second = record(monkeypatch, path, planned, {"rack01": "settings-b", "rack02": "r2", "rack03": "r3"})
    assert not second["failed"] and second["conflicts"] == ["rack01"]
    assert held(path)["domains"] == {"rack02": "r2", "rack03": "r3"}
    assert any("rack01" in warning and "next run visits it" in warning for warning in second["warnings"])


def test_another_runs_record_of_a_domain_this_run_left_alone_is_kept(monkeypatch, tmp_path):
    path = tmp_path / "imex-applied.json"
    record(monkeypatch, path, {}, {"rack01": "a"})
    # Planned before rack01 was recorded; records rack02 only.
    record(monkeypatch, path, {}, {"rack02": "b"})
    assert held(path)["domains"] == {"rack01": "a", "rack02": "b"}


def test_an_unreadable_state_is_rewritten_with_this_runs_record(monkeypatch, tmp_path):
    path = tmp_path / "imex-applied.json"
    path.write_text("{not json")
    result = record(monkeypatch, path, {}, {"rack01": "a"})
    assert not result["failed"] and result["state_problem"], result
    assert held(path)["domains"] == {"rack01": "a"}


def test_digests_that_are_not_text_are_refused_by_name(monkeypatch, tmp_path):
    result = record(monkeypatch, tmp_path / "s.json", {}, {"rack01": ["a"]})
    assert result["failed"] and "after must map each NVLink domain" in result["msg"]


def test_merge_applied_swaps_only_what_still_holds_what_was_read():
    assert imex.merge_applied({"a": "1"}, {"a": "1"}, {"a": "2"}) == ({"a": "2"}, [])
    assert imex.merge_applied({"a": "x"}, {"a": "1"}, {"a": "2"}) == ({}, ["a"])
    # Another run recorded the very digest this run would: no conflict.
    assert imex.merge_applied({"a": "2"}, {"a": "1"}, {"a": "2"}) == ({"a": "2"}, [])
    assert imex.merge_applied({"a": "1", "b": "9"}, {"a": "1"}, {}) == ({"b": "9"}, [])
