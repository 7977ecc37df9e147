"""aifactory.topology.imex_config in process: both files, check mode, diff, idempotence, directories."""

from __future__ import annotations

import stat

import pytest

from ansible_collections.aifactory.topology.plugins.modules import imex_config
from tests.unit.plugins.modules.module_runner import run_module


@pytest.fixture
def args(tmp_path):
    directory = tmp_path / "etc" / "nvidia-imex"
    return {"domain": "rack01", "addresses": ["10.0.1.1", "10.0.1.2"],
            "config": {"LOG_LEVEL": 4, "BIND_INTERFACE_IP": None, "IMEX_ENABLE_AUTH_ENCRYPTION": False,
                       "IMEX_NODE_CONFIG_FILE": str(directory / "nodes_config.cfg")},
            "config_path": str(directory / "config.cfg"), "nodes_config_path": str(directory / "nodes_config.cfg"),
            "mode": "0644"}


def run(args, monkeypatch, **kwargs):
    return run_module(imex_config, args, monkeypatch=monkeypatch, **kwargs)


def test_check_mode_writes_nothing_and_shows_both_files_only_in_diff_mode(args, monkeypatch, tmp_path):
    result = run(args, monkeypatch, check_mode=True, diff=True)
    assert not result["failed"] and result["changed"]
    assert not (tmp_path / "etc").exists()
    assert result["directories"] == [str(tmp_path / "etc"), str(tmp_path / "etc" / "nvidia-imex")]
    assert [diff["after"] for diff in result["diff"]][0] == "10.0.1.1\n10.0.1.2\n"
    assert "IMEX_NODE_CONFIG_FILE=" in result["diff"][1]["after"]
    assert "diff" not in run(args, monkeypatch, check_mode=True)


def test_writes_both_files_then_changes_nothing(args, monkeypatch, tmp_path):
    result = run(args, monkeypatch)
    assert not result["failed"] and result["changed"], result
    nodes = tmp_path / "etc" / "nvidia-imex" / "nodes_config.cfg"
    config = tmp_path / "etc" / "nvidia-imex" / "config.cfg"
    assert nodes.read_text() == "10.0.1.1\n10.0.1.2\n"
    text = config.read_text()
    assert text.startswith("# NVIDIA IMEX configuration, written by the aifactory.topology.imex role")
    assert "# NVLink domain rack01; its peers are listed in " + str(nodes) in text
    assert [line for line in text.splitlines() if not line.startswith("#")] == [
        "LOG_LEVEL=4", "IMEX_ENABLE_AUTH_ENCRYPTION=0", f"IMEX_NODE_CONFIG_FILE={nodes}"]
    assert stat.S_IMODE(nodes.stat().st_mode) == 0o644 and stat.S_IMODE(config.stat().st_mode) == 0o644
    assert stat.S_IMODE(nodes.parent.stat().st_mode) == 0o755

    again = run(args, monkeypatch, diff=True)
    assert again["changed"] is False and again["directories"] == []
    assert again["nodes_config"]["changed"] is False and again["config"]["changed"] is False

    # One file changes: only it is reported changed, and the diff shows the old and new peer lists.
    args["addresses"] = ["10.0.1.1", "10.0.1.3"]
    changed = run(args, monkeypatch, diff=True)
    assert changed["changed"] and changed["nodes_config"]["changed"] and not changed["config"]["changed"]
    assert changed["diff"][0]["before"] == "10.0.1.1\n10.0.1.2\n"
    assert nodes.read_text() == "10.0.1.1\n10.0.1.3\n"


def test_a_value_on_two_lines_fails_with_its_key_and_writes_nothing(args, monkeypatch, tmp_path):
    args["config"]["LOG_FILE_NAME"] = "/var/log/a\nLOG_LEVEL=0"
    result = run(args, monkeypatch)
    assert result["failed"] and "config.LOG_FILE_NAME" in result["msg"]
    assert not (tmp_path / "etc").exists()


def test_reads_the_driver_branch_in_the_same_run(args, monkeypatch, tmp_path):
    """The version file when it can be read, else nvidia-smi's answer; no driver is no branch, not an error."""
    assert "driver" not in run(args, monkeypatch)
    version = tmp_path / "version"
    version.write_text("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.124.06  Release Build\n")
    smi = ["echo", "580.95.05\n580.95.05"]
    found = run({**args, "driver_version_file": str(version), "nvidia_smi_command": smi}, monkeypatch, check_mode=True)
    assert found["driver"] == {"branch": "570", "origin": str(version)}
    missing = str(tmp_path / "no-driver")
    assert run({**args, "driver_version_file": missing, "nvidia_smi_command": smi}, monkeypatch)["driver"] == {
        "branch": "580", "origin": "nvidia-smi"}
    assert run({**args, "driver_version_file": missing, "nvidia_smi_command": [str(tmp_path / "no-nvidia-smi")]},
               monkeypatch)["driver"] == {"branch": "", "origin": "nvidia-smi"}
