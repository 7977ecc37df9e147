"""topology_facts on a sysfs tree laid out as the kernel's ib_core publishes it, and recorded nvidia-smi output.

The sysfs layout and values follow Documentation/ABI/stable/sysfs-class-infiniband (a ConnectX-7
HCA in InfiniBand mode and a RoCE port in Ethernet mode). nvidia-smi is a script in a temporary
directory that prints a recorded output of the fabric query (and of ``nvidia-smi -q``) on a GB200
tray (4 GPUs) and exits as nvidia-smi does; the module runs it as it runs the real one.
"""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._providers import node_facts as _node_facts
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _nvidia_smi
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers._nvidia_smi import apply_nvidia_smi_domains
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover
from ansible_collections.aifactory.topology.plugins.modules import topology_facts

from ...conftest_paths import FIXTURES, REPO
from tests.unit.helpers import gone_or_zombie
from .... import nvidia_smi_shapes as shapes
from .module_runner import run_module

NVIDIA_SMI = REPO / "tests" / "fixtures" / "nvidia-smi"
UUID = "6a4f2e1c-93b7-4d0e-8f51-2c7d9e0a1b34"
# recorded: one row per GPU, as --format=csv,noheader prints them
GB200_TRAY = (NVIDIA_SMI / "fabric-completed.csv").read_text()
HEALTHY = (NVIDIA_SMI / "fabric-healthy.q.txt").read_text()
# nvidia-smi on a node with the driver but no GPU: "No devices were found", exit code 6.
NO_DEVICES = ("No devices were found\n", 6)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def hca(root, device, node_guid, node_desc, ports):
    base = root / "class" / "infiniband" / device
    write(base / "node_guid", node_guid)
    write(base / "sys_image_guid", node_guid)
    write(base / "node_desc", node_desc)
    write(base / "node_type", "1: CA")
    write(base / "fw_ver", "28.39.1002")
    for number, (state, phys, rate, layer) in ports.items():
        port = base / "ports" / str(number)
        write(port / "state", state)
        write(port / "phys_state", phys)
        write(port / "rate", rate)
        write(port / "link_layer", layer)
        write(port / "lid", "0x1f3")


@pytest.fixture
def sysfs(tmp_path):
    root = tmp_path / "sys"
    hca(root, "mlx5_10", "e09d:7303:0085:8d88", "MT4129 ConnectX7   Mellanox Technologies",
        {1: ("1: DOWN", "3: Disabled", "10 Gb/sec (4X SDR)", "InfiniBand")})
    hca(root, "mlx5_0", "e09d:7303:0037:311c", "gb200-r01-n01 mlx5_0",
        {1: ("4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", "InfiniBand")})
    hca(root, "mlx5_2", "b8ce:f603:00a1:b2c4", "gb200-r01-n01 mlx5_2",
        {1: ("4: ACTIVE", "5: LinkUp", "200 Gb/sec (2X NDR)", "Ethernet")})
    return root


def fake_nvidia_smi(tmp_path, output, rc=0, full=HEALTHY, full_rc=0):
    """nvidia-smi of a driver that knows only the fabric fields (as 550 does): the fabric query answers
    ``output``, a query with any other field the driver's "not a valid field" answer (exit 2), ``-q``
    ``full``; anything else exits 2."""
    script = tmp_path / "bin" / "nvidia-smi"
    script.parent.mkdir(exist_ok=True)
    for name, text in (("recorded.txt", output), ("full.txt", full)):
        path = tmp_path / name
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    fabric = ",".join(_nvidia_smi.FABRIC_FIELDS)
    script.write_text(f"#!/bin/sh\n"
                      f"echo \"$*\" >> '{tmp_path / 'calls.log'}'\n"
                      f"if [ \"$1 $2\" = '--query-gpu={fabric} --format=csv,noheader' ]; then\n"
                      f"  cat '{tmp_path / 'recorded.txt'}'; exit {rc}\nfi\n"
                      f"case \"$1\" in --query-gpu=*)\n"
                      f"  field=$(echo \"$1\" | sed 's/^--query-gpu=//' | tr , '\\n' | grep -v '^fabric\\.[a-zA-Z]*$' | head -1)\n"
                      f"  echo \"Field \\\"$field\\\" is not a valid field to query.\"; echo; exit 2;;\nesac\n"
                      f"[ \"$*\" = -q ] || exit 2\ncat '{tmp_path / 'full.txt'}'\nexit {full_rc}\n")
    script.chmod(0o755)
    return str(script)


def calls(tmp_path):
    return (tmp_path / "calls.log").read_text().splitlines()


@pytest.fixture
def run(monkeypatch):
    def runner(args, **kwargs):
        return run_module(topology_facts, args, monkeypatch=monkeypatch, **kwargs)
    return runner


def test_hcas_from_sysfs_in_natural_device_order(sysfs):
    hcas = _node_facts.infiniband_hcas(str(sysfs))
    assert [h["device"] for h in hcas] == ["mlx5_0", "mlx5_2", "mlx5_10"]
    assert hcas[0] == {
        "device": "mlx5_0", "node_guid": "0xe09d73030037311c", "sys_image_guid": "0xe09d73030037311c",
        "node_desc": "gb200-r01-n01 mlx5_0", "node_type": "CA",
        "ports": [{"port": 1, "state": "ACTIVE", "phys_state": "LinkUp", "rate": "400 Gb/sec (4X NDR)",
                   "link_layer": "InfiniBand"}]}
    assert hcas[1]["ports"][0]["link_layer"] == "Ethernet"
    assert hcas[2]["ports"][0]["state"] == "DOWN"


def test_a_fifo_or_a_huge_file_in_the_sysfs_tree_is_not_read(sysfs):
    desc = sysfs / "class" / "infiniband" / "mlx5_0" / "node_desc"
    desc.unlink()
    os.mkfifo(desc)  # a read would block forever
    (sysfs / "class" / "infiniband" / "mlx5_2" / "node_desc").write_text("x" * 100_000)
    hcas = _node_facts.infiniband_hcas(str(sysfs))
    assert [h["device"] for h in hcas] == ["mlx5_0", "mlx5_2", "mlx5_10"]
    assert hcas[0]["node_guid"] == "0xe09d73030037311c" and not hcas[0]["node_desc"]
    assert not hcas[1]["node_desc"]


def test_the_module_gathers_hcas_clique_and_hostname(run, sysfs, tmp_path):
    result = run({"sysfs_root": str(sysfs), "nvidia_smi_path": fake_nvidia_smi(tmp_path, GB200_TRAY)}, check_mode=True)
    assert not result["failed"] and result["changed"] is False and result["warnings"] == []
    node = result["ansible_facts"]["topology_node"]
    assert node["hostname"] == os.uname().nodename
    assert len(node["infiniband"]) == 3
    # A 550-like driver: the full query is refused field group by field group, the health comes from -q.
    assert node["nvlink"] == {"cluster_uuid": UUID, "clique_id": "32766", "domain": f"{UUID}.32766", "gpus": 4,
                              "state": "Completed", "status": "Success", "fabric": "domain",
                              "health": {"summary": "Healthy", "bandwidth": "Full", "route_recovery_in_progress": "False",
                                         "route_unhealthy": "False", "access_timeout_recovery": "False",
                                         "incorrect_configuration": "None"},
                              "query": {"fields": list(_nvidia_smi.FABRIC_FIELDS), "health": "nvidia-smi -q"},
                              "health_checked": True}
    assert [call.split(" ")[0].split("=")[0] for call in calls(tmp_path)] == ["--query-gpu"] * 3 + ["-q"]


@pytest.mark.parametrize("output, rc, fabric", [
    (NO_DEVICES[0], NO_DEVICES[1], None),
    ("00000000-0000-0000-0000-000000000000, 0, Completed, Success\n" * 8, 0, "node"),
    ((NVIDIA_SMI / "fabric-not-supported.csv").read_text(), 0, "none"),
], ids=["no-gpu", "hgx-registered-inside-the-node", "no-fabric"])
def test_nodes_without_a_multi_node_domain_are_not_errors(run, tmp_path, output, rc, fabric):
    result = run({"sysfs_root": str(tmp_path / "no-sys"), "nvidia_smi_path": fake_nvidia_smi(tmp_path, output, rc),
                  "fabric_health": False})
    assert not result["failed"] and result["warnings"] == []
    node = result["ansible_facts"]["topology_node"]
    assert node["infiniband"] == [] and node["nvlink"].get("fabric") == fabric
    assert "unhealthy" not in node["nvlink"] and "domain" not in node["nvlink"]
    topology = Topology()
    topology.add_node("other", domain="rack1")
    apply_nvidia_smi_domains(topology, {"gpu1": node})
    assert not topology.quarantined and topology.nodes["gpu1"].domain is None


def test_without_nvidia_smi_on_the_path_there_are_no_gpu_facts(run, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = run({"gather": ["nvlink"]})
    assert not result["failed"] and result["ansible_facts"]["topology_node"] == {"nvlink": {}}


@pytest.mark.parametrize("output, rc, key, warning", [
    (f"{UUID}, 1, Completed, Success\n{UUID}, 2, Completed, Success\n", 0, "invalid",
     "its GPUs are in different NVLink domains"),
    ("", 9, "unhealthy", "nvidia-smi failed (rc=9)"),
])
def test_disagreeing_gpus_or_a_failing_nvidia_smi_warn_and_say_why(run, tmp_path, output, rc, key, warning):
    result = run({"gather": ["nvlink"], "nvidia_smi_path": fake_nvidia_smi(tmp_path, output, rc)})
    nvlink = result["ansible_facts"]["topology_node"]["nvlink"]
    assert not result["failed"] and warning in nvlink[key] and "domain" not in nvlink
    assert len(result["warnings"]) == 1 and warning in result["warnings"][0]
    topology = Topology()
    apply_nvidia_smi_domains(topology, {"gpu1": nvlink})
    assert topology.quarantined["gpu1"].unhealthy is (key == "unhealthy") and warning in topology.quarantined["gpu1"].reason


@pytest.mark.parametrize("output, warning", [
    (f"{UUID}, 32766\n".encode() + b"\xff\xfe, 32766\n",
     f"nvidia-smi output of {os.uname().nodename}, row 2: not UTF-8 (byte 0xff)"),
    (f"{UUID}, 7 BlockName=evil Nodes=victim[01-99], Completed, Success\n",
     f"nvidia-smi output of {os.uname().nodename}, row 1: fabric.cliqueId: '7 BlockName=evil"),
    (f"{UUID}, {'7' * 2000}, Completed, Success\n", "fabric.cliqueId: '7777"),
], ids=["not-utf8", "slurm-record", "2000-characters"])
def test_unusable_nvidia_smi_output_is_a_warning_naming_the_node_not_a_traceback(run, tmp_path, output, warning):
    result = run({"gather": ["nvlink"], "nvidia_smi_path": fake_nvidia_smi(tmp_path, output)})
    nvlink = result["ansible_facts"]["topology_node"]["nvlink"]
    assert not result["failed"] and warning in nvlink["invalid"] and "domain" not in nvlink
    assert len(result["warnings"]) == 1 and warning in result["warnings"][0]
    assert len(result["warnings"][0]) < 300  # the message quotes a clipped value, not 2,000 characters


@pytest.mark.parametrize("script, timeout, warning", [
    ("exec sleep 30", 1, "did not finish within 1 s"),
    # A wrapper that exits while its child holds the pipes (ssh, a shell script).
    ("sleep 30 &\nexit 0", 1, "did not finish within 1 s"),
    ("exec yes 0000:01:00.0,6a4f2e1c-93b7-4d0e-8f51-2c7d9e0a1b34,32766", 30,
     "printed more than 1048576 bytes; it was killed"),
], ids=["hung", "hung-child-of-a-wrapper", "flood"])
def test_a_hung_or_flooding_nvidia_smi_is_bounded(run, tmp_path, script, timeout, warning):
    path = tmp_path / "nvidia-smi"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    result = run({"gather": ["nvlink"], "nvidia_smi_path": str(path), "timeout": timeout})
    assert warning in result["warnings"][0]
    assert warning in result["ansible_facts"]["topology_node"]["nvlink"]["unhealthy"]


def test_the_hung_child_of_a_wrapper_is_not_left_running(run, tmp_path):
    pidfile = tmp_path / "child.pid"
    path = tmp_path / "nvidia-smi"
    path.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > '{pidfile}'\nexit 0\n")
    path.chmod(0o755)
    result = run({"gather": ["nvlink"], "nvidia_smi_path": str(path), "timeout": 1})
    assert "it was killed with every process it started" in result["warnings"][0]
    assert gone_or_zombie(int(pidfile.read_text()))


@pytest.mark.parametrize("name, warning", [
    ("fabric-in-progress.csv", "row 1: fabric.state is 'In Progress', not 'Completed'"),
    ("fabric-not-started.csv", "row 1: fabric.state is 'Not Started', not 'Completed'"),
    ("fabric-failure.csv", "row 1: fabric.status is 'Unknown Error', not 'Success'"),
    ("fabric-mixed.csv", "row 3: fabric.state is 'In Progress', not 'Completed'"),
], ids=["in-progress", "not-started", "failure-status", "mixed-rows"])
def test_an_unfinished_or_failed_registration_is_unhealthy_facts_and_a_warning(run, tmp_path, name, warning):
    result = run({"gather": ["nvlink"], "nvidia_smi_path": fake_nvidia_smi(tmp_path, (NVIDIA_SMI / name).read_text())})
    nvlink = result["ansible_facts"]["topology_node"]["nvlink"]
    message = f"nvidia-smi output of {os.uname().nodename}, {warning}"
    assert not result["failed"] and nvlink["gpus"] == 4
    assert nvlink["unhealthy"].startswith(message) and result["warnings"] == [nvlink["unhealthy"]]
    # The controller quarantines the node with that reason.
    topology = Topology()
    apply_nvidia_smi_domains(topology, {"gpu1": result["ansible_facts"]["topology_node"]})
    record = topology.quarantined["gpu1"]
    assert record.unhealthy and re.match("accelerator.nvidia_smi.gpu1: the gathered facts of gpu1 report an "
                                         "unhealthy NVLink fabric: .*" + warning.replace("(", r"\("), record.reason)


def test_a_degraded_fabric_from_the_report_is_unhealthy(run, tmp_path):
    degraded = (NVIDIA_SMI / "fabric-degraded-bandwidth.q.txt").read_text()
    result = run({"gather": ["nvlink"], "nvidia_smi_path": fake_nvidia_smi(tmp_path, GB200_TRAY, full=degraded)})
    nvlink = result["ansible_facts"]["topology_node"]["nvlink"]
    assert nvlink["unhealthy"] == (f"nvidia-smi output of {os.uname().nodename}, row 2: fabric.health.bandwidth is "
                                   "'Degraded', not 'Full'; the GPU's NVLink fabric is degraded")
    assert result["warnings"] == [nvlink["unhealthy"]]
    topology = Topology()
    apply_nvidia_smi_domains(topology, {"gpu1": nvlink})
    assert topology.quarantined["gpu1"].unhealthy and "bandwidth is 'Degraded'" in topology.quarantined["gpu1"].reason


def test_without_fabric_health_neither_the_health_fields_nor_the_report_are_read(run, tmp_path):
    script = fake_nvidia_smi(tmp_path, GB200_TRAY, full=b"\xff", full_rc=9)  # -q would warn
    result = run({"gather": ["nvlink"], "nvidia_smi_path": script, "fabric_health": False})
    assert result["warnings"] == []
    nvlink = result["ansible_facts"]["topology_node"]["nvlink"]
    assert nvlink["domain"] == f"{UUID}.32766" and nvlink["health_checked"] is False and "health" not in nvlink
    assert all("health" not in call and call != "-q" for call in calls(tmp_path))


@pytest.mark.parametrize("full, full_rc, warning", [
    ("", 9, "the NVLink fabric health was not checked: nvidia-smi failed (rc=9)"),
    (b"GPU 00000008:01:00.0\n    Fabric\n        State : \xff\n", 0,
     "the NVLink fabric health was not checked: nvidia-smi output of"),
    ("Attached GPUs : 4\n", 0, "the NVLink fabric health was not checked: nvidia-smi -q prints 0 GPUs, the query 4"),
], ids=["failing", "not-utf8", "no-section"])
def test_a_report_that_cannot_be_read_keeps_the_clique_and_says_so(run, tmp_path, full, full_rc, warning):
    script = fake_nvidia_smi(tmp_path, GB200_TRAY, full=full, full_rc=full_rc)
    result = run({"gather": ["nvlink"], "nvidia_smi_path": script})
    assert not result["failed"] and len(result["warnings"]) == 1 and warning in result["warnings"][0]
    nvlink = result["ansible_facts"]["topology_node"]["nvlink"]
    assert nvlink["domain"] == f"{UUID}.32766" and nvlink["health_checked"] is False


def test_a_gpu_the_report_counts_but_does_not_print_makes_the_tray_unhealthy(run, tmp_path):
    lost = HEALTHY.replace("Attached GPUs                             : 4", "Attached GPUs                             : 5")
    result = run({"gather": ["nvlink"], "nvidia_smi_path": fake_nvidia_smi(tmp_path, GB200_TRAY, full=lost)})
    nvlink = result["ansible_facts"]["topology_node"]["nvlink"]
    assert nvlink["unhealthy"] == (f"nvidia-smi output of {os.uname().nodename}: 5 GPUs are attached and 4 print "
                                   "their state; a GPU was lost (fallen off the bus?)")


# -- the providers take the facts ----------------------------------------------------------

IB = (FIXTURES / "ibnetdiscover-example.out").read_text()


def test_infiniband_names_hcas_by_the_guids_nodes_reported():
    # H-e09d730300858d88 describes itself as "MT4129 ConnectX7 Mellanox Technologies" (no host name):
    # the node that has it in its sysfs is its owner.
    facts = {"a06-p1-dgx-02-c06": {"hostname": "a06-p1-dgx-02-c06", "infiniband": [
        {"device": "mlx5_5", "node_guid": "0xe09d730300858d88", "node_desc": "MT4129 ConnectX7   Mellanox Technologies"}]}}
    warnings = []
    topology = discover("infiniband", {"ibnetdiscover": {"n": IB}, "node_facts": facts,
                                       "nodes": "a06-p1-dgx-02-c[02,06]"}, warn=warnings.append)
    assert topology.nodes["a06-p1-dgx-02-c06"].switch == topology.nodes["a06-p1-dgx-02-c02"].switch
    without = discover("infiniband", {"ibnetdiscover": {"n": IB}, "nodes": "a06-p1-dgx-02-c[02,06]"}, warn=warnings.append)
    assert without.nodes["a06-p1-dgx-02-c06"].switch is None  # no HCA described as c06's
    assert "1 nodes have no HCA in the ibnetdiscover output" in warnings[-1]


def test_infiniband_node_facts_errors_name_the_node():
    # One node's facts are that node's problem: it is quarantined, named with the field, the fabric is mapped.
    topology = discover("infiniband", {"ibnetdiscover": {"n": IB}, "node_facts": {"gpu1": "x"}})
    assert topology.quarantined["gpu1"].reason.startswith("params.node_facts.gpu1 must be the node's topology_node fact")
    assert len(topology.nodes) == 121
    with pytest.raises(TopologyError, match=r"params.invalid_nodes is fail\): gpu1 \(params.node_facts.gpu1 must be "
                                            "the node's topology_node fact"):
        discover("infiniband", {"ibnetdiscover": {"n": IB}, "node_facts": {"gpu1": "x"}, "invalid_nodes": "fail"})
    same = {"infiniband": [{"node_guid": "0xe09d730300858d88"}]}
    topology = discover("infiniband", {"ibnetdiscover": {"n": IB}, "node_facts": {"gpu1": same, "gpu2": same}})
    assert sorted(topology.quarantined) == ["gpu1", "gpu2"] and len(topology.nodes) == 121
    assert topology.quarantined["gpu1"].reason == (
        "params.node_facts.gpu1.infiniband[0].node_guid: HCA 0xe09d730300858d88 is also in the gathered facts of gpu2; "
        "an HCA is in one host, so neither can be trusted to own it")
    with pytest.raises(TopologyError, match=r"\): gpu1 \(params.node_facts.gpu1.infiniband\[0\].node_guid: HCA "
                                            "0xe09d730300858d88 is also in the gathered facts of gpu2"):
        discover("infiniband", {"ibnetdiscover": {"n": IB}, "node_facts": {"gpu1": same, "gpu2": same},
                                "invalid_nodes": "fail"})


def test_nvidia_smi_source_takes_gathered_facts_and_names_a_node_without_a_clique(run, tmp_path):
    gathered = run({"gather": ["hostname", "nvlink"], "nvidia_smi_path": fake_nvidia_smi(tmp_path, GB200_TRAY)})
    node = gathered["ansible_facts"]["topology_node"]
    topology = Topology()
    topology.add_node("gpu1")
    apply_nvidia_smi_domains(topology, {"gpu1": node, "gpu2": node["nvlink"]})
    assert topology.nodes["gpu1"].domain == topology.nodes["gpu2"].domain == f"{UUID}.32766"
    apply_nvidia_smi_domains(topology, {"gpu3": {"hostname": "gpu3"}})
    assert topology.quarantined["gpu3"].reason.startswith(
        "accelerator.nvidia_smi.gpu3: the gathered facts of gpu3 have no nvlink part")


def test_annotations_for_kubernetes_from_facts():
    facts = {"hostname": "gb200-r01-n01", "nvlink": {"domain": f"{UUID}.32766"}}
    assert _node_facts.annotations(facts) == {"topograph.run/instance": "gb200-r01-n01",
                                              "topograph.run/region": "local",
                                              "topograph.run/cluster-id": f"{UUID}.32766"}
    assert _node_facts.annotations({"hostname": "cpu01", "nvlink": {}}) == {
        "topograph.run/instance": "cpu01", "topograph.run/region": "local"}
    with pytest.raises(TopologyError, match="must be the topology_node fact"):
        _node_facts.annotations({"nvlink": {}})


# -- one query, as a 580 driver answers it (tests/nvidia_smi_shapes.py) ------------------------------------

def test_a_580_driver_answers_everything_in_one_process(run, tmp_path):
    script = shapes.write_fake_nvidia_smi(tmp_path / "smi", shapes.tray("gb200", slot=14, tray=4))
    result = run({"gather": ["nvlink"], "nvidia_smi_path": script})
    assert result["warnings"] == []
    nvlink = result["ansible_facts"]["topology_node"]["nvlink"]
    assert (tmp_path / "smi" / "calls.log").read_text().splitlines() == [_nvidia_smi.QUERY.split(" ", 1)[1]]
    assert nvlink["domain"] == "4b1d9c3e-7a25-4f60-9e8b-d2c5a7f01e36.32766" and nvlink["fabric"] == "domain"
    assert nvlink["location"] == {"chassis_serial_number": "1821124000123", "slot_number": 14, "tray_index": 4,
                                  "host_id": 1, "peer_type": "Switch Connected"}
    assert nvlink["query"] == {"fields": list(_nvidia_smi.FIELDS), "health": "query"} and nvlink["health_checked"]


@pytest.mark.parametrize("kind, fabric", [("hgx", "node"), ("hgx-b200", "node"), ("pcie", "none")])
def test_hgx_and_pcie_nodes_have_no_domain_and_no_warning_on_either_driver(run, tmp_path, kind, fabric):
    for driver in ("580", "550"):
        script = shapes.write_fake_nvidia_smi(tmp_path / driver, shapes.tray(kind), driver=driver)
        result = run({"gather": ["nvlink"], "nvidia_smi_path": script})
        nvlink = result["ansible_facts"]["topology_node"]["nvlink"]
        assert result["warnings"] == [] and nvlink["fabric"] == fabric, driver
        assert "unhealthy" not in nvlink and "domain" not in nvlink


def test_a_tray_of_a_rack_scale_system_in_no_domain_is_unhealthy(run, tmp_path):
    tray = shapes.tray("gb200", uuid=shapes.ZERO_UUID, clique="0")
    result = run({"gather": ["nvlink"], "nvidia_smi_path": shapes.write_fake_nvidia_smi(tmp_path / "smi", tray)})
    nvlink = result["ansible_facts"]["topology_node"]["nvlink"]
    assert nvlink["unhealthy"].endswith("its GPUs report NVL chassis serial number '1821124000123', a rack-scale "
                                        "NVLink system, but are in no multi-node NVLink domain (registered, with "
                                        "NVLink inside the node only: an all-zero cluster UUID)")
    assert result["warnings"] == [nvlink["unhealthy"]]
