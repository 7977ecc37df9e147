"""_yaml.safe_load builds documents in one pass over the parser's events: the same data (or error) as
it gave when it checked the limits and then called yaml.load with libyaml's CSafeLoader (which
differs from the pure-Python SafeLoader on a few tagged corner cases such as a lone ``!``)."""

from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils import _yaml

# Documents whose meaning hangs on PyYAML's rules: implicit types, quoting, anchors, tags,
# merge keys, documents, keys that are collections, and errors.
CORPUS = [
    "", "---\n", "a: 1", "- ~\n- null\n- \n- Null\n- nodes",
    "a: [1, 2.5, .inf, -.Inf, .nan, 0x1F, 0o17, 017, 1_000, 1:30, +5, -0, 0., 1e3, 1.0e+3, 190:20:30.15]",
    "a: yes\nb: No\nc: off\nd: ON\ne: y\nf: True", "'a': \"b\"\n? c\n: d", "a: 'yes'\nb: \"1\"\nc: '~'",
    "t: 2001-12-14t21:59:43.10-05:00\nd: 2002-12-14\ne: 2001-12-14 21:59:43.10", "1: one\n2.0: two\ntrue: t\n~: n",
    "a: &x [1, 2]\nb: *x\nc: *x", "- &a 5\n- *a\n- {*a : x}", "a: &x {k: v}\nb: *x",
    "a: &x {k: v}\n<<: *x\nb: 1", "<<: [{a: 1}, {b: 2}]", "=: x", "key: =",
    "a: !!str 5", "a: !!int '7'", "a: !!binary aGVsbG8=", "!!set {a, b}", "!!omap [a: 1]", "a: !foo x", "a: ! x",
    "! {a: b}", "a: &x 1\nb: &x 2", "a: *undefined", "&r [*r]", "a: &r {b: *r}",
    "[a, b]: c", "{a: b}: c", "? [a]\n: b", "a: &l [1]\n*l : x",
    "a\n---\nb", "--- a\n...\n", "%YAML 1.1\n---\na: b", "a: {b: [c, {d: e}]}", "- - - deep\n  - x\n- y",
    "k: |\n  multi\n  line\n", "k: >\n  folded\n  text\n", "a: b: c", "[unclosed", "a: 'open", "\t- tab",
    "a: 1\na: 2", "? \n: empty key", "- !!null ''\n- !!bool yes\n- !!float 1",
]


def outcome(load, text):
    """('ok', data) or ('error', the YAMLError class name); NaN made comparable."""
    try:
        data = load(text)
    except yaml.YAMLError as exc:
        return ("error", type(exc).__name__)
    return ("ok", repr(data).replace("nan", "NaN"))


def reference(text):
    """safe_load as it was: the limits over the whole text first, then libyaml's safe loader."""
    _yaml.check_limits(text)
    return yaml.load(text, Loader=yaml.CSafeLoader)  # nosec B506 - a safe loader


@pytest.mark.parametrize("text", CORPUS)
def test_safe_load_gives_what_yaml_safe_load_gives(text):
    assert outcome(_yaml.safe_load, text) == outcome(reference, text)


tricky_strings = st.sampled_from(["yes", "No", "~", "0x10", "1:30", "2001-12-14", "<<", "=", "", ".inf", "0o7", "null"])
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12), st.floats(allow_nan=False),
                         tricky_strings)
documents = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=5)),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(documents, st.sampled_from([None, True, False]))
def test_dumped_documents_load_back_alike(data, flow):
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    assert outcome(_yaml.safe_load, text) == outcome(reference, text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab1 :-[]{},?&*!|>'\"#\n<=~.", max_size=40))
def test_any_text_loads_or_fails_alike(text):
    assert outcome(_yaml.safe_load, text) == outcome(reference, text)


def test_models_are_built_in_the_one_pass_not_left_to_yaml_load():
    """The speed of a 100,000-node model load rests on this (docs/performance.md)."""
    model = ("switches:\n  core: {switches: [leaf-1]}\n  leaf-1: {labels: {zone: a}}\nblocks:\n"
             "- switch: leaf-1\n  nodes: ['gb-r01-n[01-18]']\n  annotations:\n"
             "    accelerator.topology.test/domain: nvl-r01\n")
    assert _yaml._scan(model) is not _yaml._NotBuilt  # pylint: disable=protected-access
    assert _yaml._scan("a: !!str 5") is _yaml._NotBuilt  # pylint: disable=protected-access


def test_nan_survives_the_one_pass():
    assert math.isnan(_yaml.safe_load("a: .nan")["a"])


@pytest.mark.parametrize("text", CORPUS)
def test_safe_load_without_libyaml_gives_what_the_pure_python_loader_gives(monkeypatch, text):
    """A target whose PyYAML lacks libyaml walks the pure-Python parser's events the same way."""
    monkeypatch.setattr(_yaml, "_LOADER", yaml.SafeLoader)

    def pure_reference(document):
        _yaml.check_limits(document)
        return yaml.load(document, Loader=yaml.SafeLoader)  # nosec B506 - the pure-Python safe loader

    assert outcome(_yaml.safe_load, text) == outcome(pure_reference, text)
