"""ArgumentSpec: one concern's options, constraints and doc fragments, merged by the modules that take them."""

from __future__ import annotations

import dataclasses

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import common


@dataclasses.dataclass(frozen=True)
class Options:
    size: int
    name: str | None


SPEC = ArgumentSpec({"size": {"type": "int", "default": 3}, "name": {"type": "str"}}, fragments=["x"],
                    options_class=Options, required_together=[("size", "name")])


def test_merge_joins_options_constraints_and_fragments_without_changing_either_side():
    other = ArgumentSpec({"force": {"type": "bool", "default": False}}, fragments=["y"],
                         mutually_exclusive=[("force", "name")], required_by={"force": "size"})
    merged = SPEC.merge(other)
    assert set(merged.argument_spec) == {"size", "name", "force"} and merged.fragments == ("x", "y")
    assert merged.module_kwargs() == {"argument_spec": merged.argument_spec, "required_together": [("size", "name")],
                                      "mutually_exclusive": [("force", "name")], "required_by": {"force": "size"}}
    assert set(SPEC.argument_spec) == {"size", "name"} and SPEC.constraints["mutually_exclusive"] == []


def test_an_option_in_two_specs_is_an_error():
    with pytest.raises(ValueError, match="options in two argument specs: size"):
        SPEC.merge(ArgumentSpec({"size": {"type": "int"}}))


def test_build_converts_and_fills_in_the_defaults_stated_once():
    assert SPEC.build({"size": "5", "other": "not mine"}) == Options(size=5, name=None)
    assert SPEC.build({}) == Options(size=3, name=None)


def test_the_modules_one_source_of_the_topology_travels_with_model():
    kwargs = common.provider_spec(model=True, output_file=True).module_kwargs()
    assert kwargs["mutually_exclusive"] == [("provider", "model")] and kwargs["required_one_of"] == [("provider", "model")]
    assert {"provider", "model", "dest", "backup"} == set(kwargs["argument_spec"])
    assert "mutually_exclusive" not in common.provider_spec().module_kwargs()
