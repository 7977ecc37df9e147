"""_yaml.safe_load builds documents in one pass over the parser's events: the same data (or error) as
it gave when it checked the limits and then called yaml.load with libyaml's CSafeLoader (which
differs from the pure-Python SafeLoader on a few tagged corner cases such as a lone ``!``). Its two parts are
tested alone too: the limit checker refuses what the limits refuse, the builder gives what yaml.load gives."""

from __future__ import annotations

import math
import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml

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
    # pylint: disable=protected-access
    assert _yaml._build(yaml.parse(model, Loader=_yaml._LOADER)) is not _yaml._NotBuilt
    assert _yaml._build(yaml.parse("a: !!str 5", Loader=_yaml._LOADER)) is _yaml._NotBuilt


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


def libyaml_load(text):
    return yaml.load(text, Loader=yaml.CSafeLoader)  # nosec B506 - a safe loader


def built_alone(text):
    """The builder over the parser's unchecked events; yaml.load's data for a document it leaves."""
    data = _yaml._build(yaml.parse(text, Loader=yaml.CSafeLoader))  # pylint: disable=protected-access
    return libyaml_load(text) if data is _yaml._NotBuilt else data  # pylint: disable=protected-access


@pytest.mark.parametrize("text", CORPUS)
def test_the_builder_alone_gives_what_yaml_load_gives(text):
    assert outcome(built_alone, text) == outcome(libyaml_load, text)


@settings(max_examples=300, deadline=None)
@given(documents, st.sampled_from([None, True, False]))
def test_the_builder_alone_builds_dumped_documents_as_yaml_load_does(data, flow):
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    built = _yaml._build(yaml.parse(text, Loader=yaml.CSafeLoader))  # pylint: disable=protected-access
    assert built is not _yaml._NotBuilt  # pylint: disable=protected-access
    assert outcome(lambda _text: built, text) == outcome(libyaml_load, text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab1 :-[]{},?&*!|>'\"#\n<=~.", max_size=40))
def test_the_builder_alone_loads_any_text_as_yaml_load_does(text):
    assert outcome(built_alone, text) == outcome(libyaml_load, text)


# text, max_depth, max_alias_nodes, the refusal (None: within the limits)
LIMIT_CASES = [
    ("[[x]]", 2, 0, None),
    ("[[[x]]]", 2, 0, "line 1: nested more than 2 levels deep"),
    ("a:\n  b:\n    c: d", 3, 0, None),
    ("a:\n  b:\n    c: d", 2, 0, "line 3: nested more than 2 levels deep"),
    ("- &a [x, y]\n- *a\n- *a", 9, 6, None),  # each alias to a 3-node list costs 3
    ("- &a [x, y]\n- *a\n- *a", 9, 5, "line 3: aliases expand to more than 5 nodes"),
    ("- &a [x, x]\n- &b [*a, *a]\n- *b", 9, 13, None),  # b holds 1 + 3 + 3 nodes: 6 + 7 in all
    ("- &a [x, x]\n- &b [*a, *a]\n- *b", 9, 12, "line 3: aliases expand to more than 12 nodes"),
    ("&r [*r, *r]", 9, 2, None),  # an alias to a collection still open costs 1
    ("&r [*r, *r]", 9, 1, "line 1: aliases expand to more than 1 nodes"),
    ("[*undefined]", 9, 0, "line 1: aliases expand to more than 0 nodes"),
    ("- &s x\n- *s\n- *s", 9, 1, "line 3: aliases expand to more than 1 nodes"),
    ("a: &a [x]\n---\nb: &a [y, z]\nc: *a", 9, 2, "line 4: aliases expand to more than 2 nodes"),  # the latest &a
]


@pytest.mark.parametrize("text, max_depth, max_alias_nodes, refusal", LIMIT_CASES)
def test_the_limit_checker_alone_refuses_what_passes_a_limit(text, max_depth, max_alias_nodes, refusal):
    if refusal is None:
        _yaml.check_limits(text, max_depth, max_alias_nodes)
    else:
        with pytest.raises(_yaml.YAMLLimitError, match=re.escape(refusal)):
            _yaml.check_limits(text, max_depth, max_alias_nodes)


def test_the_limit_checker_passes_every_event_on_unchanged():
    text = "a: &x {k: [1, 'two', *x]}\n---\n- !!str 3\n"
    checked = _yaml._events_within_limits(yaml.parse(text))  # pylint: disable=protected-access
    assert [repr(event) for event in checked] == [repr(event) for event in yaml.parse(text)]


ALIAS_BOMB = "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9))


@pytest.mark.parametrize("before", ["t: !!str tagged\n", "---\nfirst: document\n---\n", "m: &m {k: v}\n<<: *m\n"])
def test_a_document_the_builder_leaves_is_still_checked_to_its_end(before):
    with pytest.raises(_yaml.YAMLLimitError, match="aliases expand to more than 1000000 nodes"):
        _yaml.safe_load(before + ALIAS_BOMB)


def test_without_pyyaml_every_read_raises_the_one_error_naming_pyyaml(monkeypatch, tmp_path):
    """The one policy of a host without PyYAML: no reader guesses; each fails naming PyYAML (and the file)."""
    from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file
    from ansible_collections.aifactory.topology.plugins.module_utils._engines import metrics

    monkeypatch.setattr(_yaml, "HAS_YAML", False)
    for read in (_yaml.safe_load, _yaml.check_limits, metrics._yaml_blocks):
        with pytest.raises(_yaml.PyYAMLMissing, match=r"^reading YAML needs PyYAML, which the Python running"):
            read("- block: {blocks: [{block: b1, nodes: n1}]}\n")
    model = tmp_path / "model.yaml"
    model.write_text("switches: {}\n")
    with pytest.raises(input_file.InputFileError, match=rf"^model file '{model}': reading YAML needs PyYAML"):
        input_file.read_yaml(str(model), "model file")
