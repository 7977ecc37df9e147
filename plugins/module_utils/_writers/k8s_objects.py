# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Namespaced custom objects (NFD): create, JSON-patch or delete by name; stale ones selected by label."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels, nfd
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import JSON_PATCH, PartialWrite


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
        self.error = None  # the first failed request; the lists say what was done before it

    @property
    def changed(self):
        return bool(self.created or self.updated or self.deleted)


def sync_objects(client, api_prefix, namespace, resource, desired, label_selector, options, cleanup=True):
    """Make the managed objects of one resource in ``namespace`` exactly ``desired``.

    A failed request stops new ones; the returned ObjectSync has its ``error`` and what was done.
    """
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
    sync.error = error
    return sync


def _meta(obj):
    metadata = obj.get("metadata") or {}
    return {key: metadata[key] for key in ("labels", "annotations") if metadata.get(key)}


NFD_API = "/apis/nfd.k8s-sigs.io/v1alpha1"


def reconcile_nfd(client, topology, namespace, options, cleanup=True, no_topology_value=None, diff=False):
    """The nfd_topology module without Ansible: a result dict."""
    _labels.check_object_name(namespace, "namespace", dns_label=True)
    _labels.check_node_names(topology.nodes, "the topology")
    labels = k8s_labels.desired_labels(topology, _labels.LabelKeys(), no_topology_value)
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
        if sync.error is not None:
            if diff:
                result["diff"] = {"before": before, "after": after}
            done = [f"{action} {', '.join(f'{kind}/{name}' for kind, names in result[action].items() for name in names)}"
                    for action in ("created", "updated", "deleted") if any(result[action].values())]
            raise PartialWrite(f"{sync.error} (already {'; '.join(done) if done else 'written: nothing'})", result)
    if diff:
        result["diff"] = {"before": before, "after": after}
    return result
