# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Kubernetes modules share: their argument spec, the connection they write through, and ``finish``, the one
place a write report becomes the result's ``changed``, ``diff`` and the partial-write error."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import provider_arg_spec
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import PartialWrite, WriteOptions

# Doc fragment k8s_labels: the label keys k8s_node_labels writes and k8s_scheduler_topology names as levels.
LABEL_KEYS_ARG_SPEC = {
    "node_selector": {"type": "dict"},
    "fabric_labels": {"type": "list", "elements": "str"},
    "accelerator_label": {"type": "str", "default": _labels.ACCELERATOR_LABEL},
    "no_topology_value": {"type": "str"},
}


def label_keys(params):
    return _labels.LabelKeys(params["fabric_labels"], params["accelerator_label"], params.get("location_labels", False))


def argument_spec(**options):
    """provider/model, the connection options (doc fragment k8s_auth), the write options (k8s_auth.WRITES)."""
    spec = provider_arg_spec(model=True)
    spec.update(_k8s.AUTH_ARG_SPEC)
    spec.update(_k8s.WRITE_ARG_SPEC)
    spec.update(options)
    return spec


def connect(module, field_manager=_k8s.FIELD_MANAGER):
    """(client, write options) from a module's connection and write options."""
    params = module.params
    client = _k8s.K8sClient.from_auth(_k8s.auth_params(params), concurrency=params["concurrency"],
                                      timeout=params["request_timeout"])
    return client, WriteOptions(module.check_mode, params["concurrency"], params["conflict_retries"],
                                field_manager=field_manager)


def run(module, work, warnings=None):
    """Exit with ``work()``'s result, or fail with its error and, after a partial write, what was written.

    ``warnings`` (from ``common.warning_collector``) go into the result's ``summary`` either way.
    """
    with failing_cleanly(module):
        try:
            result = work()
        except PartialWrite as exc:
            if warnings is not None:
                exc.result.setdefault("summary", {})["warnings"] = warnings
            module.fail_json(msg=_secrets.scrub(str(exc)), **exc.result)
    if warnings is not None:
        result["summary"]["warnings"] = warnings
    module.exit_json(**result)


def finish(result, report, diff):
    """``result`` with ``changed`` (something was written, or would be in check mode) and, in diff mode only, the
    diff of ``report`` (the writer's, ``k8s_reconcile.reconcile``: one section, or a list of sections when its parts
    have headers); PartialWrite when a write failed: its message is the error, then what was already written."""
    result["changed"] = report.changed
    if diff:
        result["diff"] = report.diff()
    if report.error is not None:
        written = "; ".join([report.written() or "nothing"] + report.notes)
        raise PartialWrite(f"{report.error} (already written: {written})", result)
    return result
