# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster-scoped custom objects (the schedulers' topologies): read, server-side apply, delete.

The plan (what to apply, recreate or delete, checked before the first write) is made by
``_orchestration/k8s_scheduler_topology``; this sends it in order, with our own field manager.
"""

from __future__ import annotations

from urllib.parse import quote

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import APPLY_PATCH

FIELD_MANAGER = "aifactory-topology-scheduler"


def group_of(api_version):
    return api_version.split("/", 1)[0]


def object_path(api_version, resource, name=None):
    return f"/apis/{api_version}/{resource}" + (f"/{quote(name, safe='')}" if name else "")


def object_id(api_version, resource, name):
    """kubectl's spelling: ``topologies.kueue.x-k8s.io/name``."""
    return f"{resource}.{group_of(api_version)}/{name}"


def served_resources(client, api_version):
    """The resources the API server serves for ``api_version``; empty when the group version is unknown."""
    try:
        listing = client.request("GET", f"/apis/{api_version}")
    except _k8s.K8sError as exc:
        if exc.status == 404:
            return set()
        raise
    return {item.get("name") for item in listing.get("resources") or [] if isinstance(item, dict)}


def read_object(client, api_version, resource, name):
    """The stored object, or None."""
    try:
        return client.request("GET", object_path(api_version, resource, name))
    except _k8s.K8sError as exc:
        if exc.status != 404:
            raise
        return None


def _delete(client, path, options):
    query = {"dryRun": "All"} if options.check_mode else {}
    try:
        client.request("DELETE", path, query)
    except _k8s.K8sError as exc:
        if exc.status != 404:
            raise


def execute(client, work, options, view):
    """Send planned writes ``(action, api_version, resource, name, desired, current)`` in order; a failure stops
    the rest. ``action``: create, update (apply), recreate (delete, then apply) or delete. Returns (done as
    (action, object id), object id -> ``view(object as stored after the write)``, the first error or None). A recreate
    whose apply fails after its delete is in ``done`` as a delete: the object is gone."""
    done, after = [], {}
    for action, api_version, resource, name, desired, _current in work:
        path = object_path(api_version, resource, name)
        oid = object_id(api_version, resource, name)
        deleted = False
        try:
            if action in ("delete", "recreate"):
                _delete(client, path, options)
                deleted = True
            if action != "delete" and not (action == "recreate" and options.check_mode):
                # A dry-run apply after a dry-run delete would meet the stored object and its frozen field.
                after[oid] = view(client.request("PATCH", path, options.query(force="true"), desired, APPLY_PATCH))
            elif action == "recreate":
                after[oid] = view(desired)
        except _k8s.K8sError as exc:
            if deleted and action == "recreate":
                done.append(("delete", oid))  # the delete of a recreate went through: the object is gone
            return done, after, exc
        done.append((action, oid))
    return done, after, None
