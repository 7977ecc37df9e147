"""Operator regular expressions: whole-name matches, bounded cost, errors naming the field."""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base import patterns as _patterns
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError


def selector(**value):
    return _patterns.NameSelector.from_params(value, "params.switches")


def test_unset_is_none_and_include_exclude_combine():
    assert _patterns.NameSelector.from_params(None, "params.switches") is None
    chosen = selector(include=["DC1-.*"], exclude=[".*STOR.*"])
    assert chosen.selects("DC1-P1-LEAF-1")
    assert not chosen.selects("DC1-STOR-LEAF-1")
    assert not chosen.selects("DC2-P1-LEAF-1")
    # Any of a thing's names (its id, its display name) may match; None is skipped.
    assert chosen.selects("S-0c42a10300aa0211", "DC1-P1-LEAF-1") and chosen.excludes(None, "DC1-STOR-LEAF-1")


def test_a_pattern_matches_a_name_whole_and_long_names_match_nothing():
    assert not selector(include=["LEAF"]).selects("DC1-LEAF-1")
    assert selector(include=[".*LEAF.*"]).selects("DC1-LEAF-1")
    anything = selector(include=[".*"])
    assert anything.selects("x" * _patterns.MAX_NAME_LENGTH)
    assert not anything.selects("x" * (_patterns.MAX_NAME_LENGTH + 1))


@pytest.mark.parametrize("pattern, problem", [
    ("(a*)*z", "a repetition inside a repetition is not allowed"),
    ("(?:x+y)+", "a repetition inside a repetition is not allowed"),
    ("(a|a)*z", r"an alternation \(\|\) inside a repetition is not allowed"),
    (".*.*.*z", r"more than 2 repetitions"),
    (r"(a)\1", "a back-reference is not allowed"),
    ("(?=a)a", "a look-ahead or look-behind is not allowed"),
    ("(?!a)b", "a negative look-ahead or look-behind is not allowed"),
])
def test_patterns_that_can_take_exponential_or_high_polynomial_time_are_refused(pattern, problem):
    with pytest.raises(TopologyError, match=r"params.switches.include\[0\]: .*: " + problem):
        selector(include=[pattern])


@pytest.mark.parametrize("pattern", ["DC1-(P1|P2)-LEAF-.*", r"mlx5_[0-9]+", r".*-LEAF-\d{1,3}", "(?i)dc1-.*", "a?b?c?"])
def test_ordinary_patterns_are_accepted(pattern):
    assert selector(include=[pattern]).include


def test_limits_on_size_and_type_name_the_field():
    with pytest.raises(TopologyError, match=r"params.switches.exclude\[0\] is 257 characters long; at most 256"):
        selector(exclude=["x" * 257])
    with pytest.raises(TopologyError, match=r"params.switches.exclude has 65 patterns; at most 64"):
        selector(exclude=[f"n{i}" for i in range(65)])
    with pytest.raises(TopologyError, match=r"params.switches.include must be a non-empty list"):
        selector(include="DC1-.*")
    with pytest.raises(TopologyError, match=r"params.switches.include\[1\] must be a non-empty string"):
        selector(include=["a", 3])
    with pytest.raises(TopologyError, match=r"params.switches has unknown keys: includes; known: exclude, include"):
        selector(includes=["a"])
    with pytest.raises(TopologyError, match=r"params.switches must be a mapping with include and/or exclude"):
        _patterns.NameSelector.from_params(["a"], "params.switches")
    with pytest.raises(TopologyError, match=r"params.switches.include\[0\]: '\[a' is not a regular expression"):
        selector(include=["[a"])
