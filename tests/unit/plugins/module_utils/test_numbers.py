"""The one strict reader of numbers in untrusted text and decoded values (_base/numbers)."""

from __future__ import annotations

import math

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base import numbers as _numbers
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import NodeDataError, TopologyError


@pytest.mark.parametrize("text, expected", [("0", 0), ("17", 17), ("0007", 7), ("18446744073709551615", 2 ** 64 - 1)])
def test_whole_number_reads_ascii_digits(text, expected):
    assert _numbers.whole_number(text, "slot", high=2 ** 64) == expected


@pytest.mark.parametrize("text", [
    "²",            # str.isdigit() is true, int() raises
    "٣",            # int() reads Arabic-Indic digits
    "1_000", " 7", "7 ", "+7", "-7", "0x10", "", "1.0", "７",
    "9" * 5000,     # past Python's integer-string limit
    "9" * (_numbers.MAX_DIGITS + 1),
    None, 7, b"7",
])
def test_whole_number_refuses_anything_else_with_the_callers_error(text):
    with pytest.raises(NodeDataError, match=r"^node a: slot must be a whole number from 0 to 17, got "):
        _numbers.whole_number(text, "node a: slot", high=17, error=NodeDataError)


def test_whole_number_checks_the_range_and_defaults_to_topology_error():
    with pytest.raises(TopologyError, match="from 1 to 18, got '19'"):
        _numbers.whole_number("19", "tray", low=1, high=18)
    with pytest.raises(TopologyError, match="from 1 to 18, got '0'"):
        _numbers.whole_number("0", "tray", low=1, high=18)


@pytest.mark.parametrize("value", [True, False, math.nan, math.inf, -math.inf, "3", None, [3], {"a": 1}])
def test_number_value_refuses_booleans_strings_and_non_finite_numbers(value):
    with pytest.raises(TopologyError, match=r"^gathered_at must be a number from 0 to 10, got "):
        _numbers.number_value(value, "gathered_at", high=10)


def test_number_value_ranges_and_integers():
    assert _numbers.number_value(2.5, "x", high=10) == 2.5
    assert _numbers.number_value(3.0, "x", high=10, integer=True) == 3
    assert isinstance(_numbers.number_value(3.0, "x", high=10, integer=True), int)
    with pytest.raises(TopologyError, match="must be a whole number from 0 to 10, got 2.5"):
        _numbers.number_value(2.5, "x", high=10, integer=True)
    with pytest.raises(TopologyError, match="from 0 to 10, got 11"):
        _numbers.number_value(11, "x", high=10)
