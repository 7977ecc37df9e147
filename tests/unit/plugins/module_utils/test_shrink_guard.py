"""The shrink guard's readers, with and without PyYAML (the module runs on Slurm controllers that may lack it).

A reader either finds every node a file places or fails closed: a current file that is not empty
and yields no nodes is one the guard cannot read, so only force replaces it.
"""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard

FLOW_40 = '- topology: default\n  cluster_default: true\n  block:\n    blocks: [{block: b1, nodes: "n[01-40]"}]\n'
ONE_NODE = "- topology: default\n  cluster_default: true\n  block:\n    blocks:\n      - block: b1\n        nodes: n01\n"


@pytest.fixture(params=[True, False], ids=["pyyaml", "no-pyyaml"])
def has_yaml(request, monkeypatch):
    monkeypatch.setattr(_yaml, "HAS_YAML", request.param)
    return request.param


def test_a_flow_style_file_keeps_its_nodes(has_yaml):
    assert shrink_guard.nodes_in_file(FLOW_40) == set(hostlist.expand("n[01-40]"))
    with pytest.raises(TopologyError, match=r"refusing to drop 39 of 40 nodes \(97.5% > max_node_loss 10%\): n\[02-40\]"):
        shrink_guard.check_shrink(FLOW_40, ONE_NODE, 10, False)


@pytest.mark.parametrize("text", [
    "topology: default\n",  # a mapping without sections
    "- topology: default\n  block:\n    blocks: []\n",
    "- topology: default\n  block: [b1]\n",
    "SwitchName=s0 Switches=s[1-2]\n",
    "nodes n[1-40]\n",
])
def test_a_non_empty_file_without_readable_nodes_fails_closed(has_yaml, text):
    where = "the current file '/etc/slurm/topology.yaml'"
    with pytest.raises(TopologyError) as info:
        shrink_guard.check_shrink(text, ONE_NODE, 10, False, where=where)
    assert str(info.value) == (f"the shrink guard cannot read {where} (it is not empty, yet no nodes could be read "
                               "from it); it fails closed: set force: true to replace it")
    warning = shrink_guard.check_shrink(text, ONE_NODE, 10, True, where=where)
    assert warning.startswith(f"force: the shrink guard cannot read {where}") and "replaced unchecked" in warning


@pytest.mark.parametrize("text", ["", "\n\n", "# written by hand\n  # nothing yet\n"])
def test_an_empty_file_has_nothing_to_lose(has_yaml, text):
    assert shrink_guard.check_shrink(text, ONE_NODE, 10, False) is None


@pytest.mark.parametrize("text", ["- topology: default\n  cluster_default: true\n  flat: true\n",
                                  '[{"topology": "default", "cluster_default": true, "flat": true}]'])
def test_flat_topologies_place_no_nodes_and_are_replaced(has_yaml, text):
    assert shrink_guard.check_shrink(text, ONE_NODE, 10, False) is None


@pytest.mark.parametrize("text, problem", [
    ("- block: b1\n  nodes: |\n    n[1-40]\n", "line 2: '|' cannot be read without PyYAML"),
    ("- block: b1\n  nodes: n[1-20],\n    n[21-40]\n", "line 2: a nodes value over several lines"),
    ("- block: &all n[1-40]\n- block: b2\n  nodes: *all\n", "line 3: nodes: '*all' cannot be read"),
    ("- block: b1\n  nodes: !!str n[1-40]\n", "line 2: nodes: '!!str' cannot be read"),
    ('- {block: b1, nodes: "n[1-40]\\x30"}\n', "an escape sequence in"),
    ('- {block: b1, nodes: "n[1-20],\n    n[21-40]"}\n', "line 1: '\"n[1-20],' cannot be read"),
    ("%YAML 1.1\n---\n- block: b1\n  nodes: n[1-40]\n", "line 1: '%YAML 1.1' cannot be read"),
])
def test_without_pyyaml_what_the_reader_cannot_take_literally_fails_closed(monkeypatch, text, problem):
    monkeypatch.setattr(_yaml, "HAS_YAML", False)
    with pytest.raises(TopologyError, match="it fails closed") as info:
        shrink_guard.check_shrink(text, ONE_NODE, 10, False)
    assert problem in str(info.value)


def test_without_pyyaml_a_nodes_value_may_start_on_the_next_line(monkeypatch):
    monkeypatch.setattr(_yaml, "HAS_YAML", False)
    text = "- block: b1 # rack 1\n  nodes:\n    n[1-4]  # four\n  'block_sizes' : [4]\n- {'nodes' : 'm''1'}\n"
    assert shrink_guard.nodes_in_file(text) == {"n1", "n2", "n3", "n4", "m'1"} == set(
        hostlist.expand(yaml.safe_load(text)[0]["nodes"])) | {yaml.safe_load(text)[1]["nodes"]}


NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,6}", fullmatch=True)
HOSTLISTS = st.lists(st.from_regex(r"[a-z]{1,2}[0-9]{1,3}", fullmatch=True), min_size=1, max_size=20).map(
    hostlist.compress)


def topologies(names):
    """topology.yaml data: tree, block and flat topologies, with names drawn from ``names``."""
    block = st.fixed_dictionaries({"block": names, "nodes": HOSTLISTS})
    switch = st.fixed_dictionaries({"switch": names}, optional={"nodes": HOSTLISTS, "children": names})
    section = st.one_of(
        st.fixed_dictionaries({"block": st.fixed_dictionaries(
            {"blocks": st.lists(block, max_size=4)}, optional={"block_sizes": st.lists(st.integers(1, 64))})}),
        st.fixed_dictionaries({"tree": st.fixed_dictionaries({"switches": st.lists(switch, max_size=4)})}),
        st.just({"flat": True}))
    entry = st.tuples(names, st.booleans(), section).map(
        lambda parts: dict({"topology": parts[0], "cluster_default": parts[1]}, **parts[2]))
    return st.lists(entry, min_size=1, max_size=3)


def dumped(data, style, width, allow_unicode=False):
    if style == "json":  # PyYAML reads no JSON surrogate pair escapes: characters outside the BMP stay as they are
        return json.dumps(data, indent=None if width < 40 else 2, ensure_ascii=False)
    return yaml.safe_dump(data, default_flow_style=style, width=width, sort_keys=width % 2 == 0,
                          allow_unicode=allow_unicode)


STYLES = st.sampled_from([False, True, None, "json"])


@settings(max_examples=100)
@given(topologies(NAMES), STYLES, st.integers(10, 120))
def test_without_pyyaml_the_reader_finds_what_pyyaml_finds_in_every_style(data, style, width):
    text = "# header\n" + dumped(data, style, width)
    with_yaml = shrink_guard.nodes_in_file(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_yaml, "HAS_YAML", False)
        assert shrink_guard.nodes_in_file(text) == with_yaml


@settings(max_examples=100)
@given(topologies(st.text(max_size=12)), STYLES, st.integers(10, 120), st.booleans())
def test_without_pyyaml_the_reader_never_misses_a_node_of_any_name(data, style, width, allow_unicode):
    """Names of any characters: the reader gives what PyYAML gives, or fails closed, never fewer nodes."""
    text = dumped(data, style, width, allow_unicode)
    try:
        with_yaml = shrink_guard.nodes_in_file(text)
    except TopologyError:
        return  # not YAML to PyYAML either (JSON may hold control characters): both fail closed
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_yaml, "HAS_YAML", False)
        try:
            without_yaml = shrink_guard.nodes_in_file(text)
        except TopologyError as exc:
            assert "cannot be read without PyYAML" in str(exc)
            return
    assert without_yaml == with_yaml
