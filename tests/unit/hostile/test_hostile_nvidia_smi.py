"""Hostile campaign, round three, class 9: nvidia-smi as real drivers print it, one test per case.

Each case is what a tenant with root on one node (or a driver) can make nvidia-smi print; the answer
must quarantine that node with a reason naming it, the row and the field (or, for a healthy node,
leave it alone), and never stop the others.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._providers._nvidia_smi import apply_nvidia_smi_domains

from tests import nvidia_smi_shapes as shapes

UUID = "4b1d9c3e-7a25-4f60-9e8b-d2c5a7f01e36"


def run(outputs, **options):
    topology = Topology()
    topology.add_node("bystander", domain="rack1")
    for node in outputs:
        topology.add_node(node)  # in the provider's tree, as a real run has them
    warnings = []
    apply_nvidia_smi_domains(topology, outputs, warnings.append, **options)
    return topology, warnings


def test_an_extra_query_column_is_never_folded_into_the_status():
    extra = f"{UUID}, 7, Completed, Success, 1410 MHz\n" * 4
    topology, _warnings = run({"gpu1": extra})
    record = topology.quarantined["gpu1"]
    assert not record.unhealthy and "row 1: expected one of 17, 11, 10, 4, 2 columns, got 5" in record.reason
    assert "bystander" in topology.nodes


def test_a_healthy_hgx_node_is_not_quarantined_as_unhealthy():
    topology, warnings = run({"hgx1": shapes.csv(shapes.tray("hgx")), "hgx2": shapes.q_report(shapes.tray("hgx"), "550")})
    assert not topology.quarantined and warnings == []
    assert topology.nodes["hgx1"].domain is None and topology.nodes["hgx2"].domain is None


def test_a_gpu_missing_from_the_report_does_not_pass_as_a_healthy_tray():
    topology, _warnings = run({"gpu1": shapes.q_report(shapes.tray("gb200"), attached=5)})
    assert topology.quarantined["gpu1"].unhealthy
    assert "5 GPUs are attached and 4 print their state" in topology.quarantined["gpu1"].reason


def test_one_gpu_out_of_the_fabric_is_unhealthy_not_no_nvlink():
    tray = shapes.tray("gb200")
    tray[3] = shapes.gpu("pcie", module=4)
    for text in (shapes.csv(tray), shapes.q_report(tray)):
        topology, _warnings = run({"gpu1": text})
        record = topology.quarantined["gpu1"]
        assert record.unhealthy and "the GPU is in no NVLink domain while the node's other GPUs are in" in record.reason


def test_a_clique_that_contradicts_the_declared_domains_is_reported():
    topology = Topology()
    topology.add_node("a1", domain="rack1")
    topology.add_node("b1", domain="rack2")
    warnings = []
    # Two trays of one rack, at two places (one place claimed twice would be its own warning).
    apply_nvidia_smi_domains(topology, {"a1": shapes.csv(shapes.tray("gb200", tray=0)),
                                        "b1": shapes.csv(shapes.tray("gb200", tray=1))}, warnings.append)
    assert warnings == [f"NVLink domain {UUID}.32766 contradicts the provider's domains: its nodes are a1 in rack1; "
                        "b1 in rack2"]


def test_a_forged_location_or_serial_quarantines_only_that_node():
    tray = shapes.tray("gb200", chassis="1821124000123\u2028NodeName=x", slot=999)
    topology, _warnings = run({"gpu1": shapes.csv(tray), "gpu2": shapes.csv(shapes.tray("gb200", tray=1))})
    assert not topology.quarantined["gpu1"].unhealthy and "gpu2" in topology.nodes
    assert "platform.chassis_serial_number" in topology.quarantined["gpu1"].reason
