"""The shared doc fragments document exactly the shared argument specs, option for option.

Every ``ArgumentSpec`` object names the fragments that document it; the objects are found in the
modules that define them, so a new one is checked without a list kept here.
"""

from __future__ import annotations

import importlib

import pytest
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._base import scontrol
from ansible_collections.aifactory.topology.plugins.module_utils._engines import segment_capacity, slurm_options
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import common as _common
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s_auth

SPEC_HOMES = (scontrol, slurm_options, segment_capacity, _common, k8s_auth, k8s_module)


def _spec_objects():
    """Name -> spec, each object once, under the name of the module that defines it (re-exports skipped)."""
    found, seen = {}, set()
    for home in SPEC_HOMES:
        for name, value in vars(home).items():
            if isinstance(value, ArgumentSpec) and id(value) not in seen:
                seen.add(id(value))
                found[f"{home.__name__.rsplit('.', 1)[-1]}.{name}"] = value
    return found


SPECS = _spec_objects()


def fragment_text(name):
    """The text of doc fragment ``name`` (``render`` or ``render.LAYOUT``)."""
    module, _dot, attribute = name.partition(".")
    fragment = importlib.import_module(f"ansible_collections.aifactory.topology.plugins.doc_fragments.{module}")
    return getattr(fragment.ModuleDocFragment, attribute or "DOCUMENTATION")


def documented(*fragments):
    options = {}
    for fragment in fragments:
        options.update(yaml.safe_load(fragment)["options"])
    return options


def test_the_argument_spec_objects_are_found():
    assert {"common.PROVIDER", "common.MODEL", "common.SHRINK_GUARD", "scontrol.SCONTROL", "slurm_options.RENDER",
            "slurm_options.LAYOUT", "segment_capacity.CAPACITY", "k8s_auth.CONNECTION", "k8s_module.WRITES",
            "k8s_module.LABEL_KEYS"} <= set(SPECS)


# Specs whose own options the module documents (only the merged layout is a fragment's).
OWN_OPTIONS_IN_THE_MODULE = {"segment_capacity.CAPACITY"}


@pytest.mark.parametrize("name", sorted(name for name, spec in SPECS.items() if spec.fragments))
def test_a_spec_object_is_documented_by_its_fragments(name):
    spec = SPECS[name]
    options = documented(*map(fragment_text, spec.fragments))
    if name in OWN_OPTIONS_IN_THE_MODULE:
        assert set(options) < set(spec.argument_spec)
    else:
        assert set(options) == set(spec.argument_spec)
    for option_name, option in options.items():
        wanted = spec.argument_spec[option_name]
        for key in ("type", "default", "choices", "elements"):
            assert option.get(key) == wanted.get(key), (option_name, key)
