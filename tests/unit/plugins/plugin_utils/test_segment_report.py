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
