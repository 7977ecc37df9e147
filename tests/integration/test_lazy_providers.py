"""Lazy provider loading, through real ansible-playbook: AnsiballZ ships the providers and the task
imports only the one it names.

The providers are imported inside a function of ``_providers`` (so that a module does not import
every provider and its SDK). AnsiballZ ships only the module_utils its dependency finder sees;
this runs modules as Ansible runs them, with an interpreter that records ``-X importtime``, and
checks both halves: the task works (the provider was shipped) and nothing else was imported.
"""

from __future__ import annotations

import re
import sys

import pytest
import yaml

from tests.ansible_run import REPO, recap, run_playbook

pytestmark = pytest.mark.playbook

MODEL = REPO / "tests" / "fixtures" / "topograph" / "medium.yaml"
NOT_IMPORTED = ("boto3", "botocore", "kubernetes", "grpc", "requests", "cryptography", "urllib3")


def _imported(log):
    """Module names in an ``-X importtime`` log."""
    names = set()
    for line in log.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


@pytest.mark.parametrize("task, provider_module", [
    ({"aifactory.topology.slurm_topology": {
        "provider": {"name": "simulation", "params": {"model_path": str(MODEL)}},
        "plugin": "topology/block", "block_naming": "topograph"}}, "simulation"),
    ({"aifactory.topology.topology_info": {
        "provider": {"name": "inventory", "params": {"domains": [{"name": "rack1", "nodes": "gpu[1-4]"}]}}}},
     "inventory_vars"),
])
def test_a_task_imports_only_the_provider_it_names(task, provider_module, tmp_path):
    log = tmp_path / "importtime.log"
    interpreter = tmp_path / "python-importtime"
    interpreter.write_text(f'#!/bin/sh\nexec "{sys.executable}" -X importtime "$@" 2>>"{log}"\n', encoding="utf-8")
    interpreter.chmod(0o755)
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Lazy providers", "hosts": "localhost", "gather_facts": False,
        "tasks": [dict(task, name="Run", register="result"),
                  {"name": "Show", "ansible.builtin.debug": {"var": "result.summary.nodes"}}],
    }]), encoding="utf-8")
    done = run_playbook("-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={interpreter}", playbook)
    assert done.returncode == 0, done.stdout + done.stderr
    assert recap(done.stdout, "localhost")[1] == 0
    imported = _imported(log.read_text(encoding="utf-8"))
    package = "ansible_collections.aifactory.topology.plugins.module_utils._providers"
    assert f"{package}.{provider_module}" in imported  # shipped by AnsiballZ and imported when the task ran
    others = sorted(name for name in imported if name.startswith(f"{package}.")
                    and name not in (f"{package}.{provider_module}", f"{package}._specs"))
    assert not others
    assert not sorted(name for name in imported if name.split(".")[0] in NOT_IMPORTED)
    nodes = re.search(r'result\.summary\.nodes"?: (\d+)', done.stdout)
    assert nodes and int(nodes.group(1)) > 0, done.stdout
