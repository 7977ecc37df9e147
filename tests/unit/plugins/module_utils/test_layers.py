"""The folder story is true: providers -> model -> engines -> writers, with no import going back up.

Every import between module_utils files is checked against the layer each file belongs to.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MODULE_UTILS = Path(__file__).resolve().parents[4] / "plugins" / "module_utils"
PREFIX = "ansible_collections.aifactory.topology.plugins.module_utils"

# Layer of each file (module path relative to module_utils, without .py); packages by prefix.
BASE = {"_errors", "_deadline", "_hostlist", "_yaml", "_labels", "_input_file", "_slurm_lines"}
TRANSPORT = {"_http", "_k8s"}
PROVIDER_HELPERS = {"_gathered", "_nvidia_smi", "_merger", "_node_facts"}
GLUE = {"_common", "_k8s_module", "_slurm_conf", "_segment_capacity"}
# Event-Driven Ansible support (the event sources in extensions/eda import it): arguments, debounce, watches.
EVENTS = {"_eda", "_k8s_watch"}
# What each layer may import.
ALLOWED = {
    "base": {"base"},
    "transport": {"base", "transport"},
    "model": {"base", "model"},
    "providers": {"base", "transport", "model", "providers"},
    "engines": {"base", "model", "engines"},
    "writers": {"base", "transport", "model", "engines", "writers"},
    "glue": {"base", "transport", "model", "providers", "engines", "writers", "glue"},
    "events": {"base", "transport", "events"},
}


def layer_of(name: str) -> str:
    top = name.split(".")[0]
    if top in BASE:
        return "base"
    if top in TRANSPORT:
        return "transport"
    if top == "_model":
        return "model"
    if top == "_providers" or top in PROVIDER_HELPERS:
        return "providers"
    if top == "_engines":
        return "engines"
    if top == "_writers":
        return "writers"
    if top in GLUE:
        return "glue"
    if top in EVENTS:
        return "events"
    raise AssertionError(f"module_utils/{name.replace('.', '/')} belongs to no layer; add it to test_layers.py")


def imported_module_utils(path: Path):
    """module_utils names imported by ``path`` (at any depth, as AnsiballZ finds them)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            rest = node.module[len(PREFIX):].lstrip(".")
            if rest:
                yield rest
            else:  # from ...module_utils import _x, _y
                yield from (alias.name for alias in node.names)


FILES = sorted(p for p in MODULE_UTILS.rglob("*.py") if p.name != "__init__.py" or p.parent != MODULE_UTILS)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(MODULE_UTILS)))
def test_imports_follow_the_layers(path):
    relative = path.relative_to(MODULE_UTILS).with_suffix("")
    name = ".".join(relative.parts[:-1] if relative.name == "__init__" else relative.parts)
    mine = layer_of(name)
    for imported in imported_module_utils(path):
        theirs = layer_of(imported)
        assert theirs in ALLOWED[mine], f"{name} ({mine}) imports {imported} ({theirs})"


def test_the_check_catches_a_back_edge(tmp_path):
    # An engine that imports a provider must be caught: the test above can fail.
    assert "providers" not in ALLOWED["engines"]
    assert layer_of("_providers.aws") == "providers" and layer_of("_engines.slurm") == "engines"
