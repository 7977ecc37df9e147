"""aifactory.topology.topology_compare: a report of the cabling against the design, never a change."""

from __future__ import annotations

import json

import pytest

from ansible_collections.aifactory.topology.plugins.modules import topology_compare
from tests.ib_rails import rail_fabric

from .module_runner import run_module

DESIGN = {"format": "aifactory.topology/v1", "switches": {"spine": None, "su1": "spine", "su2": "spine"},
          "nodes": [{"nodes": "gpu-[11-14]", "switch": "su1"}, {"nodes": "gpu-[21-24]", "switch": "su2"}]}
CROSSED = {("gpu-12", 0): (1, 1), ("gpu-12", 1): (1, 0)}


@pytest.fixture
def run(monkeypatch):
    def runner(args, **kwargs):
        return run_module(topology_compare, args, monkeypatch=monkeypatch, **kwargs)
    return runner


def ib(text):
    return {"name": "infiniband", "params": {"ibnetdiscover": {"gpu-11": text}}}


def test_the_discovery_compared_with_a_design_file_reports_the_crossed_rail_and_changes_nothing(run, tmp_path):
    design = tmp_path / "design.json"
    design.write_text(json.dumps(DESIGN))
    result = run({"expected_file": str(design), "provider": ib(rail_fabric(cables=CROSSED))}, check_mode=True)
    assert not result["failed"] and result["changed"] is False
    assert [finding["subject"] for finding in result["findings"]] == ["gpu-12 mlx5_0", "gpu-12 mlx5_1"]
    summary = result["summary"]
    assert summary["cabling_mismatches"] == 2 and summary["counts"]["rail_crossed"] == 2
    assert summary["rails_checked"] is True and summary["nodes_expected"] == summary["nodes_observed"] == 8


def test_fail_on_mismatch_fails_with_the_findings_and_a_model_cannot_check_rails(run):
    compact = {"format": "aifactory.topology/v1", "switches": {"s": None, "l1": "s", "l2": "s"},
               "nodes": [{"nodes": "gpu-[11-14,21]", "switch": "l1"}, {"nodes": "gpu-[22-24]", "switch": "l2"}]}
    result = run({"expected": DESIGN, "model": compact, "fail_on_mismatch": True})
    assert result["failed"] and result["msg"] == (
        "the discovered topology differs from the design in 1 places: node gpu-21: the design puts it under su2; "
        "it is cabled to l1 (with gpu-[11-14] and 1 more)")
    assert result["summary"]["rails_checked"] is False and len(result["findings"]) == 1


def test_a_design_that_is_not_a_model_is_an_error_naming_the_option(run):
    result = run({"expected": {"format": "aifactory.topology/v1", "nodes": "gpu-1"}, "model": DESIGN})
    assert result["failed"] and result["msg"] == "expected: model.nodes must be a list of node groups"


def test_one_design_source_only(run, tmp_path):
    result = run({"expected": DESIGN, "expected_file": str(tmp_path / "x"), "model": DESIGN})
    assert result["failed"] and "mutually exclusive: expected|expected_file" in result["msg"]


def test_a_negative_limit_is_refused(run):
    result = run({"expected": DESIGN, "model": DESIGN, "max_findings": -1})
    assert result["failed"] and result["msg"] == "max_findings must be 0 or more, got -1"
