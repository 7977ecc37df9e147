# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Namespaced custom objects (NFD): create, JSON-patch or delete by name; stale ones selected by label."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import JSON_PATCH


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


def sync_objects(client, api_prefix, namespace, resource, desired, label_selector, options, cleanup=True, guard=None):
    """Make the managed objects of one resource in ``namespace`` exactly ``desired``.

    ``guard(existing, deleted)``, when given, sees the listed objects (name -> object) and the names that would
    be deleted after the list and before the first request, and raises to stop it (the shrink guard). A failed
    request stops new ones; the returned ObjectSync has its ``error`` and what was done.
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
    if guard is not None:
        guard(existing, [name for action, name, _obj in work if action == "delete"])

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
