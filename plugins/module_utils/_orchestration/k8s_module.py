# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Kubernetes modules share: their argument specs, the connection they write through, and ``finish``, the one
place a write report becomes the result's ``changed``, ``diff`` and the partial-write error.

Each concern's options are one ``ArgumentSpec``: the connection (``CONNECTION``, doc fragment k8s_auth, in
``_transport/k8s_auth.py`` because the ``k8s_nodes`` event source builds its connection through it too), the writes
(``WRITES``, k8s_auth.WRITES) and the label keys (``LABEL_KEYS``, k8s_labels); ``module_spec`` merges them for a
module, and ``connect`` builds the client and the writers' options from them.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._transport.k8s_auth import CONNECTION
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import provider_spec
from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import PartialWrite, WriteOptions

# The label keys k8s_node_labels writes and k8s_scheduler_topology names as levels.
LABEL_KEYS = ArgumentSpec({
    "node_selector": {"type": "dict"},
    "fabric_labels": {"type": "list", "elements": "str"},
    "accelerator_label": {"type": "str", "default": _labels.ACCELERATOR_LABEL},
    "no_topology_value": {"type": "str"},
}, fragments=["k8s_labels"])


# How the modules write: requests at once (also the client's connections), retries of a write that lost a race.
WRITES = ArgumentSpec({
    "concurrency": {"type": "int", "default": 8},
    "conflict_retries": {"type": "int", "default": 5},
}, fragments=["k8s_auth.WRITES"], options_class=WriteOptions)


def label_keys(params):
    return _labels.LabelKeys(params["fabric_labels"], params["accelerator_label"], params.get("location_labels", False))


def module_spec(*concerns):
    """A Kubernetes module's spec: provider or model (one of them), the connection, the writes, then ``concerns``."""
    return provider_spec(model=True).merge(CONNECTION, WRITES, *concerns)


def connect(module, field_manager=_k8s.FIELD_MANAGER):
    """(client, write options) from a module's connection options (``CONNECTION``) and write options (``WRITES``)."""
    writes = WRITES.build(module.params, check_mode=module.check_mode, field_manager=field_manager)
    client = _k8s.K8sClient.from_options(CONNECTION.build(module.params), concurrency=writes.concurrency)
    return client, writes


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
