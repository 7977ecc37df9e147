"""Hostile campaign, round four: who vouches for a claim (issue 40, deliverable 1).

A tray's place (NVLink domain, chassis serial, slot, tray index) and its fabric state are what its
own root lets nvidia-smi print. One test per case: such claims decide the claimant's fate only; a
rack is taken out only where a witness other than the claimants agrees.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import NodeDataError, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._model import PLACE_REFUSED, Topology
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _nvidia_smi
from ansible_collections.aifactory.topology.plugins.module_utils._providers._nvidia_smi import (
    apply_accelerator,
    apply_nvidia_smi_domains,
)

from tests import nvidia_smi_shapes as shapes

UUID = "4b1d9c3e-7a25-4f60-9e8b-d2c5a7f01e36"
CHASSIS = "1821124000123"
RACK_A = f"{UUID}.32766 (chassis {CHASSIS})"
NAMED = re.compile("gb-(?P<rack>[a-z]+)[0-9]+")
DEGRADED = {"fabric__health__bandwidth": "Degraded"}


def run(gpus_of, **options):
    """``gpus_of``: node -> its GPUs (shapes); every node in the provider's tree, as a real run has them."""
    topology = Topology()
    for node in gpus_of:
        topology.add_node(node)
    warnings = []
    apply_nvidia_smi_domains(topology, {node: shapes.csv(gpus) for node, gpus in gpus_of.items()},
                             warnings.append, **options)
    return topology, warnings


def intruders(indices, **fields):
    """Two tenants' nodes (named for rack b) claiming rack A's domain and chassis at these tray indices."""
    return {f"gb-b{number:02d}": shapes.tray("gb200", chassis=CHASSIS, slot=10 + index, tray=index, **fields)
            for number, index in enumerate(indices, start=1)}


@pytest.mark.parametrize("rack_from_name", [None, NAMED], ids=["no-names", "names"])
def test_two_intruders_at_free_tray_indices_do_not_take_out_a_healthy_rack(rack_from_name):
    # Rack A's 16 trays are healthy; the two free indices are claimed by tenants with a degraded fabric.
    nodes = shapes.rack("gb-a", UUID, CHASSIS, trays=16)
    nodes.update(intruders((16, 17), **DEGRADED))
    topology, warnings = run(nodes, escalation={"trays": 2}, rack_from_name=rack_from_name)
    assert all(node in topology.nodes for node in shapes.rack("gb-a", UUID, CHASSIS, trays=16))
    assert not [record for record in topology.quarantined.values() if record.source == "rack_escalation"]
    assert topology.quarantined["gb-b01"].unhealthy  # each claimant's own fate: its own fabric
    assert (f"rack {RACK_A} is not taken out of NVLink placement, though 2 of 18 trays are unhealthy or missing: "
            "16 of its trays report healthy and no independent witness (NMX, the rack a name gives) agrees with "
            "the claims of gb-b01, gb-b02") in warnings


def test_intruders_beyond_a_full_rack_are_refused_and_take_nothing_out():
    nodes = shapes.rack("gb-a", UUID, CHASSIS)
    nodes.update(intruders((19, 20), **DEGRADED))
    topology, warnings = run(nodes, rack_trays=18, escalation={"trays": 1}, rack_from_name=NAMED)
    assert len([node for node in topology.nodes if node.startswith("gb-a")]) == 18
    assert f"rack {RACK_A} reports 20 trays, more than its 18: gb-b[01-02] (tray indices above 18) counted in no rack" \
        in warnings
    for node in ("gb-b01", "gb-b02"):  # each is quarantined for its own fabric first, and sits in no rack
        assert topology.quarantined[node].unhealthy and node in topology.refused_places
    assert [tray["node"] for tray in topology.racks()[0]["trays"]] == list(shapes.rack("gb-a", UUID, CHASSIS))


def test_a_healthy_tray_beyond_a_full_rack_is_quarantined_as_invalid_by_name():
    nodes = shapes.rack("gb-a", UUID, CHASSIS)
    nodes.update(intruders((19,)))
    topology, _warnings = run(nodes, rack_trays=18)
    record = topology.quarantined["gb-b01"]
    assert record.source == PLACE_REFUSED and not record.unhealthy
    assert record.reason == f"gb-b01 claims a tray index above 18 in rack {RACK_A}, which reports 19 trays"


def test_ten_thousand_trays_in_one_chassis_are_refused_by_name_and_the_run_goes_on():
    # Unique places (slot, tray index up to nvidia-smi's 255), all in one chassis of 18 trays.
    nodes = {f"x{index:05d}": shapes.tray("gb200", gpus=1, chassis=CHASSIS, tray=index % 256, slot=index // 256)
             for index in range(10_000)}
    nodes["bystander"] = shapes.tray("hgx")
    topology, warnings = run(nodes, rack_trays=18, escalation={"trays": 1})
    assert warnings[0].startswith(f"rack {RACK_A} reports 10000 trays, more than its 18: x[00019-00255,")
    kept = sum(1 for index in range(10_000) if index % 256 <= 18)
    assert len(topology.quarantined) == 10_000 - kept and "bystander" in topology.nodes
    assert all(record.source == PLACE_REFUSED for record in topology.quarantined.values())


def test_two_claims_on_one_place_name_both_and_neither_counts():
    nodes = shapes.rack("gb-a", UUID, CHASSIS, trays=4)
    nodes["gb-b01"] = shapes.tray("gb200", chassis=CHASSIS, slot=12, tray=2)  # gb-a03's place
    topology, warnings = run(nodes, rack_trays=4)
    place = f"chassis {CHASSIS} slot 12 tray 2 of NVLink domain {UUID}.32766"
    assert f"2 trays claim one place, {place}: gb-a03, gb-b01; gb-a03, gb-b01 counted in no rack" in warnings
    assert topology.quarantined["gb-a03"].reason == f"gb-a03 claims {place}, which gb-b01 also claims"
    assert topology.quarantined["gb-b01"].reason == f"gb-b01 claims {place}, which gb-a03 also claims"
    assert not topology.quarantined["gb-a03"].unhealthy and not topology.quarantined["gb-b01"].unhealthy
    rack = topology.racks()[0]
    assert [tray["node"] for tray in rack["trays"]] == ["gb-a01", "gb-a02", "gb-a04"]


def test_an_nmx_witness_keeps_its_tray_where_another_claims_its_place():
    nodes = shapes.rack("gb-a", UUID, CHASSIS, trays=4)
    nodes["gb-b01"] = shapes.tray("gb200", chassis=CHASSIS, slot=12, tray=2)
    topology = Topology()
    for node in nodes:
        topology.add_node(node)
    topology.locate("gb-a03", {"chassis_serial_number": CHASSIS, "slot_number": 12, "tray_index": 2}, witness="NMX")
    warnings = []
    apply_nvidia_smi_domains(topology, {node: shapes.csv(gpus) for node, gpus in nodes.items()}, warnings.append,
                             rack_trays=4)
    assert "gb-a03" in topology.nodes and topology.quarantined["gb-b01"].source == PLACE_REFUSED
    assert any("NMX places gb-a03 there, gb-b01 counted in no rack" in warning for warning in warnings)


def test_a_node_whose_place_contradicts_nmx_is_quarantined_naming_both():
    topology = Topology()
    topology.add_node("gb-a01")
    topology.locate("gb-a01", {"chassis_serial_number": "777", "slot_number": 10, "tray_index": 0}, witness="NMX")
    apply_nvidia_smi_domains(topology, {"gb-a01": shapes.csv(shapes.tray("gb200", chassis=CHASSIS))})
    record = topology.quarantined["gb-a01"]
    assert not record.unhealthy
    assert record.reason.endswith(f"gb-a01 reports chassis_serial_number '{CHASSIS}', but NMX places it at "
                                  "chassis_serial_number '777'")


def test_a_witnessed_rack_is_still_taken_out():
    bad = {3: DEGRADED, 7: DEGRADED}
    nodes = shapes.rack("gb-a", UUID, CHASSIS, changes=bad)
    topology = Topology()
    for node in nodes:
        topology.add_node(node)
    for index in (3, 7):  # NMX, not the nodes, says where the two bad trays are
        topology.locate(f"gb-a{index + 1:02d}", {"chassis_serial_number": CHASSIS, "slot_number": 10 + index,
                                                 "tray_index": index}, witness="NMX")
    apply_nvidia_smi_domains(topology, {node: shapes.csv(gpus) for node, gpus in nodes.items()}, escalation={"trays": 2})
    assert not topology.nodes
    assert topology.quarantined["gb-a01"].source == "rack_escalation" and topology.quarantined["gb-a01"].unhealthy


def test_invalid_trays_never_escalate_a_rack():
    topology = Topology()
    for index in range(18):
        node = f"gb-a{index + 1:02d}"
        topology.add_node(node, domain=f"{UUID}.32766")
        topology.locate(node, {"chassis_serial_number": CHASSIS, "slot_number": 10 + index, "tray_index": index})
    for node in ("gb-a01", "gb-a02", "gb-a03"):
        topology.quarantine(node, "nvidia_smi", "its data is invalid")  # invalid, not unhealthy
    topology.rack_trays = 18
    _nvidia_smi.escalate_racks(topology, {"trays": 1}, topology.racks(), NAMED)
    assert len(topology.nodes) == 15


@pytest.mark.parametrize("field, value", [("trays", True), ("share", True), ("trays", "3")])
def test_a_boolean_or_text_escalation_count_is_refused_naming_the_field(field, value):
    spec = {"nvidia_smi": {"gb-a01": shapes.csv(shapes.tray("gb200"))}, "rack_escalation": {field: value}}
    with pytest.raises(TopologyError, match=rf"accelerator\.rack_escalation\.{field} must be a (whole )?number"):
        apply_accelerator(Topology(), spec)


def test_a_header_naming_one_field_twice_is_refused_for_that_node():
    fields = ("platform.tray_index",) + shapes.EVERY_FIELD
    text = shapes.csv(shapes.tray("gb200"), fields=fields, header=True)
    topology, _warnings = run({"gpu1": shapes.tray("gb200")})
    apply_nvidia_smi_domains(topology, {"gpu2": text})
    record = topology.quarantined["gpu2"]
    assert not record.unhealthy
    assert "gpu2" in record.reason and "the header names platform.tray_index more than once" in record.reason


@pytest.mark.parametrize("serial", ["18211\ufffd24000123", "1821124000123\ufffc", "18211\u000724000123"])
def test_an_unreadable_chassis_serial_quarantines_the_node_and_names_no_rack(serial):
    topology, _warnings = run({"gpu1": shapes.tray("gb200", chassis=serial), "gpu2": shapes.tray("gb200", tray=1)})
    record = topology.quarantined["gpu1"]
    assert not record.unhealthy and "platform.chassis_serial_number" in record.reason
    assert "gpu2" in topology.nodes and [rack["chassis_serial_number"] for rack in topology.racks()] == [CHASSIS]


def test_a_name_whose_rack_group_matches_empty_gets_its_own_message():
    nodes = shapes.rack("gb-a", UUID, CHASSIS, trays=3)
    nodes["gb-04"] = shapes.tray("gb200", chassis=CHASSIS, slot=13, tray=3)
    _topology, warnings = run(nodes, rack_trays=4, rack_from_name=re.compile("gb-(?P<rack>[a-z]*)[0-9]+"))
    assert warnings == ["gb-04: the name gives an empty rack (the group rack of accelerator.rack_from_name matches "
                        "nothing in it), so it is not compared with the hardware's rack"]
    assert not any("says rack ," in warning for warning in warnings)


def test_a_quarantined_tray_without_a_domain_that_claims_a_taken_place_is_a_duplicate_claim():
    """Found by the fuzz test below: a quarantined tray that reported no NVLink domain joins its chassis's
    one rack, so a claim on a place that rack's tray holds is two claims on one place, not a second tray."""
    topology = Topology()
    topology.rack_trays = 18
    topology.add_node("gb-a0", domain=f"{UUID}.1")
    topology.locate("gb-a0", {"chassis_serial_number": CHASSIS, "tray_index": 0}, f"{UUID}.1")
    topology.add_node("gb-b1")
    topology.locate("gb-b1", {"chassis_serial_number": CHASSIS, "tray_index": 0})
    topology.quarantine("gb-b1", "fuzz", "its state", unhealthy=True)
    warnings = []
    assert _nvidia_smi.refuse_false_places(topology, warnings.append) == {(f"{UUID}.1", CHASSIS)}
    assert warnings == [f"2 trays claim one place, chassis {CHASSIS} tray 0 of NVLink domain {UUID}.1: gb-a0, gb-b1; "
                        "gb-a0, gb-b1 counted in no rack"]
    assert topology.racks() == []


# -- fuzz: generated claims end in a result or a clear error -----------------------------------------

CLAIM = st.fixed_dictionaries({
    "domain": st.sampled_from([f"{UUID}.1", f"{UUID}.2", None]),
    "serial": st.sampled_from([CHASSIS, "999", "", "x\ufffd"]),
    "slot": st.one_of(st.none(), st.integers(-3, 300)),
    "tray": st.one_of(st.none(), st.integers(-3, 300)),
    "state": st.sampled_from(["ok", "ok", "unhealthy", "invalid"]),
    "witness": st.booleans(),
})


@given(st.lists(CLAIM, max_size=40), st.integers(1, 40), st.integers(0, 5), st.booleans())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_fuzz_rack_grouping_and_escalation(claims, rack_trays, escalate, named):
    topology = Topology()
    topology.rack_trays = rack_trays
    for number, claim in enumerate(claims):
        node = f"gb-{'ab'[number % 2]}{number}"
        place = {"chassis_serial_number": claim["serial"], "slot_number": claim["slot"], "tray_index": claim["tray"]}
        try:
            topology.add_node(node, domain=claim["domain"])
            topology.locate(node, place, claim["domain"], witness="NMX" if claim["witness"] else None)
            if claim["state"] != "ok":
                topology.quarantine(node, "fuzz", "its state", unhealthy=claim["state"] == "unhealthy")
        except (TopologyError, NodeDataError):
            continue
    warnings = []
    try:
        doubted = _nvidia_smi.refuse_false_places(topology, warnings.append)
        racks = topology.racks()
        topology.rack_problems(racks)
        if escalate:
            _nvidia_smi.escalate_racks(topology, {"trays": escalate}, racks, NAMED if named else None,
                                       warnings.append, doubted)
    except (TopologyError, NodeDataError):
        return
    for rack in topology.racks():  # what is left: every place claimed once, no rack far above its trays
        places = [(tray.get("slot_number"), tray["tray_index"]) for tray in rack["trays"] if "tray_index" in tray]
        assert len(places) == len(set(places))


FIELD_TEXT = st.one_of(st.sampled_from(["0", "17", "18", "255", "256", "²", "9" * 5000, "", "N/A", "[N/A]", "-1"]),
                       st.text(st.characters(exclude_categories=["Cs"], exclude_characters=",\n"), max_size=12))


@given(st.lists(st.tuples(st.sampled_from([CHASSIS, "999", "x\ufffd", ""]), FIELD_TEXT, FIELD_TEXT,
                          st.sampled_from(["Full", "Degraded"])), min_size=1, max_size=24),
       st.sampled_from([1, 4, 18]), st.booleans())
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_fuzz_claims_through_the_nvidia_smi_reader(claims, rack_trays, named):
    """Each node's own text claims a place and a state: every node ends mapped or quarantined by name."""
    outputs = {}
    for number, (serial, slot, tray, bandwidth) in enumerate(claims):
        gpus = shapes.tray("gb200", gpus=1, chassis=serial, fabric__health__bandwidth=bandwidth)
        gpus[0].update({"platform.slot_number": slot, "platform.tray_index": tray})
        outputs[f"gb-{'ab'[number % 2]}{number}"] = gpus
    topology, _warnings = run(outputs, rack_trays=rack_trays, escalation={"trays": 1},
                              rack_from_name=NAMED if named else None)
    assert set(topology.nodes) | set(topology.quarantined) == set(outputs)
