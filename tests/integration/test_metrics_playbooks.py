"""The playbooks' opt-in metrics: site.yml's slurm_topology role and k8s.yml write their textfile.

Proves, with ansible-playbook end to end: a first run writes the node_exporter textfile with the
map's counts; a second run over the same cluster reports no change at all (the file's timestamps
are refreshed all the same); a run that fails inside the role or the play records the failure,
keeps the last success time and the counts, and still fails; a node the discovery quarantines is
counted. Without the variable nothing is
written (the other playbook tests run that way).
"""

from __future__ import annotations

import json
import re
import shutil

import pytest
import yaml
from prometheus_client import parser

from tests.ansible_run import REPO, ansible_env, recap, run_playbook
from tests.integration.k8s_support import make_nodes, new_id, node_names, playbook_inventory
from tests.nvidia_smi_shapes import UNHEALTHY_TRAY

pytestmark = pytest.mark.playbook


def metrics(directory, target):
    text = (directory / f"aifactory_topology_{target}.prom").read_text()
    values = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            assert sample.labels == {"target": target}, sample
            values[sample.name.removeprefix("aifactory_topology_")] = sample.value
    return values


def run_site(inventory, output, textfiles, **extra):
    variables = {"slurm_topology_conf_dir": str(output), "slurm_topology_metrics_dir": str(textfiles), **extra}
    result = run_playbook("-i", inventory, REPO / "playbooks/site.yml", "-e", json.dumps(variables),
                          env=ansible_env(ANSIBLE_CALLBACK_RESULT_FORMAT="json"))
    return result, recap(result.stdout, "localhost")


def test_site_writes_the_slurm_metrics_stays_idempotent_and_records_a_failure(tmp_path):
    inventory = tmp_path / "example"
    shutil.copytree(REPO / "inventories" / "example", inventory)
    output, textfiles = tmp_path / "output", tmp_path / "textfile"
    textfiles.mkdir()

    first, (changed, failed) = run_site(inventory, output, textfiles)
    assert first.returncode == 0, first.stdout + first.stderr
    # directory, seeded slurm.conf, topology.yaml, cli_filter.lua, slurm.conf settings, the metrics file
    assert (changed, failed) == (6, 0)
    written = metrics(textfiles, "slurm")
    assert {name: written[name] for name in ("nodes", "blocks", "placeholder_blocks", "quarantined_nodes",
                                             "last_run_failed", "consecutive_failures", "last_run_files_changed")} \
        == {"nodes": 129, "blocks": 8, "placeholder_blocks": 1, "quarantined_nodes": 0, "last_run_failed": 0,
            "consecutive_failures": 0, "last_run_files_changed": 3}
    assert written["last_success_timestamp_seconds"] == written["last_run_timestamp_seconds"] > 0
    assert written["last_run_duration_seconds"] > 0

    again, (changed, failed) = run_site(inventory, output, textfiles)
    assert again.returncode == 0 and (changed, failed) == (0, 0), again.stdout
    refreshed = metrics(textfiles, "slurm")
    assert refreshed["last_success_timestamp_seconds"] > written["last_success_timestamp_seconds"]
    assert refreshed["last_run_files_changed"] == 0 and refreshed["nodes"] == 129

    # A release the role refuses: the role fails inside its block, the metrics say so.
    broken, (_changed, failed) = run_site(inventory, output, textfiles, slurm_topology_version="20.11")
    assert broken.returncode != 0 and failed == 1 and "Slurm 20.11 cannot be used" in broken.stdout
    after = metrics(textfiles, "slurm")
    assert after["last_run_failed"] == 1 and after["consecutive_failures"] == 1
    assert after["last_success_timestamp_seconds"] == refreshed["last_success_timestamp_seconds"]
    assert after["last_run_timestamp_seconds"] > refreshed["last_run_timestamp_seconds"]
    assert after["nodes"] == 129 and after["blocks"] == 8

    # One tray's GPUs are in no NVLink fabric: discovery quarantines it, the run succeeds and counts it.
    provider = yaml.safe_load((inventory / "group_vars" / "all" / "topology.yml").read_text())["topology_provider"]
    provider["params"]["accelerator"] = {"source": "nvidia_smi", "nvidia_smi": {"gb200-r01-n01": UNHEALTHY_TRAY}}
    degraded, (changed, failed) = run_site(inventory, output, textfiles, topology_provider=provider)
    assert degraded.returncode == 0 and failed == 0, degraded.stdout + degraded.stderr
    assert changed == 2  # topology.yaml without the tray, the metrics (recovered, one quarantined)
    counted = metrics(textfiles, "slurm")
    assert (counted["quarantined_nodes"], counted["nodes"], counted["last_run_failed"]) == (1, 128, 0)
    assert counted["consecutive_failures"] == 0 and counted["last_run_files_changed"] == 1


@pytest.mark.k8s
def test_k8s_playbook_writes_the_kubernetes_metrics_and_records_a_failure(k8s, tmp_path):
    test_id = new_id()
    prefix = f"t{test_id}"
    make_nodes(k8s, node_names(prefix, 2, 3), test_id)
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    inventory = playbook_inventory(tmp_path, k8s, prefix, test_id, k8s_topology_metrics_dir=str(textfiles))

    def run(*extra):
        result = run_playbook("-i", inventory, REPO / "playbooks" / "k8s.yml", *extra)
        return result, recap(result.stdout, "localhost")

    first, (changed, failed) = run()
    assert first.returncode == 0 and (changed, failed) == (2, 0), first.stdout + first.stderr  # labels, metrics
    # Labels alone: k8s_node_labels discovers itself, no separate discovery task runs (one module run fewer).
    assert re.search(r"TASK \[Discover the topology\] \*+\nskipping: \[localhost\]", first.stdout), first.stdout
    written = metrics(textfiles, "kubernetes")
    assert (written["nodes"], written["last_run_failed"], written["last_run_files_changed"]) == (6, 0, 1)

    again, (changed, failed) = run()
    assert again.returncode == 0 and (changed, failed) == (0, 0), again.stdout
    second = metrics(textfiles, "kubernetes")
    assert second["last_success_timestamp_seconds"] > written["last_success_timestamp_seconds"]

    # The API server cannot be reached: the labels task fails, the failure is recorded.
    unreachable = json.dumps({"k8s_topology_auth": {"host": "https://127.0.0.1:1", "api_key": "never-printed-token",
                                                    "validate_certs": False}})
    broken, (_changed, failed) = run("-e", unreachable)
    assert broken.returncode != 0 and failed == 1, broken.stdout
    assert "never-printed-token" not in broken.stdout + broken.stderr
    after = metrics(textfiles, "kubernetes")
    assert (after["last_run_failed"], after["consecutive_failures"], after["nodes"]) == (1, 1, 6)
    assert after["last_success_timestamp_seconds"] == second["last_success_timestamp_seconds"]
