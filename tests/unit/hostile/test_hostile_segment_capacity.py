"""segment_capacity and its report against hostile input: node states, scontrol's output, forged results.

A state that cannot be read is an error naming the node, never idle; scontrol's answer is read in
one pass whatever its size; every value that reaches the HTML page is checked and escaped, and a
name is never parsed as matplotlib math text.
"""

from __future__ import annotations

import contextlib
import html.parser
import json
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._base import slurm_states
from ansible_collections.aifactory.topology.plugins.module_utils._engines import capacity
from ansible_collections.aifactory.topology.plugins.plugin_utils import segment_report
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.modules import segment_capacity

from ..plugins.modules.module_runner import run_module

MAX_MESSAGE = 600
KNOWN_WORDS = sorted(spelling.lower() for entry in slurm_states.WORDS for spelling in (entry.word, *entry.aliases))
SUFFIXES = "".join(slurm_states.SUFFIXES)
RACKS = {"name": "inventory", "params": {"domains": [{"name": "r1", "nodes": "a[1-4]"}]}}
BASE = {"provider": RACKS, "block_sizes": [4]}


# -- node states -----------------------------------------------------------------------------

def _readable(value):
    """What a state must look like to be classified: words Slurm prints, each with optional suffixes."""
    if isinstance(value, str):
        words = value.replace("|", "+").split("+")
    elif isinstance(value, (list, tuple)):
        words = list(value)
    else:
        return False
    return bool(words) and all(isinstance(word, str) and word.strip().lower().rstrip(SUFFIXES) in KNOWN_WORDS
                               for word in words)


_WORD = st.one_of(st.sampled_from(KNOWN_WORDS).map(str.upper), st.sampled_from(KNOWN_WORDS),
                  st.text(max_size=8)).flatmap(lambda word: st.text(SUFFIXES, max_size=3).map(lambda tail: word + tail))
STATE_VALUES = st.one_of(
    _WORD, st.lists(_WORD, max_size=4), st.lists(_WORD, min_size=1, max_size=4).map("+".join),
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.dictionaries(st.text(max_size=3), _WORD),
    st.lists(st.one_of(st.integers(), st.none()), min_size=1, max_size=2),
)


@given(STATE_VALUES)
@example([])            # issue 22: an empty list was taken as idle
@example(())
@example("~")
@example(["IDLE", 4])
@settings(max_examples=400, deadline=None)
def test_a_state_is_classified_only_when_every_word_is_one_slurm_prints(value):
    if _readable(value):
        assert slurm_states.classify(value, "node_states.n7").category in capacity.STATES
        return
    with pytest.raises(TopologyError) as info:
        slurm_states.classify(value, "node_states.n7")
    assert str(info.value).startswith("node_states.n7: ") and len(str(info.value)) < MAX_MESSAGE


@pytest.mark.parametrize("suffix, expected", [("~", "idle"), ("*", "down"), ("~#!$@-", "idle"), ("~*", "down")])
def test_a_long_suffix_is_read_in_one_pass(suffix, expected):
    # Stripping one character at a time copies the word once per character: at a million characters
    # that alone does not finish in a test run. The message quotes only the start of the value.
    value = "idle" + suffix * (1_000_000 // len(suffix))
    assert slurm_states.classify(value, "n1").category == expected
    with pytest.raises(TopologyError) as info:
        slurm_states.classify(value + "x", "n1")
    assert len(str(info.value)) < MAX_MESSAGE


def scontrol_printing(tmp_path, nodes):
    """A stand-in scontrol that prints ``show nodes --json`` with these node entries."""
    data = tmp_path / "nodes.json"
    data.write_text(json.dumps({"nodes": nodes, "errors": []}), encoding="utf-8")
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(f"#!/bin/sh\nexec cat {data}\n", encoding="utf-8")
    scontrol.chmod(0o755)
    return str(scontrol)


@pytest.fixture
def run(monkeypatch):
    def runner(args, **kwargs):
        return run_module(segment_capacity, dict(BASE, **args), monkeypatch=monkeypatch, **kwargs)
    return runner


@pytest.mark.parametrize("state", [[], None, 5, True, {"idle": 1}, "", "sleepy", ["IDLE", None]])
def test_a_malformed_node_states_value_fails_naming_the_node(run, state):
    result = run({"node_states": {"a1": "idle", "a3": state}})
    assert result["failed"] and result["msg"].startswith("node_states.a3: "), result["msg"]


@pytest.mark.parametrize("state", [[], None, 5, {"name": "IDLE"}, ["IDLE", ""]])
def test_a_malformed_scontrol_state_fails_naming_the_node(run, tmp_path, state):
    nodes = [{"name": name, "state": ["IDLE"]} for name in ("a1", "a2", "a4")] + [{"name": "a3", "state": state}]
    result = run({"scontrol_path": scontrol_printing(tmp_path, nodes)})
    assert result["failed"] and "node a3: " in result["msg"], result["msg"]


# -- scontrol's output -------------------------------------------------------------------------

def test_scontrol_output_is_read_by_the_command_runner_not_run_command(run, tmp_path, monkeypatch):
    # AnsibleModule.run_command grows its output with bytes += chunk: quadratic (issue 22 measured
    # 25 MB in 14 s, 50 MB in 70 s; bench/segment_capacity.py --scontrol-mb). _command joins once.
    from ansible.module_utils import basic

    def refuse(*_args, **_kwargs):
        raise AssertionError("scontrol must be run through _command, not AnsibleModule.run_command")

    monkeypatch.setattr(basic.AnsibleModule, "run_command", refuse)
    padding = "x" * 4096
    nodes = [{"name": f"a{i}", "state": ["IDLE"], "extra": padding} for i in range(1, 5)]
    nodes += [{"name": f"other{i}", "state": ["IDLE"], "extra": padding} for i in range(2000)]
    result = run({"scontrol_path": scontrol_printing(tmp_path, nodes)})
    assert not result["failed"], result["msg"]
    assert result["summary"]["idle"] == 4


# -- the report ------------------------------------------------------------------------------

SCRIPT = "<script>alert(1)</script>"
# The page's own markup, outside the pictures: any other tag or attribute came from the result.
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "code", "table", "tr", "th", "td",
             "figure", "ul", "li", "small"}
PAGE_ATTRIBUTES = {"lang", "charset", "class", "id"}


class _Markup(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attributes = set(), set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes.update(name for name, _value in attrs)


def markup(page):
    parser = _Markup()
    parser.feed(page)
    return parser.tags, parser.attributes


def _leaves(value, path=()):
    """Every (path, value) of a nested result whose value is not a list or mapping."""
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, path + (key,))]
    if isinstance(value, list):
        return [leaf for index, item in enumerate(value) for leaf in _leaves(item, path + (index,))]
    return [(path, value)]


def _set(result, path, value):
    target = result
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


def _where(path):
    return "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path).lstrip(".")


def _numeric_paths(result):
    return [path for path, value in _leaves(result) if isinstance(value, (int, float)) and not isinstance(value, bool)]


def without_pictures():
    """The page without matplotlib (its SVG text is escaped by matplotlib; rendered for real further down)."""
    patches = [mock.patch.object(segment_report, name, return_value="")
               for name in ("rack_map", "capacity_curves", "fabric_tree")]
    stack = contextlib.ExitStack()
    for patch in patches:
        stack.enter_context(patch)
    return stack


def test_a_string_where_a_number_belongs_fails_naming_the_field(segment_capacity_result):
    with without_pictures():
        clean = segment_report.render(segment_capacity_result())
        refused = 0
        for path in _numeric_paths(segment_capacity_result()):
            result = segment_capacity_result()
            _set(result, path, SCRIPT)
            try:
                page = segment_report.render(result)
            except segment_report.ReportError as exc:
                assert f"segment_report_html: {_where(path)} must be " in str(exc), path
                refused += 1
            else:
                assert page == clean, f"{_where(path)} reached the page but was not checked"
    assert refused > 40  # every count, size, share, rate and range bound the page shows


HOSTILE_VALUES = st.one_of(
    st.text(st.sampled_from("<>&\"'/= $^\\ascript"), max_size=30), st.just(SCRIPT), st.none(), st.booleans(),
    st.integers(min_value=-3, max_value=10), st.floats(), st.lists(st.just(SCRIPT), max_size=2),
    st.dictionaries(st.just("x"), st.just(SCRIPT), max_size=1))


@given(st.data())
@settings(max_examples=300, deadline=None)
def test_a_forged_result_never_adds_markup_to_the_page(segment_capacity_result, data):
    result = segment_capacity_result()
    path = data.draw(st.sampled_from([path for path, _value in _leaves(result)]))
    _set(result, path, data.draw(HOSTILE_VALUES))
    title = data.draw(st.one_of(st.just("Segment capacity"), st.just(SCRIPT)))
    with without_pictures():
        try:
            page = segment_report.render(result, title)
        except segment_report.ReportError as exc:
            assert str(exc).startswith("segment_report_html") and len(str(exc)) < MAX_MESSAGE
            return
    tags, attributes = markup(page)
    assert tags <= PAGE_TAGS and attributes <= PAGE_ATTRIBUTES


def test_names_with_math_text_and_markup_are_drawn_as_they_are(segment_capacity_result):
    # matplotlib's math-text parser failed on "a$^$b" (ValueError) and no page was written.
    result = segment_capacity_result()
    result["fabric"]["switches"][0]["name"] = "a$^$b"
    result["fabric"]["switches"][1]["name"] = SCRIPT
    old, new = result["blocks"][0]["name"], "r$^$1<img src=x onerror=alert(2)>"
    result["blocks"][0]["name"] = new
    result["fabric"]["block_switch"][new] = result["fabric"]["block_switch"].pop(old)
    page = segment_report.render(result)
    assert page.count("<svg") == 3
    assert "a$^$b" in page and "r$^$1&lt;img src=x onerror=alert(2)&gt;" in page
    tags, attributes = markup(page)
    assert "script" not in tags and "img" not in tags and not any(name.startswith("on") for name in attributes)


@pytest.mark.parametrize("change, words", [
    (lambda r: r["fabric"]["switches"][0].update(parent="leaf1"), "is its own ancestor"),
    (lambda r: r["fabric"]["switches"][1].update(parent="ghost"), "the parent 'ghost' of switch 'spine' is not in"),
    (lambda r: r["fabric"]["switches"].append(dict(r["fabric"]["switches"][1])), "'spine' is listed twice"),
    (lambda r: r["fabric"]["block_switch"].update(r1="ghost"), r"block_switch.r1: switch 'ghost' is not in"),
    (lambda r: r["expected"]["sizes"][0]["fractions"].pop(), r"expected.sizes\[0\].fractions has 20 values for 21"),
    (lambda r: r["segments"].pop(), "segments and expected.sizes list different segment sizes"),
    (lambda r: r["unsegmented_feasible"][0].append(9), r"unsegmented_feasible\[0\] must be \[from, to\]"),
    (lambda r: r["blocks"][0].update(nodes="r1n[1-999999999]"), r"blocks\[0\].nodes: hostlist .* more than 4 hosts"),
    (lambda r: r.pop("advice"), "the input lacks advice"),
    (lambda r: r["summary"].pop("idle"), "summary lacks idle"),
    (lambda r: r.update(block_sizes=[]), "block_sizes is empty"),
    (lambda r: r["expected"].update(observed_rate=float("nan")), "observed_rate must be a finite number, got nan"),
    (lambda r: r["blocks"][1].update(placeholder="no"), r"blocks\[1\].placeholder must be true or false"),
])
def test_a_result_the_pictures_cannot_be_drawn_from_fails_naming_what(segment_capacity_result, change, words):
    result = segment_capacity_result()
    change(result)
    with pytest.raises(segment_report.ReportError, match=words):
        segment_report.render(result)


def test_a_rack_map_too_large_to_draw_is_left_out_saying_so(segment_capacity_result):
    result = segment_capacity_result()
    rows = segment_report.MAX_RACK_MAP_ROWS + 1
    result["blocks"][0].update(nodes=f"r1n[1-{rows}]", node_count=rows, idle=rows - 1)
    page = segment_report.render(result)
    assert page.count("<svg") == 2 and "The rack map is drawn for up to 2048 nodes per block" in page
