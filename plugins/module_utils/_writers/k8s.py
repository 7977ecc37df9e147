# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Kubernetes writer's parts share: how writes are sent, the one read and delete, and the write report.

``k8s_reconcile.reconcile`` is the one entry point: it takes the engines' desired state (``_base/k8s_desired``),
lists once per resource, has each part compared and checked before the first write, then writes the parts in
order. The parts, by what they write: ``k8s_objects`` (the engines' objects: NFD's, the schedulers' Topology
objects), ``k8s_nodes`` (node labels, annotations, the unhealthy taint), ``k8s_configmap`` (the Slinky ConfigMap
key). In check mode every write is still sent, with ``dryRun=All``: the API server validates and authorises it
(RBAC, admission) and returns the result, and nothing is stored. The writer returns one ``WriteReport``;
``_orchestration/k8s_module.finish`` is the one place that turns it into ``changed``, ``diff`` and the
partial-write error.
"""

from __future__ import annotations

import time

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import AifactoryTopologyError, TopologyError

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class WriteOptions:
    """How writes are sent: dry run, concurrency, conflict retries (delays injectable for tests)."""

    def __init__(self, check_mode=False, concurrency=8, conflict_retries=5, retry_delay=0.05, sleep=time.sleep,
                 field_manager=_k8s.FIELD_MANAGER):
        if int(concurrency) < 1:
            raise TopologyError("concurrency must be at least 1")
        self.check_mode = check_mode
        self.concurrency = int(concurrency)
        self.conflict_retries = conflict_retries
        self.retry_delay = retry_delay
        self.sleep = sleep
        self.field_manager = field_manager

    def query(self, **extra):
        query = {"fieldManager": self.field_manager}
        if self.check_mode:
            query["dryRun"] = "All"
        query.update(extra)
        return query


def read(client, path):
    """The stored object at ``path``, or None when there is none (HTTP 404)."""
    try:
        return client.request("GET", path)
    except _k8s.K8sError as exc:
        if exc.status != 404:
            raise
        return None


def delete(client, path, options):
    """Delete ``path`` (a dry run in check mode); one already gone is no error."""
    try:
        client.request("DELETE", path, {"dryRun": "All"} if options.check_mode else {})
    except _k8s.K8sError as exc:
        if exc.status != 404:
            raise


class WriteReport:
    """What a writer did (in check mode: would do), the one shape every Kubernetes writer returns.

    ``done``: (action, id) in the order written, the action a past participle (``created``, ``updated``,
    ``recreated``, ``deleted``, ``patched``, ``tainted``, ``untainted``, ``applied``); ``before`` and
    ``after``: what the diff shows, by id (or, for one text, the text itself); ``error``: the first failed
    request, after which nothing more was sent (``done`` says what went before it); ``notes``: what the
    partial-write message adds; ``headers``: (before_header, after_header) when the diff is one of several
    sections; ``nodes``: the ids are node names (the message compresses them as a host list).
    """

    def __init__(self, nodes=False, headers=None):
        self.done, self.before, self.after = [], {}, {}
        self.error, self.notes = None, []
        self.nodes, self.headers = nodes, headers
        self.parts = []  # the reports this one combines (``combined``)

    @property
    def changed(self):
        return bool(self.done)

    def ids(self, *actions):
        """The ids written by any of ``actions`` (by any action when none is given), in order."""
        return [oid for action, oid in self.done if not actions or action in actions]

    @classmethod
    def combined(cls, parts):
        """One report of the ``parts`` written in order: their writes, notes and first error. The diff is one
        section (the parts' entries together), or one section per part when a part has headers."""
        report = cls()
        report.parts = list(parts)
        for part in parts:
            report.done += part.done
            report.notes += part.notes
            report.error = report.error or part.error
            if not report.sectioned:
                report.before.update(part.before)
                report.after.update(part.after)
        return report

    @property
    def sectioned(self):
        return any(part.headers for part in self.parts)

    def written(self):
        """``created a, b; deleted c``: what was written, by action in the order first done (part by part), or ''."""
        if self.parts:
            return "; ".join(text for text in (part.written() for part in self.parts) if text)
        actions = list(dict.fromkeys(action for action, _oid in self.done))
        if self.nodes:
            return "; ".join(f"{action} nodes {hostlist.compress(self.ids(action))}" for action in actions)
        return "; ".join(f"{action} {', '.join(self.ids(action))}" for action in actions)

    def diff(self):
        if self.sectioned:
            return [part.diff() for part in self.parts]
        section = {"before": self.before, "after": self.after}
        if self.headers:
            section.update(before_header=self.headers[0], after_header=self.headers[1])
        return section


class PartialWrite(AifactoryTopologyError):
    """Some writes were made before one failed; ``result`` says which (for fail_json)."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result
