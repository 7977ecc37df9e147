# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Providers that read Kubernetes Node objects: ``dra`` and ``node_labels``.

* ``dra``: accelerator domains from the ``nvidia.com/gpu.clique`` label (NVIDIA's DRA driver and
  GPU feature discovery publish it) or another label; no switch tree (Topograph's ``dra`` provider).
* ``node_labels``: managed clusters that already publish topology labels (Crusoe-style): the tier
  labels (``fabric.topograph.run/tier-N`` or a configured list, tier 0 first) become the switch
  tree, the domain and sub-domain labels the accelerator domains. ``preset: crusoe`` names Crusoe's
  labels; ``require_ready``, ``on_missing_label`` and ``switch_ids: topograph`` are the options of
  Topograph's ``kubernetes`` provider (docs/providers/node_labels.md). Nodes being deleted are left out.

Common params: ``node_selector`` (label -> value), ``instance_annotation`` (default
``topograph.run/instance``, what Topograph's node data broker writes: the host name, used as the
model's node name; nodes without it keep their Kubernetes name; an empty string always uses the
Kubernetes name). creds: the Kubernetes connection options (``kubeconfig``, ``context``, ``host``,
``api_key``, ``validate_certs``, ``ca_cert``, ``client_cert``, ``client_key``), each falling back
to its ``K8S_AUTH_*`` variable.

Whoever may annotate or label a Node writes its data: an instance annotation or a label value the name rule
refuses (or a gap in a node's tiers) quarantines that node (``Topology.per_node``); the others are mapped.
"""

from __future__ import annotations

import hashlib

from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._transport.k8s_auth import CONNECTION
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology, name_problem
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import NodeDataError, TopologyError, clip
from ansible_collections.aifactory.topology.plugins.module_utils._base.labels import GPU_CLIQUE_LABEL, INSTANCE_ANNOTATION
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _specs

PRESETS = _specs.NODE_LABEL_PRESETS
ON_MISSING_LABEL = _specs.ON_MISSING_LABEL
SWITCH_IDS = _specs.SWITCH_IDS


class ClusterNode:
    """One listed Node: ``name`` in the model (its instance annotation, else its Kubernetes name), ``value`` (its
    labels, or the listed object), ``refused``: why the annotation cannot be a node name (that node is quarantined
    when it carries topology data), else None."""

    __slots__ = ("name", "kubernetes_name", "value", "refused")

    def __init__(self, name, kubernetes_name, value, refused=None):
        self.name = name
        self.kubernetes_name = kubernetes_name
        self.value = value
        self.refused = refused

    @property
    def shown(self):
        """How messages and warnings name the node: its model name, or its Kubernetes name when that one is refused."""
        return self.kubernetes_name if self.refused else self.name


def list_cluster_nodes(params, creds, client=None, items=False, status=False):
    """[ClusterNode] for the listed Nodes (``items``: the listed object instead of its labels: its metadata, and its
    status too with ``status``); two Nodes that map to one valid model name are an error."""
    if client is None:
        # The modules' connection options (one request_timeout default): creds are its auth options.
        client = _k8s.K8sClient.from_options(CONNECTION.build(dict(creds, request_timeout=params.get("request_timeout")),
                                                              where="creds"))
    selector = _k8s.selector_string(params.get("node_selector"), "params.node_selector")
    annotation = params.get("instance_annotation", INSTANCE_ANNOTATION)
    result, seen = [], {}
    for item in client.list(_k8s.node_path(), selector, metadata_only=not status):
        metadata = item.get("metadata") or {}
        name = metadata["name"]
        instance = ((metadata.get("annotations") or {}).get(annotation) or "").strip() if annotation else ""
        value = item if items else metadata.get("labels") or {}
        problem = name_problem(instance) if instance else None
        if problem is not None:  # whoever may annotate the Node wrote it: that node's problem, not the run's
            result.append(ClusterNode(instance, name, value, f"node {name} annotation {annotation}: {problem}"))
            continue
        model_name = instance or name
        if model_name in seen:
            raise TopologyError(f"nodes {seen[model_name]!r} and {name!r} both map to {model_name!r} "
                                f"(annotation {annotation})")
        seen[model_name] = name
        result.append(ClusterNode(model_name, name, value))
    return result


def discover_dra(params, creds, warn, client=None):
    label = params.get("label") or GPU_CLIQUE_LABEL
    _labels.check_label_key(label, "params.label")
    topology = Topology()
    listed = list_cluster_nodes(params, creds, client)
    without = []
    for node in listed:
        domain = (node.value.get(label) or "").strip()
        if not domain:
            without.append(node.shown)
            continue
        # An instance annotation or a label value the name rule refuses quarantines that node.
        with topology.per_node(node.name, "dra"):
            if node.refused:
                raise NodeDataError(node.refused)
            _check_label_values(node.name, [(domain, label)])
            topology.add_node(node.name, domain=domain, source=f"node {node.name} label {label}")
    if not topology.nodes and not topology.quarantined:  # all quarantined: discover reports them by name
        raise TopologyError(f"no listed node has the label {label!r} ({len(listed)} nodes listed"
                            + (" with node_selector" if params.get("node_selector") else "") + ")")
    if without:
        warn(f"{len(without)} nodes have no {label} label and are left out: {hostlist.compress(without)}")
    return topology


def _being_deleted(item):
    return bool((item.get("metadata") or {}).get("deletionTimestamp"))


def _is_ready(item):
    """The Node's Ready condition is True (a cordoned node is still ready: its workloads stay)."""
    for condition in (item.get("status") or {}).get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def topograph_switch_id(values):
    """Topograph's ``kubernetes`` provider's id of the tier whose path up is ``values`` (this tier first):
    the top tier's value as it is; below it, the value's first 30 characters (trailing ``-``, ``_``, ``.``
    dropped), ``-`` and the first 16 bytes, in hex, of the SHA-256 of the path joined with ``/``. The same
    value under two parents is two switches, and the id stays a valid label value (at most 63 characters)."""
    if len(values) == 1:
        return values[0]
    digest = hashlib.sha256("/".join(values).encode("utf-8")).hexdigest()[:32]
    return f"{values[0][:30].rstrip('-_.')}-{digest}"


def _preset(params):
    """(fabric_labels, accelerator_label) of ``params``, its ``preset`` applied."""
    preset = params.get("preset")
    fabric_labels, accelerator_label = params.get("fabric_labels"), params.get("accelerator_label")
    if preset is None:
        return fabric_labels, accelerator_label
    if preset not in PRESETS:
        raise TopologyError(f"params.preset: {clip(preset)} is not a preset; known: {', '.join(sorted(PRESETS))}")
    return PRESETS[preset]  # labels given too are refused with the spec (_specs.NODE_LABELS_PARAMS)


def _tier_path(name, labels, keys, on_missing):
    """The node's tier label values, tier 0 first; None to leave the node out (``on_missing: skip``)."""
    path = []
    while True:
        key = keys.fabric_key(len(path))
        if key is None or not labels.get(key):
            break
        path.append(labels[key])
    missing = keys.fabric_key(len(path))
    gap = next((keys.fabric_key(tier) for tier in range(len(path) + 1, len(path) + 8)
                if keys.fabric_key(tier) and labels.get(keys.fabric_key(tier))), None)
    if gap:
        problem = f"node {name}: has {gap} but no {missing}"
    elif (keys.fabric_labels is not None and missing is not None and on_missing != "partial"
          and (path or on_missing == "fail")):
        # Topograph's rule once on_missing_label is set: every listed tier label, or the node is skipped or fails.
        present = ", ".join(keys.fabric_key(tier) for tier in range(len(path)))
        problem = f"node {name}: has no {missing} label" + (f" (it has {present})" if path else "")
    else:
        problem = None
    if problem is None:
        return path
    if on_missing == "skip":
        return None
    if on_missing == "fail":
        raise TopologyError(problem + " (on_missing_label: fail)")
    raise NodeDataError(problem + "; tiers must start at tier 0 with no gap")


def _check_label_values(name, values):
    """A NodeDataError naming the label when one of the node's ``(value, label)`` pairs (None: no value) cannot be a
    switch or domain name."""
    for value, label in values:
        problem = name_problem(value) if value is not None else None
        if problem is not None:
            raise NodeDataError(f"node {name} label {label}: {problem}")


def discover_node_labels(params, creds, warn, client=None):
    fabric_labels, accelerator_label = _preset(params)
    keys = _labels.LabelKeys(fabric_labels, accelerator_label)
    sub_label = params.get("sub_domain_label") or _labels.SUB_DOMAIN_LABEL
    _labels.check_label_key(sub_label, "params.sub_domain_label")
    on_missing = params.get("on_missing_label") or "partial"
    if on_missing not in ON_MISSING_LABEL:
        raise TopologyError(f"params.on_missing_label must be one of {', '.join(ON_MISSING_LABEL)}, got {clip(on_missing)}")
    switch_ids = params.get("switch_ids") or "label"
    if switch_ids not in SWITCH_IDS:
        raise TopologyError(f"params.switch_ids must be one of {', '.join(SWITCH_IDS)}, got {clip(switch_ids)}")
    topology = Topology()
    listed = list_cluster_nodes(params, creds, client, items=True, status=bool(params.get("require_ready")))
    without, skipped, not_ready, deleted = [], [], [], []
    for node in listed:
        name, item = node.name, node.value
        if _being_deleted(item):
            deleted.append(node.shown)
            continue
        if params.get("require_ready") and not _is_ready(item):
            not_ready.append(node.shown)
            continue
        labels = (item.get("metadata") or {}).get("labels") or {}
        path, domain, sub_domain, quarantined = None, None, None, True
        # A gap in one node's tiers, or an instance annotation, tier or domain value the name rule refuses,
        # quarantines that node.
        with topology.per_node(name, "node_labels"):
            path = _tier_path(node.shown, labels, keys, on_missing)
            domain = (labels.get(keys.accelerator_label) or "").strip() or None
            sub_domain = (labels.get(sub_label) or "").strip() or None if domain else None
            if node.refused and path is not None and (path or domain is not None):
                raise NodeDataError(node.refused)  # only a node the map would hold
            _check_label_values(name, [(value, keys.fabric_key(tier)) for tier, value in enumerate(path or [])]
                                + [(domain, keys.accelerator_label), (sub_domain, sub_label)])
            quarantined = False
        if quarantined:
            continue
        if path is None:
            skipped.append(node.shown)
            continue
        if not path and domain is None:
            without.append(node.shown)
            continue
        if switch_ids == "topograph":
            path = [topograph_switch_id(path[tier:]) for tier in range(len(path))]
        for tier, switch in enumerate(path):
            topology.add_switch(switch, path[tier + 1] if tier + 1 < len(path) else None,
                                source=f"node {name} label {keys.fabric_key(tier)}")
        topology.add_node(name, path[0] if path else None, domain, sub_domain, source=f"node {name}")
    if not topology.nodes and not topology.quarantined:  # all quarantined: discover reports them by name
        raise TopologyError(f"no listed node has topology labels ({len(listed)} nodes listed"
                            + (f", {len(deleted)} being deleted" if deleted else "")
                            + (f", {len(not_ready)} not Ready" if not_ready else "")
                            + (f", {len(skipped)} missing a tier label" if skipped else "") + ")")
    if deleted:
        warn(f"{len(deleted)} nodes are being deleted and are left out: {hostlist.compress(deleted)}")
    if not_ready:
        warn(f"{len(not_ready)} nodes are not Ready and are left out (require_ready): {hostlist.compress(not_ready)}")
    if skipped:
        warn(f"{len(skipped)} nodes miss one of the tier labels {', '.join(keys.fabric_labels or ())} and are left out "
             f"(on_missing_label: skip): {hostlist.compress(skipped)}")
    if without:
        warn(f"{len(without)} nodes have no topology labels and are left out: {hostlist.compress(without)}")
    topology.check_switch_forest()
    return topology
