# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""topology_compare: the designed topology against the discovered one; a report, never a change."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._engines import cabling
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import (
    load_model_file,
    load_topology,
    provider_spec,
    warning_collector,
)

# The design: a compact model (as topology_info returns it) or a model file; the discovery is provider or model.
EXPECTED = ArgumentSpec({
    "expected": {"type": "dict"},
    "expected_file": {"type": "path"},
    "fail_on_mismatch": {"type": "bool", "default": False},
}, mutually_exclusive=[("expected", "expected_file")], required_one_of=[("expected", "expected_file")])
SPEC = provider_spec(model=True).merge(EXPECTED, cabling.CABLING)


def _expected(params):
    if params["expected"] is not None:
        try:
            return Topology.from_compact(params["expected"])
        except TopologyError as exc:
            raise TopologyError(f"expected: {exc}") from None
    return load_model_file(params["expected_file"])


def run(module):
    """What the module does; exits the module."""
    with failing_cleanly(module):
        warn, warnings = warning_collector(module)
        expected = _expected(module.params)
        observed = load_topology(module, warn=warn)
        options = cabling.CABLING.build(module.params)
        if options.max_findings < 0:
            raise TopologyError(f"max_findings must be 0 or more, got {options.max_findings}")
        report = cabling.compare(expected, observed, options)
        rails_checked = options.rails and bool(observed.hca_switches)
        summary = {"cabling_mismatches": report["mismatches"], "counts": report["counts"],
                   "nodes_expected": len(expected.nodes), "nodes_observed": len(observed.nodes),
                   "quarantined": len(observed.quarantined), "rails_checked": rails_checked,
                   "truncated": report["truncated"], "warnings": warnings}
        result = {"changed": False, "findings": report["findings"], "summary": summary,
                  "quarantined": observed.quarantine_report()}
        if report["mismatches"] and module.params["fail_on_mismatch"]:
            shown = "; ".join(finding["message"] for finding in report["findings"][:5])
            more = report["mismatches"] - min(5, len(report["findings"]))
            module.fail_json(msg=f"the discovered topology differs from the design in {report['mismatches']} "
                                 f"places: {shown}" + (f"; and {more} more" if more > 0 else ""), **result)
    module.exit_json(**result)
