"""ArgumentSpec: one concern's options, constraints and doc fragments, merged by the modules that take them."""

from __future__ import annotations

import dataclasses

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils import _providers
from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
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


def _size_needs_name(values):
    return "size needs a name" if values["size"] != 3 and not values["name"] else None


CHECKED = ArgumentSpec({"size": {"type": "int", "default": 3}, "name": {"type": "str"}}, checks=[_size_needs_name])


def test_check_refuses_unknown_keys_then_runs_the_specs_own_checks_after_the_prefix():
    assert CHECKED.check({"size": "3"}, "params") == {"size": 3, "name": None}
    with pytest.raises(TopologyError, match=r"^provider x: params has unknown keys: other"):
        CHECKED.check({"other": 1}, "params", prefix="provider x: ")
    with pytest.raises(TopologyError, match=r"^provider x: size needs a name$"):
        CHECKED.check({"size": 4}, "params", prefix="provider x: ")
    other = ArgumentSpec({"force": {"type": "bool"}})
    assert other.merge(CHECKED).checks == (_size_needs_name,) and other.merge().checks == ()


def test_the_provider_specs_carry_their_checks():
    with pytest.raises(TopologyError, match=r"^provider aws: the aws provider needs both creds.access_key_id and "
                                            r"creds.secret_access_key, or neither"):
        _providers.validate("aws", {"instances": []}, {"access_key_id": "AKID"})
    assert _providers.validate("aws", {"instances": []}, {"access_key_id": "", "secret_access_key": None})[1] == {
        "access_key_id": "", "secret_access_key": None, "session_token": None}
