"""slurm_topology loads what its job needs: on a model or a simulation provider, neither asyncio (the
event sources' command runner) nor the Kubernetes transport (http.client, ssl, threads); without
drain_unhealthy, not the drain engine.

A fresh interpreter runs the module's main() on each and reports what it imported (this test's own
process has loaded whatever other tests needed)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.ansible_run import REPO

MODEL = REPO / "tests" / "fixtures" / "topograph" / "medium.yaml"
# The module reads its arguments from the file named by argv[1], as a module run by hand does
# (ansible.module_utils.testing would import unittest.mock, and asyncio with it).
RUN = """
import json, sys
from ansible_collections.aifactory.topology.plugins.modules import slurm_topology
try:
    slurm_topology.main()
except SystemExit as exc:
    code = exc.code
print("\\n" + json.dumps({"exit": code, "modules": sorted(sys.modules)}))
"""
TRANSPORT = "ansible_collections.aifactory.topology.plugins.module_utils._transport"
ENGINES = "ansible_collections.aifactory.topology.plugins.module_utils._engines"


@pytest.mark.parametrize("args", [
    {"provider": {"name": "simulation", "params": {"model_path": str(MODEL)}}, "plugin": "topology/block",
     "block_naming": "topograph"},
    {"model": {"format": "aifactory.topology/v1", "switches": {"leaf": None},
               "nodes": [{"nodes": "n[1-4]", "switch": "leaf"}]}},
], ids=["simulation", "model"])
def test_a_run_on_a_model_or_simulation_imports_neither_asyncio_nor_the_k8s_transport(tmp_path, args):
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, dest=str(tmp_path / "topology.conf"))}),
                         encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", RUN, str(args_file)], capture_output=True, text=True, cwd=REPO,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    result = json.loads(done.stdout.strip().splitlines()[0])
    assert report["exit"] == 0 and result["changed"] and (tmp_path / "topology.conf").exists(), result
    modules = set(report["modules"])
    assert f"{TRANSPORT}.k8s_auth" in modules  # the names below are spelled as Python spells them
    assert not {"asyncio", f"{TRANSPORT}.k8s", f"{TRANSPORT}.http"} & modules
    assert f"{ENGINES}.slurm_drain" not in modules  # no drain_unhealthy: the drain engine is not loaded
    assert not sorted(name for name in modules if name.startswith("asyncio."))


def test_run_drains_imports_the_drain_engine_once_and_sends_nothing_in_check_mode():
    import ast
    import inspect

    from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import slurm_topology as orchestration

    imports = [node for node in ast.walk(ast.parse(inspect.getsource(orchestration.run_drains)))
               if isinstance(node, ast.ImportFrom) and any(alias.name == "slurm_drain" for alias in node.names)]
    assert len(imports) == 1
    sent = []
    orchestration.run_drains({"drained": ["n1"], "resumed": []}, sent.append, check_mode=True)
    assert sent == []
    orchestration.run_drains({"drained": ["n1"], "resumed": []}, sent.append, check_mode=False)
    assert sent and "n1" in " ".join(map(str, sent[0]))
