# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes writers: list once, write only what differs, dry-run in check mode.

* Node labels and annotations: one JSON merge patch per changed node, with the listed
  ``resourceVersion`` as a precondition; on HTTP 409 the node is read again and the patch
  recomputed from its fresh state. Bounded concurrency.
* Namespaced custom objects (NFD): create, JSON-patch or delete by name, stale ones selected by label.
* A ConfigMap key (Slinky): server-side apply with our own field manager, so we own only our key.

In check mode every write is still sent, with ``dryRun=All``: the API server validates and
authorises it (RBAC, admission) and returns the result, and nothing is stored.
"""

from __future__ import annotations

import datetime
import time

from ansible_collections.aifactory.topology.plugins.module_utils import _hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils import _k8s
from ansible_collections.aifactory.topology.plugins.module_utils import _slurm_topology
from ansible_collections.aifactory.topology.plugins.module_utils._common import provider_arg_spec
from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels, nfd, slinky
from ansible_collections.aifactory.topology.plugins.module_utils._engines.k8s_labels import label_changes
from ansible_collections.aifactory.topology.plugins.module_utils._model import TopologyError

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


def module_argument_spec(**options):
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


# -- nodes -----------------------------------------------------------------------------------

class ListedNode:
    __slots__ = ("name", "labels", "annotations", "resource_version")

    def __init__(self, item):
        metadata = item.get("metadata") or {}
        self.name = metadata["name"]
        self.labels = metadata.get("labels") or {}
        self.annotations = metadata.get("annotations") or {}
        self.resource_version = metadata.get("resourceVersion")

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
    """
    changes = []
    for name in sorted(desired):
        node = nodes.get(name)
        if node is None:
            continue
        current = node.field(field)
        if label_changes(current, desired[name], keys):
            changes.append(NodeChange(name, desired[name], keys.managed(current)))
    return changes


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


def node_diff(changes):
    """Diff-mode data: before/after managed entries of every written node (after = the server's answer)."""
    return {
        "before": {change.name: dict(sorted(change.before.items())) for change in changes},
        "after": {change.name: dict(sorted(change.after.items())) for change in changes},
    }


class PartialWrite(TopologyError):
    """Some writes were made before one failed; ``result`` says which (for fail_json)."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


def reconcile_node_labels(client, topology, keys, options, node_selector=None, no_topology_value=None,
                          clean_absent_nodes=True, warn=None, diff=False):
    """The k8s_node_labels module without Ansible: a result dict (changed, changed_nodes, changes, summary, diff)."""
    warn = warn or (lambda message: None)
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
    changes = plan_node_changes(nodes, desired, keys)
    written, error = patch_nodes(client, changes, nodes, keys, options)
    cleaned = sum(1 for change in written if change.name not in topology.nodes)
    result = {
        "changed": bool(written),
        "changed_nodes": [change.name for change in written],
        "changes": {change.name: change.after for change in written},
        "summary": {
            "nodes_listed": len(nodes), "nodes_in_topology": in_topology, "nodes_changed": len(written),
            "nodes_cleaned": cleaned, "nodes_missing": len(missing),
        },
    }
    if diff:
        result["diff"] = node_diff(written)
    if error is not None:
        raise PartialWrite(f"{error} ({len(written)} nodes were already patched: "
                           f"{hostlist.compress(result['changed_nodes']) or 'none'})", result)
    return result


# -- namespaced custom objects (NFD) ----------------------------------------------------------

def _object_ops(existing, desired):
    """JSON Patch operations that make ``existing`` carry ``desired``'s spec, labels and annotations."""
    ops = [{"op": "add", "path": "/spec", "value": desired["spec"]}]
    metadata = existing.get("metadata") or {}
    for section in ("labels", "annotations"):
        wanted = desired["metadata"].get(section) or {}
        have = metadata.get(section)
        if have is None:
            ops.append({"op": "add", "path": f"/metadata/{section}", "value": wanted})
            continue
        for key, value in sorted(wanted.items()):
            if have.get(key) != value:
                ops.append({"op": "add", "path": f"/metadata/{section}/{_pointer(key)}", "value": value})
    return ops


def _pointer(key):
    return key.replace("~", "~0").replace("/", "~1")


def object_differs(existing, desired):
    metadata = existing.get("metadata") or {}
    if existing.get("spec") != desired["spec"]:
        return True
    for section in ("labels", "annotations"):
        have = metadata.get(section) or {}
        if any(have.get(key) != value for key, value in (desired["metadata"].get(section) or {}).items()):
            return True
    return False


class ObjectSync:
    """What sync_objects did (or, in check mode, would do), by object name."""

    def __init__(self):
        self.created, self.updated, self.deleted = [], [], []
        self.before, self.after = {}, {}

    @property
    def changed(self):
        return bool(self.created or self.updated or self.deleted)


def sync_objects(client, api_prefix, namespace, resource, desired, label_selector, options, cleanup=True):
    """Make the managed objects of one resource in ``namespace`` exactly ``desired``."""
    path = _k8s.namespaced_path(api_prefix, namespace, resource)
    existing = {item["metadata"]["name"]: item for item in client.list(path, label_selector)}
    wanted = {obj["metadata"]["name"]: obj for obj in desired}
    sync = ObjectSync()
    work = []
    for name, obj in sorted(wanted.items()):
        current = existing.get(name)
        if current is None:
            work.append(("create", name, obj))
        elif object_differs(current, obj):
            work.append(("update", name, obj))
    if cleanup:
        work += [("delete", name, None) for name in sorted(existing) if name not in wanted]

    def run(item):
        action, name, obj = item
        if action == "create":
            try:
                client.request("POST", path, options.query(), obj)
            except _k8s.K8sError as exc:
                if exc.status != 409:
                    raise
                # The name exists without our labels: take it over.
                current = client.request("GET", _k8s.namespaced_path(api_prefix, namespace, resource, name))
                client.request("PATCH", _k8s.namespaced_path(api_prefix, namespace, resource, name),
                               options.query(), _object_ops(current, obj), JSON_PATCH)
        elif action == "update":
            client.request("PATCH", _k8s.namespaced_path(api_prefix, namespace, resource, name), options.query(),
                           _object_ops(existing[name], obj), JSON_PATCH)
        else:
            query = {"dryRun": "All"} if options.check_mode else {}
            try:
                client.request("DELETE", _k8s.namespaced_path(api_prefix, namespace, resource, name), query)
            except _k8s.K8sError as exc:
                if exc.status != 404:
                    raise
        return item

    results, error = _k8s.run_bounded(run, work, options.concurrency)
    for item in results:
        if item is None:
            continue
        action, name, obj = item
        {"create": sync.created, "update": sync.updated, "delete": sync.deleted}[action].append(name)
        if name in existing:
            sync.before[name] = {"metadata": _meta(existing[name]), "spec": existing[name].get("spec")}
        if obj is not None:
            sync.after[name] = {"metadata": _meta(obj), "spec": obj["spec"]}
    if error is not None:
        raise error
    return sync


def _meta(obj):
    metadata = obj.get("metadata") or {}
    return {key: metadata[key] for key in ("labels", "annotations") if metadata.get(key)}


NFD_API = "/apis/nfd.k8s-sigs.io/v1alpha1"


def reconcile_nfd(client, topology, namespace, options, cleanup=True, no_topology_value=None, diff=False):
    """The nfd_topology module without Ansible: a result dict."""
    labels = k8s_labels.desired_labels(topology, k8s_labels.LabelKeys(), no_topology_value)
    features, groups = nfd.build_objects(labels, namespace)
    if not features:
        raise TopologyError("the topology gives no node a fabric tier or accelerator domain, so there would be no "
                            "NodeFeature objects; refusing to go on (the existing objects are kept)")
    result = {"changed": False, "node_features": len(features), "node_feature_groups": len(groups),
              "created": {}, "updated": {}, "deleted": {}}
    before, after = {}, {}
    for kind, resource, objects, marker in (
            ("NodeFeature", "nodefeatures", features, nfd.RESOURCE_NODE_FEATURE),
            ("NodeFeatureGroup", "nodefeaturegroups", groups, nfd.RESOURCE_NODE_FEATURE_GROUP)):
        sync = sync_objects(client, NFD_API, namespace, resource, objects, nfd.selector(marker), options, cleanup)
        result["changed"] = result["changed"] or sync.changed
        result["created"][kind], result["updated"][kind], result["deleted"][kind] = \
            sync.created, sync.updated, sync.deleted
        before.update({f"{kind}/{name}": value for name, value in sync.before.items()})
        after.update({f"{kind}/{name}": value for name, value in sync.after.items()})
    if diff:
        result["diff"] = {"before": before, "after": after}
    return result


# -- ConfigMap key (Slinky) -------------------------------------------------------------------

def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def apply_configmap_key(client, namespace, name, key, content, annotations, options, owned_annotations=(),
                        timestamp_annotation=None, guard=None, now=now_rfc3339):
    """Server-side apply of one ConfigMap key and our annotations, only when something differs.

    ``timestamp_annotation`` is set to ``now()`` when the content changes and kept otherwise, so
    a rerun with the same content writes nothing. ``owned_annotations`` are keys we set in earlier
    runs that must disappear when no longer in ``annotations``. ``guard(before, content)`` may
    raise to refuse the write.
    Returns (changed, before content or None, server's content after the apply).
    """
    path = _k8s.namespaced_path("/api/v1", namespace, "configmaps", name)
    try:
        current = client.request("GET", path)
    except _k8s.K8sError as exc:
        if exc.status != 404:
            raise
        current = None
    metadata = (current or {}).get("metadata") or {}
    have_annotations = metadata.get("annotations") or {}
    before = ((current or {}).get("data") or {}).get(key) if current is not None else None
    content_changed = before != content
    if content_changed and guard is not None:
        guard(before, content)
    wanted = dict(annotations)
    if timestamp_annotation:
        kept = have_annotations.get(timestamp_annotation)
        wanted[timestamp_annotation] = now() if content_changed or not kept else kept
    stale = [k for k in owned_annotations if k in have_annotations and k not in wanted]
    if not content_changed and not stale and all(have_annotations.get(k) == v for k, v in wanted.items()):
        return False, before, before
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "annotations": wanted},
        "data": {key: content},
    }
    result = client.request("PATCH", path, options.query(force="true"), body, APPLY_PATCH)
    return True, before, (result.get("data") or {}).get(key)


# -- pods (Slinky dynamic nodes) ---------------------------------------------------------------

def ready_pod_nodes(client, namespace, label_selector, name_label):
    """Slurm node name -> Kubernetes node name, from Running and Ready pods carrying ``name_label``."""
    mapping = {}
    for pod in client.list(_k8s.namespaced_path("/api/v1", namespace, "pods"), label_selector):
        status = pod.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        slurm_name = ((pod.get("metadata") or {}).get("labels") or {}).get(name_label, "").strip()
        node = (pod.get("spec") or {}).get("nodeName")
        if status.get("phase") == "Running" and ready and slurm_name and node:
            mapping[slurm_name] = node
    return mapping


# -- Slinky ------------------------------------------------------------------------------------

SLINKY_FIELD_MANAGER = "aifactory-topology-slinky"


class AnnotationKeys:
    """The node annotations slinky_topology manages: only the spec."""

    @staticmethod
    def is_managed(key):
        return key == slinky.SPEC_ANNOTATION

    def managed(self, annotations):
        return {key: value for key, value in (annotations or {}).items() if self.is_managed(key)}


def reconcile_slinky(client, topology, params, options, warn=None, diff=False):
    """The slinky_topology module without Ansible: a result dict."""
    warn = warn or (lambda message: None)
    skeleton = bool(params.get("skeleton_only"))
    content, summary = slinky.render(topology, params, warn, skeleton=skeleton)
    specs = slinky.dynamic_specs(topology, params) if params.get("use_dynamic_nodes") else None
    pod_selector = _k8s.selector_string(params.get("pod_selector"), "pod_selector")
    topologies = params.get("topologies")
    annotations = slinky.configmap_annotations(
        params["namespace"], None if topologies else (params.get("plugin") or "topology/tree"),
        None if topologies else params.get("block_sizes"))

    def guard(before, after):
        if before is not None and not skeleton:
            message = _slurm_topology.check_shrink(before, after, params.get("max_node_loss", 10.0),
                                                   params.get("force", False))
            if message:
                warn(message)

    name, key, namespace = params["configmap_name"], params.get("configmap_key") or "topology.conf", params["namespace"]
    changed, before, _after = apply_configmap_key(
        client, namespace, name, key, content, annotations, options,
        owned_annotations=(slinky.ANNOTATION_PLUGIN, slinky.ANNOTATION_BLOCK_SIZES),
        timestamp_annotation=slinky.ANNOTATION_LAST_UPDATED, guard=guard)
    result = {"changed": changed, "configmap_changed": changed, "content": content, "annotated_nodes": [],
              "summary": summary}
    diffs = [{"before_header": f"configmap/{namespace}/{name} {key}" if before is not None else "/dev/null",
              "after_header": f"configmap/{namespace}/{name} {key}", "before": before or "", "after": content}]
    if specs is not None:
        if pod_selector:
            slurm_to_node = ready_pod_nodes(client, namespace, pod_selector, params.get("slurm_node_name_label"))
        else:
            slurm_to_node = {node: node for node in specs}
        desired = {slurm_to_node[node]: {slinky.SPEC_ANNOTATION: spec} for node, spec in specs.items()
                   if node in slurm_to_node}
        nodes = list_nodes(client)
        unplaced = sorted(node for node in specs if slurm_to_node.get(node) not in nodes)
        if unplaced:
            warn(f"{len(unplaced)} Slurm nodes run on no listed Kubernetes node and get no spec annotation: "
                 f"{hostlist.compress(unplaced)}")
        keys = AnnotationKeys()
        written, error = patch_nodes(client, plan_node_changes(nodes, desired, keys, "annotations"), nodes, keys,
                                     options, "annotations")
        result["annotated_nodes"] = [change.name for change in written]
        result["changed"] = result["changed"] or bool(written)
        diffs.append(dict(node_diff(written), before_header="node annotations", after_header="node annotations"))
        if error is not None:
            if diff:
                result["diff"] = diffs
            raise PartialWrite(f"{error} (spec annotations already set on: "
                               f"{hostlist.compress(result['annotated_nodes']) or 'no node'})", result)
    if diff:
        result["diff"] = diffs
    return result
