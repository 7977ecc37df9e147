"""The shrink guard's readers: topology.conf, and topology.yaml through the one YAML reader.

A reader either finds every node a file places or fails closed: a current file that is not empty
and yields no nodes is one the guard cannot read, so only force replaces it; so is a topology.yaml
on a host without PyYAML (the one policy there, ``_base/yaml.py``).
"""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard

FLOW_40 = '- topology: default\n  cluster_default: true\n  block:\n    blocks: [{block: b1, nodes: "n[01-40]"}]\n'
ONE_NODE = "- topology: default\n  cluster_default: true\n  block:\n    blocks:\n      - block: b1\n        nodes: n01\n"


def test_a_flow_style_file_keeps_its_nodes():
    assert shrink_guard.nodes_in_file(FLOW_40) == set(hostlist.expand("n[01-40]"))
    with pytest.raises(TopologyError, match=r"refusing to drop 39 of 40 nodes \(97.5% > max_node_loss 10%\): n\[02-40\]"):
        shrink_guard.check_shrink(FLOW_40, ONE_NODE, 10, False)


@pytest.mark.parametrize("text", [
    "topology: default\n",  # a mapping without sections
    "- topology: default\n  block:\n    blocks: []\n",
    "- topology: default\n  block: [b1]\n",
    "SwitchName=s0 Switches=s[1-2]\n",
    "nodes n[1-40]\n",
])
def test_a_non_empty_file_without_readable_nodes_fails_closed(text):
    where = "the current file '/etc/slurm/topology.yaml'"
    with pytest.raises(TopologyError) as info:
        shrink_guard.check_shrink(text, ONE_NODE, 10, False, where=where)
    assert str(info.value) == (f"the shrink guard cannot read {where} (it is not empty, yet no nodes could be read "
                               "from it); it fails closed: set force: true to replace it")
    warning = shrink_guard.check_shrink(text, ONE_NODE, 10, True, where=where)
    assert warning.startswith(f"force: the shrink guard cannot read {where}") and "replaced unchecked" in warning


@pytest.mark.parametrize("text", ["", "\n\n", "# written by hand\n  # nothing yet\n"])
def test_an_empty_file_has_nothing_to_lose(text):
    assert shrink_guard.check_shrink(text, ONE_NODE, 10, False) is None


@pytest.mark.parametrize("text", ["- topology: default\n  cluster_default: true\n  flat: true\n",
                                  '[{"topology": "default", "cluster_default": true, "flat": true}]'])
def test_flat_topologies_place_no_nodes_and_are_replaced(text):
    assert shrink_guard.check_shrink(text, ONE_NODE, 10, False) is None


@pytest.mark.parametrize("text", [FLOW_40, ONE_NODE, '[{"topology": "t", "flat": true}]'])
def test_without_pyyaml_a_topology_yaml_is_a_file_the_guard_cannot_read(monkeypatch, text):
    """No second reader guesses at YAML: the guard fails closed, naming PyYAML; force replaces the file."""
    monkeypatch.setattr(_yaml, "HAS_YAML", False)
    with pytest.raises(TopologyError) as info:
        shrink_guard.check_shrink(text, "SwitchName=s Nodes=x1\n", 10, False, where="the current file t.yaml")
    assert str(info.value) == ("the shrink guard cannot read the current file t.yaml (reading YAML needs PyYAML, "
                               "which the Python running this task lacks (install python3-yaml, or PyYAML with "
                               "pip)); it fails closed: set force: true to replace it")
    assert shrink_guard.check_shrink(text, "SwitchName=s Nodes=x1\n", 10, True).startswith(
        "force: the shrink guard cannot read the current file (reading YAML needs PyYAML")


def test_without_pyyaml_topology_conf_and_blank_files_are_still_read(monkeypatch):
    monkeypatch.setattr(_yaml, "HAS_YAML", False)
    assert shrink_guard.nodes_in_file("BlockName=b1 Nodes=n[1-4]\n") == set(hostlist.expand("n[1-4]"))
    with pytest.raises(TopologyError, match="refusing to drop 3 of 4 nodes"):
        shrink_guard.check_shrink("BlockName=b1 Nodes=n[1-4]\n", "BlockName=b1 Nodes=n1\n", 10, False)
    assert shrink_guard.check_shrink("# nothing yet\n", ONE_NODE, 10, False) is None
