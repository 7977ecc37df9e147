"""k8s_scheduler_topology: the Topology objects of Kueue and KAI Scheduler, checked, then server-side applied.

Order: the nodes the flavor selects are listed, the objects rendered for them (engine
``scheduler_topology``: the objects and their Kinds, with ownership and immutable fields), every consumer's
API must be served (its CRD installed); then ``_writers/k8s_reconcile.reconcile`` lists each resource once and,
before the first write, refuses a change of a field the CRD makes immutable (a Topology's levels, a topology
flavor's nodeLabels or topologyName) unless ``recreate``, and always when finalizers hold the object, and an
object of the same name that is not this set's (no managed-by label of ours: another team's) or that is being
deleted (``deletionTimestamp``). Then the objects are applied (a Topology before the flavor naming it) and our
stale objects deleted (a flavor before its Topology).
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._base.k8s_desired import Objects
from ansible_collections.aifactory.topology.plugins.module_utils._engines import scheduler_topology as engine
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import load_topology, warning_collector
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._writers import k8s_objects
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s_reconcile import reconcile as write

FIELD_MANAGER = "aifactory-topology-scheduler"
ADVICE = {"foreign": "choose another name or flavor_name, or, if it is yours to hand over, set those labels on it first",
          "kept": "give the new levels a new name, point the queues at its flavor, then remove the old set",
          "refused": " (a scheduler may briefly see no topology)"}


def run(module):
    """The module's work: check the options, discover or load, render, check, apply; exits the module."""
    warn, warnings = warning_collector(module)

    def work():
        params = module.params
        options = engine.SCHEDULER.build(params, keys=k8s_module.label_keys(params),
                                         node_selector=params["node_selector"],
                                         no_topology_value=params["no_topology_value"])
        topology = load_topology(module, warn)
        client, write_options = k8s_module.connect(module, FIELD_MANAGER)
        return reconcile(client, topology, options, write_options, warn, module._diff)

    k8s_module.run(module, work, warnings)


def served_kinds(client, options, kinds):
    """The Kinds the API server serves; TopologyError naming every requested consumer whose CRD is missing."""
    served, missing = {}, []
    for (consumer, _kind), kind in kinds.items():
        if kind.api_version not in served:
            served[kind.api_version] = k8s_objects.served_resources(client, kind.api_version)
        if consumer in options.consumers and kind.resource not in served[kind.api_version]:
            missing.append(f"{consumer}: {kind.resource}.{kind.group} ({kind.api_version}, kind {kind.kind})")
    if missing:
        raise TopologyError("the API server does not serve " + "; ".join(missing) + ": install the scheduler's CRDs "
                            "(Kueue v0.19 or later, KAI Scheduler with its Topology CRD); nothing was written")
    return [kind for kind in kinds.values() if kind.resource in served[kind.api_version]]


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


def reconcile(client, topology, options, write_options, warn=None, diff=False):
    """The k8s_scheduler_topology module without Ansible: a result dict (``options``: ``engine.SCHEDULER.build``)."""
    warn = warn or (lambda message: None)
    selection = options.flavor_node_labels if "kueue" in options.consumers else options.node_selector
    listed = list_selected(client, selection)
    rendered = engine.render(topology, options, selected=set(listed), warn=warn)
    findings, summary = rendered["findings"], dict(rendered["summary"])
    _warn_findings(findings, summary, warn)
    kinds = served_kinds(client, options, rendered["kinds"])
    on_nodes = engine.missing_on_nodes(listed, rendered["levels"])
    findings["missing_on_nodes"] = dict(list(on_nodes.items())[:engine.MAX_REPORTED])
    summary.update(nodes_listed=len(listed), nodes_listed_missing_levels=len(on_nodes))
    if on_nodes:
        warn(f"{len(on_nodes)} of the {len(listed)} selected nodes lack a level label on the server (not labelled "
             f"yet, or not by these keys): {hostlist.compress(sorted(on_nodes))[:500]}")
    report = write(client, [Objects(kinds, rendered["desired"], options.cleanup, options.recreate, advice=ADVICE)],
                   write_options)
    result = {
        "levels": rendered["levels"],
        "objects": [obj for objects in rendered["objects"].values() for obj in objects],
        "created": report.ids("created"),
        "updated": report.ids("updated", "recreated"),
        "deleted": report.ids("deleted"),
        "findings": findings,
        "summary": summary,
        "quarantined": topology.quarantine_report(),
    }
    return k8s_module.finish(result, report, diff)
