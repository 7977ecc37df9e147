"""Hostile patterns and hostile text for patterns: every regular expression from an option passes
_base/patterns' cost rules, and node output is read line by line, at a cost linear in its size."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._base import patterns
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._engines import imex, slurm
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._providers._nvidia_smi import apply_accelerator

# What driver_branch read before: a search whose ^\s* runs on across every blank line from every line
# start (quadratic). Kept, with ASCII digits, only as the reference the fuzz test compares against.
_OLD_NVIDIA_SMI = re.compile(r"(?m)^\s*([0-9]{3,})\.[0-9]")
_OLD_VERSION_FILE = re.compile(r"\s([0-9]{3,})\.[0-9]")


class _CountingPattern:
    """Stands in for driver_branch's pattern and counts the characters it is asked to match."""

    def __init__(self, pattern):
        self.pattern, self.characters, self.calls = pattern, 0, 0

    def match(self, text):
        self.calls += 1
        self.characters += len(text)
        return self.pattern.match(text)


@pytest.mark.parametrize("from_nvidia_smi", [True, False])
@pytest.mark.parametrize("filler", ["\n" * 30_000, " \n" * 15_000, "\t \r\n" * 7_500, " " * 30_000])
def test_thirty_kilobytes_of_blank_lines_cost_one_look_at_each_line(monkeypatch, from_nvidia_smi, filler):
    counting = _CountingPattern(imex._DRIVER_VERSION)
    monkeypatch.setattr(imex, "_DRIVER_VERSION", counting)
    assert imex.driver_branch(filler, from_nvidia_smi=from_nvidia_smi) == ""
    assert counting.characters <= len(filler)
    assert imex.driver_branch(filler + " 570.133.20\n", from_nvidia_smi=from_nvidia_smi) == "570"
    assert counting.characters <= 2 * len(filler) + 20


def test_the_driver_reader_holds_no_pattern_that_runs_across_lines():
    assert patterns.line_crossing_problem(imex._DRIVER_VERSION.pattern, imex._DRIVER_VERSION.flags) is None
    assert patterns.line_crossing_problem(r"(?m)^\s*(\d{3,})\.\d+")  # the pattern it replaced


def test_the_driver_reader_reads_at_most_its_cap():
    assert imex.driver_branch("\n" * imex.MAX_DRIVER_TEXT + "570.1\n", from_nvidia_smi=True) == ""
    assert imex.driver_branch("570.133.20\n" + "x" * 10 * imex.MAX_DRIVER_TEXT, from_nvidia_smi=True) == "570"


@pytest.mark.parametrize("text", ["٥٧٠.١", "５７０.1", "²³⁴.5"])
def test_only_ascii_digits_name_a_driver_branch(text):
    assert imex.driver_branch(text, from_nvidia_smi=True) == ""
    assert imex.driver_branch(" " + text) == ""


def test_the_version_file_and_nvidia_smi_are_read_as_before():
    version = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.133.20  Tue Mar  4 2025\nGCC version: 12\n"
    assert imex.driver_branch(version) == "570"
    assert imex.driver_branch("570.1 first word is not after a space") == ""
    assert imex.driver_branch("\n   575.51.03\n575.51.03\n", from_nvidia_smi=True) == "575"
    assert imex.driver_branch("Failed to initialize NVML\n", from_nvidia_smi=True) == ""


_LINE_TEXT = st.text(alphabet=st.sampled_from(list(" \t\r\n\x0b\x0c\x85\u2028.0123456789ax")), max_size=200)


@settings(max_examples=200, deadline=None)
@given(_LINE_TEXT)
def test_fuzz_the_driver_reader_agrees_with_the_pattern_it_replaced(text):
    old = _OLD_NVIDIA_SMI.search(text)
    assert imex.driver_branch(text, from_nvidia_smi=True) == (old.group(1) if old else "")
    old = _OLD_VERSION_FILE.search(text)
    assert imex.driver_branch(text) == (old.group(1) if old else "")


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_fuzz_the_driver_reader_ends_in_a_branch_or_nothing(text):
    for from_nvidia_smi in (True, False):
        branch = imex.driver_branch(text, from_nvidia_smi=from_nvidia_smi)
        assert branch == "" or (branch.isascii() and branch.isdigit() and len(branch) >= 3 and branch in text)


@pytest.mark.parametrize("pattern, problem", [
    ("gb200-r(?P<rack>(a+)+)-n[0-9]+", "a repetition inside a repetition"),
    ("(?P<rack>(a|aa)*)", "alternation"),
    ("(?P<rack>x)(?=y)", "look-ahead"),
    ("(?P<rack>a*b*c*)", "more than 2 repetitions"),
    ("(?P<rack>" + "a" * 300 + ")", "at most 256"),
])
def test_a_costly_rack_from_name_is_refused_naming_the_option(pattern, problem):
    with pytest.raises(TopologyError, match=r"accelerator\.rack_from_name.*" + re.escape(problem)):
        apply_accelerator(Topology(), {"source": "nvidia_smi", "nvidia_smi": {}, "rack_from_name": pattern})


def test_a_costly_block_name_pattern_is_refused_naming_the_option():
    with pytest.raises(TopologyError, match=r"block_name_pattern\.regexp.*a repetition inside a repetition"):
        slurm.BlockOptions([8], name_pattern={"regexp": "^(s+)+$", "format": "r"})


def test_an_option_pattern_matches_nothing_longer_than_a_name():
    pattern = patterns.compile_search_pattern(r"n(?P<rack>[0-9]+)", "accelerator.rack_from_name")
    assert pattern.fullmatch("n12").group("rack") == "12"
    assert pattern.search("xn12").group("rack") == "12"
    assert pattern.fullmatch("n" + "1" * patterns.MAX_NAME_LENGTH) is None
    assert pattern.search("n" + "1" * patterns.MAX_NAME_LENGTH) is None
    assert pattern.fullmatch(None) is None
    assert "rack" in pattern.groupindex


def test_the_roles_filter_reads_blank_lines_as_imex_config_does(monkeypatch):
    from ansible_collections.aifactory.topology.plugins.filter.topology_model import FilterModule

    counting = _CountingPattern(imex._DRIVER_VERSION)
    monkeypatch.setattr(imex, "_DRIVER_VERSION", counting)
    branch = FilterModule().filters()["imex_driver_branch"]
    assert branch("\n" * 30_000 + "575.51.03\n", from_nvidia_smi=True) == "575"
    assert counting.calls == 30_001 and counting.characters == len("575.51.03")


def test_an_operators_multi_line_pattern_that_runs_across_lines_is_refused():
    with pytest.raises(TopologyError, match=r"^params\.x: .*under \(\?m\) a repetition that can match a line break"):
        patterns.compile_pattern(r"(?m)^\s*x", "params.x")
    assert patterns.compile_pattern(r"(?m)^[ \t]*x", "params.x").pattern == r"(?m)^[ \t]*x"
