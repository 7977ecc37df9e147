"""Expected versus observed (_engines/cabling): switches matched by what they hold, every difference by name."""

from __future__ import annotations

import pathlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._engines import cabling
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._providers import infiniband
from tests.ib_rails import rail_fabric

FIXTURE = pathlib.Path(__file__).parents[3] / "fixtures" / "infiniband" / "storage-on-compute-fabric.out"
OPTIONS = cabling.CABLING.build({})

# The design of the storage fixture's compute fabric, in the designer's own words.
DESIGN = {
    "format": "aifactory.topology/v1",
    "switches": {"core": None, "pod1": "core", "pod2": "core", "p1-a": "pod1", "p1-b": "pod1",
                 "p2-a": "pod2", "p2-b": "pod2"},
    "nodes": [{"nodes": "gpu-[01-03]", "switch": "p1-a"}, {"nodes": "gpu-[04-06]", "switch": "p1-b"},
              {"nodes": "gpu-[07-09]", "switch": "p2-a"}, {"nodes": "gpu-[10-12]", "switch": "p2-b"}],
}


def discovered_storage_fixture():
    return infiniband.discover({"ibnetdiscover_files": [str(FIXTURE)], "switches": {"exclude": ["DC1-STOR-LEAF-1"]}},
                               {}, lambda message: None)


def design(**changes):
    model = {key: (value.copy() if isinstance(value, dict) else list(value)) for key, value in DESIGN.items()
             if key != "format"}
    model["format"] = DESIGN["format"]
    for key, value in changes.items():
        model[key] = value
    return Topology.from_compact(model)


def kinds(report):
    return [(finding["kind"], finding["subject"]) for finding in report["findings"]]


def test_the_fabric_as_designed_has_no_finding_though_every_name_differs():
    report = cabling.compare(design(), discovered_storage_fixture(), OPTIONS)
    assert report["findings"] == [] and report["mismatches"] == 0


def test_a_node_designed_under_another_leaf_is_reported_with_both_sides_names():
    nodes = [{"nodes": "gpu-[01-03,07]", "switch": "p1-a"}, {"nodes": "gpu-[04-06]", "switch": "p1-b"},
             {"nodes": "gpu-[08-09]", "switch": "p2-a"}, {"nodes": "gpu-[10-12]", "switch": "p2-b"}]
    report = cabling.compare(design(nodes=nodes), discovered_storage_fixture(), OPTIONS)
    assert kinds(report) == [("node_moved", "gpu-07")]
    finding = report["findings"][0]
    assert (finding["expected"], finding["observed"]) == ("p1-a", "DC1-P2-LEAF-1")
    assert finding["message"] == ("node gpu-07: the design puts it under p1-a; it is cabled to DC1-P2-LEAF-1 "
                                  "(with gpu-[07-09])")
    assert report["counts"]["node_moved"] == 1 and report["mismatches"] == 1


def test_a_leaf_designed_under_the_other_pod_is_a_switch_under_another_switch():
    switches = dict(DESIGN["switches"], **{"p1-b": "pod2"})
    report = cabling.compare(design(switches=switches), discovered_storage_fixture(), OPTIONS)
    assert kinds(report) == [("switch_moved", "DC1-P1-LEAF-2")]
    assert report["findings"][0]["message"] == (
        "switch DC1-P1-LEAF-2 (designed p1-b): the design puts it under pod2; it is cabled to DC1-P1-SPINE-1")


def test_missing_unexpected_and_quarantined_nodes_are_each_named():
    nodes = [{"nodes": "gpu-[01-03]", "switch": "p1-a"}, {"nodes": "gpu-[04-06,13]", "switch": "p1-b"},
             {"nodes": "gpu-[07-09]", "switch": "p2-a"}, {"nodes": "gpu-[10-11]", "switch": "p2-b"}]
    observed = discovered_storage_fixture()
    observed.quarantine("gpu-05", "infiniband", "its facts were unusable")
    report = cabling.compare(design(nodes=nodes), observed, OPTIONS)
    assert kinds(report) == [("node_quarantined", "gpu-05"), ("node_missing", "gpu-13"),
                             ("node_unexpected", "gpu-12")]
    assert "its facts were unusable" in report["findings"][0]["message"]


def test_a_switch_the_design_has_and_the_fabric_lacks_is_missing():
    switches = dict(DESIGN["switches"], spare=None)
    report = cabling.compare(design(switches=switches), discovered_storage_fixture(), OPTIONS)
    assert kinds(report) == [("switch_missing", "spare")]


MISCABLED = {("gpu-12", 0): (1, 1), ("gpu-12", 1): (1, 0),  # a crossed rail: its two cables swapped
             ("gpu-24", 0): (1, 0), ("gpu-24", 1): (1, 1)}  # a node cabled into the other scalable unit
RAIL_DESIGN = {"format": "aifactory.topology/v1", "switches": {"spine": None, "su1": "spine", "su2": "spine"},
               "nodes": [{"nodes": "gpu-[11-14]", "switch": "su1"}, {"nodes": "gpu-[21-24]", "switch": "su2"}]}


def test_a_crossed_rail_and_a_miscabled_node_of_a_rail_optimised_fabric():
    observed = infiniband.discover({"ibnetdiscover": {"gpu-11": rail_fabric(cables=MISCABLED)}}, {},
                                   lambda message: None)
    report = cabling.compare(Topology.from_compact(RAIL_DESIGN), observed, OPTIONS)
    assert kinds(report) == [("node_moved", "gpu-24"), ("rail_crossed", "gpu-12 mlx5_0"),
                             ("rail_crossed", "gpu-12 mlx5_1")]
    crossed = report["findings"][1]
    assert (crossed["expected"], crossed["observed"]) == ("SU1-R0", "SU1-R1")
    assert crossed["message"] == ("node gpu-12: mlx5_0 is cabled to SU1-R1; mlx5_0 of the other 4 nodes of its "
                                  "group is on SU1-R0 (rail mlx5_0's leaf)")


def test_a_rail_optimised_fabric_cabled_as_designed_has_no_finding_and_rails_can_be_left_unchecked():
    observed = infiniband.discover({"ibnetdiscover": {"gpu-11": rail_fabric()}}, {}, lambda message: None)
    assert cabling.compare(Topology.from_compact(RAIL_DESIGN), observed, OPTIONS)["findings"] == []
    crossed = infiniband.discover({"ibnetdiscover": {"gpu-11": rail_fabric(cables=MISCABLED)}}, {},
                                  lambda message: None)
    no_rails = cabling.CABLING.build({"rails": False})
    assert kinds(cabling.compare(Topology.from_compact(RAIL_DESIGN), crossed, no_rails)) == [("node_moved", "gpu-24")]


def test_two_nodes_on_a_rail_give_no_majority_and_no_finding():
    assert cabling.rail_findings({"a": {"mlx5_0": "L1"}, "b": {"mlx5_0": "L2", "mlx5_1": "L1"}}) == []


def located(places, domains):
    topology = Topology()
    topology.add_switch("leaf")
    for node, place in places.items():
        topology.add_node(node, switch="leaf", domain=domains[node])
        topology.locate(node, place)
    return topology.validate()


def test_a_tray_in_another_slot_or_domain_is_reported_by_matching_domains_and_chassis_by_their_trays():
    design_places = {f"t{n}": {"chassis_serial_number": "RACK-A" if n < 4 else "RACK-B", "slot_number": n % 4,
                               "tray_index": n % 4} for n in range(8)}
    observed_places = {node: {"chassis_serial_number": "1821x" if place["chassis_serial_number"] == "RACK-A"
                              else "1822y", "slot_number": place["slot_number"], "tray_index": place["tray_index"]}
                       for node, place in design_places.items()}
    observed_places["t1"]["slot_number"] = 3
    observed_places["t6"]["chassis_serial_number"] = "1821x"
    expected = located(design_places, {f"t{n}": "rack-a" if n < 4 else "rack-b" for n in range(8)})
    observed = located(observed_places, {f"t{n}": "uuid-1" if n < 4 or n == 6 else "uuid-2" for n in range(8)})
    report = cabling.compare(expected, observed, OPTIONS)
    assert kinds(report) == [("tray_moved", "t1"), ("domain_moved", "t6"), ("tray_moved", "t6")]
    assert report["findings"][0]["expected"] == {"slot_number": 1} and report["findings"][0]["observed"] == {
        "slot_number": 3}
    assert report["findings"][2]["expected"] == {"chassis_serial_number": "RACK-B"}


def test_findings_beyond_the_limit_are_counted_not_returned():
    nodes = [{"nodes": "gpu-[20-29]", "switch": "p1-a"}]
    report = cabling.compare(design(nodes=nodes), discovered_storage_fixture(), cabling.CABLING.build(
        {"max_findings": 3}))
    # nodes missing, unexpected; switches unexpected, missing
    assert len(report["findings"]) == 3 and report["truncated"] and report["mismatches"] == 10 + 12 + 7 + 7


names = st.sampled_from(["a", "b", "c", "d", "e"])


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(names, st.dictionaries(st.sampled_from(["mlx5_0", "mlx5_1"]), names, max_size=2),
                       max_size=5),
       st.lists(st.tuples(names, st.sampled_from(["l1", "l2", None])), max_size=6),
       st.lists(st.tuples(names, st.sampled_from(["l1", "l2", "l3"])), max_size=6))
def test_any_two_models_compare_to_findings_never_an_exception(ports, designed, discovered):
    def model(pairs):
        topology = Topology()
        topology.add_switch("top")
        for leaf in ("l1", "l2", "l3"):
            topology.add_switch(leaf, parent="top")
        for node, leaf in dict(pairs).items():
            topology.add_node(node, switch=leaf)
        return topology  # an empty side is allowed here: validate() refuses it, compare must not
    observed = model(discovered)
    observed.hca_switches = ports
    report = cabling.compare(model(designed), observed, OPTIONS)
    assert report["mismatches"] == sum(report["counts"].values())
    assert all(finding["kind"] in cabling.KINDS for finding in report["findings"])


@pytest.mark.parametrize("empty", ["expected", "observed"])
def test_an_empty_side_reports_every_node_of_the_other(empty):
    nothing = Topology()
    full = design()
    report = cabling.compare(nothing if empty == "expected" else full, full if empty == "expected" else nothing,
                             OPTIONS)
    kind = "node_unexpected" if empty == "expected" else "node_missing"
    assert report["counts"][kind] == 12
