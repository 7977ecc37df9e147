"""slurm.conf and topology.conf text as Slurm reads it, whatever characters the site's files hold.

Lines end at ``\\n`` only (Slurm reads with fgets); a form feed, ``\\r``, U+0085 or U+2028 inside a
comment never makes the rest of the comment a live line, and the module writes it back byte for byte;
a value or partition name with a line break of any kind is refused; the shrink guard takes a file for
blank only when Slurm's reader and YAML's both see nothing in it. ``Include`` is followed, bounded,
and never reads a FIFO. Property-based where it fits.
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._base import slurm_lines
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import AifactoryTopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._engines.slurm_conf import apply
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.slurm_conf import LOCAL_FILES
from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard
from ansible_collections.aifactory.topology.plugins.modules import slurm_conf
from tests.slurm_conf_settings import current_settings

from ..plugins.modules.module_runner import run_module

# Text with what breaks line-based parsers: str.splitlines' other line breaks, comments, escapes,
# continuations, quotes, the records and keys the collection reads.
BREAKERS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
PIECES = st.sampled_from(["\n", "#", "\\", "=", '"', " ", "\t", "PartitionName=", "SwitchType=", "Include ",
                          "SwitchName=", "Nodes=", "n[1-3]", "x", *BREAKERS])
CONF_TEXT = st.lists(PIECES, max_size=40).map("".join)


@given(CONF_TEXT)
@example("# old\x0cPartitionName=old Nodes=n1 Default=YES\n")
@example("SwitchType=a\rPartitionName=b")
@settings(max_examples=400, deadline=None)
def test_a_change_with_nothing_to_change_gives_the_file_back_as_it_is(text):
    try:
        new_text, changed_settings, changed_partitions = apply(text, {}, {})
    except AifactoryTopologyError as exc:  # an Include line with no path: the error names its line
        assert re.search(r"slurm.conf line \d+: Include", str(exc)), exc
        return
    assert new_text == (text if text == "" or text.endswith("\n") else text + "\n")
    assert changed_settings == [] and changed_partitions == []


@given(st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n"), max_size=60))
@example("\x0cPartitionName=old Nodes=n1 Default=YES")
@example("\u2028SwitchType=switch/none")
@settings(max_examples=400, deadline=None)
def test_a_comment_holds_no_setting_whatever_characters_it_has(comment):
    text = f"#{comment}\nClusterName=ai\n"
    assert current_settings(text) == {"clustername": "ai"}
    new_text, settings_changed, _p = apply(text, {"ClusterName": "ai", "SwitchType": "switch/nvidia_imex"})
    assert new_text.split("\n", maxsplit=1)[0] == f"#{comment}"
    assert settings_changed == ["SwitchType"]
    assert current_settings(new_text) == {"clustername": "ai", "switchtype": "switch/nvidia_imex"}


# A value Slurm can hold: one line; a quoted value cannot hold '"' itself; '"x"' alone is read as x.
VALUES = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n"), max_size=30).filter(
    lambda value: not (('"' in value and any(char in slurm_lines.SPACE for char in value))
                       or re.fullmatch(r'"[^"]*"', value)))


@given(VALUES)
@example("a#b")
@example("two words")
@example("back\\slash")
@settings(max_examples=400, deadline=None)
def test_a_value_written_by_the_editor_reads_back_unchanged(value):
    line = next(slurm_lines.logical_lines([f"Key={slurm_lines.quote_value(value)} Next=1"]))
    assert slurm_lines.key_values(line.text) == [("Key", value), ("Next", "1")]


@given(st.sampled_from(BREAKERS))
@settings(deadline=None)
def test_the_shrink_guard_does_not_count_nodes_of_a_commented_out_record(breaker):
    current = f"SwitchName=leaf Nodes=n[1-9]\n# was:{breaker}SwitchName=old Nodes=m[1-100]\n"
    assert shrink_guard.nodes_in_file(current) == {f"n{i}" for i in range(1, 10)}
    assert shrink_guard.nodes_in_file("SwitchName=leaf Nodes=n[1-2] # Nodes=m[1-100]\n") == {"n1", "n2"}


def test_an_included_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.conf")  # opened without blocking and checked on the descriptor: never read
    with pytest.raises(AifactoryTopologyError, match=r"pipe.conf' is not a regular file \(a FIFO\)"):
        apply("Include pipe.conf\n", {"SwitchType": "switch/nvidia_imex"}, {}, path=str(tmp_path / "slurm.conf"), files=LOCAL_FILES)


@pytest.mark.parametrize("text", ["Include a.conf\n", "include\ta.conf\n"])
def test_an_include_that_includes_itself_ends_in_an_error(tmp_path, text):
    (tmp_path / "a.conf").write_text("Include b.conf\n")
    (tmp_path / "b.conf").write_text("Include a.conf\n")
    with pytest.raises(AifactoryTopologyError, match="the file includes itself"):
        current_settings(text, path=str(tmp_path / "slurm.conf"))


@pytest.mark.parametrize("breaker", list(BREAKERS), ids=[f"U+{ord(char):04X}" for char in BREAKERS])
def test_the_module_writes_a_comment_back_byte_for_byte_whatever_break_it_holds(monkeypatch, tmp_path, breaker):
    conf = tmp_path / "slurm.conf"
    comment = f"# note{breaker}NodeName=ghost CPUs=1\n".encode()
    conf.write_bytes(comment + b"ClusterName=ai\n")
    result = run_module(slurm_conf, {"path": str(conf), "settings": {"SwitchType": "switch/nvidia_imex"}},
                        monkeypatch=monkeypatch)
    assert not result["failed"] and result["changed_settings"] == ["SwitchType"], result.get("msg")
    written = conf.read_bytes()
    assert written.startswith(comment + b"ClusterName=ai\n") and written.count(b"\n") == 4
    lines = slurm_lines.logical_lines(slurm_lines.physical_lines(written.decode()))
    assert [slurm_lines.key_values(line.text)[0][0] for line in lines if slurm_lines.key_values(line.text)] == [
        "ClusterName", "SwitchType"]  # no NodeName=ghost: it stays inside the comment


@pytest.mark.parametrize("breaker", ["\n", *BREAKERS], ids=[f"U+{ord(char):04X}" for char in "\n" + BREAKERS])
def test_a_value_or_partition_name_holding_a_line_break_is_refused(breaker):
    with pytest.raises(AifactoryTopologyError, match=r"settings.SwitchType: SwitchType must be a non-empty string"):
        apply("ClusterName=ai\n", {"SwitchType": f"switch/none{breaker}"})
    with pytest.raises(AifactoryTopologyError, match=r"partitions: .* is not a partition name"):
        apply("ClusterName=ai\n", {}, {f"gpu{breaker}": {"Nodes": "n1"}})


@pytest.mark.parametrize("breaker", list(BREAKERS), ids=[f"U+{ord(char):04X}" for char in BREAKERS])
def test_the_shrink_guard_reads_a_commented_out_file_as_both_of_its_readers_do(breaker):
    current = f"# was:{breaker}SwitchName=old Nodes=m[1-100]\n"
    new = "SwitchName=leaf Nodes=n[1-2]\n"
    if breaker in "\r\x85\u2028\u2029":  # YAML breaks the line there: a topology.yaml would say something
        with pytest.raises(AifactoryTopologyError, match="the shrink guard cannot read the current file"):
            shrink_guard.check_shrink(current, new, 10, False)
    else:  # a comment to Slurm and to YAML: nothing to lose
        assert shrink_guard.check_shrink(current, new, 10, False) is None


def test_a_slurm_conf_over_16_mib_is_refused_unread_beyond_the_bound(monkeypatch, tmp_path):
    conf = tmp_path / "slurm.conf"
    with open(conf, "wb") as handle:
        handle.truncate((16 << 20) + 1)  # sparse
    result = run_module(slurm_conf, {"path": str(conf), "settings": {"SwitchType": "switch/nvidia_imex"}},
                        monkeypatch=monkeypatch)
    assert result["failed"] and f"the destination '{conf}' holds more than 16777216 bytes" in result["msg"]
    assert conf.stat().st_size == (16 << 20) + 1 and sorted(p.name for p in tmp_path.iterdir()) == ["slurm.conf"]
