"""RETURN entries that several modules share are written once in meaning: the same text everywhere.

Ansible has no doc fragments for RETURN, so the shared entries are compared here instead.
"""

from __future__ import annotations

import yaml

from ansible_collections.aifactory.topology.plugins.modules import (
    k8s_node_labels,
    nfd_topology,
    segment_capacity,
    slinky_topology,
    slurm_topology,
    topology_graph,
    topology_info,
)

# The modules that discover a topology and so may quarantine nodes.
QUARANTINING = [slurm_topology, slinky_topology, topology_info, segment_capacity, k8s_node_labels, nfd_topology,
                topology_graph]


def test_every_module_that_quarantines_documents_the_same_quarantined_list():
    entries = {module.__name__.rsplit(".", 1)[-1]: yaml.safe_load(module.RETURN)["quarantined"]
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
