"""Action groups: every module that takes the Kubernetes connection options is in meta/runtime.yml's k8s group.

A module left out silently ignores ``module_defaults: group/aifactory.topology.k8s`` and connects
with the kubeconfig or the in-cluster account instead, possibly another cluster's. Each member
documents its groups with the ``action_group`` attribute, as ansible-doc shows them.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s

from .module_runner import module_argument_spec

ROOT = Path(__file__).resolve().parents[4]
COLLECTION = "aifactory.topology"
MODULES = sorted(path.stem for path in (ROOT / "plugins" / "modules").glob("*.py") if path.stem != "__init__")
ACTION_GROUPS = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["action_groups"]


def _plugin(kind, name):
    return importlib.import_module(f"ansible_collections.aifactory.topology.plugins.{kind}.{name}")


def documented_attributes(doc):
    """The module's attributes merged with those of this collection's doc fragments, as ansible-doc merges them."""
    attributes = {key: dict(value) for key, value in (doc.get("attributes") or {}).items()}
    for fragment in doc.get("extends_documentation_fragment") or []:
        if not fragment.startswith(COLLECTION + "."):
            continue
        name, _sep, variant = fragment[len(COLLECTION) + 1:].partition(".")
        text = getattr(_plugin("doc_fragments", name).ModuleDocFragment, variant or "DOCUMENTATION")
        for key, value in (yaml.safe_load(text).get("attributes") or {}).items():
            attributes.setdefault(key, {}).update(value)
    return attributes


@pytest.mark.parametrize("name", MODULES)
def test_a_module_taking_kubernetes_credentials_is_in_the_k8s_group_and_says_so(name, monkeypatch):
    doc = yaml.safe_load(_plugin("modules", name).DOCUMENTATION)
    extends_auth = f"{COLLECTION}.k8s_auth" in (doc.get("extends_documentation_fragment") or [])
    takes_auth = set(_k8s.AUTH_ARG_SPEC) <= set(module_argument_spec(_plugin("modules", name), monkeypatch))
    assert extends_auth == takes_auth, "the k8s_auth doc fragment and the argument spec disagree"
    assert (name in ACTION_GROUPS["k8s"]) == takes_auth
    membership = documented_attributes(doc).get("action_group", {}).get("membership") or []
    assert sorted(membership) == sorted(f"{COLLECTION}.{group}" for group, members in ACTION_GROUPS.items()
                                        if name in members)


def test_the_action_groups_name_existing_modules_only():
    assert ACTION_GROUPS["k8s"] and all(set(members) <= set(MODULES) for members in ACTION_GROUPS.values())
