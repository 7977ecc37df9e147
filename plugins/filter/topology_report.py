# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The lines the main playbooks print about a discovery's problems, written once for site.yml and k8s.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def _result(result, name):
    if not isinstance(result, dict):
        raise AnsibleFilterError(f"{name}: the input must be a discovery's result (topology_info's), "
                                 f"got {type(result).__name__}")
    summary = result.get("summary") or {}
    if not isinstance(summary, dict):
        raise AnsibleFilterError(f"{name}: the result's summary must be a mapping")
    return summary


def _limit(limit, name):
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise AnsibleFilterError(f"{name}: limit must be a whole number of 0 or more, got {limit!r}")
    return limit


def quarantine_lines(result, limit=10):
    """The first ``limit`` quarantined nodes, each with why, then how many more: the result lists at most
    1000 records and ``summary.quarantined`` counts them all."""
    summary, limit = _result(result, "quarantine_lines"), _limit(limit, "quarantine_lines")
    records = result.get("quarantined") or []
    lines = [f"  {record.get('identifier')} ({record.get('kind')}, {record.get('source')}): {record.get('reason')}"
             for record in records[:limit] if isinstance(record, dict)]
    count = summary.get("quarantined") or 0
    if isinstance(count, int) and count > limit:
        lines.append(f"  and {count - limit} more")
    return lines


def rack_lines(result, limit=10):
    """The racks the hardware names (``summary.racks``), then the first ``limit`` that are not whole: those with
    a quarantined tray first, then those with missing trays. No line when the hardware named no rack."""
    summary, limit = _result(result, "rack_lines"), _limit(limit, "rack_lines")
    racks = [rack for rack in summary.get("racks") or [] if isinstance(rack, dict)]
    if not racks:
        return []
    partial = ([rack for rack in racks if "quarantined" in rack]
               + [rack for rack in racks if "quarantined" not in rack and "missing_trays" in rack])
    lines = [f"racks by hardware (domain, chassis): {len(racks)}, not whole: {len(partial) or 'none'}"]
    for rack in partial[:limit]:
        expected = rack.get("expected_trays", len(rack.get("trays") or []))
        line = f"  {rack.get('rack')}: {rack.get('schedulable')} of {expected} trays schedulable"
        if "quarantined" in rack:
            line += ", quarantined: " + ",".join(str(tray) for tray in rack["quarantined"])
        if "missing_trays" in rack:
            line += f", missing: {rack['missing_trays']}"
        lines.append(line)
    return lines


class FilterModule:
    def filters(self):
        return {"quarantine_lines": quarantine_lines, "rack_lines": rack_lines}
