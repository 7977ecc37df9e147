# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node labels and annotations: one JSON merge patch per changed node.

Each patch carries the listed ``resourceVersion`` as a precondition; on HTTP 409 the node is read
again and the patch recomputed from its fresh state. Bounded concurrency.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels
from ansible_collections.aifactory.topology.plugins.module_utils._engines.k8s_labels import label_changes
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import MERGE_PATCH, PartialWrite


# The taint k8s_node_labels puts on nodes quarantined as unhealthy (taint_unhealthy), and takes off again.
UNHEALTHY_TAINT = {"key": "aifactory.topology/unhealthy", "value": "quarantined", "effect": "NoSchedule"}


class ListedNode:
    __slots__ = ("name", "labels", "annotations", "resource_version", "taints")

    def __init__(self, item):
        metadata = item.get("metadata") or {}
        self.name = metadata["name"]
        self.labels = metadata.get("labels") or {}
        self.annotations = metadata.get("annotations") or {}
        self.resource_version = metadata.get("resourceVersion")
        taints = (item.get("spec") or {}).get("taints")
        self.taints = [taint for taint in taints if isinstance(taint, dict)] if isinstance(taints, list) else []

    def has_unhealthy_taint(self):
        return any(taint.get("key") == UNHEALTHY_TAINT["key"] for taint in self.taints)

    def field(self, name):
        return self.labels if name == "labels" else self.annotations


def list_nodes(client, label_selector=None):
    """Node name -> ListedNode, from one paged list."""
    return {node.name: node for node in map(ListedNode, client.list(_k8s.node_path(), label_selector))}


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
        if label_changes(current, desired[name], keys):
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
    """Send the planned patches; returns (changes actually written or dry-run, first error)."""

    def patch_one(change):
        state = {"node": nodes[change.name]}

        def attempt():
            node = state["node"]
            patch = label_changes(node.field(field), change.desired, keys)
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

        return _k8s.with_conflict_retry(attempt, options.retries, options.retry_delay, options.sleep)

    results, error = _k8s.run_bounded(patch_one, changes, options.concurrency)
    return [change for change in results if change is not None and change.written], error


def patch_unhealthy_taints(client, wanted, nodes, options):
    """Put the unhealthy taint on the nodes ``wanted`` maps to True and take it off those mapped to False.

    ``spec.taints`` is one list: the patch carries every other taint of the node as it was listed, with the
    listed ``resourceVersion`` as a precondition, so a taint someone else adds meanwhile is never lost (409:
    read again, recompute). Returns (names written, first error).
    """
    def patch_one(name):
        state = {"node": nodes[name]}

        def attempt():
            node = state["node"]
            if node.has_unhealthy_taint() == wanted[name]:
                return None
            taints = [taint for taint in node.taints if taint.get("key") != UNHEALTHY_TAINT["key"]]
            if wanted[name]:
                taints.append(dict(UNHEALTHY_TAINT))
            body = {"metadata": {"resourceVersion": node.resource_version}, "spec": {"taints": taints}}
            try:
                client.request("PATCH", _k8s.node_path(name), options.query(), body, MERGE_PATCH)
            except _k8s.K8sError as exc:
                if exc.status == 409:
                    state["node"] = ListedNode(client.request("GET", _k8s.node_path(name)))
                raise
            return name

        return _k8s.with_conflict_retry(attempt, options.retries, options.retry_delay, options.sleep)

    results, error = _k8s.run_bounded(patch_one, sorted(wanted), options.concurrency)
    return [name for name in results if name is not None], error


def node_diff(changes):
    """Diff-mode data: before/after managed entries of every written node (after = the server's answer)."""
    return {
        "before": {change.name: dict(sorted(change.before.items())) for change in changes},
        "after": {change.name: dict(sorted(change.after.items())) for change in changes},
    }


def check_quarantine_share(nodes, quarantined, keys, max_node_loss, force, warn):
    """Refuse to unlabel quarantined nodes when they are more than ``max_node_loss`` % of the labelled nodes.

    A mass failure (a fabric manager down, every tray degraded) would otherwise take every node out of
    the schedulers' topology at once; like the Slurm file guard, ``force`` accepts it with a warning.
    """
    labelled = [name for name, node in nodes.items() if keys.managed(node.labels)]
    losing = [name for name in quarantined if name in nodes and keys.managed(nodes[name].labels)]
    if not losing:
        return
    share = 100.0 * len(losing) / len(labelled)
    if share <= max_node_loss:
        return
    message = (f"{len(losing)} of {len(labelled)} labelled nodes are quarantined ({share:.1f}% > max_node_loss "
               f"{max_node_loss:g}%): {hostlist.compress(losing)[:200]}")
    if not force:
        raise TopologyError(f"refusing to remove the topology labels of {message}; nothing was written. "
                            "Fix the cause, or set force: true to accept")
    warn(f"force: removing the topology labels of {message}")


def reconcile_node_labels(client, topology, keys, options, node_selector=None, no_topology_value=None,
                          clean_absent_nodes=True, warn=None, diff=False, max_node_loss=10.0, force=False,
                          taint_unhealthy=False):
    """The k8s_node_labels module without Ansible: a result dict (changed, changed_nodes, changes, summary, diff).

    Quarantined nodes of the topology lose their managed labels whatever ``clean_absent_nodes`` says, so
    topology-aware schedulers do not count them; the share is bounded by ``max_node_loss``. With
    ``taint_unhealthy`` the nodes quarantined as unhealthy get UNHEALTHY_TAINT; every other listed node that
    carries it (recovered, or the option turned off) has it taken off.
    """
    warn = warn or (lambda message: None)
    _labels.check_node_names(topology.nodes, "the topology")
    desired = k8s_labels.desired_labels(topology, keys, no_topology_value)  # validates every value first
    nodes = list_nodes(client, _k8s.selector_string(node_selector))
    missing = [name for name in desired if name not in nodes]
    if missing:
        warn(f"{len(missing)} nodes of the topology are not in the cluster"
             + (" or do not match node_selector" if node_selector else "") + f": {hostlist.compress(missing)}")
    in_topology = len(desired) - len(missing)
    absent = [name for name in nodes if name not in desired]
    if clean_absent_nodes:
        labelled = [name for name in absent if keys.managed(nodes[name].labels)]
        if labelled and in_topology == 0:
            raise TopologyError(f"none of the {len(nodes)} listed nodes is in the topology; refusing to remove the "
                                f"topology labels of {len(labelled)} nodes (wrong cluster, node_selector or topology?)")
        desired.update({name: {} for name in labelled})
    quarantined = [record.node for record in topology.quarantined.values() if record.node is not None]
    check_quarantine_share(nodes, quarantined, keys, max_node_loss, force, warn)
    desired.update({name: {} for name in quarantined if name in nodes})
    changes = plan_node_changes(nodes, desired, keys)
    unhealthy = {record.node for record in topology.quarantined.values()
                 if taint_unhealthy and record.unhealthy and record.node in nodes}
    taints = {name: name in unhealthy for name, node in nodes.items()
              if (name in unhealthy) != node.has_unhealthy_taint()}
    if unhealthy and 100.0 * len(unhealthy) / len(nodes) > max_node_loss:
        message = (f"{len(unhealthy)} of {len(nodes)} listed nodes quarantined as unhealthy "
                   f"({100.0 * len(unhealthy) / len(nodes):.1f}% > max_node_loss {max_node_loss:g}%)")
        if not force:
            raise TopologyError(f"refusing to taint {message}; nothing was written. Fix the cause, or set force: true")
        warn(f"force: tainting {message}")
    written, error = patch_nodes(client, changes, nodes, keys, options)
    tainted = []
    if error is None and taints:
        tainted, error = patch_unhealthy_taints(client, taints, nodes, options)
    cleaned = sum(1 for change in written if change.name not in topology.nodes)
    result = {
        "changed": bool(written or tainted),
        "changed_nodes": [change.name for change in written],
        "tainted": [name for name in tainted if taints[name]],
        "untainted": [name for name in tainted if not taints[name]],
        "changes": {change.name: change.after for change in written},
        "summary": {
            "nodes_listed": len(nodes), "nodes_in_topology": in_topology, "nodes_changed": len(written),
            "nodes_cleaned": cleaned, "nodes_missing": len(missing), "quarantined": len(topology.quarantined),
        },
        "quarantined": topology.quarantine_report(),
    }
    return finish_node_writes(result, written, error, diff)


def finish_node_writes(result, written, error, diff):
    """``result`` with the diff of the written nodes in diff mode; PartialWrite when a write failed."""
    if diff:
        result["diff"] = node_diff(written)
    if error is not None:
        raise PartialWrite(f"{error} ({len(written)} nodes were already patched: "
                           f"{hostlist.compress(result['changed_nodes']) or 'none'})", result)
    return result


class BrokerAnnotationKeys:
    """The node annotations k8s_node_annotations manages (Topograph's Node Data Broker keys)."""

    @staticmethod
    def is_managed(key):
        return key in _labels.BROKER_ANNOTATIONS

    def managed(self, annotations):
        return {key: value for key, value in (annotations or {}).items() if self.is_managed(key)}


def reconcile_broker_annotations(client, desired, options, warn=None, diff=False):
    """Set the broker annotations of each node of ``desired`` (node name -> annotations); a result dict."""
    warn = warn or (lambda message: None)
    check_desired_annotations(desired, "node_facts", one_line=_labels.BROKER_ANNOTATIONS)
    nodes = list_nodes(client)
    missing = [name for name in desired if name not in nodes]
    if missing:
        warn(f"{len(missing)} nodes with facts are not in the cluster: {hostlist.compress(missing)}")
    keys = BrokerAnnotationKeys()
    changes = plan_node_changes(nodes, desired, keys, field="annotations")
    written, error = patch_nodes(client, changes, nodes, keys, options, field="annotations")
    result = {
        "changed": bool(written),
        "changed_nodes": [change.name for change in written],
        "summary": {"nodes_given": len(desired), "nodes_changed": len(written), "nodes_missing": len(missing)},
    }
    return finish_node_writes(result, written, error, diff)
