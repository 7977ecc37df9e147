# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every Kubernetes writer shares: how writes are sent, and the partial-write error.

Writers list once and write only what differs. In check mode every write is still sent, with
``dryRun=All``: the API server validates and authorises it (RBAC, admission) and returns the
result, and nothing is stored. What each writer writes: ``k8s_nodes`` (node labels and
annotations), ``k8s_objects`` (NFD custom objects), ``k8s_configmap`` (the Slinky ConfigMap key).
"""

from __future__ import annotations

import time

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import AifactoryTopologyError, TopologyError

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class WriteOptions:
    """How writes are sent: dry run, concurrency, conflict retries (delays injectable for tests)."""

    def __init__(self, check_mode=False, concurrency=8, retries=5, retry_delay=0.05, sleep=time.sleep,
                 field_manager=_k8s.FIELD_MANAGER):
        if int(concurrency) < 1:
            raise TopologyError("concurrency must be at least 1")
        self.check_mode = check_mode
        self.concurrency = int(concurrency)
        self.retries = retries
        self.retry_delay = retry_delay
        self.sleep = sleep
        self.field_manager = field_manager

    def query(self, **extra):
        query = {"fieldManager": self.field_manager}
        if self.check_mode:
            query["dryRun"] = "All"
        query.update(extra)
        return query


class PartialWrite(AifactoryTopologyError):
    """Some writes were made before one failed; ``result`` says which (for fail_json)."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result
