"""The report renderer: deterministic output, clear errors for bad input and a missing matplotlib."""

from __future__ import annotations

import re
import sys

import pytest

from ansible_collections.aifactory.topology.plugins.filter.segment_report import segment_report_html
from ansible_collections.aifactory.topology.plugins.plugin_utils import segment_report

from ansible.errors import AnsibleFilterError


def test_page_is_deterministic_self_contained_and_escaped(segment_capacity_result):
    page = segment_report.render(segment_capacity_result(), "Cap <test>")
    assert page == segment_report.render(segment_capacity_result(), "Cap <test>")
    assert page.count("<svg") == 3 and "Cap &lt;test&gt;" in page and "a &lt;warning&gt;" in page
    assert not re.search(r"""(?:src|href)\s*=\s*["'](?:https?:|//)""", page)  # nothing fetched


def test_bad_input_and_missing_matplotlib_are_clear(monkeypatch, segment_capacity_result):
    with pytest.raises(AnsibleFilterError, match="segment_capacity"):
        segment_report_html({"blocks": []})
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(AnsibleFilterError, match="needs the Python package matplotlib"):
        segment_report_html(segment_capacity_result())


def test_the_racks_the_hardware_names_are_listed_with_their_trays(segment_capacity_result):
    result = segment_capacity_result()
    assert "hardware-racks" not in segment_report.render(result, "Cap")
    result["summary"]["racks"] = [{"rack": "uuid.7 (chassis 1821124000123)", "schedulable": 3, "expected_trays": 4,
                                   "trays": ["r1n1", "r1n2", "r1n3", "r1n4"], "quarantined": ["r1n4"],
                                   "missing_trays": 0},
                                  {"rack": "<b>.7 (chassis x)", "schedulable": 2, "trays": ["r3n1", "r3n2"]}]
    page = segment_report.render(result, "Cap")
    table = page.split('<table id="hardware-racks">')[1].split("</table>")[0]
    assert "<td>uuid.7 (chassis 1821124000123)</td><td>3 of 4</td><td>r1n1, r1n2, r1n3, r1n4</td><td>r1n4</td>" in table
    assert "&lt;b&gt;.7" in table and "<td>2 of 2</td>" in table  # a rack name from a host is escaped
