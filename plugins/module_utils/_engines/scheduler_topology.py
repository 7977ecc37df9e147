# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The schedulers' topology objects: Kueue's Topology and ResourceFlavor, KAI Scheduler's Topology.

Built from the label map ``k8s_labels.desired_labels`` gives (the labels k8s_node_labels writes), so
the levels name exactly the keys the nodes carry. Levels go coarsest first: the top fabric tier down
to tier 0, the accelerator domain, optionally the sub-domain, ``kubernetes.io/hostname`` last (both
CRDs refuse the hostname anywhere but last, more than 16 levels, and a repeated key).

Both schedulers drop a node that lacks any level label (Kueue: it is no part of the flavor's
capacity; KAI: ``isNodePartOfTopology``), silently. So before anything is written this engine
reports, by node, what a node lacks (quarantined nodes lose all labels; nodes without a switch have
no tier), and refuses fabric tiers of differing depths unless ``fabric_tiers`` says how many to use.

Domains are identified by the path of values down to them: Kueue joins them with ``,`` (not a label
character, so never ambiguous), KAI with ``.``, which label values may hold, so two different paths
can give one KAI domain: refused when KAI is a consumer. podAffinity and the native gang of
kube-scheduler treat one value of one key as one domain: a value found under more than one parent is
reported (``shared_values``).

Pure functions: no network. The module's work is ``_orchestration/k8s_scheduler_topology``; the desired objects
(``kinds``, ``render``) are written by ``_writers/k8s_reconcile`` (its part ``k8s_objects``).
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._base.k8s_desired import Kind
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels

CONSUMERS = ("kueue", "kai")
KUEUE_API = "kueue.x-k8s.io/v1beta2"
KAI_API = "kai.scheduler/v1alpha1"
HOSTNAME_LABEL = "kubernetes.io/hostname"
MAX_LEVELS = 16            # both CRDs: spec.levels maxItems
MAX_FLAVOR_NODE_LABELS = 8  # Kueue: ResourceFlavor spec.nodeLabels maxProperties
# Our objects carry these labels (one set of objects per set name): ``kinds`` makes them the owner labels.
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "aifactory-topology"
LABEL_SET = "topology.aifactory.dev/scheduler-topology"
DEFAULT_NAME = "aifactory-topology"
MAX_REPORTED = 1000


def kinds(set_name):
    """(consumer, kind) -> k8s_desired.Kind: everything the writer lists, writes or deletes, in apply order (a
    Topology before the flavor naming it). Ours carry both labels; the CRDs freeze a Topology's levels and a
    flavor's nodeLabels and topologyName (once topologyName is set)."""
    owner = {LABEL_MANAGED_BY: MANAGED_BY, LABEL_SET: set_name}
    return {
        ("kueue", "Topology"): Kind(KUEUE_API, "Topology", "topologies", owner_labels=owner, immutable=("levels",),
                                    kubectl_ids=True),
        ("kueue", "ResourceFlavor"): Kind(KUEUE_API, "ResourceFlavor", "resourceflavors", owner_labels=owner,
                                          immutable=("nodeLabels", "topologyName"), immutable_once="topologyName",
                                          kubectl_ids=True),
        ("kai", "Topology"): Kind(KAI_API, "Topology", "topologies", owner_labels=owner, immutable=("levels",),
                                  kubectl_ids=True),
    }


class Options:
    """What to render and write: consumers, names, which levels, the flavor's node labels, cleanup and recreate.

    Built by ``SCHEDULER.build(params, keys=..., node_selector=..., no_topology_value=...)``: the spec below states
    each default once; ``keys``, ``node_selector`` and ``no_topology_value`` are the label keys' concern
    (``k8s_module.LABEL_KEYS``). The flavor selects the nodes of ``node_selector`` unless
    ``flavor_node_labels`` says otherwise.
    """

    # pylint: disable-next=too-many-arguments
    def __init__(self, consumers, keys, name=DEFAULT_NAME, flavor_name=None, flavor_node_labels=None,
                 fabric_tiers=None, sub_domain=False, hostname=True, no_topology_value=None, node_selector=None,
                 cleanup=True, recreate=False):
        if not isinstance(consumers, (list, tuple)) or not consumers:
            raise TopologyError(f"consumers must be a non-empty list of {', '.join(CONSUMERS)}")
        unknown = [c for c in consumers if c not in CONSUMERS]
        if unknown:
            raise TopologyError(f"consumers: unknown {', '.join(map(repr, unknown))}; known: {', '.join(CONSUMERS)}")
        self.consumers = [c for c in CONSUMERS if c in consumers]
        self.keys = keys
        _labels.check_object_name(name, "name")
        self.name = name
        self.flavor_name = flavor_name or name
        _labels.check_object_name(self.flavor_name, "flavor_name")
        _check_value(name, "name")  # it is the value of our set label too
        self.node_selector = node_selector
        self.flavor_node_labels = dict(flavor_node_labels or node_selector or {})
        for key, value in self.flavor_node_labels.items():
            _labels.check_label_key(key, "flavor_node_labels key")
            _check_value(value, f"flavor_node_labels[{key!r}]")
        if "kueue" in self.consumers:
            if not self.flavor_node_labels:
                raise TopologyError("kueue: the ResourceFlavor needs at least one node label to select its nodes "
                                    "(Kueue refuses a topologyName without nodeLabels): set flavor_node_labels "
                                    "or node_selector")
            if len(self.flavor_node_labels) > MAX_FLAVOR_NODE_LABELS:
                raise TopologyError(f"flavor_node_labels: Kueue takes at most {MAX_FLAVOR_NODE_LABELS} node labels, "
                                    f"got {len(self.flavor_node_labels)}")
        if fabric_tiers is not None and (isinstance(fabric_tiers, bool) or not isinstance(fabric_tiers, int)
                                         or fabric_tiers < 0):
            raise TopologyError(f"fabric_tiers must be a whole number of at least 0, got {fabric_tiers!r}")
        self.fabric_tiers = fabric_tiers
        self.sub_domain = bool(sub_domain)
        self.hostname = bool(hostname)
        self.no_topology_value = no_topology_value
        self.cleanup = bool(cleanup)
        self.recreate = bool(recreate)
        _check_level_keys(self)


# k8s_scheduler_topology's own options (its DOCUMENTATION), stated once; ``build`` makes the engine's Options.
SCHEDULER = ArgumentSpec({
    "consumers": {"type": "list", "elements": "str", "required": True},
    "name": {"type": "str", "default": DEFAULT_NAME},
    "flavor_name": {"type": "str"},
    "flavor_node_labels": {"type": "dict"},
    "fabric_tiers": {"type": "int"},
    "sub_domain": {"type": "bool", "default": False},
    "hostname": {"type": "bool", "default": True},
    "cleanup": {"type": "bool", "default": True},
    "recreate": {"type": "bool", "default": False},
}, options_class=Options)


def _check_level_keys(options):
    """TopologyError naming a key that would be a level twice (both CRDs refuse a repeated key)."""
    keys = options.keys
    sources = [(key, f"fabric_labels[{index}]") for index, key in enumerate(keys.fabric_labels or [])]
    sources.append((keys.accelerator_label, "accelerator_label"))
    if options.sub_domain:
        sources.append((_labels.SUB_DOMAIN_LABEL, "sub_domain: true"))
    if options.hostname:
        sources.append((HOSTNAME_LABEL, "hostname: true"))
    for key in dict.fromkeys(key for key, _where in sources):
        wheres = [where for other, where in sources if other == key]
        if len(wheres) > 1:
            raise TopologyError(f"the level key {key} would be a level twice ({' and '.join(wheres)}); Kueue and KAI "
                                "refuse a repeated level key: give each level its own key (or set hostname: false); "
                                "nothing was written")


def _check_value(value, where):
    if not _labels.is_valid_label_value(value):
        raise TopologyError(f"{where}: {value!r} is not a valid Kubernetes label value (at most 63 letters, digits, "
                            "'-', '_', '.', starting and ending with a letter or digit)")


def _tier_keys(labels, keys):
    """The fabric tier keys a node's label map holds, tier 0 first (tiers are consecutive from 0)."""
    found = []
    while True:
        key = keys.fabric_key(len(found))
        if key is None or key not in labels:
            return found
        found.append(key)


def build_levels(nodes, desired, options):
    """(level keys coarsest first, tier depth used) for ``nodes`` (name -> model node); TopologyError when the
    model cannot give them."""
    keys = options.keys
    depths = {}
    for name, node in nodes.items():
        if node.switch is not None:  # nodes without a switch are reported, not counted
            depths.setdefault(len(_tier_keys(desired[name], keys)), []).append(name)
    deepest = max(depths, default=0)
    if options.fabric_tiers is None:
        if len(depths) > 1:
            shown = "; ".join(f"{depth} tiers: {hostlist.compress(sorted(names))[:300]}"
                              for depth, names in sorted(depths.items()))
            raise TopologyError(f"the nodes' fabric has differing depths ({shown}); every node must carry every level "
                                "label or Kueue and KAI ignore it. Set fabric_tiers to the number of tiers (from "
                                f"tier 0 up) to use, at most {min(depths)} to keep every node; nothing was written")
        depth = deepest
    else:
        depth = options.fabric_tiers
        if depth > deepest:
            raise TopologyError(f"fabric_tiers is {depth}, but the deepest node of the model has {deepest} tiers")
    tiers = [keys.fabric_key(tier) for tier in range(depth)]
    levels = list(reversed(tiers))
    if any(node.domain is not None for node in nodes.values()):
        levels.append(keys.accelerator_label)
    if options.sub_domain:
        if not any(node.sub_domain is not None for node in nodes.values()):
            raise TopologyError("sub_domain is set, but no node of the model has an accelerator sub-domain")
        levels.append(_labels.SUB_DOMAIN_LABEL)
    if not levels:
        raise TopologyError("the model gives no node a fabric tier or an accelerator domain, so there is no "
                            "topology level to render (the existing objects are kept)")
    if options.hostname:
        levels.append(HOSTNAME_LABEL)
    if len(levels) > MAX_LEVELS:
        raise TopologyError(f"{len(levels)} levels; Kueue and KAI take at most {MAX_LEVELS}: set fabric_tiers lower")
    return levels, depth


def missing_levels(nodes, quarantined, desired, levels, keys):
    """Nodes the schedulers would drop: [{node, missing, reason}], model nodes first, then the quarantine records."""
    wanted = [key for key in levels if key != HOSTNAME_LABEL]
    domain_keys = (keys.accelerator_label, _labels.SUB_DOMAIN_LABEL)
    found = []
    for name in sorted(nodes):
        missing = [key for key in wanted if key not in desired[name]]
        if missing:
            if nodes[name].switch is None:
                reason = "no switch (no-topology)"
            elif any(key not in domain_keys for key in missing):
                reason = "shallower fabric"
            else:
                reason = "no accelerator domain or sub-domain"
            found.append({"node": name, "missing": missing, "reason": reason})
    for record in quarantined:
        if record.node is not None:
            found.append({"node": record.node, "missing": wanted, "reason": "quarantined (unhealthy)" if record.unhealthy else "quarantined (invalid data)"})
    return found


def missing_on_nodes(listed_labels, levels):
    """Live check: {node: missing level keys} of listed nodes (name -> labels) that lack a level label."""
    found = {}
    for name, labels in sorted(listed_labels.items()):
        missing = [key for key in levels if key not in labels]
        if missing:
            found[name] = missing
    return found


def level_paths(desired, levels):
    """(node -> tuple of its values coarsest first, for the nodes carrying every non-hostname level; those keys)."""
    wanted = [key for key in levels if key != HOSTNAME_LABEL]
    return {name: tuple(labels[key] for key in wanted) for name, labels in desired.items()
            if all(key in labels for key in wanted)}, wanted


def shared_values(paths, wanted):
    """Values of one level found under more than one parent path: one domain to podAffinity and the native gang,
    several to Kueue and KAI. [{label, value, parents, nodes}]. ``paths, wanted``: from level_paths."""
    found = []
    for index in range(1, len(wanted)):
        parents, members = {}, {}
        for name, path in paths.items():
            parents.setdefault(path[index], set()).add(path[:index])
            members.setdefault(path[index], []).append(name)
        for value, under in sorted(parents.items()):
            if len(under) > 1:
                found.append({"label": wanted[index], "value": value, "parents": len(under),
                              "nodes": hostlist.compress(sorted(members[value]))})
    return found


def kai_ambiguous_ids(paths, wanted):
    """KAI domain ids ('.'-joined paths) that two different paths give: [{label, id, paths}]."""
    found = []
    distinct = set(paths.values())
    for index in range(len(wanted)):
        by_id = {}
        for path in distinct:
            by_id.setdefault(".".join(path[:index + 1]), set()).add(path[:index + 1])
        for domain_id, different in sorted(by_id.items()):
            if len(different) > 1:
                found.append({"label": wanted[index], "id": domain_id, "paths": sorted(map(list, different))})
    return found


def _metadata(name, set_name):
    return {"name": name, "labels": {LABEL_MANAGED_BY: MANAGED_BY, LABEL_SET: set_name}}


def topology_object(api_version, name, levels):
    return {"apiVersion": api_version, "kind": "Topology", "metadata": _metadata(name, name),
            "spec": {"levels": [{"nodeLabel": key} for key in levels]}}


def resource_flavor(name, topology_name, node_labels, set_name):
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": _metadata(name, set_name),
            "spec": {"nodeLabels": dict(sorted(node_labels.items())), "topologyName": topology_name}}


def render(topology, options, selected=None, warn=None):
    """The desired objects and findings: {objects: {consumer: [object, ...]}, kinds (``kinds(options.name)``),
    desired ([(Kind, object)] in apply order), levels, findings, summary}.

    ``selected``: the names of the nodes the objects are for (those the flavor selects on the server), or None
    for every node of the model; the levels and the checks look at the selected nodes of the model only.
    ``objects`` is in apply order (a Topology before the flavor that names it). TopologyError (nothing to write)
    for levels the model cannot give, differing depths without ``fabric_tiers``, or KAI domain ids that two paths
    share when KAI is a consumer. A node whose name or label value the API server would refuse is quarantined in
    ``topology`` (``k8s_labels.desired_labels``; ``warn`` names it).
    """
    all_labels = k8s_labels.desired_labels(topology, options.keys, options.no_topology_value, node_names=True,
                                           warn=warn)
    nodes = {name: node for name, node in topology.nodes.items() if selected is None or name in selected}
    quarantined = [record for record in topology.quarantined.values() if selected is None or record.node in selected]
    if not nodes:
        raise TopologyError(f"none of the {len(selected)} selected nodes is in the topology (wrong cluster, "
                            "flavor_node_labels, node_selector or topology?); nothing was written")
    desired = {name: all_labels[name] for name in nodes}
    levels, depth = build_levels(nodes, desired, options)
    paths, wanted = level_paths(desired, levels)
    objects = {}
    if "kueue" in options.consumers:
        objects["kueue"] = [topology_object(KUEUE_API, options.name, levels),
                            resource_flavor(options.flavor_name, options.name, options.flavor_node_labels,
                                            options.name)]
    if "kai" in options.consumers:
        objects["kai"] = [topology_object(KAI_API, options.name, levels)]
        ambiguous = kai_ambiguous_ids(paths, wanted)
        if ambiguous:
            shown = "; ".join(f"{item['label']} {item['id']!r} from {item['paths']}" for item in ambiguous[:5])
            raise TopologyError(f"KAI joins the level values of a domain with '.', so different paths would be one KAI "
                                f"domain: {shown}; rename the switches or domains; nothing was written")
    missing = missing_levels(nodes, quarantined, desired, levels, options.keys)
    shared = shared_values(paths, wanted)
    by_kind = kinds(options.name)
    return {
        "objects": objects,
        "kinds": by_kind,
        "desired": [(by_kind[(consumer, obj["kind"])], obj) for consumer, objs in objects.items() for obj in objs],
        "levels": levels,
        "findings": {"missing_levels": missing[:MAX_REPORTED], "shared_values": shared[:MAX_REPORTED]},
        "summary": {"levels": len(levels), "fabric_tiers": depth, "nodes_in_topology": len(topology.nodes),
                    "nodes_selected": len(nodes), "nodes_missing_levels": len(missing),
                    "shared_values": len(shared)},
    }
