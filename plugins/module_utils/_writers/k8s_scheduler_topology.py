# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The schedulers' cluster-scoped topology objects: read and check everything, then server-side apply.

Order: every consumer's API must be served (its CRD installed), every object is read and compared, and
a change of a field the CRD makes immutable (a Topology's levels, a topology flavor's nodeLabels or
topologyName) is refused unless ``recreate``, all before the first write. Then the objects are applied
(a Topology before the flavor naming it) with our own field manager, and our stale objects deleted
(a flavor before its Topology).
"""

from __future__ import annotations

from urllib.parse import quote

from ansible_collections.aifactory.topology.plugins.module_utils import _hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils import _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._engines import scheduler_topology as engine
from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import APPLY_PATCH, PartialWrite

FIELD_MANAGER = "aifactory-topology-scheduler"
_IMMUTABLE = {"Topology": ("levels",), "ResourceFlavor": ("nodeLabels", "topologyName")}


def _group(api_version):
    return api_version.split("/", 1)[0]


def object_path(api_version, resource, name=None):
    return f"/apis/{api_version}/{resource}" + (f"/{quote(name, safe='')}" if name else "")


def object_id(api_version, resource, name):
    """kubectl's spelling: ``topologies.kueue.x-k8s.io/name``."""
    return f"{resource}.{_group(api_version)}/{name}"


def served_resources(client, api_version):
    """The resources the API server serves for ``api_version``; empty when the group version is unknown."""
    try:
        listing = client.request("GET", f"/apis/{api_version}")
    except _k8s.K8sError as exc:
        if exc.status == 404:
            return set()
        raise
    return {item.get("name") for item in listing.get("resources") or [] if isinstance(item, dict)}


def _ours(item):
    labels = (item.get("metadata") or {}).get("labels") or {}
    return labels.get(engine.LABEL_MANAGED_BY) == engine.MANAGED_BY


def _view(item):
    """What the diff shows and the comparison looks at: our labels and the spec."""
    labels = (item.get("metadata") or {}).get("labels") or {}
    return {"labels": {key: labels[key] for key in (engine.LABEL_MANAGED_BY, engine.LABEL_SET) if key in labels},
            "spec": item.get("spec") or {}}


def _differs(current, desired):
    have = _view(current)
    return have["spec"] != desired["spec"] or have["labels"] != desired["metadata"]["labels"]


def _immutable_changes(kind, current, desired):
    have = current.get("spec") or {}
    if kind == "ResourceFlavor" and "topologyName" not in have:
        return []  # the CRD freezes nodeLabels only once topologyName is set
    return [field for field in _IMMUTABLE[kind] if have.get(field) != desired["spec"].get(field)]


def plan(client, rendered, options, cleanup=True, recreate=False):
    """Reads only. [(action, api_version, resource, name, desired or None, current or None)] in write order."""
    served = {}
    missing = []
    for (consumer, kind), (api_version, resource) in engine.RESOURCES.items():
        if api_version not in served:
            served[api_version] = served_resources(client, api_version)
        if consumer in options.consumers and resource not in served[api_version]:
            missing.append(f"{consumer}: {resource}.{_group(api_version)} ({api_version}, kind {kind})")
    if missing:
        raise TopologyError("the API server does not serve " + "; ".join(missing) + ": install the scheduler's CRDs "
                            "(Kueue v0.19 or later, KAI Scheduler with its Topology CRD); nothing was written")
    applies, deletes, refused, kept = [], [], [], []
    for consumer, objects in rendered["objects"].items():
        for desired in objects:
            api_version = desired["apiVersion"]
            resource = engine.RESOURCES[(consumer, desired["kind"])][1]
            name = desired["metadata"]["name"]
            try:
                current = client.request("GET", object_path(api_version, resource, name))
            except _k8s.K8sError as exc:
                if exc.status != 404:
                    raise
                current = None
            if current is None:
                applies.append(("create", api_version, resource, name, desired, None))
            elif _differs(current, desired):
                frozen = _immutable_changes(desired["kind"], current, desired)
                finalizers = (current.get("metadata") or {}).get("finalizers") or []
                if frozen and finalizers:
                    # Deleting would only mark it: Kueue keeps a Topology while a flavor names it, and a flavor
                    # while a ClusterQueue uses it, so the new object could never be created.
                    kept.append(f"{object_id(api_version, resource, name)} ({', '.join(frozen)}; finalizers "
                                f"{', '.join(map(str, finalizers))})")
                elif frozen and not recreate:
                    refused.append(f"{object_id(api_version, resource, name)} ({', '.join(frozen)})")
                action = "recreate" if frozen else "update"
                applies.append((action, api_version, resource, name, desired, current))
    if kept:
        raise TopologyError("these objects must change a field the CRD makes immutable, and their finalizers would keep "
                            f"them after a delete (the scheduler still uses them): {'; '.join(kept)}. Give the new "
                            "levels a new name, point the queues at its flavor, then remove the old set; nothing was "
                            "written")
    if refused:
        raise TopologyError("the CRDs make these fields immutable, so the objects would have to be deleted and created "
                            f"again: {'; '.join(refused)}. Set recreate: true to do so (a scheduler may briefly see no "
                            "topology); nothing was written")
    wanted = {
        (obj["apiVersion"], engine.RESOURCES[(consumer, obj["kind"])][1], obj["metadata"]["name"])
        for consumer, objects in rendered["objects"].items() for obj in objects}
    if cleanup:
        # Flavors first: a flavor names its Topology.
        for (consumer, kind), (api_version, resource) in sorted(engine.RESOURCES.items(),
                                                                key=lambda item: item[0][1] != "ResourceFlavor"):
            if resource not in served[api_version]:
                continue
            for item in client.list(object_path(api_version, resource), engine.selector(options.name)):
                name = item["metadata"]["name"]
                if (api_version, resource, name) not in wanted and _ours(item):
                    deletes.append(("delete", api_version, resource, name, None, item))
    return applies + deletes


def list_selected(client, selection):
    """Node name -> labels of the nodes the flavor (or node_selector) selects: what the scheduler will see."""
    return {item["metadata"]["name"]: (item["metadata"].get("labels") or {})
            for item in client.list(_k8s.node_path(), _k8s.selector_string(selection))}


def _delete(client, path, options):
    query = {"dryRun": "All"} if options.check_mode else {}
    try:
        client.request("DELETE", path, query)
    except _k8s.K8sError as exc:
        if exc.status != 404:
            raise


def execute(client, work, options):
    """Send the planned writes in order; a failure stops the rest. Returns (done, after, error)."""
    done, after = [], {}
    for action, api_version, resource, name, desired, _current in work:
        path = object_path(api_version, resource, name)
        try:
            if action in ("delete", "recreate"):
                _delete(client, path, options)
            if action != "delete" and not (action == "recreate" and options.check_mode):
                # A dry-run apply after a dry-run delete would meet the stored object and its frozen field.
                result = client.request("PATCH", path, options.query(force="true"), desired, APPLY_PATCH)
                after[object_id(api_version, resource, name)] = _view(result)
            elif action == "recreate":
                after[object_id(api_version, resource, name)] = _view(desired)
        except _k8s.K8sError as exc:
            return done, after, exc
        done.append((action, object_id(api_version, resource, name)))
    return done, after, None


def reconcile(client, topology, options, write_options, params=None, warn=None, diff=False):
    """The k8s_scheduler_topology module without Ansible: a result dict (``params``: node_selector, cleanup,
    recreate)."""
    params = params or {}
    node_selector = params.get("node_selector")
    cleanup, recreate = params.get("cleanup", True), params.get("recreate", False)
    warn = warn or (lambda message: None)
    selection = options.flavor_node_labels if "kueue" in options.consumers else node_selector
    listed = list_selected(client, selection)
    rendered = engine.render(topology, options, selected=set(listed))
    findings = rendered["findings"]
    summary = dict(rendered["summary"])
    if findings["missing_levels"]:
        names = [item["node"] for item in findings["missing_levels"]]
        warn(f"{summary['nodes_missing_levels']} selected nodes of the topology lack a level label, so Kueue and KAI "
             "will not "
             f"place pods on them: {hostlist.compress(names)[:500]}")
    if findings["shared_values"]:
        shown = ", ".join(f"{item['label']}={item['value']}" for item in findings["shared_values"][:10])
        warn(f"{summary['shared_values']} label values are found under more than one parent; podAffinity and the "
             f"native gang take each as one domain: {shown}")
    work = plan(client, rendered, options, cleanup, recreate)
    on_nodes = engine.missing_on_nodes(listed, rendered["levels"])
    findings["missing_on_nodes"] = dict(list(on_nodes.items())[:engine.MAX_REPORTED])
    summary.update(nodes_listed=len(listed), nodes_listed_missing_levels=len(on_nodes))
    if on_nodes:
        warn(f"{len(on_nodes)} of the {len(listed)} selected nodes lack a level label on the server (not labelled "
             f"yet, or not by these keys): {hostlist.compress(sorted(on_nodes))[:500]}")
    done, after, error = execute(client, work, write_options)
    result = {
        "changed": bool(done),
        "levels": rendered["levels"],
        "objects": [obj for objects in rendered["objects"].values() for obj in objects],
        "created": [oid for action, oid in done if action == "create"],
        "updated": [oid for action, oid in done if action in ("update", "recreate")],
        "deleted": [oid for action, oid in done if action == "delete"],
        "findings": findings,
        "summary": summary,
        "quarantined": topology.quarantine_report(),
    }
    if diff:
        written = {oid for _action, oid in done}
        result["diff"] = {
            "before": {object_id(a, r, n): _view(current) for _x, a, r, n, _d, current in work
                       if current is not None and object_id(a, r, n) in written},
            "after": {oid: view for oid, view in after.items() if oid in written},
        }
    if error is not None:
        raise PartialWrite(f"{error} (already written: {', '.join(oid for _a, oid in done) or 'nothing'})", result)
    return result
