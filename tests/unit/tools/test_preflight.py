"""tools/preflight.py: every package setup installs is probed, and what is missing is named."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools"))
import preflight  # noqa: E402


def apt_packages():
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    match = re.search(r"^APT_PACKAGES := ((?:.*\\\n)*.*)$", text, re.MULTILINE)
    return set(match.group(1).replace("\\\n", " ").split())


def test_every_package_make_setup_installs_is_probed():
    probed = {package for _argv, package, _why in preflight.COMMANDS} | {preflight.JAVA_PACKAGE, preflight.VENV_PACKAGE}
    assert apt_packages() == probed


def test_a_missing_command_names_its_package(capsys):
    report = preflight.Report(ci=False)
    preflight.check_commands(report, [(["no-such-tool-for-preflight", "--version"], "no-such-package", "a test"),
                                      ([sys.executable, "--version"], "python3", "a test")])
    out = capsys.readouterr().out
    assert report.failed
    assert "MISSING  no-such-tool-for-preflight: not installed; apt-get install no-such-package (a test" in out
    assert re.search(r"ok +python3\.11|ok +python", out)


def test_a_command_that_fails_is_missing_with_its_exit_code(capsys):
    report = preflight.Report(ci=False)
    preflight.check_commands(report, [([sys.executable, "-c", "import sys; sys.exit('broken')"], "pkg", "why")])
    assert report.failed
    assert "exit 1: broken; apt-get install pkg" in capsys.readouterr().out


@pytest.mark.parametrize("ci, failed, word", [(False, False, "NOTE"), (True, True, "MISSING")])
def test_what_only_some_suites_need_fails_only_under_ci(capsys, ci, failed, word):
    report = preflight.Report(ci=ci)
    report.optional("go", "the Kubernetes tests", "install Go >= 1.26")
    assert report.failed is failed
    assert f"{word}" in capsys.readouterr().out


def test_podman_errors_name_the_package():
    class Done:
        stdout = ""
        stderr = 'Error: netavark: No such file or directory (os error 2): iptables'
    assert preflight.explain(Done()).endswith("apt-get install iptables")


def test_the_host_stage_reports_python_and_disk(capsys):
    report = preflight.Report(ci=False)
    preflight.check_host(report)
    out = capsys.readouterr().out
    assert "ok       python" in out and "disk" in out


def test_a_python_that_makes_a_virtual_environment_passes(capsys):
    report = preflight.Report(ci=True)
    preflight.check_venv(report)  # this interpreter, as `make venv` runs it
    assert not report.failed
    assert "ok       venv: " in capsys.readouterr().out


def test_a_python_without_venv_names_python3_venv(tmp_path, capsys):
    # What Debian's python3 says without python3-venv, from a stand-in interpreter that fails the same way.
    python = tmp_path / "python3"
    python.write_text("#!/bin/sh\necho 'ensurepip is not available.' >&2\nexit 1\n")
    python.chmod(0o755)
    report = preflight.Report(ci=False)
    preflight.check_venv(report, str(python))
    out = capsys.readouterr().out
    assert report.failed
    assert "MISSING  venv: " in out and "ensurepip is not available" in out and "apt-get install python3-venv" in out
