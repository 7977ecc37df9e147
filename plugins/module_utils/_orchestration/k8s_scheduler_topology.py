# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_scheduler_topology: the Topology objects of Kueue and KAI Scheduler, checked, then server-side applied.

Order: the nodes the flavor selects are listed, the objects rendered for them (engine
``scheduler_topology``), every consumer's API must be served (its CRD installed), every object is read
and compared, and a change of a field the CRD makes immutable (a Topology's levels, a topology flavor's
nodeLabels or topologyName) is refused unless ``recreate``, and always when finalizers hold the object;
an object of the same name that is not this set's (no managed-by label of ours: another team's) or that
is being deleted (``deletionTimestamp``) is refused too, all before the first write. Then the objects
are applied (a Topology before the flavor naming it) and our stale objects deleted (a flavor before its
Topology).
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._engines import scheduler_topology as engine
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import load_topology, warning_collector
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._writers import k8s_scheduler_topology as writer
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import PartialWrite

_IMMUTABLE = {"Topology": ("levels",), "ResourceFlavor": ("nodeLabels", "topologyName")}
_DONE = {"create": "created", "update": "updated", "recreate": "recreated", "delete": "deleted"}


def run(module):
    """The module's work: check the options, discover or load, render, check, apply; exits the module."""
    warn, warnings = warning_collector(module)

    def work():
        options = engine.Options.from_params(module.params, k8s_module.label_keys(module.params))
        topology = load_topology(module, warn)
        client, write_options = k8s_module.connect(module, writer.FIELD_MANAGER)
        return reconcile(client, topology, options, write_options, module.params, warn, module._diff)

    k8s_module.run(module, work, warnings)


def _ours(item):
    labels = (item.get("metadata") or {}).get("labels") or {}
    return labels.get(engine.LABEL_MANAGED_BY) == engine.MANAGED_BY


def _owner_problem(item, set_name):
    """Why the stored ``item`` is not ours to write (another team's, or another set's), or None."""
    labels = (item.get("metadata") or {}).get("labels") or {}
    if not _ours(item):
        have = labels.get(engine.LABEL_MANAGED_BY)
        return f"label {engine.LABEL_MANAGED_BY} is {'not set' if have is None else repr(have)}"
    if labels.get(engine.LABEL_SET) != set_name:
        return f"label {engine.LABEL_SET} is {labels.get(engine.LABEL_SET)!r}, another set of this collection"
    return None


def _terminating(item):
    """``deletionTimestamp (finalizers ...)`` of an object being deleted, or None."""
    metadata = item.get("metadata") or {}
    if not metadata.get("deletionTimestamp"):
        return None
    finalizers = metadata.get("finalizers") or []
    held = f"; finalizers {', '.join(map(str, finalizers))}" if finalizers else ""
    return f"deletionTimestamp {metadata['deletionTimestamp']}{held}"


def view(item):
    """What the diff shows and the comparison looks at: our labels and the spec."""
    labels = (item.get("metadata") or {}).get("labels") or {}
    return {"labels": {key: labels[key] for key in (engine.LABEL_MANAGED_BY, engine.LABEL_SET) if key in labels},
            "spec": item.get("spec") or {}}


def _differs(current, desired):
    have = view(current)
    return have["spec"] != desired["spec"] or have["labels"] != desired["metadata"]["labels"]


def _immutable_changes(kind, current, desired):
    have = current.get("spec") or {}
    if kind == "ResourceFlavor" and "topologyName" not in have:
        return []  # the CRD freezes nodeLabels only once topologyName is set
    return [field for field in _IMMUTABLE[kind] if have.get(field) != desired["spec"].get(field)]


def _check_served(client, options):
    """api version -> served resources; TopologyError naming every requested consumer whose CRD is missing."""
    served, missing = {}, []
    for (consumer, kind), (api_version, resource) in engine.RESOURCES.items():
        if api_version not in served:
            served[api_version] = writer.served_resources(client, api_version)
        if consumer in options.consumers and resource not in served[api_version]:
            missing.append(f"{consumer}: {resource}.{writer.group_of(api_version)} ({api_version}, kind {kind})")
    if missing:
        raise TopologyError("the API server does not serve " + "; ".join(missing) + ": install the scheduler's CRDs "
                            "(Kueue v0.19 or later, KAI Scheduler with its Topology CRD); nothing was written")
    return served


def plan(client, rendered, options, cleanup=True, recreate=False):
    """Reads only. [(action, api_version, resource, name, desired or None, current or None)] in write order."""
    served = _check_served(client, options)
    applies, refused, kept, foreign, terminating = [], [], [], [], []
    wanted = set()
    for consumer, objects in rendered["objects"].items():
        for desired in objects:
            api_version, name = desired["apiVersion"], desired["metadata"]["name"]
            resource = engine.RESOURCES[(consumer, desired["kind"])][1]
            wanted.add((api_version, resource, name))
            current = writer.read_object(client, api_version, resource, name)
            oid = writer.object_id(api_version, resource, name)
            if current is None:
                applies.append(("create", api_version, resource, name, desired, None))
                continue
            problem = _owner_problem(current, options.name)
            if problem is not None:
                foreign.append(f"{oid} ({problem})")
                continue
            going = _terminating(current)
            if going is not None:
                terminating.append(f"{oid} ({going})")
                continue
            if _differs(current, desired):
                frozen = _immutable_changes(desired["kind"], current, desired)
                finalizers = (current.get("metadata") or {}).get("finalizers") or []
                if frozen and finalizers:
                    # Deleting would only mark it: Kueue keeps a Topology while a flavor names it, and a flavor
                    # while a ClusterQueue uses it, so the new object could never be created.
                    kept.append(f"{oid} ({', '.join(frozen)}; finalizers {', '.join(map(str, finalizers))})")
                elif frozen and not recreate:
                    refused.append(f"{oid} ({', '.join(frozen)})")
                applies.append(("recreate" if frozen else "update", api_version, resource, name, desired, current))
    if foreign:
        raise TopologyError(f"these objects exist and are not this set's to write (ours carry {engine.LABEL_MANAGED_BY}="
                            f"{engine.MANAGED_BY} and {engine.LABEL_SET}={options.name}): {'; '.join(foreign)}. "
                            "Another team's object is never updated, deleted or recreated: choose another name or "
                            "flavor_name, or, if it is yours to hand over, set those labels on it first; nothing was "
                            "written")
    if terminating:
        raise TopologyError("these objects are being deleted, and what is written into them would go with them (a new "
                            f"one cannot be created until they are gone): {'; '.join(terminating)}. Wait until they are "
                            "gone (kubectl wait --for=delete), or release what holds them, then run again; nothing "
                            "was written")
    if kept:
        raise TopologyError("these objects must change a field the CRD makes immutable, and their finalizers would keep "
                            f"them after a delete (the scheduler still uses them): {'; '.join(kept)}. Give the new "
                            "levels a new name, point the queues at its flavor, then remove the old set; nothing was "
                            "written")
    if refused:
        raise TopologyError("the CRDs make these fields immutable, so the objects would have to be deleted and created "
                            f"again: {'; '.join(refused)}. Set recreate: true to do so (a scheduler may briefly see no "
                            "topology); nothing was written")
    deletes = []
    if cleanup:
        # Flavors first: a flavor names its Topology.
        for (_consumer, kind), (api_version, resource) in sorted(engine.RESOURCES.items(),
                                                                 key=lambda item: item[0][1] != "ResourceFlavor"):
            if resource not in served[api_version]:
                continue
            for item in client.list(writer.object_path(api_version, resource), engine.selector(options.name)):
                name = item["metadata"]["name"]
                # One being deleted already is left to finish: a second delete would change nothing.
                if (api_version, resource, name) not in wanted and _ours(item) and _terminating(item) is None:
                    deletes.append(("delete", api_version, resource, name, None, item))
    return applies + deletes


def list_selected(client, selection):
    """Node name -> labels of the nodes the flavor (or node_selector) selects: what the scheduler will see."""
    return {item["metadata"]["name"]: (item["metadata"].get("labels") or {})
            for item in client.list(_k8s.node_path(), _k8s.selector_string(selection), metadata_only=True)}


def _warn_findings(findings, summary, warn):
    if findings["missing_levels"]:
        names = [item["node"] for item in findings["missing_levels"]]
        warn(f"{summary['nodes_missing_levels']} selected nodes of the topology lack a level label, so Kueue and KAI "
             f"will not place pods on them: {hostlist.compress(names)[:500]}")
    if findings["shared_values"]:
        shown = ", ".join(f"{item['label']}={item['value']}" for item in findings["shared_values"][:10])
        warn(f"{summary['shared_values']} label values are found under more than one parent; podAffinity and the "
             f"native gang take each as one domain: {shown}")


def reconcile(client, topology, options, write_options, params=None, warn=None, diff=False):
    """The k8s_scheduler_topology module without Ansible: a result dict (``params``: node_selector, cleanup,
    recreate)."""
    params = params or {}
    warn = warn or (lambda message: None)
    selection = options.flavor_node_labels if "kueue" in options.consumers else params.get("node_selector")
    listed = list_selected(client, selection)
    rendered = engine.render(topology, options, selected=set(listed), warn=warn)
    findings, summary = rendered["findings"], dict(rendered["summary"])
    _warn_findings(findings, summary, warn)
    writes = plan(client, rendered, options, params.get("cleanup", True), params.get("recreate", False))
    on_nodes = engine.missing_on_nodes(listed, rendered["levels"])
    findings["missing_on_nodes"] = dict(list(on_nodes.items())[:engine.MAX_REPORTED])
    summary.update(nodes_listed=len(listed), nodes_listed_missing_levels=len(on_nodes))
    if on_nodes:
        warn(f"{len(on_nodes)} of the {len(listed)} selected nodes lack a level label on the server (not labelled "
             f"yet, or not by these keys): {hostlist.compress(sorted(on_nodes))[:500]}")
    done, after, error = writer.execute(client, writes, write_options, view)
    recreating = {writer.object_id(a, r, n) for action, a, r, n, _d, _c in writes if action == "recreate"}
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
            "before": {writer.object_id(a, r, n): view(current) for _x, a, r, n, _d, current in writes
                       if current is not None and writer.object_id(a, r, n) in written},
            "after": {oid: stored for oid, stored in after.items() if oid in written},
        }
    if error is not None:
        written = ", ".join(f"{_DONE[action]} {oid}" for action, oid in done) or "nothing"
        gone = [oid for action, oid in done if action == "delete" and oid in recreating]
        if gone:
            written += (f"; {', '.join(gone)} was deleted to be created again and is not there now (the scheduler "
                        "sees no such object): run again once the cause is fixed")
        raise PartialWrite(f"{error} (already written: {written})", result)
    return result
