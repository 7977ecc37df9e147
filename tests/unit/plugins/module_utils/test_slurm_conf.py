from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._slurm_conf import (
    MANAGED_MARKER, apply, restart_settings)

BASE = """# site slurm.conf
ClusterName=ai
SlurmctldHost=ctl01
switchtype=switch/none   # lower case, as some sites write it
NodeName=gb200-r01-n[01-18] CPUs=144 State=UNKNOWN
PartitionName=gpu Nodes=gb200-r01-n[01-18] Default=YES MaxTime=INFINITE State=UP
PartitionName=debug Nodes=gb200-r01-n01 # a comment
"""


def test_sets_changes_and_appends_only_what_it_is_given():
    text, settings, partitions = apply(BASE, {"SwitchType": "switch/nvidia_imex", "CliFilterPlugins": "cli_filter/lua"},
                                       {"gpu": {"Topology": "nvl72"}})
    lines = text.splitlines()
    assert "SwitchType=switch/nvidia_imex" in lines and "switchtype=switch/none" not in text
    assert "PartitionName=gpu Nodes=gb200-r01-n[01-18] Default=YES MaxTime=INFINITE State=UP Topology=nvl72" in lines
    assert lines[-2:] == [MANAGED_MARKER, "CliFilterPlugins=cli_filter/lua"]
    assert "PartitionName=debug Nodes=gb200-r01-n01 # a comment" in lines
    assert lines[:3] == ["# site slurm.conf", "ClusterName=ai", "SlurmctldHost=ctl01"]
    assert settings == ["CliFilterPlugins", "SwitchType"] and partitions == ["gpu"]
    assert restart_settings(settings) == ["SwitchType"]


def test_second_apply_changes_nothing():
    once, _s, _p = apply(BASE, {"SwitchType": "switch/nvidia_imex", "CliFilterPlugins": "cli_filter/lua"},
                         {"gpu": {"Topology": "nvl72"}, "admin": {"Nodes": "ALL", "Hidden": "YES", "Topology": "admin"}})
    twice, settings, partitions = apply(once, {"SwitchType": "switch/nvidia_imex", "CliFilterPlugins": "cli_filter/lua"},
                                        {"gpu": {"Topology": "nvl72"},
                                         "admin": {"Nodes": "ALL", "Hidden": "YES", "Topology": "admin"}})
    assert twice == once and settings == [] and partitions == []
    assert once.count(MANAGED_MARKER) == 1


def test_removal_of_settings_attributes_and_partitions():
    text, settings, partitions = apply(BASE, {"SwitchType": None}, {"gpu": {"MaxTime": None}, "debug": None})
    assert "switchtype" not in text.lower()
    assert "PartitionName=gpu Nodes=gb200-r01-n[01-18] Default=YES State=UP" in text
    assert "debug" not in text
    assert settings == ["SwitchType"] and partitions == ["debug", "gpu"]


def test_duplicate_keys_collapse_to_one_line():
    text, settings, _p = apply("TopologyParam=A\nTopologyParam=B\n", {"TopologyParam": "A"})
    assert text == "TopologyParam=A\n" and settings == ["TopologyParam"]
    assert restart_settings(settings) == []


def test_numbers_and_booleans_are_written_as_slurm_conf_spells_them():
    """YAML turns ``MaxNodes: 4`` into a number and ``Hidden: yes`` into a boolean."""
    text, settings, partitions = apply(BASE, {"MaxNodes": 4, "PriorityWeightAge": 0.5, "AllowSpecResourcesUsage": True},
                                       {"gpu": {"MaxNodes": 18, "Default": False, "ExclusiveUser": True}})
    lines = text.splitlines()
    assert "PartitionName=gpu Nodes=gb200-r01-n[01-18] Default=NO MaxTime=INFINITE State=UP MaxNodes=18 " \
           "ExclusiveUser=YES" in lines
    assert lines[-3:] == ["MaxNodes=4", "PriorityWeightAge=0.5", "AllowSpecResourcesUsage=YES"]
    assert settings == ["AllowSpecResourcesUsage", "MaxNodes", "PriorityWeightAge"] and partitions == ["gpu"]
    again, settings, partitions = apply(text, {"MaxNodes": "4", "AllowSpecResourcesUsage": True},
                                        {"gpu": {"MaxNodes": 18, "Default": "NO"}})
    assert again == text and settings == [] and partitions == []


@pytest.mark.parametrize("settings, partitions, message", [
    ({}, {"gpu": {"Topology": ""}}, "partitions.gpu.Topology: Topology must be a non-empty string"),
    ({"SwitchType": "a b"}, {}, "settings.SwitchType: SwitchType must be a non-empty string without spaces or '#', "
                                "a number or a boolean, got 'a b'"),
    ({"MaxNodes": float("nan")}, {}, "settings.MaxNodes: MaxNodes must be a non-empty string"),
    ({}, {"gpu": {"Nodes": ["a", "b"]}}, r"partitions.gpu.Nodes: Nodes must be .*, got <list>"),
    ({"PartitionName": "x"}, {}, "manage PartitionName lines through partitions"),
    ({"bad key": "x"}, {}, "'bad key' is not a slurm.conf key"),
    ({}, {"gpu": {"x SwitchType": "y"}}, r"partitions.gpu: 'x SwitchType' is not a slurm.conf key"),
    ({}, {"gpu": {"PartitionName": "cpu"}}, "the partition's name is its key, not a PartitionName attribute"),
    ({}, {"gpu\nSwitchType=x": {"Nodes": "a"}}, r"partitions: 'gpu\\nSwitchType=x' is not a partition name"),
    ({}, {"a=b": None}, "partitions: 'a=b' is not a partition name"),
    ({}, {"new": {"Topology": "x"}}, "partition 'new' is not in slurm.conf; give its Nodes to create it"),
    ({}, {"gpu": "Topology=x"}, "partitions.gpu must be a mapping"),
])
def test_bad_input_names_the_field(settings, partitions, message):
    with pytest.raises(TopologyError, match=message):
        apply(BASE, settings, partitions)
