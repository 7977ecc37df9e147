# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Providers that read Kubernetes Node objects: ``dra`` and ``node_labels``.

* ``dra``: accelerator domains from the ``nvidia.com/gpu.clique`` label (NVIDIA's DRA driver and
  GPU feature discovery publish it) or another label; no switch tree (Topograph's ``dra`` provider).
* ``node_labels``: managed clusters that already publish topology labels (Crusoe-style): the tier
  labels (``fabric.topograph.run/tier-N`` or a configured list, tier 0 first) become the switch
  tree, the domain and sub-domain labels the accelerator domains.

Common params: ``node_selector`` (label -> value), ``instance_annotation`` (default
``topograph.run/instance``, what Topograph's node data broker writes: the host name, used as the
model's node name; nodes without it keep their Kubernetes name; an empty string always uses the
Kubernetes name). creds: the Kubernetes connection options (``kubeconfig``, ``context``, ``host``,
``api_key``, ``validate_certs``, ``ca_cert``, ``client_cert``, ``client_key``), each falling back
to its ``K8S_AUTH_*`` variable.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils import _labels
from ansible_collections.aifactory.topology.plugins.module_utils import _hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils import _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _specs

GPU_CLIQUE_LABEL = _specs.GPU_CLIQUE_LABEL
INSTANCE_ANNOTATION = _specs.INSTANCE_ANNOTATION


def list_cluster_nodes(params, creds, client=None):
    """[(model node name, labels)] for the listed Nodes; duplicate model names are an error."""
    if client is None:
        client = _k8s.K8sClient.from_auth(creds, timeout=params.get("request_timeout") or 60.0)
    selector = _k8s.selector_string(params.get("node_selector"), "params.node_selector")
    annotation = params.get("instance_annotation", INSTANCE_ANNOTATION)
    result, seen = [], {}
    for item in client.list(_k8s.node_path(), selector):
        metadata = item.get("metadata") or {}
        name = metadata["name"]
        instance = ((metadata.get("annotations") or {}).get(annotation) or "").strip() if annotation else ""
        model_name = instance or name
        if model_name in seen:
            raise TopologyError(f"nodes {seen[model_name]!r} and {name!r} both map to {model_name!r} "
                                f"(annotation {annotation})")
        seen[model_name] = name
        result.append((model_name, metadata.get("labels") or {}))
    return result


def discover_dra(params, creds, warn, client=None):
    label = params.get("label") or GPU_CLIQUE_LABEL
    _labels.check_label_key(label, "params.label")
    topology = Topology()
    listed = list_cluster_nodes(params, creds, client)
    without = []
    for name, labels in listed:
        domain = (labels.get(label) or "").strip()
        if domain:
            topology.add_node(name, domain=domain, source=f"node {name} label {label}")
        else:
            without.append(name)
    if not topology.nodes:
        raise TopologyError(f"no listed node has the label {label!r} ({len(listed)} nodes listed"
                            + (" with node_selector" if params.get("node_selector") else "") + ")")
    if without:
        warn(f"{len(without)} nodes have no {label} label and are left out: {hostlist.compress(without)}")
    return topology


def discover_node_labels(params, creds, warn, client=None):
    keys = _labels.LabelKeys(params.get("fabric_labels"), params.get("accelerator_label"))
    sub_label = params.get("sub_domain_label") or _labels.SUB_DOMAIN_LABEL
    _labels.check_label_key(sub_label, "params.sub_domain_label")
    topology = Topology()
    listed = list_cluster_nodes(params, creds, client)
    without = []
    for name, labels in listed:
        path = []
        while True:
            key = keys.fabric_key(len(path))
            if key is None or not labels.get(key):
                break
            path.append(labels[key])
        gap = next((keys.fabric_key(tier) for tier in range(len(path) + 1, len(path) + 8)
                    if keys.fabric_key(tier) and labels.get(keys.fabric_key(tier))), None)
        if gap:
            raise TopologyError(f"node {name}: has {gap} but no {keys.fabric_key(len(path))}; tiers must start at "
                                "tier 0 with no gap")
        domain = (labels.get(keys.accelerator_label) or "").strip() or None
        sub_domain = (labels.get(sub_label) or "").strip() or None if domain else None
        if not path and domain is None:
            without.append(name)
            continue
        for tier, switch in enumerate(path):
            topology.add_switch(switch, path[tier + 1] if tier + 1 < len(path) else None,
                                source=f"node {name} label {keys.fabric_key(tier)}")
        topology.add_node(name, path[0] if path else None, domain, sub_domain, source=f"node {name}")
    if not topology.nodes:
        raise TopologyError(f"no listed node has topology labels ({len(listed)} nodes listed)")
    if without:
        warn(f"{len(without)} nodes have no topology labels and are left out: {hostlist.compress(without)}")
    topology.check_switch_forest()
    return topology
