from __future__ import annotations

import json

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm_files as job
from ansible_collections.aifactory.topology.plugins.module_utils._writers import file as file_writer
from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers._specs import PROVIDERS
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import topology_info as topology_info_run
from ansible_collections.aifactory.topology.plugins.modules import (
    slurm_conf, slurm_topology, topology_graph, topology_info)

from ...conftest_paths import MODELS, REPO
from tests.unit.helpers import gone_or_zombie
from .module_runner import run_module

NVL72 = {"provider": {"name": "simulation", "params": {"model_path": str(MODELS / "nvl72.yaml")}}}
BLOCK = dict(NVL72, plugin="topology/block", block_sizes=[18, 36, 72])


@pytest.fixture
def run(monkeypatch):
    def runner(module, args, **kwargs):
        return run_module(module, args, monkeypatch=monkeypatch, **kwargs)
    return runner


def test_without_dest_returns_content_and_changes_nothing(run):
    result = run(slurm_topology, BLOCK)
    assert result["changed"] is False and not result["failed"]
    assert result["content"].startswith(job.DEFAULT_HEADER + "\nBlockName=nvl-1-1 Nodes=node[1101-1118]\n")
    assert result["summary"]["blocks"] == 4 and result["summary"]["placeholders"] == []


def test_write_then_idempotent_then_check_mode_diff(run, tmp_path):
    dest = tmp_path / "topology.conf"
    args = dict(BLOCK, dest=str(dest))
    check = run(slurm_topology, args, check_mode=True, diff=True)
    assert check["changed"] is True and not dest.exists()
    assert check["diff"]["before_header"] == "/dev/null" and "BlockSizes=18,36,72" in check["diff"]["after"]
    first = run(slurm_topology, args)
    assert first["changed"] is True and "diff" not in first
    assert dest.read_text() == first["content"]
    assert oct(dest.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in tmp_path.iterdir()] == ["topology.conf"]  # no temporary file left
    again = run(slurm_topology, args)
    assert again["changed"] is False
    changed_args = dict(args, domain_order=["nvl-1-1", "nvl-1-2", "nvl-9-9", "nvl-2-1", "nvl-2-2"])
    before = dest.read_text()
    dry = run(slurm_topology, changed_args, check_mode=True, diff=True)
    assert dry["changed"] is True and dest.read_text() == before
    assert dry["diff"]["before"] == before and "BlockName=nvl-9-9\n" in dry["diff"]["after"]


def test_mode_and_backup(run, tmp_path):
    dest = tmp_path / "topology.conf"
    dest.write_text("BlockName=old Nodes=node[1101-1118]\nBlockSizes=18\n")
    result = run(slurm_topology, dict(BLOCK, dest=str(dest), backup=True, mode="0640"))
    assert result["changed"] is True
    assert oct(dest.stat().st_mode & 0o777) == "0o640"
    assert open(result["backup_file"]).read().startswith("BlockName=old")
    assert run(slurm_topology, dict(BLOCK, dest=str(dest), mode="0640"))["changed"] is False
    assert run(slurm_topology, dict(BLOCK, dest=str(dest), mode="0600"), check_mode=True)["changed"] is True
    assert oct(dest.stat().st_mode & 0o777) == "0o640"


def test_validate_failure_keeps_the_old_file(run, tmp_path):
    dest = tmp_path / "topology.conf"
    dest.write_text("BlockName=old Nodes=node[1101-1118]\nBlockSizes=18\n")
    result = run(slurm_topology, dict(BLOCK, dest=str(dest), validate="grep -q NoSuchText %s"))
    assert result["failed"] and "validation failed (rc=1)" in result["msg"]
    assert dest.read_text().startswith("BlockName=old")
    assert [p.name for p in tmp_path.iterdir()] == ["topology.conf"]
    ok = run(slurm_topology, dict(BLOCK, dest=str(dest), validate="grep -q BlockSizes=18,36,72 %s"))
    assert ok["changed"] is True and "BlockSizes=18,36,72" in dest.read_text()
    bad = run(slurm_topology, dict(BLOCK, dest=str(tmp_path / "x.conf"), validate="true"))
    assert bad["failed"] and "validate must contain %s" in bad["msg"]


def test_a_validate_command_whose_child_hangs_is_killed_and_nothing_is_written(run, tmp_path, monkeypatch):
    # A checker script that starts a child holding its output, then exits: the one command runner's limit holds.
    monkeypatch.setattr(file_writer, "VALIDATE_TIMEOUT", 1)
    pidfile, checker = tmp_path / "child.pid", tmp_path / "check"
    checker.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > '{pidfile}'\nexit 0\n")
    checker.chmod(0o755)
    dest = tmp_path / "topology.conf"
    dest.write_text("BlockName=old Nodes=node[1101-1118]\nBlockSizes=18\n")
    result = run(slurm_topology, dict(BLOCK, dest=str(dest), validate=f"{checker} %s"))
    assert result["failed"] and "did not finish within 1 s; it was killed with every process it started" in result["msg"]
    assert dest.read_text().startswith("BlockName=old")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["check", "child.pid", "topology.conf"]
    assert gone_or_zombie(int(pidfile.read_text()))


def test_shrink_guard_refuses_then_force_accepts(run, tmp_path):
    dest = tmp_path / "topology.conf"
    run(slurm_topology, dict(BLOCK, dest=str(dest)))
    model = run(topology_info, NVL72)["topology"]
    model["nodes"] = [group for group in model["nodes"] if group["domain"] != "nvl-2-2"]  # a rack disappears
    args = dict(plugin="topology/block", block_sizes=[18, 36, 72], model=model, dest=str(dest))
    refused = run(slurm_topology, args)
    assert refused["failed"]
    assert "refusing to drop 18 of 72 nodes (25.0% > max_node_loss 10%): node[2201-2218]" in refused["msg"]
    assert "nvl-2-2" in dest.read_text()
    assert run(slurm_topology, dict(args, max_node_loss=30))["changed"] is True
    forced_dest = tmp_path / "forced.conf"
    run(slurm_topology, dict(BLOCK, dest=str(forced_dest)))
    forced = run(slurm_topology, dict(args, dest=str(forced_dest), force=True))
    assert forced["changed"] is True
    assert any("force: dropping 18 of 72 nodes" in w for w in forced["warnings"])


def test_slurm_conf_takes_numbers_and_booleans_as_yaml_gives_them(run, tmp_path):
    path = tmp_path / "slurm.conf"
    path.write_text("ClusterName=ai\nPartitionName=gpu Nodes=n[1-4] State=UP\n")
    args = {"path": str(path), "settings": {"MaxNodes": 4}, "partitions": {"gpu": {"Hidden": True, "MaxNodes": 2}}}
    result = run(slurm_conf, args)
    assert result["changed"] and result["changed_settings"] == ["MaxNodes"] and result["changed_partitions"] == ["gpu"]
    assert "PartitionName=gpu Nodes=n[1-4] State=UP Hidden=YES MaxNodes=2" in path.read_text().splitlines()
    assert path.read_text().endswith("\nMaxNodes=4\n")
    assert run(slurm_conf, args)["changed"] is False


def test_empty_result_never_replaces_a_good_file():
    good = "BlockName=r1 Nodes=n[1-4]\nBlockSizes=4\n"
    with pytest.raises(TopologyError, match="places 4 nodes with one that places none"):
        shrink_guard.check_shrink(good, "- topology: admin\n  cluster_default: true\n  flat: true\n", 10, True)


def test_bad_input_fails_with_the_field_and_writes_nothing(run, tmp_path):
    dest = tmp_path / "topology.conf"
    cases = [
        (dict(BLOCK, block_sizes=[18, 54]), "block_sizes[1] = 54 must be the base size 18 times a power of two"),
        ({"provider": {"name": "nope"}}, f"value of name must be one of: {', '.join(PROVIDERS)}, got: nope"),
        ({"model": {"format": "aifactory.topology/v1", "nodes": [{"nodes": "n[2-1]"}]}}, "model.nodes[0].nodes"),
        (dict(NVL72, topologies={"a": {"plugin": "topology/flat"}}), "exactly one topology must set cluster_default"),
        (dict(NVL72, topologies={"a": {"plugin": "topology/flat", "cluster_default": True, "partiton": "x"}}),
         "topologies.a has unknown keys: partiton"),
        (dict(NVL72, topologies={"a": {"plugin": "topology/ring", "cluster_default": True}}),
         "topologies.a.plugin must be one of"),
        (dict(NVL72, topologies={"a b": {"plugin": "topology/flat", "cluster_default": True}}), "topologies.a b:"),
        (dict(NVL72, topologies={"a": {"nodes": "n[1-", "plugin": "topology/tree", "cluster_default": True}}),
         "topologies.a.nodes: unbalanced"),
        (dict(NVL72, block_sizes=[18]), "block_sizes applies to plugin topology/block only"),
        (dict(NVL72, model={}), "parameters are mutually exclusive: provider|model"),
    ]
    for args, message in cases:
        result = run(slurm_topology, dict(args, dest=str(dest)))
        assert result["failed"], args
        assert message in result["msg"], (message, result["msg"])
    assert not dest.exists()


def test_topology_yaml_with_partition_resolved_by_scontrol(run, tmp_path):
    scontrol = tmp_path / "scontrol"
    scontrol.write_text("#!/bin/sh\n"
                        "case \"$4\" in\n"
                        "  gpu) echo 'PartitionName=gpu AllowGroups=ALL Nodes=node[1101-1118,1201-1218] State=UP';;\n"
                        "  cpu) echo 'PartitionName=cpu Nodes=ALL';;\n"
                        "  odd) echo 'PartitionName=odd Nodes=node[1-';;\n"
                        "  *) echo \"slurm_load_partitions: Invalid partition name specified\" >&2; exit 1;;\n"
                        "esac\n")
    scontrol.chmod(0o755)
    topologies = {"nvl72": {"plugin": "topology/block", "block_sizes": [18, 36], "partition": "gpu",
                            "cluster_default": True},
                  "fabric": {"plugin": "topology/tree", "partition": "cpu"},
                  "admin": {"plugin": "topology/flat"}}
    result = run(slurm_topology, dict(NVL72, topologies=topologies, scontrol_path=str(scontrol),
                                      dest=str(tmp_path / "topology.yaml")))
    assert not result["failed"], result["msg"] if result["failed"] else ""
    content = result["content"]
    assert "        - block: nvl-2-1\n" in content and "node2101" not in content.split("- topology: fabric")[0]
    assert result["summary"]["topologies"] == ["admin", "fabric", "nvl72"]
    missing = run(slurm_topology, dict(NVL72, topologies={"x": {"plugin": "topology/tree", "partition": "gone",
                                                                "cluster_default": True}},
                                       scontrol_path=str(scontrol)))
    assert missing["failed"] and "cannot read partition 'gone' with scontrol: " in missing["msg"]
    assert "show partition -o gone failed (exit 1): slurm_load_partitions: Invalid partition name" in missing["msg"]
    odd = run(slurm_topology, dict(NVL72, topologies={"x": {"plugin": "topology/tree", "partition": "odd",
                                                            "cluster_default": True}},
                                   scontrol_path=str(scontrol), dest=str(tmp_path / "odd.yaml")))
    assert odd["failed"] and "partition 'odd': scontrol printed Nodes=node[1-, which is not a hostlist" in odd["msg"]
    assert not (tmp_path / "odd.yaml").exists()


@pytest.mark.parametrize("output, expected", [
    ("PartitionName=gpu Nodes=n[1-2] State=UP", ["n1", "n2"]),
    ("PartitionName=gpu Nodes=(null)", []),
    ("PartitionName=gpu Nodes=ALL", None),
])
def test_parse_partition_nodes(output, expected):
    assert job.parse_partition_nodes("gpu", output) == expected


def test_topology_info_returns_the_compact_model_and_validates_models(run):
    result = run(topology_info, NVL72)
    assert result["changed"] is False
    assert result["summary"]["nodes"] == 72
    first = result["topology"]["nodes"][0]
    assert (first["nodes"], first["switch"], first["domain"]) == ("node[1101-1118]", "leaf-1-1", "nvl-1-1")
    again = run(topology_info, {"model": result["topology"]})
    assert again["topology"] == result["topology"]
    broken = run(topology_info, {"model": dict(result["topology"], switches={"leaf-1-1": "ghost"})})
    assert broken["failed"] and "unknown" in broken["msg"]


def test_creds_are_never_in_the_result(run):
    result = run(topology_info, {"provider": dict(NVL72["provider"], creds={"token": "s3cr3t-value"})})
    assert "s3cr3t-value" not in repr(result)


def test_topology_graph_writes_json_idempotently(run, tmp_path):
    dest = tmp_path / "graph.json"
    args = {"provider": {"name": "simulation", "params": {"model_path": str(MODELS / "small-tree.yaml")}},
            "dest": str(dest)}
    first = run(topology_graph, args, diff=True)
    assert first["changed"] is True and first["diff"]["before_header"] == "/dev/null"
    assert json.loads(dest.read_text())["instances"][0] == {"id": "I21", "network_layers": ["S2", "S1"]}
    assert run(topology_graph, args)["changed"] is False


# An nvidia-smi output for a node the inventory does not have: the provider warns about it.
WARNING_PROVIDER = {"provider": {"name": "inventory", "params": {
    "domains": [{"name": "rack1", "nodes": "gpu[1-2]"}],
    "accelerator": {"nvidia_smi": {"gpu9": "11111111-2222-3333-4444-555555555555, 1\n"}}}}}


@pytest.mark.parametrize("module, args", [
    (slurm_topology, dict(WARNING_PROVIDER, plugin="topology/tree")),
    (topology_info, WARNING_PROVIDER),
])
def test_provider_warnings_reach_the_summary_and_the_warning_stream(run, module, args):
    result = run(module, args)
    assert not result["failed"], result
    provider_warnings = [text for text in result["summary"]["warnings"] if "nvidia-smi output are not in the" in text]
    assert len(provider_warnings) == 1 and "gpu9" in provider_warnings[0]
    assert result["summary"]["warnings"] == result["warnings"]


def test_every_module_has_a_row_in_the_readme_module_table():
    """The table's descriptions are written by hand; the modules it must list are the files in plugins/modules/."""
    section = (REPO / "README.md").read_text(encoding="utf-8").split("\n## Modules and filters\n")[1]
    rows = [line for line in section.strip().split("\n\n")[0].splitlines() if line.startswith("|")]
    listed = {cell[len("`aifactory.topology."):-1] for cell in (row.split("|")[1].strip() for row in rows)
              if cell.startswith("`aifactory.topology.") and cell.endswith("`")}
    modules = {path.stem for path in (REPO / "plugins" / "modules").glob("*.py") if path.stem != "__init__"}
    assert modules <= listed, sorted(modules - listed)


def test_slurm_conf_reads_the_files_slurm_conf_includes(monkeypatch, tmp_path):
    from ansible_collections.aifactory.topology.plugins.modules import slurm_conf

    (tmp_path / "switch.conf").write_text("SwitchType=switch/nvidia_imex\n")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=ai\nInclude switch.conf\n")
    result = run_module(slurm_conf, {"path": str(conf), "settings": {"SwitchType": "switch/nvidia_imex"}},
                        monkeypatch=monkeypatch)
    assert not result["failed"] and not result["changed"] and not result["restart_required"], result
    assert conf.read_text() == "ClusterName=ai\nInclude switch.conf\n"
    (tmp_path / "switch.conf").write_text("SwitchType=switch/none\n")
    result = run_module(slurm_conf, {"path": str(conf), "settings": {"SwitchType": "switch/nvidia_imex"}},
                        monkeypatch=monkeypatch)
    assert result["failed"] and "switch.conf line 1, a file" in result["msg"]
    assert conf.read_text() == "ClusterName=ai\nInclude switch.conf\n"


def test_an_unexpected_error_fails_with_its_traceback_and_a_collection_error_without(run, monkeypatch):
    # A bug (here a KeyError deep in discovery) fails the task with its type and message, and the
    # traceback in ``exception``, which ansible-playbook shows with -vvv; the collection's own errors
    # say what to fix and carry no traceback.
    def broken(*_args, **_kwargs):
        raise KeyError("switches")

    with monkeypatch.context() as patch:
        patch.setattr(topology_info_run, "load_topology", broken)
        result = run(topology_info, NVL72)
    assert result["failed"]
    assert result["msg"].startswith("unexpected error in aifactory.topology (KeyError): 'switches'")
    assert "Traceback (most recent call last)" in result["exception"] and "in broken" in result["exception"]
    clean = run(topology_info, {"provider": {"name": "simulation", "params": {"model_path": "/nonexistent.yaml"}}})
    assert clean["failed"] and "/nonexistent.yaml" in clean["msg"] and "exception" not in clean
