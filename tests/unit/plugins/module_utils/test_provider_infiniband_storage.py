"""Storage on the compute fabric: the infiniband provider refuses a leaf that swallows the tree, and
``params.switches`` / ``params.hcas`` give the operator the compute tree back."""

from __future__ import annotations

import re

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover, infiniband

from ...conftest_paths import FIXTURES, GOLDEN, REPO

STORAGE = REPO / "tests" / "fixtures" / "infiniband" / "storage-on-compute-fabric.out"
TOPOGRAPH_EXAMPLE = FIXTURES / "ibnetdiscover-example.out"
EXPECTED = (GOLDEN / "infiniband-storage-on-compute-fabric.tree.conf").read_text(encoding="utf-8")
NODES = "gpu-[01-12]"


def run(**params):
    warnings = []
    topology = discover("infiniband", dict({"ibnetdiscover_files": [str(STORAGE)]}, **params), warn=warnings.append)
    return topology, warnings


def test_the_fixture_is_the_documented_two_pod_clos_with_a_storage_leaf_on_the_cores():
    text = STORAGE.read_text(encoding="utf-8")
    assert text.count("\nSwitch\t") == 11 and text.count("\nCa\t") == 26
    assert len(re.findall(r'"gpu-\d\d mlx5_1"', text)) == 24  # each node's mlx5_1: its record and the leaf's port line
    stor_leaf = text.split('# "MF0;DC1-STOR-LEAF-1:MQM9790/U1" enhanced')[1].split("\n\n")[0]
    assert '"stor-01 mlx5_0"' in stor_leaf and '"stor-02 mlx5_0"' in stor_leaf
    assert stor_leaf.count("DC1-CORE-") == 2


def test_without_the_check_the_merge_gives_the_one_switch_map_of_the_issue(monkeypatch):
    # The reproduction: what the provider wrote before, with only a "not a clean Clos" warning.
    monkeypatch.setattr(infiniband, "_refuse_swallowing_leaves", lambda *args: None)
    topology, warnings = run()
    assert slurm.render_tree_conf(topology) == (
        "# DC1-CORE-1=S-0c42a10300aa0001\nSwitchName=DC1-CORE-1 Switches=DC1-STOR-LEAF-1\n"
        "# DC1-STOR-LEAF-1=S-0c42a10300aa0301\nSwitchName=DC1-STOR-LEAF-1 Nodes=gpu-[01-12],stor-[01-02]\n")
    assert len(warnings) == 1 and "(the fabric is not a clean Clos" in warnings[0]


@pytest.mark.parametrize("params", [{}, {"nodes": NODES}], ids=["every-host", "params.nodes"])
def test_a_storage_leaf_holding_every_node_is_an_error_that_says_what_to_set_not_a_one_switch_map(params):
    with pytest.raises(TopologyError) as caught:
        run(**params)
    message = str(caught.value)
    assert message.startswith(
        "leaf switch DC1-STOR-LEAF-1 (S-0c42a10300aa0301) holds 12 nodes that the rest of the fabric places under "
        "4 other leaf switches (DC1-P1-LEAF-1, DC1-P1-LEAF-2, DC1-P2-LEAF-1, DC1-P2-LEAF-2), and 2 hosts no "
        "compute leaf has (stor-[01-02]): it is a storage or management leaf on the compute fabric")
    assert "Set params.switches.exclude: ['DC1-STOR-LEAF-1'] to leave it out" in message
    assert "params.hcas.include to the names of the compute HCAs (the nodes reach it through mlx5_1)" in message
    # Without a node list, the HCA advice says it needs one: the storage servers' HCAs have the same names.
    together = ("together with params.nodes, the compute nodes (the storage servers' HCAs usually have the same "
                "names, and would stay nodes on this leaf)")
    assert (together in message) is ("nodes" not in params)


def test_excluding_the_storage_leaf_by_name_gives_the_two_pod_tree():
    topology, warnings = run(switches={"exclude": ["DC1-STOR-LEAF-1"]})
    assert slurm.render_tree_conf(topology) == EXPECTED
    assert warnings == []
    assert "stor-01" not in topology.nodes  # reached through the excluded leaf only


def test_the_exclude_pattern_the_error_suggests_is_the_one_that_works():
    with pytest.raises(TopologyError) as caught:
        run()
    suggested = re.search(r"params\.switches\.exclude: \['([^']+)'\]", str(caught.value)).group(1)
    topology, _warnings = run(switches={"exclude": [suggested]})
    assert slurm.render_tree_conf(topology) == EXPECTED


def test_excluding_by_guid_and_including_the_compute_leaves_give_the_same_tree():
    by_guid, _warnings = run(switches={"exclude": ["S-0c42a10300aa0301"]})
    included, warnings = run(switches={"include": [r"DC1-P\d-LEAF-\d"]})
    assert slurm.render_tree_conf(by_guid) == slurm.render_tree_conf(included) == EXPECTED
    assert warnings == []


def test_selecting_the_compute_hcas_of_the_cluster_nodes_gives_the_same_tree():
    topology, warnings = run(hcas={"include": ["mlx5_0"]}, nodes=NODES)
    assert slurm.render_tree_conf(topology) == EXPECTED
    assert warnings == []
    excluded, _warnings = run(hcas={"exclude": ["mlx5_1"]}, nodes=NODES)
    assert slurm.render_tree_conf(excluded) == EXPECTED


def test_hca_selection_without_params_nodes_is_refused_not_a_tree_cut_in_three():
    # stor-01/02 keep their mlx5_0 (storage servers use the compute HCAs' names): the storage leaf is a leaf of
    # theirs, linked straight to the cores, which become its tier 1 and are no longer above the pod spines. It
    # used to succeed with the storage servers as nodes and only a warning.
    with pytest.raises(TopologyError) as caught:
        run(hcas={"include": ["mlx5_0"]})
    assert str(caught.value) == (
        "params.switches and params.hcas leave a tree of 3 roots that fabric links join (DC1-CORE-1, DC1-P1-SPINE-1, "
        "DC1-P2-SPINE-1): a leaf of 2 hosts (stor-[01-02]) is linked straight to a higher tier (DC1-CORE-1), so the "
        "tiers above the other leaves are cut off and Slurm would place no job across these trees. List the compute "
        "nodes in params.nodes (storage servers' HCAs usually have the compute HCAs' names), or leave that leaf out "
        "with params.switches.exclude")


def test_each_setting_the_storage_leaf_error_advises_gives_the_one_compute_tree():
    with pytest.raises(TopologyError) as caught:
        run()
    message = str(caught.value)
    hca = re.search(r"the nodes reach it through (\S+)\)", message).group(1)
    compute = {"mlx5_1": "mlx5_0"}[hca]  # the compute HCAs: the others
    advised = [{"switches": {"exclude": [re.search(r"params\.switches\.exclude: \['([^']+)'\]", message).group(1)]}},
               {"hcas": {"include": [compute]}, "nodes": NODES},  # "together with params.nodes"
               {"switches": {"include": [r"DC1-P\d-LEAF-\d"]}}]
    assert "together with params.nodes" in message
    for params in advised:
        topology, warnings = run(**params)
        assert slurm.render_tree_conf(topology) == EXPECTED and warnings == [], params
        assert [sw for sw in topology.switches.values() if sw.parent is None] == [topology.switches[
            topology.path(topology.nodes["gpu-01"].switch)[-1]]]  # one root


def test_a_storage_host_that_claims_a_compute_nodes_name_quarantines_that_name_not_two_leaves():
    # Root on stor-01 describes its HCA as gpu-03's: gpu-03 would sit on its own leaf and the storage leaf.
    claimed = STORAGE.read_text(encoding="utf-8").replace('"stor-01 mlx5_0"', '"gpu-03 mlx5_0"')
    for params in ({"hcas": {"include": ["mlx5_0"]}, "nodes": NODES}, {"switches": {"exclude": ["DC1-STOR-LEAF-1"]}}):
        warnings = []
        topology = discover("infiniband", dict({"ibnetdiscover": {"gpu-01": claimed}}, **params),
                            warn=warnings.append)
        (record,) = topology.quarantined.values()
        assert (record.node, record.source, record.unhealthy) == ("gpu-03", "infiniband", False)
        assert record.reason == (
            "HCA 'H-946dae0300cc0100' (ibnetdiscover output of gpu-01, line 306) and HCA 'H-946dae0300bb0300' "
            "(ibnetdiscover output of gpu-01, line 152) are both described 'gpu-03 mlx5_0': a host has one HCA of a "
            "name, so another host claims gpu-03's name, and neither can be trusted")
        assert "gpu-03" not in topology.nodes and len(topology.nodes) == 11
        assert slurm.render_tree_conf(topology) == EXPECTED.replace("Nodes=gpu-[01-03]", "Nodes=gpu-[01-02]")
        assert warnings == [f"1 nodes quarantined (left out of the map): gpu-03 ({record.reason})"]


def test_an_exclude_at_a_higher_tier_removes_that_switch_and_its_links():
    topology, _warnings = run(switches={"exclude": ["DC1-STOR-LEAF-1", "DC1-CORE-.*"]})
    roots = sorted(sw.name for sw in topology.switches.values() if sw.parent is None)
    assert roots == ["DC1-P1-SPINE-1", "DC1-P2-SPINE-1"]  # two separate pods: no link joins them


def test_patterns_match_names_whole():
    # "LEAF" alone matches no name whole: nothing is excluded, and the storage leaf is refused again.
    with pytest.raises(TopologyError, match="leaf switch DC1-STOR-LEAF-1"):
        run(switches={"exclude": ["STOR"]})
    topology, _warnings = run(switches={"exclude": [".*STOR.*"]})
    assert slurm.render_tree_conf(topology) == EXPECTED


def test_selections_that_leave_no_node_say_so():
    with pytest.raises(TopologyError, match="params.switches and params.hcas leave no HCA of a cluster node"):
        run(switches={"include": ["NO-SUCH-LEAF"]})
    with pytest.raises(TopologyError, match="params.switches and params.hcas leave no HCA of a cluster node"):
        run(hcas={"include": ["mlx5_9"]})


@pytest.mark.parametrize("params, message", [
    ({"switches": {"exclude": ["DC1-(STOR"]}},
     r"params.switches.exclude\[0\]: 'DC1-\(STOR' is not a regular expression: missing \), unterminated subpattern"),
    ({"hcas": {"include": ["mlx5_0", "(a|ab)*"]}},
     r"params.hcas.include\[1\]: '\(a\|ab\)\*': an alternation \(\|\) inside a repetition is not allowed"),
    ({"switches": {"include": []}}, r"params.switches.include must be a non-empty list of regular expressions"),
    ({"switches": {}}, r"params.switches needs include or exclude patterns"),
    ({"switches": {"exclude": [""]}}, r"params.switches.exclude\[0\] must be a non-empty string"),
])
def test_bad_patterns_are_errors_naming_the_field(params, message):
    with pytest.raises(TopologyError, match=message):
        run(**params)


def test_the_swallow_check_leaves_topographs_example_fabric_alone():
    # Two of b08's rails also reach the UFM server and a host called "ubuntu": one leaf group
    # holds another's nodes plus two hosts, which is a host on some rails, not a storage leaf.
    warnings = []
    topology = discover("infiniband", {"ibnetdiscover_files": [str(TOPOGRAPH_EXAMPLE)]}, warn=warnings.append)
    assert topology.summary()["nodes"] == 121
    assert warnings[0].startswith("14 nodes are linked to leaf switches that do not collapse into one")


def _fabric(leaves, base=0):
    """ibnetdiscover text: leaf name -> hosts, every leaf linked to one spine (GUIDs from ``base``)."""
    records, cas, guid = [], [], base + 0x100
    spine_ports = []
    spine = f"{base + 0xffff:016x}"
    for index, (leaf, hosts) in enumerate(leaves.items(), start=1):
        leaf_guid = f"{base + 0xa000 + index:016x}"
        lines = [f'Switch\t65 "S-{leaf_guid}"\t\t# "MF0;{leaf}:MQM9790/U1" enhanced port 0 lid {index} lmc 0']
        for port, host in enumerate(hosts, start=1):
            guid += 1
            hca = f"{guid:016x}"
            lines.append(f'[{port}]\t"H-{hca}"[1]({hca}) \t\t# "{host}" lid {guid} 4xNDR')
            cas.append(f'Ca\t1 "H-{hca}"\t\t# "{host}"\n[1]({hca}) \t"S-{leaf_guid}"[{port}]\t\t# lid {guid} lmc 0')
        lines.append(f'[40]\t"S-{spine}"[{index}]\t\t# "MF0;SPINE{base}:MQM9790/U1" lid 999 4xNDR')
        spine_ports.append(f'[{index}]\t"S-{leaf_guid}"[40]\t\t# "MF0;{leaf}:MQM9790/U1" lid {index} 4xNDR')
        records.append("\n".join(lines))
    records.append("\n".join([f'Switch\t65 "S-{spine}"\t\t# "MF0;SPINE{base}:MQM9790/U1" enhanced port 0 lid 999 lmc 0']
                             + spine_ports))
    return "\n\n".join(records + cas) + "\n"


def _build(leaves, **params):
    warnings = []
    topology = discover("infiniband", dict({"ibnetdiscover": {"n": _fabric(leaves)}}, **params), warn=warnings.append)
    return topology, warnings


def test_rails_with_a_missing_cable_each_are_not_a_swallowing_leaf():
    rail = [[f"n{i:02d} mlx5_{r}" for i in range(1, 9)] for r in range(3)]  # each node's HCA of each rail
    topology, warnings = _build({"R1": rail[0], "R2": rail[1][:-1], "R3": rail[2][:-2] + rail[2][-1:]})
    assert len({node.switch for node in topology.nodes.values()}) == 1
    assert "not a clean Clos" in warnings[0]


def test_a_miscabled_node_on_two_leaves_is_not_a_swallowing_leaf():
    a = [f"a{i:02d} mlx5_0" for i in range(1, 9)]
    b = [f"b{i:02d} mlx5_0" for i in range(1, 9)]
    topology, warnings = _build({"LA": a + ["b01 mlx5_1"], "LB": b})
    # b01 stays under the leaf with more nodes, with the merge's warning; LB keeps the rest.
    assert topology.nodes["b01"].switch == topology.nodes["a01"].switch != topology.nodes["b02"].switch
    assert warnings[0].startswith("1 nodes are linked to leaf switches that do not collapse into one")


def test_a_leaf_holding_most_nodes_of_two_disjoint_leaves_is_refused_even_with_some_cables_missing():
    a = [f"a{i:02d} mlx5_0" for i in range(1, 9)]
    b = [f"b{i:02d} mlx5_0" for i in range(1, 9)]
    storage = [f"a{i:02d} mlx5_1" for i in range(1, 7)] + [f"b{i:02d} mlx5_1" for i in range(2, 9)]
    with pytest.raises(TopologyError, match=r"leaf switch STOR \(S-0+a003\) holds 13 nodes .* 2 other leaf switches "
                                            r"\(LA, LB\)"):
        _build({"LA": a, "LB": b, "STOR": storage})
    topology, _warnings = _build({"LA": a, "LB": b, "STOR": storage}, hcas={"include": ["mlx5_0"]})
    assert len({node.switch for node in topology.nodes.values()}) == 2


def _per_port(stor_rc=0):
    """A loop's registered result: ibnetdiscover -C <hca> -P 1 on two subnets, compute and storage."""
    a = [f"a{i:02d}" for i in range(1, 5)]
    b = [f"b{i:02d}" for i in range(1, 5)]
    compute = _fabric({"LA": [f"{h} mlx5_0" for h in a], "LB": [f"{h} mlx5_0" for h in b]})
    storage = _fabric({"STOR": [f"{h} mlx5_1" for h in a + b] + ["stor-01 mlx5_0"]}, base=0x1000000)
    return {"changed": False, "results": [
        {"item": "mlx5_0", "rc": 0, "stdout": compute, "stderr": ""},
        {"item": "mlx5_1", "rc": stor_rc, "stdout": storage if not stor_rc else "", "stderr": "ibwarn: port down"}]}


def test_per_port_runs_are_read_from_a_loop_result_and_hca_selection_keeps_the_compute_subnet():
    # Every node is on both subnets: the storage leaf holds the nodes of LA and LB and is refused...
    with pytest.raises(TopologyError, match=r"leaf switch STOR .* 2 other leaf switches \(LA, LB\), and 1 hosts no "
                                            r"compute leaf has \(stor-01\)"):
        discover("infiniband", {"ibnetdiscover": {"a01": _per_port()}}, warn=print)
    # ...and the compute HCAs give the tree of the compute subnet; the storage subnet is a tree of its own.
    warnings = []
    topology = discover("infiniband", {"ibnetdiscover": {"a01": _per_port()}, "hcas": {"include": ["mlx5_0"]}},
                        warn=warnings.append)
    assert topology.nodes["a01"].switch == topology.nodes["a04"].switch != topology.nodes["b01"].switch
    assert topology.path(topology.nodes["stor-01"].switch)[-1] != topology.path(topology.nodes["a01"].switch)[-1]
    assert warnings == []  # no fabric link joins the two subnets' trees
    listed = discover("infiniband", {"ibnetdiscover": {"a01": _per_port()["results"]}, "hcas": {"include": ["mlx5_0"]}},
                      warn=print)
    assert slurm.render_tree_conf(listed) == slurm.render_tree_conf(topology)


def test_a_failed_per_port_run_is_an_error_naming_the_node_and_the_port():
    with pytest.raises(TopologyError, match=r"params.ibnetdiscover.a01\[1\] \(mlx5_1\): the command failed \(rc=1\): "
                                            r"ibwarn: port down"):
        discover("infiniband", {"ibnetdiscover": {"a01": _per_port(stor_rc=1)}}, warn=print)
    with pytest.raises(TopologyError, match=r"params.ibnetdiscover.a01 is an empty list"):
        discover("infiniband", {"ibnetdiscover": {"a01": {"results": []}}}, warn=print)
