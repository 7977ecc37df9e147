# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node labels and annotations (``_base/k8s_desired.NodeEntries``) and the unhealthy taint (``NodeTaints``), parts
of ``k8s_reconcile.reconcile``: one JSON merge patch per changed node.

Each patch carries the listed ``resourceVersion`` as a precondition; on HTTP 409 the node is read
again and the patch recomputed from its fresh state. Bounded concurrency.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import MERGE_PATCH, WriteReport


# The taint k8s_node_labels puts on nodes quarantined as unhealthy (taint_unhealthy), and takes off again.
UNHEALTHY_TAINT = {"key": "aifactory.topology/unhealthy", "value": "quarantined", "effect": "NoSchedule"}
# The annotation put on (and taken off) in the same patch as the taint. The writers list only the nodes'
# metadata (a Node's status is most of its bytes), where taints are not: the mark says which nodes carry ours.
UNHEALTHY_MARK = "aifactory.topology/unhealthy-taint"


def merge_patch(current, desired, keys):
    """The merge-patch entries that turn ``current``'s managed entries (labels or annotations) into ``desired``.

    ``current`` is the node's full label (or annotation) map, ``desired`` the managed entries it should have
    (an empty map removes every managed entry). Returns {key: value or None}; empty when
    nothing differs. Entries the collection does not manage are never touched.
    """
    patch = {}
    for key, value in desired.items():
        if current.get(key) != value:
            patch[key] = value
    for key in current:
        if keys.is_managed(key) and key not in desired:
            patch[key] = None
    return patch


class ListedNode:
    """A Node as the writers read it: its metadata; ``taints`` only when read whole (``spec``), else None."""

    __slots__ = ("name", "labels", "annotations", "resource_version", "taints")

    def __init__(self, item):
        metadata = item.get("metadata") or {}
        self.name = metadata["name"]
        self.labels = metadata.get("labels") or {}
        self.annotations = metadata.get("annotations") or {}
        self.resource_version = metadata.get("resourceVersion")
        self.taints = None
        if "spec" in item:
            taints = (item.get("spec") or {}).get("taints")
            self.taints = [taint for taint in taints if isinstance(taint, dict)] if isinstance(taints, list) else []

    def marked_unhealthy(self):
        """Whether k8s_node_labels put its unhealthy taint on the node (its mark, UNHEALTHY_MARK, says so)."""
        return UNHEALTHY_MARK in self.annotations

    def has_unhealthy_taint(self):
        # Only of a node read whole: a listed node's taints are unknown (None), and asking fails loudly.
        return any(taint.get("key") == UNHEALTHY_TAINT["key"] for taint in self.taints)

    def field(self, name):
        return self.labels if name == "labels" else self.annotations


def list_nodes(client, label_selector=None):
    """Node name -> ListedNode, from one paged list of the nodes' metadata (no status, no taints)."""
    return {node.name: node
            for node in map(ListedNode, client.list(_k8s.node_path(), label_selector, metadata_only=True))}


class NodeChange:
    __slots__ = ("name", "desired", "before", "after", "written")

    def __init__(self, name, desired, before):
        self.name = name
        self.desired = desired   # managed keys the node should have
        self.before = before     # managed keys it has
        self.after = None        # managed keys the API server returned after the (dry-run) patch
        self.written = False


def plan_node_changes(nodes, desired, keys, field="labels"):
    """NodeChanges for listed nodes whose managed ``field`` entries differ from ``desired``.

    ``desired`` maps node name -> managed entries; a listed node missing from it is not touched.
    For annotations, a node whose annotations would exceed the API server's total is an error naming
    it, before any write.
    """
    changes = []
    for name in sorted(desired):
        node = nodes.get(name)
        if node is None:
            continue
        current = node.field(field)
        if merge_patch(current, desired[name], keys):
            changes.append(NodeChange(name, desired[name], keys.managed(current)))
    if field == "annotations":
        _check_annotation_totals(changes, nodes, keys)
    return changes


def _check_annotation_totals(changes, nodes, keys):
    """The API server counts all of a node's annotations, ours and everyone else's: check the sum after each patch."""
    over = []
    for change in changes:
        after = {key: value for key, value in nodes[change.name].annotations.items() if not keys.is_managed(key)}
        after.update(change.desired)
        size = _labels.annotations_size(after)
        if size > _labels.MAX_ANNOTATIONS_BYTES:
            over.append((change.name, size))
    if over:
        shown = ", ".join(f"{name} ({size} bytes)" for name, size in over[:10]) + (" ..." if len(over) > 10 else "")
        raise TopologyError(f"{len(over)} nodes would carry more annotations than the API server takes "
                            f"({_labels.MAX_ANNOTATIONS_BYTES} bytes of keys and values in all); nothing was "
                            f"written: {shown}")


def check_desired_annotations(desired, where, one_line=()):
    """Before any request: node names the API server can hold, and annotations it takes, for each node."""
    _labels.check_node_names(desired, where)
    for name, annotations in desired.items():
        _labels.check_annotations(annotations, f"{where}.{name}", one_line)


def patch_nodes(client, changes, nodes, keys, options, field="labels"):
    """Send the planned patches; a WriteReport: ``patched`` nodes, their managed entries before and after (the
    server's answer), the first error."""

    def patch_one(change):
        state = {"node": nodes[change.name]}

        def attempt():
            node = state["node"]
            patch = merge_patch(node.field(field), change.desired, keys)
            if not patch:
                change.after = keys.managed(node.field(field))
                return change
            body = {"metadata": {field: patch, "resourceVersion": node.resource_version}}
            try:
                result = client.request("PATCH", _k8s.node_path(change.name), options.query(), body, MERGE_PATCH)
            except _k8s.K8sError as exc:
                if exc.status == 409:
                    state["node"] = ListedNode(client.request("GET", _k8s.node_path(change.name)))
                    change.before = keys.managed(state["node"].field(field))
                elif exc.status == 404:
                    raise _k8s.K8sError(f"node {change.name} was deleted while its {field} were being updated",
                                        404) from None
                raise
            change.after = keys.managed((result.get("metadata") or {}).get(field) or {})
            change.written = True
            return change

        return _k8s.with_conflict_retry(attempt, options.conflict_retries, options.retry_delay, options.sleep)

    results, error = _k8s.run_bounded(patch_one, changes, options.concurrency)
    report = WriteReport(nodes=True)
    for change in results:
        if change is not None and change.written:
            report.done.append(("patched", change.name))
            report.before[change.name] = dict(sorted(change.before.items()))
            report.after[change.name] = dict(sorted(change.after.items()))
    report.error = error
    return report


def patch_unhealthy_taints(client, wanted, options):
    """Put the unhealthy taint (and its mark) on the nodes ``wanted`` maps to True, take both off those mapped
    to False.

    Each node is read whole first (the list has no taints). ``spec.taints`` is one list: the patch carries
    every other taint of the node as read, with its ``resourceVersion`` as a precondition, so a taint someone
    else adds meanwhile is never lost (409: read again, recompute). A WriteReport: ``tainted`` and ``untainted``
    nodes, the first error.
    """
    def patch_one(name):
        def attempt():
            node = ListedNode(client.request("GET", _k8s.node_path(name)))
            if node.has_unhealthy_taint() == wanted[name] and node.marked_unhealthy() == wanted[name]:
                return None
            taints = [taint for taint in node.taints if taint.get("key") != UNHEALTHY_TAINT["key"]]
            if wanted[name]:
                taints.append(dict(UNHEALTHY_TAINT))
            body = {"metadata": {"resourceVersion": node.resource_version,
                                 "annotations": {UNHEALTHY_MARK: "true" if wanted[name] else None}},
                    "spec": {"taints": taints}}
            client.request("PATCH", _k8s.node_path(name), options.query(), body, MERGE_PATCH)
            return name

        return _k8s.with_conflict_retry(attempt, options.conflict_retries, options.retry_delay, options.sleep)

    results, error = _k8s.run_bounded(patch_one, sorted(wanted), options.concurrency)
    report = WriteReport(nodes=True)
    report.done = [("tainted" if wanted[name] else "untainted", name) for name in results if name is not None]
    report.error = error
    return report


def prepare_entries(client, part, nodes, options):
    """Plan ``part`` (``k8s_desired.NodeEntries``) against the listed ``nodes`` (checks included); the function that
    then patches the nodes that differ, returning a WriteReport (with the part's headers)."""
    changes = plan_node_changes(nodes, part.entries, part.keys, part.field)

    def patch():
        report = patch_nodes(client, changes, nodes, part.keys, options, part.field)
        report.headers = part.headers
        return report

    return patch


def prepare_taints(client, part, nodes, options):
    """The listed ``nodes`` whose unhealthy taint differs from ``part`` (``k8s_desired.NodeTaints``; the list holds
    no taints: a node carries ours when it carries our mark, which the taint's patch sets with it); the function that
    then puts it on or takes it off, returning a WriteReport."""
    wanted = {name: name in part.unhealthy for name, node in nodes.items()
              if (name in part.unhealthy) != node.marked_unhealthy()}
    return lambda: patch_unhealthy_taints(client, wanted, options) if wanted else WriteReport(nodes=True)
