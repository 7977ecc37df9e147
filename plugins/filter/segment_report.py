# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.aifactory.topology.plugins.plugin_utils import segment_report


def segment_report_html(result, title="Segment capacity"):
    """segment_capacity result -> a self-contained HTML page (rendered on the controller)."""
    try:
        return segment_report.render(result, str(title))
    except segment_report.ReportError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    def filters(self):
        return {"segment_report_html": segment_report_html}
