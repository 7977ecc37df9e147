"""The shared doc fragments document exactly the shared argument specs, option for option."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.aifactory.topology.plugins.doc_fragments.render import ModuleDocFragment as Render
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import common as _common


def documented(*fragments):
    options = {}
    for fragment in fragments:
        options.update(yaml.safe_load(fragment)["options"])
    return options


@pytest.mark.parametrize("fragments, spec", [
    ((Render.DOCUMENTATION, Render.LAYOUT), _common.RENDER_ARG_SPEC),
    ((Render.LAYOUT,), _common.LAYOUT_ARG_SPEC),
    ((Render.SHRINK_GUARD,), _common.SHRINK_GUARD_ARG_SPEC),
])
def test_a_fragment_documents_its_spec(fragments, spec):
    options = documented(*fragments)
    assert set(options) == set(spec)
    for name, option in options.items():
        assert option["type"] == spec[name]["type"], name
        assert option.get("default") == spec[name].get("default"), name
        assert option.get("choices") == spec[name].get("choices"), name
        assert option.get("elements") == spec[name].get("elements"), name
