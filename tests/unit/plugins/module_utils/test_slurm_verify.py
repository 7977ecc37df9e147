"""Verified apply (_engines/slurm_verify and its orchestration): the file against what slurmctld shows."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm_verify
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import slurm_topology_verify

YAML = """- topology: nvl
  cluster_default: true
  block:
    block_sizes: [2, 4]
    blocks:
      - {block: b1, nodes: 'n[1-2]'}
      - {block: b2, nodes: 'n[3-4]'}
      - {block: b3}
- topology: tr
  tree:
    switches:
      - {switch: s1, children: 'l[1-2]'}
      - {switch: l1, nodes: 'n[1-2]'}
      - {switch: l2, nodes: 'n[3-4]'}
- topology: admin
  flat: true
"""
SHOWN_BLOCKS = """BlockName=b1 BlockIndex=0 Nodes=n[1-2] BlockSize=2
BlockName=b2 BlockIndex=1 Nodes=n[3-4] BlockSize=2
BlockName=b3 BlockIndex=2 BlockSize=2
AggregatedBlock=b[1-2] BlockIndex=3 Nodes=n[1-4] BlockSize=4
"""
SHOWN_TREE = """SwitchName=s1 Level=1 LinkSpeed=0 Nodes=n[1-4] Switches=l[1-2]
SwitchName=l1 Level=0 LinkSpeed=0 Nodes=n[1-2]
SwitchName=l2 Level=0 LinkSpeed=0 Nodes=n[3-4]
"""


def layouts():
    return {layout.name: layout for layout in slurm_verify.read_file(YAML)}


def test_the_file_and_the_controllers_answer_read_alike_match():
    written = layouts()
    assert [written[name].kind for name in ("nvl", "tr", "admin")] == ["block", "tree", "flat"]
    assert written["nvl"].default and written["nvl"].block_sizes == [2, 4]
    assert slurm_verify.differences(written["nvl"], slurm_verify.read_shown("nvl", SHOWN_BLOCKS)) == []
    assert slurm_verify.differences(written["tr"], slurm_verify.read_shown("tr", SHOWN_TREE)) == []


def test_a_topology_conf_is_the_default_topology():
    (layout,) = slurm_verify.read_file("BlockName=b1 Nodes=n[1-2]\nBlockName=b2\nBlockSizes=2,4\n")
    assert (layout.name, layout.kind, layout.default, layout.block_sizes) == ("default", "block", True, [2, 4])
    assert layout.blocks == [("b1", frozenset({"n1", "n2"})), ("b2", frozenset())]


@pytest.mark.parametrize("shown, expected", [
    (SHOWN_BLOCKS.replace("BlockName=b3 BlockIndex=2 BlockSize=2\n", ""),
     ["topology nvl: blocks b3 of the file are not loaded"]),
    (SHOWN_BLOCKS + "BlockName=b9 BlockIndex=4 BlockSize=2\n",
     ["topology nvl: the controller has blocks b9 that the file does not"]),
    (SHOWN_BLOCKS.replace("BlockIndex=0", "BlockIndex=9"),
     ["topology nvl: the controller holds the blocks in another order than the file (the positions decide which "
      "blocks aggregate)"]),
    (SHOWN_BLOCKS.replace("Nodes=n[3-4] BlockSize=2", "BlockSize=2"),
     ["topology nvl, block b2: the file's n[3-4] are not in it on the controller"]),
    ("", ["topology nvl: the controller has no block topology loaded under this name (not loaded, or loaded as flat)"]),
    (SHOWN_TREE, ["topology nvl: the file says block, the controller has tree"]),
])
def test_each_difference_names_the_topology_and_the_block(shown, expected):
    assert slurm_verify.differences(layouts()["nvl"], slurm_verify.read_shown("nvl", shown)) == expected


def test_a_tree_that_lost_a_link_or_a_node_is_named_by_switch():
    shown = SHOWN_TREE.replace("Switches=l[1-2]", "Switches=l1")
    shown = shown.replace("l2 Level=0 LinkSpeed=0 Nodes=n[3-4]", "l2 Level=0 LinkSpeed=0 Nodes=n3")
    assert slurm_verify.differences(layouts()["tr"], slurm_verify.read_shown("tr", shown)) == [
        "topology tr, switch l2: the file's n4 are not in it on the controller",
        "topology tr, switch s1: the file links it to switches l[1-2], the controller to l1"]


@pytest.mark.parametrize("line, message", [
    ("BlockName=b1 BlockIndex=\u00b2 BlockSize=2", r"line 1: BlockIndex must be a whole number"),
    ("BlockName=b1 BlockIndex=0 Nodes=n[1-9999999] BlockSize=2", r"line 1: .*"),
    ("Some other answer", r"line 1: not a line of scontrol show topology: 'Some other answer'"),
])
def test_an_answer_that_is_not_scontrols_is_an_error_naming_the_line(line, message):
    with pytest.raises(TopologyError, match=message):
        slurm_verify.read_shown("nvl", line)


def test_a_file_that_is_not_a_topology_file_is_an_error_naming_the_entry():
    with pytest.raises(TopologyError, match=r"^f\[0\] must be a mapping with a topology name$"):
        slurm_verify.read_file("- 3\n", where="f")
    with pytest.raises(TopologyError, match=r"^f\[0\]\.block\.blocks\[0\] must be a mapping with a block name$"):
        slurm_verify.read_file("- topology: x\n  block: {blocks: [7]}\n", where="f")


def test_a_probe_fits_in_one_aligned_group_or_names_the_blocks_it_spans():
    layout = layouts()["nvl"]
    assert slurm_verify.probe_problem(layout, 2, frozenset({"n3", "n4"})) is None
    assert slurm_verify.probe_problem(layout, 4, frozenset({"n1", "n2", "n3", "n4"})) is None
    assert slurm_verify.probe_problem(layout, 2, frozenset({"n2", "n3"})) == (
        "topology nvl: a 2-node job with --segment=2 was answered across blocks b1, b2 (nodes n[2-3]); the map says "
        "it fits in one")
    assert slurm_verify.probe_plan(layout, frozenset({"n1", "n3", "n4"})) == [(2, ["b2"]), (4, None)]


class FakeController(slurm_topology_verify.Controller):
    """Slurm's answers as the bug of a dropped block bitmap gives them: the right map, a job across blocks."""

    def __init__(self, answers):
        super().__init__(None, "sbatch")
        self.answers = answers
        self.asked = []

    def scontrol(self, *args):
        return self.answers[args]

    def test_only(self, partition, size):
        self.asked.append((partition, size))
        return {2: "n[2-3]", 4: "n[1-4]"}[size], ""


def test_a_probe_answered_across_blocks_is_a_difference_though_the_map_reads_back_right():
    nodes = '{"nodes": [' + ",".join(f'{{"name": "n{i}", "state": ["IDLE"]}}' for i in range(1, 5)) + "]}"
    controller = FakeController({("show", "nodes", "--json"): nodes,
                                 ("show", "partition", "-o"): "PartitionName=gpu State=UP Nodes=n[1-4]\n"
                                                              "PartitionName=t State=UP Topology=tr\n"})
    problems, asked = slurm_topology_verify.probes(controller, slurm_verify.read_file(YAML), lambda message: None)
    assert controller.asked == [("gpu", 2), ("gpu", 4)]
    assert problems == ["topology nvl: a 2-node job with --segment=2 was answered across blocks b1, b2 (nodes "
                        "n[2-3]); the map says it fits in one"]
    assert [record["fits"] for record in asked] == [False, True]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("BlockName=Index Nodes[]-,0123456789\nSwitchAggregated\u00b2")),
               max_size=300))
def test_any_answer_is_a_layout_or_an_error_naming_the_line(text):
    try:
        slurm_verify.read_shown("nvl", text)
    except TopologyError as exc:
        assert str(exc).startswith("scontrol show topology nvl")
