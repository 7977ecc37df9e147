"""The report renderer: deterministic output, clear errors for bad input and a missing matplotlib."""

from __future__ import annotations

import re
import sys

import pytest

from ansible_collections.aifactory.topology.plugins.filter.segment_report import segment_report_html
from ansible_collections.aifactory.topology.plugins.module_utils._engines import capacity, slurm
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.plugin_utils import segment_report

from ansible.errors import AnsibleFilterError


def _result():
    topology = Topology()
    topology.add_switch("spine")
    topology.add_switch("leaf1", parent="spine")
    for rack in ("r1", "r2", "r3"):
        topology.declare_domain(rack)
    for rack in ("r1", "r3"):
        for i in range(1, 5):
            topology.add_node(f"{rack}n{i}", switch="leaf1", domain=rack)
    topology.validate()
    blocks, sizes = slurm.plan_blocks(topology, slurm.BlockOptions([4, 8], ["r1", "r2", "r3"]))
    result = capacity.analyse(blocks, sizes, {"r1n1": "drained", "r3n2": "allocated", "r3n4": "down"})
    from ansible_collections.aifactory.topology.plugins.module_utils._segment_capacity import fabric
    result["fabric"] = fabric(topology, blocks)
    result["summary"]["warnings"] = ["a <warning>"]
    return result


def test_page_is_deterministic_self_contained_and_escaped():
    page = segment_report.render(_result(), "Cap <test>")
    assert page == segment_report.render(_result(), "Cap <test>")
    assert page.count("<svg") == 3 and "Cap &lt;test&gt;" in page and "a &lt;warning&gt;" in page
    assert not re.search(r"""(?:src|href)\s*=\s*["'](?:https?:|//)""", page)  # nothing fetched


def test_bad_input_and_missing_matplotlib_are_clear(monkeypatch):
    with pytest.raises(AnsibleFilterError, match="segment_capacity"):
        segment_report_html({"blocks": []})
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(AnsibleFilterError, match="needs the Python package matplotlib"):
        segment_report_html(_result())
