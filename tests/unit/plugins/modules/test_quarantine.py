"""Per-node quarantine through the modules: one node's unusable data leaves that node out, not the run.

The nodes come from Topograph's NVL72 simulation model (node[1101-1118], ... four racks of 18); an
``accelerator.nvidia_smi`` output per node is the per-node data a host controls.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.modules import (
    k8s_node_labels,
    segment_capacity,
    slurm_topology,
    topology_graph,
    topology_info,
)

from tests.fault_k8s import FakeApiServer, node_list

from ...conftest_paths import MODELS
from .module_runner import run_module

UUID = "3bd4c4b2-4a2c-4b1f-9b4e-7a8b1c2d3e4f"
UNHEALTHY = "00000000-0000-0000-0000-000000000000, 0, In Progress, N/A\n"


def block_args(nvidia_smi=None, **extra):
    params = {"model_path": str(MODELS / "nvl72.yaml")}
    if nvidia_smi:
        params["accelerator"] = {"source": "nvidia_smi", "nvidia_smi": nvidia_smi}
    return dict({"provider": {"name": "simulation", "params": params}, "plugin": "topology/block",
                 "block_sizes": [18]}, **extra)


def quarantine_lines(result):
    """The quarantine line(s) of a result's summary.warnings."""
    return [line for line in result["summary"]["warnings"] if "nodes quarantined" in line]


def test_an_unhealthy_node_is_in_no_block_and_reported_by_name(monkeypatch, tmp_path):
    dest = tmp_path / "topology.conf"
    result = run_module(slurm_topology, block_args({"node1101": UNHEALTHY}, dest=str(dest)), monkeypatch=monkeypatch)
    assert not result["failed"], result.get("msg")
    assert "node1101" not in dest.read_text() and "BlockName=nvl-1-1 Nodes=node[1102-1118]" in dest.read_text()
    assert result["summary"]["quarantined"] == 1 and result["summary"]["nodes"] == 71
    assert [(q["node"], q["kind"], q["source"]) for q in result["quarantined"]] == [("node1101", "unhealthy", "nvidia_smi")]
    assert result["quarantined"][0]["reason"].startswith("nvidia-smi output of node1101, row 1: fabric.state is 'In Progress'")
    assert [w for w in result["summary"]["warnings"] if w.startswith("1 nodes quarantined (left out of the map): node1101 (")]


def test_a_node_whose_name_is_the_problem_is_reported_clipped_and_escaped(monkeypatch):
    evil = "node9,evil\nBlockName=x Nodes=victim[01-99]" + "y" * 500
    args = block_args({evil: f"{UUID}, 1\n"})
    result = run_module(topology_info, {"provider": args["provider"]}, monkeypatch=monkeypatch)
    assert not result["failed"], result.get("msg")
    (record,) = result["quarantined"]
    assert record["node"] is None and "\n" not in record["identifier"] and len(record["identifier"]) < 100
    assert record["identifier"].startswith("'node9,evil\\nBlockName=x")
    assert result["summary"]["nodes"] == 72 and result["summary"]["quarantined"] == 1


def test_quarantined_nodes_count_as_lost_for_the_shrink_guard(monkeypatch, tmp_path):
    dest = tmp_path / "topology.conf"
    assert run_module(slurm_topology, block_args(dest=str(dest)), monkeypatch=monkeypatch)["changed"]
    before = dest.read_text()
    # A fabric manager down under one rack: 9 of 72 nodes (12.5% > 10%) report no fabric.
    down = {f"node{1100 + n}": UNHEALTHY for n in range(1, 10)}
    refused = run_module(slurm_topology, block_args(down, dest=str(dest)), monkeypatch=monkeypatch)
    assert refused["failed"] and "refusing to drop 9 of 72 nodes (12.5% > max_node_loss 10%)" in refused["msg"]
    assert dest.read_text() == before
    forced = run_module(slurm_topology, block_args(down, dest=str(dest), force=True), monkeypatch=monkeypatch)
    assert forced["changed"] and "node1101" not in dest.read_text()


def test_invalid_nodes_fail_makes_one_bad_node_fatal_and_writes_nothing(monkeypatch, tmp_path):
    dest = tmp_path / "topology.conf"
    args = block_args({"node1101": UNHEALTHY}, dest=str(dest))
    args["provider"]["params"]["invalid_nodes"] = "fail"
    result = run_module(slurm_topology, args, monkeypatch=monkeypatch)
    assert result["failed"] and not dest.exists()
    assert result["msg"].startswith("provider simulation: 1 nodes have unusable data (params.invalid_nodes is fail): "
                                    "node1101 (nvidia-smi output of node1101, row 1")


def test_the_segment_report_lists_quarantined_nodes(monkeypatch):
    args = block_args({"node1101": UNHEALTHY}, node_states={"node1101": "idle", "node1102": "allocated"})
    args.pop("plugin")
    result = run_module(segment_capacity, args, monkeypatch=monkeypatch)
    assert not result["failed"], result.get("msg")
    assert result["summary"]["quarantined"] == 1 and result["quarantined"][0]["node"] == "node1101"
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.aifactory.topology.plugins.plugin_utils import segment_report
    page = segment_report.render(result)
    assert '<figcaption id="quarantined-count">1 quarantined nodes are in no block' in page
    assert '<table id="quarantined"><tr><th>node</th>' in page and "<td>node1101</td><td>unhealthy</td>" in page


def test_the_compact_model_carries_the_quarantine_to_the_next_module(monkeypatch):
    info = run_module(topology_info, {"provider": block_args({"node1101": UNHEALTHY, "bad,name": UNHEALTHY})["provider"]},
                      monkeypatch=monkeypatch)
    model = info["topology"]
    assert [record["identifier"] for record in model["quarantined"]] == ["node1101", "'bad,name'"]
    rendered = run_module(slurm_topology, {"model": model, "plugin": "topology/block", "block_sizes": [18]},
                          monkeypatch=monkeypatch)
    assert rendered["quarantined"] == info["quarantined"] and rendered["summary"]["quarantined"] == 2
    again = run_module(topology_info, {"model": model}, monkeypatch=monkeypatch)
    assert again["topology"]["quarantined"] == model["quarantined"]  # read back unchanged, not escaped twice
    # site.yml's path: the module given the model warns about its quarantine as the discovery did.
    (line,) = quarantine_lines(info)
    assert line.startswith("2 nodes quarantined (left out of the map): node1101 (nvidia-smi output of node1101")
    assert "; 'bad,name' (" in line
    capacity = run_module(segment_capacity, {"model": model, "block_sizes": [18], "node_states": {"node1102": "idle"}},
                          monkeypatch=monkeypatch)
    assert not capacity["failed"], capacity.get("msg")
    assert quarantine_lines(rendered) == quarantine_lines(again) == quarantine_lines(capacity) == [line]
    clean = run_module(topology_info, {"provider": block_args()["provider"]}, monkeypatch=monkeypatch)["topology"]
    assert quarantine_lines(run_module(slurm_topology, {"model": clean}, monkeypatch=monkeypatch)) == []


def test_a_quarantine_record_in_a_model_is_checked(monkeypatch):
    model = run_module(topology_info, {"provider": block_args()["provider"]}, monkeypatch=monkeypatch)["topology"]
    for records, message in [
        ({"node": "x"}, "model.quarantined must be a list of quarantine records"),
        ([{"node": "node1101", "identifier": "node1101", "source": "s", "reason": "r", "kind": "unhealthy"}],
         "model.quarantined[0]: node 'node1101' is quarantined and in model.nodes"),
        ([{"node": None, "identifier": "x", "source": "s", "reason": "r", "kind": "sick"}],
         "model.quarantined[0].kind must be invalid or unhealthy, got 'sick'"),
        ([{"node": "a b", "identifier": "x", "source": "s", "reason": "r", "kind": "invalid"}],
         "model.quarantined[0].node: 'a b' contains white space"),
    ]:
        result = run_module(topology_info, {"model": dict(model, quarantined=records)}, monkeypatch=monkeypatch)
        assert result["failed"] and result["msg"].startswith(message), result["msg"]


def test_k8s_node_labels_given_the_model_warns_about_its_quarantine(monkeypatch):
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    record = {"node": "gpu-9", "identifier": "gpu-9", "source": "nvidia_smi", "kind": "unhealthy",
              "reason": "nvidia-smi output of gpu-9, row 1: fabric.state is 'In Progress'"}
    model = {"format": "aifactory.topology/v1", "switches": {}, "nodes": [{"nodes": "gpu-[1-2]", "domain": "c1"}],
             "quarantined": [record]}
    with FakeApiServer() as api:
        # Already labelled as the model wants: this stand-in answers lists only, and no write is due.
        api.lists = lambda query: node_list([
            {"metadata": {"name": name, "resourceVersion": "7", "labels": {"accelerator.topograph.run/domain": "c1"}}}
            for name in ("gpu-1", "gpu-2")])
        result = run_module(k8s_node_labels, {"model": model, "host": api.url(), "api_key": "t0ken"},
                            monkeypatch=monkeypatch)
    assert not result["failed"], result.get("msg")
    assert result["changed"] is False and result["quarantined"] == [record]
    assert quarantine_lines(result) == ["1 nodes quarantined (left out of the map): gpu-9 (nvidia-smi output of gpu-9, "
                                        "row 1: fabric.state is 'In Progress')"]


def test_topology_graph_returns_the_quarantined_list_discovered_or_from_a_model(monkeypatch):
    provider = block_args({"node1101": UNHEALTHY})["provider"]
    discovered = run_module(topology_graph, {"provider": provider}, monkeypatch=monkeypatch)
    assert not discovered["failed"], discovered.get("msg")
    assert [(q["node"], q["kind"], q["source"]) for q in discovered["quarantined"]] \
        == [("node1101", "unhealthy", "nvidia_smi")]
    assert '"node1101"' not in discovered["content"] and '"node1102"' in discovered["content"]
    info = run_module(topology_info, {"provider": provider}, monkeypatch=monkeypatch)
    passed_on = run_module(topology_graph, {"model": info["topology"]}, monkeypatch=monkeypatch)
    assert passed_on["quarantined"] == info["quarantined"] == discovered["quarantined"]
    assert passed_on["content"] == discovered["content"]
