"""The folder story is true: providers -> model -> engines -> writers, with no import going back up.

Every import between module_utils files is checked against the layer each file belongs to.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

MODULE_UTILS = Path(__file__).resolve().parents[4] / "plugins" / "module_utils"
PREFIX = "ansible_collections.aifactory.topology.plugins.module_utils"

# The layer of a file is its folder (the first part of its name under module_utils); _model.py is the model.
LAYERS = {
    "_base": "base",                    # errors, argument validation, deadlines, names, YAML, commands
    "_transport": "transport",          # HTTP and the Kubernetes API client
    "_model": "model",
    "_providers": "providers",          # discover, and the helpers only providers use (_gathered, _nvidia_smi, ...)
    "_engines": "engines",              # render: model -> text or desired state, no I/O
    "_writers": "writers",              # apply state: files, Kubernetes objects
    "_orchestration": "orchestration",  # one file per module: provider -> engine -> writer
    "_events": "events",                # Event-Driven Ansible support (extensions/eda imports it)
}
# What each layer may import.
ALLOWED = {
    "base": {"base"},
    "transport": {"base", "transport"},
    "model": {"base", "model"},
    "providers": {"base", "transport", "model", "providers"},
    "engines": {"base", "model", "engines"},
    "writers": {"base", "transport", "model", "writers"},
    "orchestration": {"base", "transport", "model", "providers", "engines", "writers", "orchestration"},
    "events": {"base", "transport", "events"},
}


def layer_of(name: str) -> str:
    top = name.split(".")[0]
    if top not in LAYERS:
        raise AssertionError(f"module_utils/{name.replace('.', '/')} is in no layer folder ({', '.join(LAYERS)})")
    return LAYERS[top]


def module_name(path: Path, root: Path) -> str:
    """The module_utils name of ``path`` under ``root`` (a module_utils tree): ``_engines.slurm``, ``_engines``."""
    relative = path.relative_to(root).with_suffix("")
    return ".".join(relative.parts[:-1] if relative.name == "__init__" else relative.parts)


def imported_module_utils(source: str, package: str):
    """module_utils names imported by ``source``, a module of ``package`` (at any depth, as AnsiballZ finds them).

    Absolute (``from ansible_collections...module_utils._x import y``, ``import ...module_utils._x``)
    and relative (``from .._x import y``) imports alike.
    """
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            modules = [(module, [alias.name for alias in node.names])]
        else:
            continue
        for module, names in modules:
            if module == PREFIX:  # from ...module_utils import _x, _y
                yield from names
            elif module.startswith(PREFIX + "."):
                yield module[len(PREFIX) + 1:]


def layer_violations(path: Path, root: Path = MODULE_UTILS) -> list:
    """The imports of ``path``, a file of the module_utils tree ``root``, that its layer may not make."""
    name = module_name(path, root)
    package = ".".join([PREFIX] + name.split(".")[:None if path.name == "__init__.py" else -1])
    mine = layer_of(name)
    return [f"{name} ({mine}) imports {imported} ({layer_of(imported)})"
            for imported in imported_module_utils(path.read_text(encoding="utf-8"), package)
            if layer_of(imported) not in ALLOWED[mine]]


FILES = sorted(p for p in MODULE_UTILS.rglob("*.py") if p.name != "__init__.py" or p.parent != MODULE_UTILS)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(MODULE_UTILS)))
def test_imports_follow_the_layers(path):
    assert layer_violations(path) == []


def _engine_file(root: Path, name: str, source: str) -> Path:
    """A module_utils tree at ``root`` with one engine file, ``_engines/<name>.py``."""
    (root / "_engines").mkdir()
    path = root / "_engines" / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    return path


@pytest.mark.parametrize("statement", [
    f"from {PREFIX}._providers.aws import discover",
    f"from {PREFIX}._providers import aws",
    f"from {PREFIX} import _providers",
    f"import {PREFIX}._providers.aws",
    "from .._providers.aws import discover",
    "from .. import _providers",
    "def lazily():\n    from .._providers import aws\n",
])
def test_the_check_catches_a_back_edge(tmp_path, statement):
    # An engine that imports a provider, in each way Python can spell it, is reported: the check above can fail.
    evil = _engine_file(tmp_path, "evil", f"from {PREFIX}._model import Topology\n{statement}\n")
    [violation] = layer_violations(evil, tmp_path)
    assert violation.startswith("_engines.evil (engines) imports _providers") and violation.endswith("(providers)")


@pytest.mark.parametrize("statement", [
    f"from {PREFIX}._model import Topology",
    f"from {PREFIX}._engines import slurm",
    "from .slurm import render",
    "from .._base.errors import TopologyError",
    "from ansible.module_utils.basic import AnsibleModule",
])
def test_the_check_passes_an_import_the_layer_may_make(tmp_path, statement):
    assert layer_violations(_engine_file(tmp_path, "legal", statement + "\n"), tmp_path) == []


# Plugins outside module_utils: each may use only the layers below it. The inventory plugin runs on the
# controller and must not reach the module layer (plugins/modules: AnsiballZ payloads with their own main()).
COLLECTION = MODULE_UTILS.parents[1]
COLLECTION_PREFIX = "ansible_collections.aifactory.topology"
MODULES_PREFIX = f"{COLLECTION_PREFIX}.plugins.modules"
# An event source runs in ansible-rulebook's loop: it watches and reports, it discovers nothing itself.
EVENT_SOURCE_LAYERS = {"base", "transport", "events"}


def imported_modules(source: str, package: str):
    """Every module ``source`` (a module of ``package``) imports, by full name; ``from X import y`` gives X and X.y."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def module_layer_imports(path: Path, package: str) -> list:
    return sorted({name for name in imported_modules(path.read_text(encoding="utf-8"), package)
                   if name == MODULES_PREFIX or name.startswith(MODULES_PREFIX + ".")})


def event_source_violations(path: Path) -> list:
    return [f"{path.name} imports {name} ({layer_of(name)})"
            for name in imported_module_utils(path.read_text(encoding="utf-8"), "eda_source")
            if layer_of(name) not in EVENT_SOURCE_LAYERS]


INVENTORY_PLUGINS = sorted((COLLECTION / "plugins" / "inventory").glob("*.py"))
EVENT_SOURCES = sorted((COLLECTION / "extensions" / "eda" / "plugins" / "event_source").glob("*.py"))


@pytest.mark.parametrize("path", INVENTORY_PLUGINS, ids=lambda p: p.name)
def test_the_inventory_plugin_does_not_import_the_module_layer(path):
    assert module_layer_imports(path, f"{COLLECTION_PREFIX}.plugins.inventory") == []


@pytest.mark.parametrize("statement", [
    f"from {MODULES_PREFIX}.slurm_topology import main",
    f"from {COLLECTION_PREFIX}.plugins.modules import slurm_topology",
    f"from {COLLECTION_PREFIX}.plugins import modules",
    f"import {MODULES_PREFIX}.topology_facts",
    "from ..modules import slurm_topology",
    "def lazily():\n    from ..modules.topology_facts import main\n",
])
def test_the_inventory_guard_catches_an_import_of_a_module(tmp_path, statement):
    evil = tmp_path / "evil.py"
    evil.write_text(f"from {PREFIX}._model import Topology\n{statement}\n", encoding="utf-8")
    assert module_layer_imports(evil, f"{COLLECTION_PREFIX}.plugins.inventory")


@pytest.mark.parametrize("path", EVENT_SOURCES, ids=lambda p: p.name)
def test_an_event_source_imports_no_provider_engine_or_writer(path):
    assert event_source_violations(path) == []


def test_the_event_source_guard_catches_a_provider_import(tmp_path):
    evil = tmp_path / "evil.py"
    evil.write_text(f"from {PREFIX}._providers.kubernetes_nodes import GPU_CLIQUE_LABEL\n", encoding="utf-8")
    assert event_source_violations(evil) == ["evil.py imports _providers.kubernetes_nodes (providers)"]


def private_provider_imports(path: Path, root: Path = MODULE_UTILS) -> list:
    """Imports of a provider's private helper (``_providers._x``) by ``path``, a file outside the providers."""
    name = module_name(path, root)
    if layer_of(name) == "providers":
        return []
    package = ".".join([PREFIX] + name.split(".")[:None if path.name == "__init__.py" else -1])
    providers = f"{PREFIX}._providers."
    return sorted({"_providers." + imported[len(providers):].split(".")[0] for imported in imported_modules(path.read_text(encoding="utf-8"), package)
                   if imported.startswith(providers) and imported[len(providers):].startswith("_")})


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(MODULE_UTILS)))
def test_no_other_layer_imports_a_private_provider_helper(path):
    assert private_provider_imports(path) == []


@pytest.mark.parametrize("statement", [
    f"from {PREFIX}._providers import _node_facts",
    f"from {PREFIX}._providers._nvidia_smi import QUERY",
    "from .._providers import _specs",
])
def test_the_private_helper_check_catches_one(tmp_path, statement):
    (tmp_path / "_orchestration").mkdir()
    evil = tmp_path / "_orchestration" / "evil.py"
    evil.write_text(f"from {PREFIX}._providers import node_facts\n{statement}\n", encoding="utf-8")
    [found] = private_provider_imports(evil, tmp_path)
    assert found.startswith("_providers._")
