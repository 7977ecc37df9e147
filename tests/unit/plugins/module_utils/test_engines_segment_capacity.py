"""segment_capacity's engine: typed options built from the one spec, the analysis, the tree above the blocks."""

from __future__ import annotations

import json

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._engines import capacity, segment_capacity
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology


def _topology():
    topology = Topology()
    topology.add_switch("spine")
    topology.add_switch("leaf1", parent="spine")
    topology.add_switch("leaf2", parent="spine")
    for rack in ("r1", "r2", "r3"):
        topology.declare_domain(rack)
    for rack, leaf in (("r1", "leaf1"), ("r3", "leaf2")):
        for i in range(1, 5):
            topology.add_node(f"{rack}n{i}", switch=leaf, domain=rack)
    return topology.validate()


def test_the_options_take_the_specs_defaults_once():
    options = segment_capacity.CAPACITY.build({"block_sizes": [4, 8]})
    assert options.unavailability_rates == list(capacity.DEFAULT_RATES)
    assert options.min_share == capacity.DEFAULT_MIN_SHARE
    assert options.node_states is None and options.segment_sizes is None and options.domain_order is None
    # An option given as None (a template's default(None)) takes its default, as in a module.
    assert segment_capacity.CAPACITY.build({"min_share": None}).min_share == capacity.DEFAULT_MIN_SHARE


def test_the_options_are_checked_by_the_spec():
    # ansible-core 2.17 names the type as <class 'str'>, later releases as str.
    with pytest.raises(TopologyError, match="options: argument 'min_share' is of type (str|<class 'str'>) and we were "
                                            "unable to convert"):
        segment_capacity.CAPACITY.build({"min_share": "a lot"})
    # Keys of other concerns (a module's whole params) are not this spec's business.
    assert segment_capacity.CAPACITY.build({"provider": None, "block_sizes": [4]}).block_sizes == [4]


def test_the_analysis_asks_slurm_only_without_node_states():
    asked = []

    def read_scontrol_json():
        asked.append(True)
        return json.dumps({"nodes": [{"name": "r1n1", "state": ["IDLE", "DRAIN"]}]})

    options = segment_capacity.CAPACITY.build({"block_sizes": [4, 8], "domain_order": ["r1", "r2", "r3"],
                                              "node_states": {"r3n4": "down"}})
    result = segment_capacity.analyse(_topology(), options, read_scontrol_json, warn=lambda message: None)
    assert asked == [] and result["state_source"] == "node_states"
    assert [(block["name"], block["down"]) for block in result["blocks"]] == [("r1", 0), ("r2", 0), ("r3", 1)]

    warnings = []
    options = segment_capacity.CAPACITY.build({"block_sizes": [4, 8], "domain_order": ["r1", "r2", "r3"]})
    result = segment_capacity.analyse(_topology(), options, read_scontrol_json, warn=warnings.append)
    assert asked == [True] and result["state_source"] == "scontrol"
    assert result["blocks"][0]["drained"] == 1
    assert warnings == ["7 nodes of the topology are unknown to Slurm and counted as down: r1n[2-4],r3n[1-4]"]


def test_the_tree_above_the_blocks():
    topology = _topology()
    options = segment_capacity.CAPACITY.build({"block_sizes": [4], "domain_order": ["r1", "r2", "r3"],
                                              "node_states": {}})
    result = segment_capacity.analyse(topology, options, None, warn=lambda message: None)
    assert result["fabric"] == {
        "switches": [{"id": "leaf1", "name": "leaf1", "parent": "spine"},
                     {"id": "leaf2", "name": "leaf2", "parent": "spine"},
                     {"id": "spine", "name": "spine", "parent": None}],
        "block_switch": {"r1": "leaf1", "r2": None, "r3": "leaf2"},
    }
