"""aifactory.topology.topology_metrics: node_exporter textfiles written atomically, with a truthful ``changed``."""

from __future__ import annotations

import os
import stat

import pytest
from prometheus_client import parser

from ansible_collections.aifactory.topology.plugins.module_utils._engines import metrics as _metrics
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import topology_metrics as topology_metrics_run
from ansible_collections.aifactory.topology.plugins.modules import topology_metrics

from .module_runner import module_argument_spec, run_module

SLURM = {"changed": True, "summary": {"format": "topology.conf", "nodes": 54, "blocks": 4,
                                      "placeholders": ["nvl-4"], "warnings": []}}
QUARANTINED = {"changed": False, "quarantined": [{"node": "n1"}, {"node": "n2"}],
               "summary": {"nodes_in_topology": 52}}


@pytest.fixture
def run(monkeypatch):
    def runner(args, **kwargs):
        return run_module(topology_metrics, args, monkeypatch=monkeypatch, **kwargs)
    return runner


def samples(path):
    """metric name -> (labels, value) of the file node_exporter would read."""
    found = {}
    for family in parser.text_string_to_metric_families(path.read_text()):
        for sample in family.samples:
            found[sample.name] = (sample.labels, sample.value)
    return found


def test_a_run_writes_every_metric_labelled_with_its_target(run, tmp_path, monkeypatch):
    monkeypatch.setattr(topology_metrics_run.time, "time", lambda: 1000.0)
    result = run({"directory": str(tmp_path), "target": "slurm", "started": 990.0, "results": [SLURM]})
    assert not result["failed"] and result["changed"] is True
    dest = tmp_path / "aifactory_topology_slurm.prom"
    assert result["dest"] == str(dest)
    found = samples(dest)
    assert {name: value for name, (_labels, value) in found.items()} == {
        "aifactory_topology_nodes": 54, "aifactory_topology_blocks": 4, "aifactory_topology_placeholder_blocks": 1,
        "aifactory_topology_quarantined_nodes": 0, "aifactory_topology_last_run_failed": 0,
        "aifactory_topology_consecutive_failures": 0, "aifactory_topology_last_run_timestamp_seconds": 1000,
        "aifactory_topology_last_success_timestamp_seconds": 1000, "aifactory_topology_last_run_duration_seconds": 10,
        "aifactory_topology_last_run_files_changed": 1}
    assert {labels["target"] for labels, _value in found.values()} == {"slurm"}
    assert stat.S_IMODE(dest.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == [dest.name]  # no temporary file left


def test_quarantined_nodes_are_read_from_the_list_or_the_summary(run, tmp_path):
    result = run({"directory": str(tmp_path), "target": "kubernetes", "results": [QUARANTINED, {"skipped": True}]})
    assert result["metrics"]["aifactory_topology_quarantined_nodes"] == 2
    assert result["metrics"]["aifactory_topology_nodes"] == 52
    assert "aifactory_topology_last_run_duration_seconds" not in result["metrics"]
    counted = dict(QUARANTINED, summary={"nodes": 52, "quarantined": 3})
    assert run({"directory": str(tmp_path), "target": "kubernetes",
                "results": [counted]})["metrics"]["aifactory_topology_quarantined_nodes"] == 3


def test_a_topology_yaml_result_is_counted_from_its_content(run, tmp_path):
    content = ("- topology: nvl72\n  cluster_default: true\n  block:\n    block_sizes: [18]\n    blocks:\n"
               "      - {block: b1, nodes: 'n[01-18]'}\n      - {block: b2}\n- topology: admin\n  flat: true\n")
    result = run({"directory": str(tmp_path), "target": "slurm",
                  "results": [{"changed": False, "content": content, "summary": {"format": "topology.yaml", "nodes": 18}}]})
    metrics = result["metrics"]
    assert (metrics["aifactory_topology_blocks"], metrics["aifactory_topology_placeholder_blocks"]) == (2, 1)


def test_second_run_reports_no_change_but_refreshes_the_timestamps(run, tmp_path, monkeypatch):
    args = {"directory": str(tmp_path), "target": "slurm", "results": [SLURM]}
    monkeypatch.setattr(topology_metrics_run.time, "time", lambda: 1000.0)
    assert run(args)["changed"] is True
    monkeypatch.setattr(topology_metrics_run.time, "time", lambda: 2000.0)
    again = run(dict(args, results=[dict(SLURM, changed=False)]))
    assert again["changed"] is False
    found = samples(tmp_path / "aifactory_topology_slurm.prom")
    assert found["aifactory_topology_last_success_timestamp_seconds"][1] == 2000
    assert found["aifactory_topology_last_run_files_changed"][1] == 0
    moved = dict(SLURM, summary=dict(SLURM["summary"], nodes=72))
    assert run(dict(args, results=[moved]))["changed"] is True


def test_a_failed_run_keeps_the_last_success_and_the_counts(run, tmp_path, monkeypatch):
    base = {"directory": str(tmp_path), "target": "slurm"}
    monkeypatch.setattr(topology_metrics_run.time, "time", lambda: 1000.0)
    run(dict(base, results=[SLURM]))
    monkeypatch.setattr(topology_metrics_run.time, "time", lambda: 2000.0)
    failed = run(dict(base, failed=True, results=[{"failed": True, "msg": "refused"}]))
    assert failed["changed"] is True
    monkeypatch.setattr(topology_metrics_run.time, "time", lambda: 3000.0)
    run(dict(base, failed=True))
    found = samples(tmp_path / "aifactory_topology_slurm.prom")
    assert found["aifactory_topology_last_success_timestamp_seconds"][1] == 1000
    assert found["aifactory_topology_last_run_timestamp_seconds"][1] == 3000
    assert found["aifactory_topology_last_run_failed"][1] == 1
    assert found["aifactory_topology_consecutive_failures"][1] == 2
    assert found["aifactory_topology_nodes"][1] == 54 and found["aifactory_topology_blocks"][1] == 4
    recovered = run(dict(base, results=[SLURM]))
    assert recovered["changed"] is True and recovered["metrics"]["aifactory_topology_consecutive_failures"] == 0


def test_a_first_run_that_fails_says_no_success_yet(run, tmp_path):
    result = run({"directory": str(tmp_path), "target": "slurm", "failed": True})
    assert result["metrics"]["aifactory_topology_last_success_timestamp_seconds"] == 0
    assert result["metrics"]["aifactory_topology_last_run_failed"] == 1


def test_check_mode_writes_nothing_and_predicts_the_change(run, tmp_path):
    result = run({"directory": str(tmp_path), "target": "slurm", "results": [SLURM]}, check_mode=True, diff=True)
    assert result["changed"] is True and list(tmp_path.iterdir()) == []
    assert "aifactory_topology_nodes{target=\"slurm\"} 54.0" in result["diff"]["after"]


def test_an_unreadable_previous_file_only_warns(run, tmp_path):
    (tmp_path / "aifactory_topology_slurm.prom").write_text('aifactory_topology_nodes{target="slurm" 5\n')
    result = run({"directory": str(tmp_path), "target": "slurm", "results": [SLURM]})
    assert not result["failed"] and any("is not a file this module wrote for target slurm (line 1)" in text
                                        for text in result["warnings"])


@pytest.mark.parametrize("args, message", [
    ({"target": "Slurm"}, "target must be a lower-case name"),
    ({"target": "a-b"}, "target must be a lower-case name"),
    ({"target": "slurm", "nodes": -1}, "nodes must be a whole number from 0 to 9007199254740992 (2**53), got -1"),
    ({"target": "slurm", "started": float("nan")}, "started must be a time"),
])
def test_bad_options_fail_naming_the_field(run, tmp_path, args, message):
    result = run(dict({"directory": str(tmp_path)}, **args))
    assert result["failed"] and message in result["msg"]
    assert list(tmp_path.iterdir()) == []


def test_a_missing_directory_fails_naming_it(run, tmp_path):
    result = run({"directory": str(tmp_path / "nope"), "target": "slurm"})
    assert result["failed"] and f"destination directory {tmp_path / 'nope'} does not exist" in result["msg"]


def test_a_directory_at_the_destination_is_never_replaced(run, tmp_path):
    (tmp_path / "aifactory_topology_slurm.prom").mkdir()
    result = run({"directory": str(tmp_path), "target": "slurm"})
    assert result["failed"] and result["msg"].endswith("is a directory; only a regular file is ever replaced")


def test_without_the_client_the_error_names_the_package(monkeypatch, tmp_path):
    import builtins

    real_import = builtins.__import__

    def no_client(name, *args, **kwargs):
        if name.startswith("prometheus_client"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_client)
    with pytest.raises(_metrics.TopologyError, match="needs the Python package prometheus-client"):
        _metrics.render({"nodes": 1}, "slurm")


def test_the_documentation_matches_the_argument_spec(monkeypatch):
    import yaml

    spec = module_argument_spec(topology_metrics, monkeypatch)
    options = yaml.safe_load(topology_metrics.DOCUMENTATION)["options"]
    assert set(options) == set(spec)
    for name, option in options.items():
        for key in ("type", "default", "required", "elements", "choices"):
            assert option.get(key) == spec[name].get(key), (name, key)
    assert os.path.basename(_metrics.dest(_metrics.METRICS.build({"directory": "/d", "target": "slurm"}))) == "aifactory_topology_slurm.prom"


def test_a_failed_run_counts_what_its_tasks_that_succeeded_wrote(run, tmp_path):
    base = {"directory": str(tmp_path), "target": "slurm"}
    run(dict(base, results=[SLURM]))
    grown = dict(SLURM, summary=dict(SLURM["summary"], nodes=72))  # written, then a later task failed
    result = run(dict(base, failed=True, results=[grown, {"failed": True, "msg": "slurm.conf refused"}]))
    assert result["metrics"]["aifactory_topology_nodes"] == 72
    assert result["metrics"]["aifactory_topology_last_run_failed"] == 1


def test_cabling_mismatches_are_written_once_a_comparison_ran_and_kept_after(run, tmp_path):
    args = {"directory": str(tmp_path), "target": "fabric"}
    assert "aifactory_topology_cabling_mismatches" not in run(dict(args, results=[SLURM]))["metrics"]
    compared = {"changed": False, "findings": [], "summary": {"cabling_mismatches": 3, "nodes_observed": 54}}
    first = run(dict(args, results=[compared]))
    assert first["changed"] is True and samples(tmp_path / "aifactory_topology_fabric.prom")[
        "aifactory_topology_cabling_mismatches"][1] == 3
    later = run(dict(args, results=[SLURM]))  # a run without a comparison keeps the last one's count
    assert later["metrics"]["aifactory_topology_cabling_mismatches"] == 3
    fixed = run(dict(args, results=[dict(compared, summary={"cabling_mismatches": 0})]))
    assert fixed["changed"] is True and fixed["metrics"]["aifactory_topology_cabling_mismatches"] == 0
