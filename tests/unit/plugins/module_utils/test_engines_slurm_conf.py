from __future__ import annotations

import os

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import AifactoryTopologyError, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.slurm_conf import LOCAL_FILES
from ansible_collections.aifactory.topology.plugins.module_utils._engines.slurm_conf import (
    MANAGED_MARKER, MAX_INCLUDE_DEPTH, MAX_INCLUDED_FILES, apply, restart_settings)
from tests.slurm_conf_settings import current_settings

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


# -- lines as Slurm reads them (src/common/parse_config.c) -------------------------------------

@pytest.mark.parametrize("breaker", ["\x0c", "\r", "\u2028", "\x85", "\x0b", "\x1c", "\u2029"])
def test_a_commented_out_line_stays_a_comment_whatever_character_is_in_it(breaker):
    # str.splitlines() split these comments in two and wrote the second half back as a live line.
    old = f"#{breaker}PartitionName=old Nodes=gb200-r01-n01 Default=YES\n"
    text, settings, partitions = apply(old + BASE, {"SwitchType": "switch/nvidia_imex"}, {"gpu": {"Topology": "nvl72"}})
    assert text.startswith(old)
    assert text.split("\n", maxsplit=1)[0] == old[:-1]
    assert not any(line.startswith("PartitionName=old") for line in text.split("\n"))
    assert settings == ["SwitchType"] and partitions == ["gpu"]
    assert "partitionname" not in current_settings(old)


def test_a_setting_after_a_form_feed_in_a_comment_is_not_read():
    assert current_settings("# was: \x0cSwitchType=switch/none\nClusterName=ai\n") == {"clustername": "ai"}
    text, settings, _p = apply("# was: \x0cSwitchType=switch/none\n", {"SwitchType": "switch/none"})
    assert settings == ["SwitchType"] and text.endswith(f"{MANAGED_MARKER}\nSwitchType=switch/none\n")


def test_continued_lines_are_one_setting_and_one_partition():
    text = ("SwitchType=switch/\\\nnvidia_imex\n"
            "PartitionName=gpu Nodes=gb200-r01-n[01-18] \\\n    Default=YES # the GPUs\n")
    assert current_settings(text) == {"switchtype": "switch/nvidia_imex"}
    same, settings, partitions = apply(text, {"SwitchType": "switch/nvidia_imex"}, {"gpu": {"Default": "YES"}})
    assert same == text and settings == [] and partitions == []
    edited, _s, partitions = apply(text, {}, {"gpu": {"Topology": "nvl72"}})
    assert edited.split("\n")[2] == "PartitionName=gpu Nodes=gb200-r01-n[01-18] Default=YES Topology=nvl72 # the GPUs"
    assert partitions == ["gpu"] and edited.count("\n") == 3


def test_escaped_hashes_and_quoted_values_keep_their_meaning_when_a_partition_is_edited():
    text = 'PartitionName=gpu Nodes=n1 Note="two words" Tag=a\\#b # comment\n'
    edited, _s, partitions = apply(text, {}, {"gpu": {"Topology": "nvl72"}})
    assert edited == 'PartitionName=gpu Nodes=n1 Note="two words" Tag=a\\#b Topology=nvl72 # comment\n'
    assert partitions == ["gpu"]
    assert apply(edited, {}, {"gpu": {"Topology": "nvl72"}}) == (edited, [], [])  # read back as written


def test_a_file_with_crlf_and_no_final_newline_is_read_and_kept():
    text = "ClusterName=ai\r\nSwitchType=switch/nvidia_imex\r\nPartitionName=gpu Nodes=n1\r"
    assert current_settings(text) == {"clustername": "ai", "switchtype": "switch/nvidia_imex"}
    same, settings, partitions = apply(text, {"SwitchType": "switch/nvidia_imex"}, {"gpu": {"Nodes": "n1"}})
    assert same == text + "\n" and settings == [] and partitions == []
    assert apply("", {}, {}) == ("", [], [])


# -- Include ----------------------------------------------------------------------------------

IMEX = {"SwitchType": "switch/nvidia_imex", "SwitchParameters": "imex_channel_count=2048"}


def write(path, text):
    path.write_text(text)
    return path


def test_settings_an_included_file_holds_count_and_need_no_restart(tmp_path):
    write(tmp_path / "switch.conf", "SwitchType=switch/nvidia_imex\nSwitchParameters=imex_channel_count=2048\n")
    conf = write(tmp_path / "slurm.conf", "ClusterName=ai\nInclude switch.conf\n")
    text, settings, partitions = apply(conf.read_text(), IMEX, {}, path=str(conf), files=LOCAL_FILES)
    assert text == conf.read_text() and settings == [] and restart_settings(settings) == []
    assert current_settings(conf.read_text(), path=str(conf))["switchtype"] == "switch/nvidia_imex"


def test_a_setting_that_would_change_in_an_included_file_is_an_error_naming_it(tmp_path):
    write(tmp_path / "switch.conf", "# the site's\nSwitchType=switch/none\n")
    conf = write(tmp_path / "slurm.conf", "include switch.conf\n")
    with pytest.raises(TopologyError, match=r"SwitchType is 'switch/none' in .*switch.conf line 2, a file .*slurm.conf "
                                            r"includes; this module edits only .*slurm.conf: set it to 'switch/nvidia_imex'"):
        apply(conf.read_text(), IMEX, {}, path=str(conf), files=LOCAL_FILES)
    with pytest.raises(TopologyError, match="remove it there"):
        apply(conf.read_text(), {"SwitchType": None}, {}, path=str(conf), files=LOCAL_FILES)


def test_partitions_in_included_files_count(tmp_path):
    write(tmp_path / "parts.conf", "PartitionName=admin Nodes=ALL Hidden=YES State=UP\n")
    conf = write(tmp_path / "slurm.conf", "Include parts.conf\n")
    text, _s, partitions = apply(conf.read_text(), {}, {"admin": {"Nodes": "ALL", "Hidden": "YES"}}, path=str(conf), files=LOCAL_FILES)
    assert text == conf.read_text() and partitions == []  # not added a second time
    with pytest.raises(TopologyError, match=r"partition 'admin' is defined in .*parts.conf line 1.*change it there"):
        apply(conf.read_text(), {}, {"admin": {"Nodes": "ALL", "Topology": "admin"}}, path=str(conf), files=LOCAL_FILES)


def test_include_follows_slurms_rules(tmp_path):
    (tmp_path / "sub").mkdir()
    # Nested and relative: relative to the directory of slurm.conf, not of the including file.
    write(tmp_path / "sub" / "ai.conf", "Include sub/switch.conf\n")
    write(tmp_path / "sub" / "switch.conf", "SwitchType=switch/nvidia_imex\n")
    # A leading blank makes "  Include" no Include for Slurm (a parse error): it is not followed.
    text = f"ClusterName=AI\nINCLUDE   {tmp_path}/sub/%c.conf   # by cluster\n  Include sub/ignored.conf\n"
    conf = write(tmp_path / "slurm.conf", text)
    assert current_settings(conf.read_text(), path=str(conf))["switchtype"] == "switch/nvidia_imex"
    # The last value read wins, in reading order: a line after the Include overrides it.
    conf.write_text(conf.read_text() + "SwitchType=switch/none\n")
    assert current_settings(conf.read_text(), path=str(conf))["switchtype"] == "switch/none"


@pytest.mark.parametrize("line, message", [
    ("Include missing.conf", r"'missing.conf': .*missing.conf': No such file or directory"),
    ("Include conf.d/*.conf", r"Slurm does not expand '\*' in Include"),
    ("Include %c.conf", "%c stands for ClusterName, which is not set before this line"),
    ("Include self.conf", "the file includes itself"),
    ("Include fifo", "is not a regular file \\(a FIFO\\)"),
    ("Include a\\\x00b", "must be the path of a file"),
])
def test_an_include_slurm_cannot_read_is_an_error_naming_the_line(tmp_path, line, message):
    os.mkfifo(tmp_path / "fifo")
    write(tmp_path / "self.conf", "Include self.conf\n")
    conf = write(tmp_path / "slurm.conf", f"ClusterName=ai\n\n{line}\n".replace("ClusterName=ai\n", "", "%c" in line))
    # The message names the line of the Include (self.conf's own, for the loop) and what is wrong.
    with pytest.raises(AifactoryTopologyError, match=f"(slurm|self).conf line [123]: Include .*{message}"):
        apply(conf.read_text(), IMEX, {}, path=str(conf), files=LOCAL_FILES)


def test_includes_are_bounded_in_depth_and_count(tmp_path):
    for depth in range(MAX_INCLUDE_DEPTH + 1):
        write(tmp_path / f"level{depth}.conf", f"Include level{depth + 1}.conf\n")
    write(tmp_path / f"level{MAX_INCLUDE_DEPTH + 1}.conf", "ClusterName=deep\n")
    conf = write(tmp_path / "slurm.conf", "Include level0.conf\n")
    with pytest.raises(TopologyError, match=f"includes nest more than {MAX_INCLUDE_DEPTH} deep"):
        current_settings(conf.read_text(), path=str(conf))
    write(tmp_path / "empty.conf", "")
    conf.write_text("Include empty.conf\n" * (MAX_INCLUDED_FILES + 1))
    with pytest.raises(TopologyError, match=f"line {MAX_INCLUDED_FILES + 1}: .*more than {MAX_INCLUDED_FILES} included"):
        current_settings(conf.read_text(), path=str(conf))


def test_the_engine_reads_no_file_itself():
    # Pure: an Include is read through the reader the caller gives, and only then.
    read = []

    class Files:
        @staticmethod
        def read(path, where, max_bytes):
            read.append((path, max_bytes))
            return "SwitchType=switch/nvidia_imex\n"

        @staticmethod
        def identity(path):
            return path

    text, settings, _p = apply("Include a.conf\n", {"SwitchType": "switch/nvidia_imex"}, {},
                               path="/etc/slurm/slurm.conf", files=Files())
    assert read == [("/etc/slurm/a.conf", 16 << 20)] and settings == [] and text == "Include a.conf\n"
    with pytest.raises(TopologyError, match="slurm.conf line 1: Include '/etc/slurm/a.conf': no reader of included"):
        apply("Include /etc/slurm/a.conf\n", IMEX, {})
