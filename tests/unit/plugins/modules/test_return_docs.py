"""RETURN entries that several modules share are written once in meaning: the same text everywhere.

Ansible has no doc fragments for RETURN, so the shared entries are compared here instead, for every
module that returns them: the set is read from the code (an orchestration that puts
``topology.quarantine_report()`` in its result), the documentation (a top-level ``quarantined``
entry) and the options (a module that takes the ``provider`` doc fragment discovers, so it may
quarantine), never from a list kept by hand.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import yaml

from ansible_collections.aifactory.topology.plugins import modules as _modules

ORCHESTRATION = Path(__file__).resolve().parents[4] / "plugins" / "module_utils" / "_orchestration"


def _all_modules():
    return {info.name: importlib.import_module(f"{_modules.__name__}.{info.name}")
            for info in pkgutil.iter_modules(_modules.__path__)}


def _quarantining():
    """The modules that return ``quarantined``, by any of the three signs."""
    found = {}
    for name, module in _all_modules().items():
        documentation = yaml.safe_load(module.DOCUMENTATION)
        orchestration = ORCHESTRATION / f"{name}.py"
        if ("quarantined" in (yaml.safe_load(module.RETURN) or {})
                or "aifactory.topology.provider" in documentation.get("extends_documentation_fragment", [])
                or (orchestration.exists() and "quarantine_report()" in orchestration.read_text(encoding="utf-8"))):
            found[name] = module
    return found


QUARANTINING = list(_quarantining().values())


def test_the_quarantining_modules_are_found():
    # Eight today; a smaller set means the signs above stopped seeing some of them.
    assert set(_quarantining()) >= {"slurm_topology", "slinky_topology", "topology_info", "segment_capacity",
                                    "k8s_node_labels", "nfd_topology", "topology_graph", "k8s_scheduler_topology"}


def test_every_module_that_quarantines_documents_the_same_quarantined_list():
    entries = {module.__name__.rsplit(".", 1)[-1]: (yaml.safe_load(module.RETURN) or {}).get("quarantined")
               for module in QUARANTINING}
    first = entries["slurm_topology"]
    assert first["type"] == "list" and first["elements"] == "dict"
    assert {name: entry for name, entry in entries.items() if entry != first} == {}


def test_the_summary_count_is_documented_alike_where_the_module_has_a_summary_of_its_own():
    counts = {}
    for module in QUARANTINING:
        summary = yaml.safe_load(module.RETURN).get("summary") or {}
        if "contains" in summary:
            counts[module.__name__.rsplit(".", 1)[-1]] = summary["contains"].get("quarantined")
    assert set(counts) == {"slurm_topology", "topology_info", "segment_capacity", "k8s_node_labels"}
    assert len({yaml.safe_dump(entry) for entry in counts.values()}) == 1 and counts["slurm_topology"]["type"] == "int"


def test_the_racks_the_hardware_names_are_documented_alike_in_every_summary_that_returns_them():
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.aifactory.topology.plugins.modules import segment_capacity, topology_info
    entries = {module.__name__: yaml.safe_load(module.RETURN)["summary"]["contains"].get("racks")
               for module in (topology_info, segment_capacity)}
    assert all(entries.values()) and len({yaml.safe_dump(entry) for entry in entries.values()}) == 1
