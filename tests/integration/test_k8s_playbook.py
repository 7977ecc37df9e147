"""playbooks/k8s.yml end to end with ansible-playbook against the REAL kube-apiserver.

Proves: --check --diff prints per-node label diffs and the ConfigMap diff and stores nothing; the
first run publishes labels, NFD objects and the ConfigMap key; a second run reports zero changes.
"""

from __future__ import annotations

import re

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._engines import nfd
from tests.ansible_run import REPO, ansible_env, run_playbook
from tests.integration.k8s_support import (
    client,
    gb200,
    make_nodes,
    new_id,
    node_names,
    node_state,
    playbook_inventory,
    written,
)
from tests.nvidia_smi_shapes import UNHEALTHY_TRAY

pytestmark = [pytest.mark.k8s, pytest.mark.playbook]


def run_k8s_playbook(inventory, *extra):
    result = run_playbook("-i", inventory, REPO / "playbooks" / "k8s.yml", *extra)
    recap = re.search(r"localhost\s+: ok=\d+\s+changed=(\d+).*failed=(\d+)", result.stdout)
    assert result.returncode == 0 and recap, result.stdout + result.stderr
    return result.stdout, int(recap.group(1))


def test_k8s_playbook_check_diff_then_apply_then_nothing(k8s, k8s_namespace, tmp_path):
    k8s.install_nfd_crds()
    test_id = new_id()
    prefix = f"t{test_id}"
    make_nodes(k8s, node_names(prefix, 2, 3), test_id)
    inventory = playbook_inventory(tmp_path, k8s, prefix, test_id, k8s_topology_nfd_namespace=k8s_namespace,
                                   k8s_topology_slinky={"namespace": k8s_namespace, "configmap_name": "slurm-config",
                                                        "plugin": "topology/block"})
    api = client(k8s.kubeconfig)
    configmap = _k8s.namespaced_path("/api/v1", k8s_namespace, "configmaps", "slurm-config")
    features = _k8s.namespaced_path(nfd.API, k8s_namespace, "nodefeatures")
    before = node_state(api, test_id)

    out, changed = run_k8s_playbook(inventory, "--check", "--diff")
    assert changed == 3
    # ansible.cfg renders results (and dict diffs) as YAML.
    assert f"-    {prefix}-r01-n01: {{}}\n" in out and f"+    {prefix}-r01-n01:\n" in out
    assert f"+        fabric.topograph.run/tier-0: {prefix}-leaf01\n" in out
    assert f"+++ after: configmap/{k8s_namespace}/slurm-config topology.conf" in out
    assert f"+BlockName={prefix}-rack01 Nodes={prefix}-r01-n[01-03]" in out
    assert written(before, node_state(api, test_id)) == []
    with pytest.raises(_k8s.K8sError) as missing:
        api.request("GET", configmap)
    assert missing.value.status == 404 and api.list(features) == []

    out, changed = run_k8s_playbook(inventory)
    assert changed == 3 and "nodes labelled: 6 of 6 in the topology" in out
    assert len(api.list(features)) == 6 and "BlockSizes=3" in api.request("GET", configmap)["data"]["topology.conf"]
    published = node_state(api, test_id)

    out, changed = run_k8s_playbook(inventory)
    assert changed == 0, out
    assert written(published, node_state(api, test_id)) == []


def test_k8s_playbook_summary_names_the_quarantined_nodes(k8s, tmp_path):
    test_id = new_id()
    prefix = f"t{test_id}"
    names = make_nodes(k8s, node_names(prefix, 2, 3), test_id)
    params = dict(gb200(prefix, racks=2, per_rack=3), accelerator={"source": "nvidia_smi",
                                                                   "nvidia_smi": {names[0]: UNHEALTHY_TRAY}})
    inventory = playbook_inventory(tmp_path, k8s, prefix, test_id,
                                   topology_provider={"name": "inventory", "params": params})
    # JSON result format: each line of the summary is one JSON string (no YAML folding).
    result = run_playbook("-i", inventory, REPO / "playbooks" / "k8s.yml",
                          env=ansible_env(ANSIBLE_CALLBACK_RESULT_FORMAT="json"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert '"nodes labelled: 5 of 5 in the topology (cleaned: 0, missing from the cluster: 0)",' in result.stdout
    assert '"quarantined nodes (topology labels removed): 1",' in result.stdout
    assert f'"  {names[0]} (unhealthy, nvidia_smi): nvidia-smi output of {names[0]}, row 1: ' in result.stdout
