"""Keys written verbatim: the one rule for KEY=value config files (_base/config_text), and label keys across key sets."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._base import config_text
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._base.labels import LabelKeys
from ansible_collections.aifactory.topology.plugins.module_utils._engines import imex

DOCUMENTED = ["LOG_LEVEL", "SERVER_PORT"]


def problems(config, extra_keys=()):
    return imex.setting_problems(config, list(extra_keys), DOCUMENTED, "slurm", "", "/etc/nvidia-imex/nodes_config.cfg")


@pytest.mark.parametrize("key", ["LOG\nLEVEL", "A=B", "A B", "", "Ä", "1ABC", "X" * 129])
def test_a_key_that_would_make_another_line_or_key_is_refused_by_name(key):
    found = problems({key: 1}, extra_keys=[key])
    assert any(line.startswith("imex_config_extra_keys: key ") for line in found)
    assert any(line.startswith("imex_config: key ") for line in found)
    with pytest.raises(ValueError, match=r"^config key .*: a key "):
        imex.render_config({key: 1}, "d", "/n")


@pytest.mark.parametrize("value, code", [("a\x00b", "0000"), ("\x1b[31mred", "001B"), ("tab\there", "0009"),
                                         ("a\u2028b", "2028"), ("a\x85b", "0085")])
def test_a_value_holding_nul_an_escape_or_a_line_separator_is_refused_naming_the_key(value, code):
    assert problems({"LOG_LEVEL": value}) == [
        f"imex_config: the value of 'LOG_LEVEL': a value is one line of printable text; it holds U+{code} "
        "(a line break, NUL, escape or other control character)"]
    with pytest.raises(ValueError, match=rf"^config\.LOG_LEVEL: .*U\+{code}"):
        imex.render_config({"LOG_LEVEL": value}, "d", "/n")


def test_what_config_cfg_holds_today_still_renders():
    text = imex.render_config({"LOG_LEVEL": 4, "SERVER_PORT": "50000", "IMEX_WAIT": True, "X": None}, "d", "/n")
    assert text.endswith("LOG_LEVEL=4\nSERVER_PORT=50000\nIMEX_WAIT=1\n")
    assert problems({"LOG_LEVEL": "verbose logging, please"}) == []


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40), st.one_of(st.text(max_size=40), st.integers(), st.booleans(), st.none()))
def test_whatever_passes_the_rule_renders_as_exactly_one_line(key, value):
    if config_text.key_problem(key) is None and config_text.value_problem(value) is None \
            and not (isinstance(value, str) and ("\n" in value or "\r" in value)):
        body = imex.render_config({key: value}, "d", "/n").split("\n")
        written = [line for line in body if line.startswith(f"{key}=")]
        assert len(written) == (0 if value is None else 1)


@pytest.mark.parametrize("args, option", [
    ({"fabric_labels": ["topology.aifactory.dev/chassis"]}, "fabric_labels[0]"),
    ({"fabric_labels": ["a.example/t0"], "accelerator_label": "topology.aifactory.dev/slot"}, "accelerator_label"),
])
def test_a_tier_or_domain_label_key_that_is_a_location_label_key_is_refused_naming_both(args, option):
    with pytest.raises(TopologyError, match="^" + re.escape(option) + " is .*a key of location_labels"):
        LabelKeys(**args)
