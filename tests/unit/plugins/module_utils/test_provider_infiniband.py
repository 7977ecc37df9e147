"""The infiniband provider on Topograph's real ibnetdiscover outputs (good and cut off)."""

from __future__ import annotations

import re

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover, infiniband

from ...conftest_paths import FIXTURES

GOOD = (FIXTURES / "ibnetdiscover-example.out").read_text()
BAD = FIXTURES / "ibnetdiscover-example-bad.out"
SPINE = "S-2c5eab0300c25f00"  # B10-P1-IBSPINE-07: the first of the nine spines in sorted-id order
# The nodes Topograph's TestGenerateTopologyConfigValid requests (topograph: pkg/ib/ib_test.go).
TOPOGRAPH_NODES = (["a05-p1-dgx-01-c03", "a05-p1-dgx-01-c04"] + [f"a06-p1-dgx-02-c{i:02d}" for i in range(1, 19)]
                   + [f"b05-p1-dgx-05-c{i:02d}" for i in range(1, 19)])


def run(params):
    warnings = []
    return discover("infiniband", params, warn=warnings.append), warnings


def test_topographs_request_gives_its_tree_without_the_stray_leaf_above_the_spine():
    topology, warnings = run({"ibnetdiscover": {"a05-p1-dgx-01-c03": GOOD}, "nodes": TOPOGRAPH_NODES})
    # Topograph's expected output has the same spine and leaves, plus S-2c5eab0300b87b40 (a leaf
    # switch of nodes it was not asked for) as a core above the spine; that leaf is not a core.
    assert topology.to_compact()["switches"] == {
        "S-2c5eab0300b879c0": SPINE, "S-2c5eab0300b87a80": SPINE, "S-2c5eab0300c25f00": None, "S-2c5eab0300c26040": SPINE}
    tree = slurm.render_tree_conf(topology)
    assert "SwitchName=B10-P1-IBSPINE-07 Switches=A09-P1-IBLEAF-01-02,A09-P1-IBLEAF-02-01,B09-P1-IBLEAF-01-05\n" in tree
    assert "SwitchName=A09-P1-IBLEAF-02-01 Nodes=a05-p1-dgx-01-c[03-04]\n" in tree
    assert "SwitchName=A09-P1-IBLEAF-01-02 Nodes=a06-p1-dgx-02-c[01-04,07,10-12,14,16,18]\n" in tree
    assert "SwitchName=B09-P1-IBLEAF-01-05 Nodes=b05-p1-dgx-05-c[01-18]\n" in tree
    # Their HCAs describe themselves as "MT4129 ConnectX7 Mellanox Technologies": no host name.
    assert "SwitchName=no-topology Nodes=a06-p1-dgx-02-c[05-06,08-09,13,15,17]\n" in tree
    assert warnings == ["7 nodes have no HCA in the ibnetdiscover output and get no switch: "
                        "a06-p1-dgx-02-c[05-06,08-09,13,15,17]"]


def test_the_whole_fabric_collapses_nine_spines_and_four_rails_into_one_tree():
    topology, warnings = run({"ibnetdiscover": {"a05-p1-dgx-01-c03": GOOD}})
    summary = topology.summary()
    assert (summary["nodes"], summary["switches"], summary["nodes_without_switch"]) == (121, 9, 0)
    assert [sid for sid, sw in topology.switches.items() if sw.parent is None] == [SPINE]
    assert topology.switches[SPINE].name == "B10-P1-IBSPINE-07"
    # Rails 1, 2, 5 and 6 of a scalable unit reach the same nodes: their four leaves are one switch.
    assert topology.nodes["b05-p1-dgx-05-c01"].switch == topology.nodes["b05-p1-dgx-05-c18"].switch == "S-2c5eab0300c26040"
    # The SHARP aggregation nodes inside every switch are not hosts; "localhost" is not a node.
    assert not any("Aggregation" in name or name == "localhost" for name in topology.nodes)
    # Two of b08's rails also reach the UFM server and a host called "ubuntu": they stay one leaf.
    assert topology.nodes["b08-p1-dgx-08-c01"].switch == topology.nodes["B11-P1-CUFM-02"].switch
    assert warnings[0].startswith("14 nodes are linked to leaf switches that do not collapse into one")
    assert warnings[1].startswith("69 HCAs have no host name in their node description and HCAs named ['localhost']")


def test_the_cut_off_fixture_is_an_error_naming_the_line_not_a_partial_topology():
    with pytest.raises(TopologyError, match=(
            r"ibnetdiscover-example-bad.out, line 10: HCA 'H-b8e92403009ca838' \('dgx-gb200-n01-c1 HCA-1'\) "
            r"has no port line: the output is cut off there, or the node that ran ibnetdiscover has its port down")):
        run({"ibnetdiscover_files": [str(BAD)], "ibnetdiscover": {"a05-p1-dgx-01-c03": GOOD}})
    with pytest.raises(TopologyError, match=r"ibnetdiscover output of dgx-gb200-n01, line 10: HCA"):
        run({"ibnetdiscover": {"dgx-gb200-n01": BAD.read_text()}})


@pytest.mark.parametrize("text, message", [
    ("Switch\t2 \"S-1\"\t\t# \"leaf\" enhanced port 0 lid 1 lmc 0\n[1]\t\"H-2\"[1](2) \t\t# \"n1 mlx5_0\"\n"
     "[2]\t\"S-3\n", r"out, line 3: malformed port line '\[2\]\\t\"S-3'"),
    ("[1]\t\"H-2\"[1](2) \t\t# \"n1 mlx5_0\"\n", r"out, line 1: port line outside a Switch or Ca record"),
    ("Switch\t2 \"S-1\"\t\t# \"leaf\"\n[1]\t\"H-2\"[1](2)\nibwarn: mad_rpc failed\n",
     r"out, line 3: not ibnetdiscover output: 'ibwarn: mad_rpc failed'"),
    ("Ca\t1 \"H-2\"\t\t# \"n1 mlx5_0\"\n[1](2) \t\"H-3\"[1]\t\t# \"n2 mlx5_0\"\n", r"out: no switch in the output"),
    ("# Topology file: generated on ...\n\n", r"out: no switch in the output"),
])
def test_malformed_outputs_name_the_line(tmp_path, text, message):
    path = tmp_path / "ib.out"
    path.write_text(text)
    with pytest.raises(TopologyError, match=message):
        run({"ibnetdiscover_files": str(path)})


def test_a_registered_command_result_is_read_and_a_failed_one_is_an_error():
    topology, _warnings = run({"ibnetdiscover": {"n1": {"stdout": GOOD, "rc": 0}}, "nodes": "b05-p1-dgx-05-c[01-18]"})
    assert len(topology.nodes) == 18
    with pytest.raises(TopologyError, match=r"params.ibnetdiscover.n2: the command failed \(rc=1\): ibwarn: can't open"):
        run({"ibnetdiscover": {"n1": GOOD, "n2": {"stdout": "", "rc": 1, "failed": True, "stderr": "ibwarn: can't open"}}})
    with pytest.raises(TopologyError, match=r"ibnetdiscover output of n1 is empty"):
        run({"ibnetdiscover": {"n1": "  \n"}})


def test_outputs_that_differ_only_in_their_header_are_parsed_once(monkeypatch):
    parsed = []
    real = infiniband.parse
    monkeypatch.setattr(infiniband, "parse", lambda text, source, fabric=None: parsed.append(source) or real(text, source, fabric))
    later = GOOD.replace("Wed Aug  6 16:11:23 2025", "Wed Aug  6 16:12:01 2025")
    topology, _warnings = run({"ibnetdiscover": {"n1": GOOD, "n2": later}})
    assert parsed == ["ibnetdiscover output of n1"] and len(topology.nodes) == 121


def test_node_map_names_hcas_by_guid_or_by_described_host():
    # H-e09d730300858d88 (rail 6 of a06's c06) describes itself as "MT4129 ConnectX7 Mellanox Technologies".
    node_map = {"0xE09D730300858D88": "a06-p1-dgx-02-c06", "a06-p1-dgx-02-c01": "gpu-a06-01"}
    topology, warnings = run({"ibnetdiscover": {"n": GOOD}, "node_map": node_map, "nodes": "a06-p1-dgx-02-c[02,06],gpu-a06-01"})
    assert {name: node.switch for name, node in topology.nodes.items()} == {
        "gpu-a06-01": "S-2c5eab0300b87bc0", "a06-p1-dgx-02-c02": "S-2c5eab0300b87bc0", "a06-p1-dgx-02-c06": "S-2c5eab0300b87bc0"}
    # c06 is named on rail 6 only, so rail 6's leaf has one more node than the other rails' leaves.
    assert warnings[0].startswith("2 nodes are linked to leaf switches that do not collapse into one")


def test_switch_names_come_from_the_description_when_there_is_one():
    assert infiniband.switch_name("MF0;A09-P1-IBLEAF-01-01:MQM9701/U1") == "A09-P1-IBLEAF-01-01"
    assert infiniband.switch_name("spine-7") == "spine-7"
    assert infiniband.switch_name("Quantum Mellanox Technologies") is None


def test_unknown_params_and_missing_input_are_errors():
    with pytest.raises(TopologyError, match="provider infiniband: params has unknown keys: ibnetdiscovr; known: "
                                            "accelerator, discovery_timeout, hcas, ibnetdiscover"):
        run({"ibnetdiscovr": {}})
    with pytest.raises(TopologyError, match="needs params.ibnetdiscover"):
        run({})
    with pytest.raises(TopologyError, match="no HCA in the ibnetdiscover output belongs to a node of params.nodes"):
        run({"ibnetdiscover": {"n": GOOD}, "nodes": "gpu[01-02]"})  # a naming mismatch, not an empty fabric


# -- params.node_facts: each node writes its own, so one node's bad facts quarantine that node ----------------

B05 = "b05-p1-dgx-05-c[01-18]"  # one scalable unit: its four rail leaves collapse into S-2c5eab0300c26040
B05_LEAF = "S-2c5eab0300c26040"


def facts(*guids):
    """A node's topology_node fact as topology_facts gathers it (sysfs GUIDs read as 0x...)."""
    return {"hostname": "x", "infiniband": [{"device": f"mlx5_{index}", "node_guid": guid, "ports": []}
                                            for index, guid in enumerate(guids)]}


GOOD_FACTS = {"b05-p1-dgx-05-c01": facts("0xe09d730300233b10", "0xe09d730300233b14"),  # its HCA-1 and HCA-2
              "b05-p1-dgx-05-c03": facts()}


@pytest.mark.parametrize("bad, reason", [
    ("x" * 500, r"^params.node_facts.b05-p1-dgx-05-c02 must be the node's topology_node fact, with its infiniband "
                r"list \(gathered by aifactory.topology.topology_facts\), got 'x{60}'... \(500 characters\)$"),
    ({"hostname": "b05-p1-dgx-05-c02", "nvlink": {}},  # gathered without infiniband
     r"^params.node_facts.b05-p1-dgx-05-c02 must be the node's topology_node fact, .* got <dict>$"),
    ({"infiniband": [{"node_guid": "0xe09d7303002324f0"}, "mlx5_1\nSwitchName=evil"]},
     r"^params.node_facts.b05-p1-dgx-05-c02.infiniband\[1\] must be a mapping, got 'mlx5_1\\nSwitchName=evil'$"),
    # A host name where a GUID goes would have been read as a described host name: c02 taking c01's HCAs.
    (facts("b05-p1-dgx-05-c01"), r"^params.node_facts.b05-p1-dgx-05-c02.infiniband\[0\].node_guid must be an HCA "
                                 r"GUID \(16 hex digits, as in 0xe09d73030037311c\), got 'b05-p1-dgx-05-c01'$"),
    (facts(["0xe09d7303002324f0"]), r"^params.node_facts.b05-p1-dgx-05-c02.infiniband\[0\].node_guid must be an "
                                    r"HCA GUID .*, got <list>$"),
], ids=["not-a-mapping", "no-infiniband-list", "hca-not-a-mapping", "host-name-as-guid", "guid-not-a-string"])
def test_one_nodes_unusable_facts_quarantine_that_node_and_the_others_keep_their_leaves(bad, reason):
    topology, warnings = run({"ibnetdiscover": {"n": GOOD}, "nodes": B05,
                              "node_facts": dict(GOOD_FACTS, **{"b05-p1-dgx-05-c02": bad})})
    (record,) = topology.quarantined.values()
    assert (record.node, record.source, record.unhealthy) == ("b05-p1-dgx-05-c02", "infiniband", False)
    assert re.search(reason, record.reason), record.reason
    assert "b05-p1-dgx-05-c02" not in topology.nodes and "\n" not in record.reason
    assert {node.switch for node in topology.nodes.values()} == {B05_LEAF} and len(topology.nodes) == 17
    assert "SwitchName=B09-P1-IBLEAF-01-05 Nodes=b05-p1-dgx-05-c[01,03-18]\n" in slurm.render_tree_conf(topology)
    assert warnings == [f"1 nodes quarantined (left out of the map): b05-p1-dgx-05-c02 ({record.reason})"]


def test_a_node_key_that_is_not_a_name_is_quarantined_clipped_and_escaped():
    evil = "gpu9\nSwitchName=evil Nodes=victim[01-99]" + "y" * 500
    topology, _warnings = run({"ibnetdiscover": {"n": GOOD}, "node_facts": {evil: facts()}})
    (record,) = topology.quarantined.values()
    assert record.node is None and len(record.identifier) < 100
    assert record.identifier.startswith("'gpu9\\nSwitchName=evil")
    assert record.reason.startswith("params.node_facts: node 'gpu9\\nSwitchName=evil") and "\n" not in record.reason
    assert len(topology.nodes) == 121


def test_a_guid_in_two_nodes_facts_quarantines_both_claimants():
    # c02 reports c01's HCA-1 as its own: one of the two lies, and the facts cannot tell which.
    node_facts = dict(GOOD_FACTS, **{"b05-p1-dgx-05-c02": facts("0xe09d7303002324f4", "H-E09D730300233B10")})
    topology, warnings = run({"ibnetdiscover": {"n": GOOD}, "nodes": B05, "node_facts": node_facts})
    assert {name: record.reason for name, record in topology.quarantined.items()} == {
        "b05-p1-dgx-05-c01": "params.node_facts.b05-p1-dgx-05-c01.infiniband[0].node_guid: HCA 0xe09d730300233b10 is "
                             "also in the gathered facts of b05-p1-dgx-05-c02; an HCA is in one host, so neither can "
                             "be trusted to own it",
        "b05-p1-dgx-05-c02": "params.node_facts.b05-p1-dgx-05-c02.infiniband[1].node_guid: HCA 0xe09d730300233b10 is "
                             "also in the gathered facts of b05-p1-dgx-05-c01; an HCA is in one host, so neither can "
                             "be trusted to own it"}
    assert sorted(topology.nodes) == [f"b05-p1-dgx-05-c{i:02d}" for i in range(3, 19)]
    assert {node.switch for node in topology.nodes.values()} == {B05_LEAF}
    assert "SwitchName=B09-P1-IBLEAF-01-05 Nodes=b05-p1-dgx-05-c[03-18]\n" in slurm.render_tree_conf(topology)
    assert warnings[0].startswith("2 nodes quarantined (left out of the map): b05-p1-dgx-05-c01 (")
    # A third claimant: each reason names one other and counts the rest.
    node_facts["b05-p1-dgx-05-c04"] = facts("0xe09d730300233b10")
    topology, _warnings = run({"ibnetdiscover": {"n": GOOD}, "nodes": B05, "node_facts": node_facts})
    assert topology.quarantined["b05-p1-dgx-05-c04"].reason.endswith(
        "is also in the gathered facts of b05-p1-dgx-05-c01 and 1 more; an HCA is in one host, so none of them can "
        "be trusted to own it")
    assert len(topology.nodes) == 15


def test_facts_of_nodes_outside_params_nodes_are_not_read():
    # stor-01 is no cluster node: its facts, good or bad, neither quarantine it nor dispute c01's HCA.
    node_facts = dict(GOOD_FACTS, **{"stor-01": facts("0xe09d730300233b10"), "stor-02": "x"})
    topology, _warnings = run({"ibnetdiscover": {"n": GOOD}, "nodes": B05, "node_facts": node_facts})
    assert not topology.quarantined and len(topology.nodes) == 18


def test_invalid_nodes_fail_makes_bad_facts_fatal_naming_the_node_and_field():
    with pytest.raises(TopologyError, match=(
            r"^provider infiniband: 1 nodes have unusable data \(params.invalid_nodes is fail\): b05-p1-dgx-05-c02 "
            r"\(params.node_facts.b05-p1-dgx-05-c02.infiniband\[0\] must be a mapping, got 'mlx5_0'\)$")):
        run({"ibnetdiscover": {"n": GOOD}, "nodes": B05, "invalid_nodes": "fail",
             "node_facts": dict(GOOD_FACTS, **{"b05-p1-dgx-05-c02": {"infiniband": ["mlx5_0"]}})})
    with pytest.raises(TopologyError, match=(
            r"^provider infiniband: 2 nodes have unusable data \(params.invalid_nodes is fail\): b05-p1-dgx-05-c01 "
            r"\(params.node_facts.b05-p1-dgx-05-c01.infiniband\[0\].node_guid: HCA 0xe09d730300233b10 is also in")):
        run({"ibnetdiscover": {"n": GOOD}, "nodes": B05, "invalid_nodes": "fail",
             "node_facts": dict(GOOD_FACTS, **{"b05-p1-dgx-05-c02": facts("0xe09d730300233b10")})})


def test_the_whole_input_still_fails_and_a_map_of_only_quarantined_nodes_is_refused():
    with pytest.raises(TopologyError, match=r"params.node_facts must map each node to its topology_node fact"):
        infiniband.facts_node_map(["b05-p1-dgx-05-c01"], Topology())
    with pytest.raises(TopologyError, match=r"ibnetdiscover output of n, line 3: not ibnetdiscover output"):
        run({"ibnetdiscover": {"n": "Switch\t2 \"S-1\"\t\t# \"leaf\"\n[1]\t\"H-2\"[1](2)\nibwarn: mad_rpc failed\n"},
             "node_facts": GOOD_FACTS})
    with pytest.raises(TopologyError, match=r"^every node was quarantined \(2\), so nothing is left to map: "
                                            r"b05-p1-dgx-05-c01 \(params.node_facts.b05-p1-dgx-05-c01.infiniband"):
        run({"ibnetdiscover": {"n": GOOD}, "nodes": "b05-p1-dgx-05-c[01-02]",
             "node_facts": {"b05-p1-dgx-05-c01": facts("0xe09d730300233b10"),
                            "b05-p1-dgx-05-c02": facts("0xe09d730300233b10")}})
