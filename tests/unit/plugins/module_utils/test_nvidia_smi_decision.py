"""The one NVLink decision, row by row from its table in docs/providers/nvidia_smi.md, through every route;
the racks the hardware names; rack-level escalation."""

from __future__ import annotations

import json
import re

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import NodeDataError, NodeUnhealthy, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _nvidia_smi, discover

from ...conftest_paths import REPO
from .... import nvidia_smi_shapes as shapes

DOC = REPO / "docs" / "providers" / "nvidia_smi.md"
UUID = "4b1d9c3e-7a25-4f60-9e8b-d2c5a7f01e36"
ZERO = shapes.ZERO_UUID


def table_rows():
    text = DOC.read_text()
    body = text.split("<!-- BEGIN decision table: tested row by row -->")[1].split("<!-- END decision table -->")[0]
    lines = [line for line in body.strip().splitlines() if line.startswith("|")][2:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def na(value):
    return "N/A" if value == "—" else value


def gpu_of(row):
    state, status, uuid, clique, health, partition, serial, _verdict = row
    record = shapes.gpu("gb200", uuid={"a UUID": UUID, "all zeros": ZERO}.get(uuid, na(uuid)),
                        clique=na(clique), chassis="" if serial == "(empty)" else na(serial))
    record.update({"fabric.state": na(state), "fabric.status": na(status), "fabric.health.partition_assigned": na(partition)})
    if health == "—":
        record.update({field: "N/A" for field in shapes.HEALTH if field != "fabric.health.partition_assigned"})
    elif health != "healthy":
        if health.startswith("summary Healthy"):
            record.update({field: "N/A" for field in shapes.HEALTH if field != "fabric.health.partition_assigned"})
        name, value = health.split(" ", 1)
        record[f"fabric.health.{name}"] = value
    if serial in ("—", "(empty)"):
        record.update({"platform.slot_number": "N/A", "platform.tray_index": "N/A"})
    return record


def routes(record):
    """The node's answer in every form the source takes: (name, text)."""
    tray = [dict(record, **{"platform.module_id": str(index)}) for index in range(1, 5)]
    yield "csv", shapes.csv(tray)
    yield "csv-header", shapes.csv(tray, header=True)
    yield "q-580", shapes.q_report(tray, "580")
    bandwidth_only = all(record.get(field) in ("N/A", "Healthy", "False", "None", "Full")
                         for field in shapes.HEALTH if field not in ("fabric.health.bandwidth",))
    if bandwidth_only and record.get("fabric.health.partition_assigned") == "N/A":
        yield "q-550", shapes.q_report(tray, "550")  # 550 prints the bandwidth row only


def verdict(node, text, gathered=False):
    records, attached = _nvidia_smi.parse(node, text)
    facts = _nvidia_smi.summarize(node, records, attached)
    if gathered:  # what topology_facts returns, after a trip through JSON (hostvars)
        facts = json.loads(json.dumps(facts))
    try:
        domain = _nvidia_smi.decide(node, facts, gathered=gathered)
    except NodeUnhealthy:
        return "unhealthy"
    except NodeDataError:
        return "invalid"
    return "no domain" if domain is None else "domain"


def test_the_table_is_there_and_covers_every_verdict():
    rows = table_rows()
    assert len(rows) >= 20 and {row[-1] for row in rows} == {"domain", "no domain", "unhealthy", "invalid"}


@pytest.mark.parametrize("row", table_rows(), ids="|".join)
def test_each_row_of_the_documented_table_through_every_route(row):
    expected = row[-1]
    for route, text in routes(gpu_of(row)):
        try:
            got = verdict("gpu7", text)
        except NodeDataError:
            got = "invalid"
        assert got == expected, route
        if got != "invalid":
            assert verdict("gpu7", text, gathered=True) == expected, f"{route}, gathered"


@pytest.mark.parametrize("kind, fabric", [("gb200", "domain"), ("gb300", "domain"), ("hgx", "node"),
                                          ("hgx-b200", "node"), ("pcie", "none")])
def test_real_shapes_of_each_kind_of_node(kind, fabric):
    for layout in ("580", "550"):
        records, attached = _nvidia_smi.parse("n1", shapes.q_report(shapes.tray(kind), layout))
        facts = _nvidia_smi.summarize("n1", records, attached)
        assert facts["fabric"] == fabric and "unhealthy" not in facts
    facts = _nvidia_smi.summarize("n1", _nvidia_smi.parse("n1", shapes.csv(shapes.tray(kind)))[0])
    if kind.startswith("gb"):
        assert facts["location"] == {"chassis_serial_number": "1821124000123", "slot_number": 10, "tray_index": 0,
                                     "host_id": 1, "peer_type": "Switch Connected"}
    else:
        assert "chassis_serial_number" not in facts.get("location", {})


def test_a_lost_gpu_and_one_gpu_out_of_the_fabric_make_the_tray_unhealthy():
    tray = shapes.tray("gb200")
    with pytest.raises(NodeUnhealthy, match="n1: 5 GPUs are attached and 4 print their state"):
        shapes.node_fabric("n1", shapes.q_report(tray, attached=5))
    tray[2] = shapes.gpu("gb200", uuid=ZERO, clique="0", module=3)
    with pytest.raises(NodeUnhealthy, match=f"n1, row 3: the GPU is in no NVLink domain while the node's other GPUs "
                                            f"are in {UUID}.32766"):
        shapes.node_fabric("n1", shapes.csv(tray))


def test_gpus_of_one_node_in_two_places_or_with_a_place_that_is_no_number_are_invalid():
    tray = shapes.tray("gb200")
    tray[1]["platform.tray_index"] = "5"
    with pytest.raises(NodeDataError, match="its GPUs are in different places: platform.tray_index is 0 .row 1. and 5"):
        shapes.node_fabric("n1", shapes.csv(tray))
    tray = shapes.tray("gb200", slot="x1")
    with pytest.raises(NodeDataError, match="platform.slot_number must be a whole number from 0 to 255, got 'x1'"):
        shapes.node_fabric("n1", shapes.csv(tray))
    tray = shapes.tray("gb200", chassis="18 BlockName=x")
    with pytest.raises(NodeDataError, match="platform.chassis_serial_number: .* contains white space"):
        shapes.node_fabric("n1", shapes.csv(tray))


def test_require_domain_makes_a_node_without_one_unhealthy():
    hgx = shapes.csv(shapes.tray("hgx"))
    assert shapes.node_domain("n1", hgx) is None
    with pytest.raises(NodeUnhealthy, match="n1: accelerator.require_domain names it, but its GPUs are in no multi-node"):
        shapes.node_domain("n1", hgx, require_domain=True)
    topology = discover("inventory", {"hosts": {"h1": {}, "h2": {}, "g1": {}},
                                      "accelerator": {"nvidia_smi": {"h1": hgx, "h2": hgx, "g1": shapes.csv(
                                          shapes.tray("gb200"))}, "require_domain": ["h2"], "rack_trays": 1}})
    assert topology.nodes["h1"].domain is None and topology.nodes["g1"].domain == f"{UUID}.32766"
    assert topology.quarantined["h2"].unhealthy


def test_extra_columns_are_read_by_name_with_a_header_and_refused_without():
    tray = shapes.tray("gb200")
    fields = shapes.FABRIC + ("platform.tray_index", "gpu_name")
    text = shapes.csv([dict(record, gpu_name="NVIDIA GB200") for record in tray], fields, header=True)
    assert shapes.node_domain("n1", text) == f"{UUID}.32766"
    with pytest.raises(NodeDataError, match="row 1: expected one of 17, 11, 10, 4, 2 columns, got 6"):
        shapes.node_domain("n1", text.split("\n", 1)[1])


# -- racks ---------------------------------------------------------------------------------------

def rack_discovery(outputs, warnings=None, **accelerator):
    hosts = {node: {} for node in outputs}
    return discover("inventory", {"hosts": hosts, "accelerator": dict(
        {"nvidia_smi": {node: shapes.csv(gpus) for node, gpus in outputs.items()}}, **accelerator)},
        warn=(warnings.append if warnings is not None else None))


def test_a_full_rack_is_named_by_domain_and_chassis_with_its_trays_in_physical_order():
    warnings = []
    nodes = shapes.rack("gb-a", UUID, "1821124000123")
    topology = rack_discovery(dict(reversed(list(nodes.items()))), warnings)
    assert warnings == []
    racks = topology.summary()["racks"]
    assert racks == [{"rack": f"{UUID}.32766 (chassis 1821124000123)", "domain": f"{UUID}.32766",
                      "chassis_serial_number": "1821124000123", "trays": [f"gb-a{i:02d}" for i in range(1, 19)],
                      "schedulable": 18, "expected_trays": 18}]
    assert Topology.from_compact(topology.to_compact()).summary()["racks"] == racks


def test_missing_trays_a_domain_in_two_chassis_and_a_clique_across_the_providers_racks_are_reported():
    warnings = []
    nodes = shapes.rack("gb-a", UUID, "1821124000123", skip=(10,))
    nodes.update(shapes.rack("gb-b", UUID, "1821124000999", trays=2, first_slot=30))
    rack_discovery(nodes, warnings)
    assert warnings == [
        f"NVLink domain {UUID}.32766 has trays in 2 chassis: chassis 1821124000123: gb-a[01-10,12-18]; "
        "chassis 1821124000999: gb-b[01-02]",
        f"rack {UUID}.32766 (chassis 1821124000123): 17 of 18 trays; tray 10 report nothing",
        f"rack {UUID}.32766 (chassis 1821124000999): 2 of 18 trays; 16 more outside trays 0-1"]
    warnings = []
    topology = Topology()
    for node in ("n1", "n2"):
        topology.add_node(node, domain="rack05")
    topology.add_node("n3", domain="rack06")
    _nvidia_smi.apply_nvidia_smi_domains(topology, {node: shapes.csv(shapes.tray("gb200", tray=i)) for i, node in
                                                    enumerate(("n1", "n2", "n3"))}, warnings.append, rack_trays=3)
    assert warnings == [f"NVLink domain {UUID}.32766 contradicts the provider's domains: its nodes are n[1-2] in "
                        "rack05; n3 in rack06"]


def test_a_quarantined_tray_stays_in_its_rack_and_an_escalated_rack_leaves_placement():
    bad = {3: {"fabric__state": "In Progress"}, 7: {"fabric__health__bandwidth": "Degraded"}}
    nodes = shapes.rack("gb-a", UUID, "1821124000123", skip=(11,), changes=bad)
    nodes.update(shapes.rack("gb-b", "0c9e7d2a-5f41-4b8e-a3d6-71e2f0c4b958", "1821124000456"))
    topology = rack_discovery(nodes)
    rack_a = topology.summary()["racks"][0]
    assert rack_a["schedulable"] == 15 and rack_a["quarantined"] == ["gb-a04", "gb-a08"]
    assert rack_a["missing_trays"] == 1 and len(topology.nodes) == 15 + 18
    # Opt-in: 3 bad trays (2 unhealthy, 1 missing) take the whole rack out, where a witness (the rack the
    # operator's names give) agrees; the other rack stays.
    warnings = []
    unwitnessed = rack_discovery(nodes, warnings, rack_escalation={"trays": 3})
    assert len(unwitnessed.nodes) == 15 + 18 and warnings[0] == (
        f"rack {UUID}.32766 (chassis 1821124000123) is not taken out of NVLink placement, though 3 of 18 trays are "
        "unhealthy or missing: 15 of its trays report healthy and no independent witness (NMX, the rack a name "
        "gives) agrees with the claims of gb-a04, gb-a08")
    escalated = rack_discovery(nodes, rack_escalation={"trays": 3}, rack_from_name="gb-(?P<rack>[a-z])[0-9]+")
    assert sorted(escalated.nodes) == sorted(shapes.rack("gb-b", UUID, "x"))
    record = escalated.quarantined["gb-a01"]
    assert record.unhealthy and record.source == "rack_escalation"
    assert re.fullmatch(rf"rack {UUID}.32766 \(chassis 1821124000123\) is taken out of NVLink placement: 3 of 18 "
                        r"trays are unhealthy or missing \(trays 3,7,11\)", record.reason)
    named = "gb-(?P<rack>[a-z])[0-9]+"
    assert len(rack_discovery(nodes, rack_escalation={"share": 20.0}, rack_from_name=named).nodes) == 18 + 15  # 16.7 %
    assert len(rack_discovery(nodes, rack_escalation={"share": 16.0}, rack_from_name=named).nodes) == 18


def test_escalation_options_are_checked():
    nodes = shapes.rack("gb-a", UUID, "1821124000123", trays=2)
    for escalation, message in (({}, "needs trays or share"), ({"trays": 0}, "trays must be a whole number from 1 to 255, got 0"),
                                ({"trays": True}, "trays must be a whole number from 1 to 255, got True"),
                                ({"share": 120.0}, "share must be a number from 0 to 100, got 120.0"),
                                ({"share": 0}, "share must be a percentage above 0")):
        with pytest.raises(TopologyError, match=message) as info:
            rack_discovery(nodes, rack_escalation=escalation)
        assert type(info.value).__name__ == "TopologyError"


@pytest.mark.parametrize("facts, kind, message", [
    ({"fabric": "rack", "gpus": 4}, NodeDataError, "fabric must be one of domain, node, none, got 'rack'"),
    ({"fabric": "domain", "cluster_uuid": UUID, "clique_id": "7 x"}, NodeDataError, "clique_id: '7 x' contains white"),
    ({"fabric": "domain", "cluster_uuid": UUID, "clique_id": "7", "domain": "other.7"}, NodeDataError,
     "domain 'other.7' is not cluster_uuid.clique_id"),
    ({"fabric": "none", "location": {"chassis_serial_number": "1821124000123"}}, NodeUnhealthy,
     "its GPUs report NVL chassis serial number '1821124000123'"),
    ({"fabric": "node", "unhealthy": "x" * 5000}, NodeUnhealthy, r"report an unhealthy NVLink fabric: 'xxx.*\(5000"),
], ids=["unknown-kind", "clique-no-name", "domain-mismatch", "serial-without-domain", "long-reason"])
def test_gathered_facts_are_the_node_s_word_and_checked_as_such(facts, kind, message):
    with pytest.raises(kind, match=message) as info:
        _nvidia_smi.decide("gpu1", facts, gathered=True)
    assert len(str(info.value)) < 500


def test_a_gathered_location_is_checked_like_the_platform_fields():
    topology = Topology()
    facts = {"nvlink": {"fabric": "node", "location": {"chassis_serial_number": "18 BlockName=x", "tray_index": 1}}}
    _nvidia_smi.apply_nvidia_smi_domains(topology, {"gpu1": facts, "gpu2": {"nvlink": {}}})
    assert "contains white space" in topology.quarantined["gpu1"].reason and not topology.locations
    assert topology.nodes["gpu2"].domain is None


def test_a_tray_whose_name_puts_it_in_another_rack_than_its_hardware_is_named_with_both():
    nodes = shapes.rack("gb200-r05-n", UUID, "1821124000123", trays=4)
    nodes["gb200-r06-n07"] = shapes.tray("gb200", slot=14, tray=4)  # cabled into rack 5's chassis
    warnings = []
    rack_discovery(nodes, warnings, rack_trays=5, rack_from_name=r"gb200-r(?P<rack>[0-9]+)-n[0-9]+")
    assert warnings == [f"gb200-r06-n07: the name says rack 06, the hardware says rack {UUID}.32766 (chassis "
                        "1821124000123), whose other trays are named for rack 05 (gb200-r05-n[01-04])"]
    for pattern, message in (("gb200-r([0-9]+", "is not a regular expression"), ("r[0-9]+", "needs a named group")):
        with pytest.raises(TopologyError, match=message):
            rack_discovery(nodes, rack_from_name=pattern)
