"""Slurm engines: Topograph's documented outputs, our block layout, and golden files.

Golden files in tests/golden/ are also loaded into a real slurmctld by
tests/integration/test_slurm_real.py. Regenerate them with UPDATE_GOLDEN=1 after a
deliberate change, and review the diff.
"""

from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard
from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm
from ansible_collections.aifactory.topology.plugins.module_utils._engines.graph import render_graph_json
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover

from ...conftest_paths import FIXTURES, GOLDEN, MODELS, REPO

STORAGE_FABRIC = REPO / "tests" / "fixtures" / "infiniband" / "storage-on-compute-fabric.out"


def sim(model, **params):
    return discover("simulation", {"model_path": str(MODELS / model), **params})


def medium_with_cpu():
    """medium.yaml as Topograph's http_server_test requests it: n-XXXX names plus n-CPU without data."""
    source = sim("medium.yaml")
    topo = Topology()
    for switch in source.switches.values():
        topo.add_switch(switch.id, switch.parent)
    for node in source.nodes.values():
        topo.add_node(f"n-{node.name}", node.switch, node.domain)
    topo.add_node("n-CPU")
    return topo.validate()


def nvl72_racks():
    """Our layout: nvl72.yaml's four racks in physical order, with a rack that is not there yet."""
    return sim("nvl72.yaml")


def collect(warnings):
    return warnings.append


GOLDEN_CASES = {
    # The storage leaf on the compute subnet left out: the 2-pod tree, not one switch (test_provider_infiniband_storage.py).
    "infiniband-storage-on-compute-fabric.tree.conf": lambda: slurm.render_tree_conf(discover("infiniband", {
        "ibnetdiscover_files": [str(STORAGE_FABRIC)], "switches": {"exclude": ["DC1-STOR-LEAF-1"]}})),
    "topograph-small-tree.tree.conf": lambda: slurm.render_tree_conf(sim("small-tree.yaml")),
    "topograph-large.tree.conf": lambda: slurm.render_tree_conf(sim("large.yaml")),
    "topograph-large-normalized.tree.conf": lambda: slurm.render_tree_conf(
        sim("large.yaml", normalize_switch_names=True)),
    "topograph-medium-no-topology.tree.conf": lambda: slurm.render_tree_conf(medium_with_cpu()),
    "topograph-large.block.conf": lambda: slurm.render_block_conf(
        sim("large.yaml"), slurm.BlockOptions([8, 16, 32], naming="topograph")),
    "topograph-large-rack-names.block.conf": lambda: slurm.render_block_conf(
        sim("large.yaml"), slurm.BlockOptions([8, 16, 32], naming="topograph",
                                              name_pattern={"regexp": "^srv([0-9]{2})", "format": "rack${1}"})),
    "topograph-medium.block.conf": lambda: slurm.render_block_conf(
        sim("medium.yaml"), slurm.BlockOptions([2, 4], naming="topograph")),
    "topograph-dual-xclr-irregular.block.conf": lambda: slurm.render_block_conf(
        sim("dual-xclr-irregular.yaml"), slurm.BlockOptions([9, 144], naming="topograph")),
    "topograph-medium.topology.yaml": lambda: slurm.render_topology_yaml(sim("medium.yaml"), [
        slurm.TopologySpec("topo1", "topology/tree", nodes=["1101", "1102", "1201"]),
        slurm.TopologySpec("topo2", "topology/block", nodes=["1301", "1302", "1401"], block_sizes=[2]),
        slurm.TopologySpec("topo3", "topology/flat", cluster_default=True),
    ], slurm.BlockOptions(naming="topograph")),
    "nvl72-placeholder.block.conf": lambda: slurm.render_block_conf(nvl72_racks(), slurm.BlockOptions(
        [18, 36, 72], domain_order=["nvl-1-1", "nvl-1-2", "nvl-new", "nvl-2-1", "nvl-2-2"])),
    "nvl72.topology.yaml": lambda: slurm.render_topology_yaml(nvl72_racks(), [
        slurm.TopologySpec("nvl72", "topology/block", block_sizes=[18, 36, 72], cluster_default=True),
        slurm.TopologySpec("fabric", "topology/tree", nodes=[f"node{r}{n:02d}" for r in (11, 12) for n in range(1, 19)]),
        slurm.TopologySpec("admin", "topology/flat"),
    ], slurm.BlockOptions()),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden(name):
    rendered = GOLDEN_CASES[name]()
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(rendered, encoding="utf-8")
    assert rendered == path.read_text(encoding="utf-8"), f"{name} differs; UPDATE_GOLDEN=1 rewrites it"


def test_golden_directory_has_no_stale_files():
    assert sorted(p.name for p in GOLDEN.iterdir()) == sorted(GOLDEN_CASES)


# -- Topograph's documented outputs (docs/topograph-differences.md; tests/fixtures/topograph/README.md) --------------------

def test_tree_small_tree_matches_topograph_engine_test():
    assert slurm.render_tree_conf(sim("small-tree.yaml")) == (
        "SwitchName=S1 Switches=S[2-3]\nSwitchName=S2 Nodes=I[21-22,25]\nSwitchName=S3 Nodes=I[34-36]\n")


def test_tree_large_normalized_equals_topograph_oci_sim_fixture():
    expected = (FIXTURES / "expected.slinky-oci-sim-tree.conf").read_text()
    assert slurm.render_tree_conf(sim("large.yaml", normalize_switch_names=True)) == expected


def test_tree_large_raw_ids():
    lines = slurm.render_tree_conf(sim("large.yaml")).splitlines()
    assert lines[:2] == ["SwitchName=core Switches=spine-[1-6]", "SwitchName=spine-1 Switches=leaf-1-[1-2]"]
    assert "SwitchName=leaf-1-1 Nodes=srv[1101-1108]" in lines


def test_tree_medium_puts_nodes_without_data_under_no_topology_first():
    assert slurm.render_tree_conf(medium_with_cpu()).splitlines() == [
        "SwitchName=no-topology Nodes=n-CPU",
        "SwitchName=sw3 Switches=sw[21-22]",
        "SwitchName=sw21 Switches=sw[11-12]",
        "SwitchName=sw22 Switches=sw[13-14]",
        "SwitchName=sw11 Nodes=n-[1101-1102]",
        "SwitchName=sw12 Nodes=n-[1201-1202]",
        "SwitchName=sw13 Nodes=n-[1301-1302]",
        "SwitchName=sw14 Nodes=n-[1401-1402]",
    ]


def test_tree_without_no_topology_switch_leaves_such_nodes_out_with_a_warning():
    warnings = []
    text = slurm.render_tree_conf(medium_with_cpu(), no_topology_switch="", warn=warnings.append)
    assert "n-CPU" not in text
    assert warnings == ["1 nodes have no switch and are left out of the tree: n-CPU"]


def test_block_large_equals_topograph_4_2():
    lines = slurm.render_block_conf(sim("large.yaml"), slurm.BlockOptions([8, 16, 32], naming="topograph")).splitlines()
    assert lines[:4] == ["# block001=nvl-1-1", "BlockName=block001 Nodes=srv[1101-1108]",
                         "# block002=nvl-1-2", "BlockName=block002 Nodes=srv[1201-1208]"]
    assert lines[-3:] == ["# block012=nvl-6-2", "BlockName=block012 Nodes=srv[6201-6208]", "BlockSizes=8,16,32"]
    assert len(lines) == 25


def test_block_with_name_pattern_equals_topograph_dra_fixture():
    expected = (FIXTURES / "expected.slinky-dra-block.conf").read_text()
    options = slurm.BlockOptions([8, 16, 32], naming="topograph",
                                 name_pattern={"regexp": "^srv([0-9]{2})", "format": "rack${1}"})
    assert slurm.render_block_conf(sim("large.yaml"), options) == expected


def test_block_medium_equals_topograph_4_4_and_infers_sizes_without_them():
    options = slurm.BlockOptions([2, 4], naming="topograph")
    assert slurm.render_block_conf(sim("medium.yaml"), options) == (
        "# block001=nvl1\nBlockName=block001 Nodes=[1101-1102]\n# block002=nvl2\nBlockName=block002 Nodes=[1201-1202]\n"
        "# block003=nvl3\nBlockName=block003 Nodes=[1301-1302]\n# block004=nvl4\nBlockName=block004 Nodes=[1401-1402]\n"
        "BlockSizes=2,4\n")
    inferred = slurm.render_block_conf(sim("medium.yaml"), slurm.BlockOptions(naming="topograph"))
    assert inferred.endswith("BlockSizes=2,4,8\n")


def test_block_dual_level_irregular_matches_topograph_complement_test():
    blocks, sizes = slurm.plan_blocks(sim("dual-xclr-irregular.yaml"), slurm.BlockOptions([9, 144], naming="topograph"))
    assert sizes == [9, 144]
    assert len(blocks) == 32
    assert [b.name for b in blocks if not b.nodes] == ["block015", "block016", "block032"]
    assert blocks[2].label == "rack-1-04" and len(blocks[2].nodes) == 7


def _domains(counts):
    topo = Topology()
    for index, count in enumerate(counts):
        for n in range(count):
            topo.add_node(f"d{index:02d}n{n:03d}", domain=f"d{index:02d}")
    return topo.validate()


@pytest.mark.parametrize("counts, sizes, filled, empty", [
    ([3, 3, 3], [4, 8, 16], 3, ["block004"]),
    ([3] * 7, [4, 16, 32], 7, ["block008"]),
    ([16] * 6, [8, 64], 12, ["block013", "block014", "block015", "block016"]),
    ([72] * 3, [18, 144], 12, ["block013", "block014", "block015", "block016"]),
    ([12], [4, 8, 16], 3, ["block004"]),
])
def test_block_complement_cases_from_topograph(counts, sizes, filled, empty):
    blocks = slurm.plan_blocks(_domains(counts), slurm.BlockOptions(sizes, naming="topograph"))[0]
    assert sum(1 for b in blocks if b.nodes) == filled
    assert [b.name for b in blocks if not b.nodes] == empty


def test_block_path_a_infers_sizes_from_smallest_block():
    sizes = slurm.plan_blocks(_domains([3, 4]), slurm.BlockOptions(naming="topograph"))[1]
    assert sizes == [3, 6]


def test_topology_yaml_follows_topograph_layout():
    text = GOLDEN_CASES["topograph-medium.topology.yaml"]()
    assert text.splitlines()[:8] == [
        "- topology: topo1", "  cluster_default: false", "  tree:", "    switches:",
        "        - switch: sw3", "          children: sw21", "        - switch: sw21", "          children: sw[11-12]"]
    assert '          nodes: "[1101-1102]"' in text
    assert "        - block: block1" in text
    assert text.endswith("- topology: topo3\n  cluster_default: true\n  flat: true\n")
    loaded = yaml.safe_load(text)
    assert [entry["topology"] for entry in loaded] == ["topo1", "topo2", "topo3"]
    assert loaded[1]["block"] == {"block_sizes": [2], "blocks": [{"block": "block1", "nodes": "[1301-1302]"},
                                                                 {"block": "block2", "nodes": "1401"}]}


def test_graph_json_matches_topograph_shape():
    text = render_graph_json(sim("small-tree.yaml"))
    assert text.startswith('{"instances":[{"id":"I21","network_layers":["S2","S1"]}')
    medium = render_graph_json(sim("medium.yaml"))
    assert ('{"id":"1101","network_layers":["sw11","sw21","sw3"],"labels":{"topology.kubernetes.io/region":"us-west",'
            '"topology.kubernetes.io/zone":"zone1"}}') in medium


# -- our block layout ---------------------------------------------------------------------------

def test_domain_blocks_are_named_after_racks_with_placeholders_in_place():
    warnings = []
    options = slurm.BlockOptions([18, 36, 72], domain_order=["nvl-1-1", "nvl-new", "nvl-1-2"])
    text = slurm.render_block_conf(nvl72_racks(), options, warn=warnings.append)
    assert text.splitlines() == [
        "BlockName=nvl-1-1 Nodes=node[1101-1118]",
        "BlockName=nvl-new",
        "BlockName=nvl-1-2 Nodes=node[1201-1218]",
        "BlockName=nvl-2-1 Nodes=node[2101-2118]",
        "BlockName=nvl-2-2 Nodes=node[2201-2218]",
        "BlockSizes=18,36,72",
    ]
    assert warnings == ["domains not in domain_order are appended after it, sorted: nvl-2-1, nvl-2-2"]


def test_a_rack_appearing_renames_no_other_block():
    before = slurm.plan_blocks(nvl72_racks(), slurm.BlockOptions([18]))[0]
    topo = nvl72_racks()
    for n in range(1, 19):
        topo.add_node(f"node05{n:02d}", domain="nvl-0-5")
    after = slurm.plan_blocks(topo, slurm.BlockOptions([18]))[0]
    names_before = {b.name: b.nodes for b in before}
    assert all(names_before[b.name] == b.nodes for b in after if b.name in names_before)
    assert [b.name for b in after] == ["nvl-0-5", "nvl-1-1", "nvl-1-2", "nvl-2-1", "nvl-2-2"]


def test_declared_domain_order_from_the_provider_is_the_default():
    topo = discover("inventory", {"domains": [{"name": "r2", "nodes": "b[1-2]"}, {"name": "r1"},
                                              {"name": "r10", "nodes": "a[1-2]"}]})
    blocks, sizes = slurm.plan_blocks(topo, slurm.BlockOptions())
    assert [(b.name, b.nodes) for b in blocks] == [("r2", ["b1", "b2"]), ("r1", []), ("r10", ["a1", "a2"])]
    assert sizes == [2]


def test_domain_names_are_sanitised_and_collisions_rejected():
    topo = Topology()
    # White space, ',', '[' and ']' never reach a model (Topology refuses them); other characters
    # Slurm's block names do not take are replaced.
    topo.add_node("n1", domain="uuid-1.clique/2")
    topo.add_node("n2", domain="rack(1)")
    topo.validate()
    names = [b.name for b in slurm.plan_blocks(topo, slurm.BlockOptions())[0]]
    assert names == ["rack_1_", "uuid-1.clique_2"]
    topo.add_node("n3", domain="rack{1}")
    with pytest.raises(TopologyError, match="both give block name 'rack_1_'"):
        slurm.plan_blocks(topo, slurm.BlockOptions())


def test_oversized_racks_warn_and_domainless_nodes_warn():
    topo = _domains([18, 20])
    topo.add_node("login1")
    warnings = []
    slurm.plan_blocks(topo, slurm.BlockOptions([18]), warn=warnings.append)
    assert warnings == [
        "blocks larger than the base block size 18: d01; Slurm sizes them as ceil(nodes / base) base blocks",
        "1 nodes have no accelerator domain and are in no block: login1",
    ]


def test_block_topology_without_domains_is_an_error():
    topo = Topology()
    topo.add_node("n1")
    with pytest.raises(TopologyError, match="needs nodes with an accelerator domain"):
        slurm.render_block_conf(topo.validate(), slurm.BlockOptions())
    with pytest.raises(TopologyError, match="block topology contains no accelerator domains"):
        slurm.render_block_conf(topo, slurm.BlockOptions(naming="topograph"))


@pytest.mark.parametrize("sizes, message", [
    ([18, 54], r"block_sizes\[1\] = 54 must be the base size 18 times a power of two"),
    ([36, 18], r"block_sizes\[1\] = 18 must be the base size 36 times a power of two"),
    ([18, 36, 36], r"must be ascending: block_sizes\[2\] = 36 follows 36"),
    ([0], r"block_sizes\[0\] must be a positive integer"),
    ([18, True], r"block_sizes\[1\] must be a positive integer"),
    ([1, 2 ** 16], r"more than 1 \* 2\^15"),
    ([], "non-empty list"),
])
def test_block_sizes_are_validated_as_slurm_requires(sizes, message):
    with pytest.raises(TopologyError, match=message):
        slurm.validate_block_sizes(sizes)


def test_valid_block_sizes():
    assert slurm.validate_block_sizes([18, 36, 72, 144]) == [18, 36, 72, 144]
    assert slurm.validate_block_sizes([18, 18 * 2 ** 15]) == [18, 18 * 2 ** 15]


def test_name_pattern_errors_name_block_and_domain():
    options = slurm.BlockOptions([8], naming="topograph", name_pattern={"regexp": "^srv([0-9])", "format": "r$1"})
    with pytest.raises(TopologyError, match="block_name_pattern gives 'r1' to blocks block001 and block002"):
        slurm.plan_blocks(sim("large.yaml"), options)
    options = slurm.BlockOptions([8], name_pattern={"regexp": "^x", "format": "r"})
    with pytest.raises(TopologyError, match="block nvl-1-1 \\(domain nvl-1-1\\): node 'srv1101' does not match"):
        slurm.plan_blocks(sim("large.yaml"), options)


def test_topograph_naming_rejects_domain_order():
    with pytest.raises(TopologyError, match="domain_order needs block_naming=domain"):
        slurm.BlockOptions(naming="topograph", domain_order=["a"])


def test_switch_with_nodes_and_children_is_rejected_for_slurm():
    topo = Topology()
    topo.add_switch("spine")
    topo.add_switch("leaf", parent="spine")
    topo.add_node("n1", "spine")
    topo.add_node("n2", "leaf")
    with pytest.raises(TopologyError, match="switch 'spine' has both child switches and nodes"):
        slurm.render_tree_conf(topo.validate())


# -- topology.yaml ---------------------------------------------------------------------------

def test_exactly_one_cluster_default():
    topo = nvl72_racks()
    for defaults in ([], ["a", "b"]):
        specs = [slurm.TopologySpec(name, "topology/flat", cluster_default=name in defaults) for name in "abc"]
        with pytest.raises(TopologyError, match="exactly one topology must set cluster_default"):
            slurm.render_topology_yaml(topo, specs, slurm.BlockOptions())


def test_partition_nodes_outside_the_model_warn_and_empty_becomes_flat():
    warnings = []
    specs = [slurm.TopologySpec("gpu", "topology/block", nodes=["node1101", "ghost1"], cluster_default=True),
             slurm.TopologySpec("cpu", "topology/tree", nodes=["ghost2"])]
    text = slurm.render_topology_yaml(nvl72_racks(), specs, slurm.BlockOptions([18]), warn=warnings.append)
    loaded = {entry["topology"]: entry for entry in yaml.safe_load(text)}
    assert loaded["cpu"]["flat"] is True
    assert loaded["gpu"]["block"]["blocks"][0] == {"block": "nvl-1-1", "nodes": "node1101"}
    assert "topology gpu: 1 nodes are not in the model and are left out: ghost1" in warnings
    assert "topology cpu: none of its nodes are in the model; written as flat" in warnings


@pytest.mark.parametrize("value", ["true", "no", "1101", "1e3", "null", "[1-2]", "a: b", "#x", "~", "-a", "0x1f", ".5"])
def test_yaml_scalars_load_back_as_the_same_string(value):
    assert yaml.safe_load(f"k: {slurm.yaml_scalar(value)}") == {"k": value}


@pytest.mark.parametrize("value", ["node[01-18]", "sw21", "gb200-r01-n01", "a,b"])
def test_yaml_scalars_stay_plain_when_safe(value):
    assert slurm.yaml_scalar(value) == value


def test_nodes_in_file_reads_both_formats_with_headers():
    conf = "# header\nBlockName=r1 Nodes=n[1-3]\nBlockName=r2\nBlockSizes=3\n"
    assert shrink_guard.nodes_in_file(conf) == {"n1", "n2", "n3"}
    headed_yaml = "# header\n" + GOLDEN_CASES["nvl72.topology.yaml"]()
    assert len(shrink_guard.nodes_in_file(headed_yaml)) == 72


def test_nodes_in_file_without_pyyaml_reads_our_yaml(monkeypatch):
    from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml

    text = "# header\n" + GOLDEN_CASES["nvl72.topology.yaml"]() + GOLDEN_CASES["topograph-medium.topology.yaml"]()
    with_yaml = shrink_guard.nodes_in_file(text)
    monkeypatch.setattr(_yaml, "HAS_YAML", False)
    assert shrink_guard.nodes_in_file(text) == with_yaml
    assert "1101" in with_yaml and len(with_yaml) == 72 + 6
