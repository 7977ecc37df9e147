"""aifactory.topology.typed_variables: list and dict variables from the text -e and AWX surveys give.

The specs are the roles' own meta/argument_specs.yml, so the conversions tested are those the roles get.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.filter.typed_variables import FilterModule

typed_variables = FilterModule().filters()["typed_variables"]
ROLES = Path(__file__).resolve().parents[4] / "roles"
SPEC = yaml.safe_load((ROLES / "slurm_topology" / "meta" / "argument_specs.yml").read_text())[
    "argument_specs"]["main"]["options"]


def typed(name, value):
    return typed_variables({f"slurm_topology_{name}": value}, SPEC, "slurm_topology_")[name]


@pytest.mark.parametrize("value, expected", [
    ("wheel", ["wheel"]),                       # -e slurm_topology_admin_allow_groups=wheel
    ("wheel,hpc-admins", ["wheel", "hpc-admins"]),
    (" wheel , hpc-admins, ", ["wheel", "hpc-admins"]),
    ('["wheel", "hpc-admins"]', ["wheel", "hpc-admins"]),
    ("[wheel, hpc-admins]", ["wheel", "hpc-admins"]),  # YAML flow, as people type it
    ("", []),                                   # an empty survey answer
    (["wheel"], ["wheel"]),
    (None, []),                                 # null: the default
])
def test_a_list_of_strings(value, expected):
    assert typed("admin_allow_groups", value) == expected


@pytest.mark.parametrize("value, expected", [
    ('{"gpu": "nvl72"}', {"gpu": "nvl72"}),     # -e 'slurm_topology_partitions={"gpu": "nvl72"}'
    ("{gpu: nvl72, debug: fabric}", {"gpu": "nvl72", "debug": "fabric"}),
    ("gpu=nvl72 debug=fabric", {"gpu": "nvl72", "debug": "fabric"}),  # Ansible's key=value form
    ("", {}),
    ({"gpu": "nvl72"}, {"gpu": "nvl72"}),
])
def test_a_dict(value, expected):
    assert typed("partitions", value) == expected


def test_list_elements_are_converted_as_the_spec_says():
    assert typed("block_sizes", "18,36") == [18, 36]
    assert typed("block_sizes", "[18, 36]") == [18, 36]
    assert typed("block_sizes", ["18", 36]) == [18, 36]


# How Ansible's validator names a type: ``str`` since ansible-core 2.19, ``<class 'str'>`` before.
TYPE = "(?:<class ')?%s(?:'>)?"


@pytest.mark.parametrize("name, value, message", [
    ("block_sizes", "18,x", "Elements value for option 'slurm_topology_block_sizes'.*unable to convert to int"),
    ("partitions", "{gpu: [", "slurm_topology_partitions: '{gpu: \\[' starts like a dict but is not JSON or YAML"),
    ("partitions", "[gpu]", f"argument 'slurm_topology_partitions' is of type {TYPE % 'str'} and we were unable to "
     "convert to dict"),
    ("admin_allow_groups", '["wheel"', "slurm_topology_admin_allow_groups: .* starts like a list but is not JSON"),
    ("admin_allow_groups", "[1, [2]]", "slurm_topology_admin_allow_groups\\[1\\] must be a string, got <list>"),
    ("admin_allow_groups", {"a": 1}, f"argument 'slurm_topology_admin_allow_groups' is of type {TYPE % 'dict'}"),
    ("model", "[]", f"argument 'slurm_topology_model' is of type {TYPE % 'str'} and we were unable to convert to dict"),
])
def test_anything_else_is_an_error_naming_the_variable(name, value, message):
    with pytest.raises(AnsibleFilterError, match=message):
        typed(name, value)


def test_a_variable_without_a_spec_is_an_error():
    with pytest.raises(AnsibleFilterError, match="no argument spec for slurm_topology_nope"):
        typed_variables({"slurm_topology_nope": []}, SPEC)


ITEM = st.text(st.characters(exclude_categories=["Cs", "Zs", "Cc", "Zl", "Zp"], exclude_characters=","),
               min_size=1, max_size=12).filter(lambda item: item == item.strip())


@given(st.lists(ITEM, max_size=6))
@settings(max_examples=300, deadline=None)
def test_a_list_as_json_text_or_comma_text_is_that_list(items):
    assert typed("segment_partitions", json.dumps(items)) == items
    if items and not items[0].startswith("["):
        assert typed("segment_partitions", ",".join(items)) == items


@given(st.dictionaries(ITEM, ITEM, max_size=5))
@settings(max_examples=200, deadline=None)
def test_a_dict_as_json_text_is_that_dict(mapping):
    assert typed("partitions", json.dumps(mapping)) == mapping
