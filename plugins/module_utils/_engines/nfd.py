# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node Feature Discovery objects: one NodeFeature per node, one NodeFeatureGroup per value.

Names, labels, annotations and rules are Topograph's nfd engine's (docs/kubernetes.md), so objects
written by either tool are the same objects. Built from the default topology label map
(``k8s_labels.desired_labels`` with default keys): ``fabric.topograph.run/tier-N`` becomes the
attribute ``fabric-tier-N``, the domain ``accelerator-domain``, the sub-domain ``accelerator-sub-domain``.
"""

from __future__ import annotations

import hashlib
import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._base.k8s_desired import CREATE, Kind

API_VERSION = "nfd.k8s-sigs.io/v1alpha1"
# The API path of the objects above (their group and version), for the writers and the tests.
API = "/apis/" + API_VERSION
FEATURE_SET = "topograph.network"
LABEL_NODE_NAME = "nfd.node.kubernetes.io/node-name"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_ENGINE = "topograph.run/engine"
LABEL_RESOURCE = "topograph.run/resource"
LABEL_GROUP_TYPE = "topograph.run/group-type"
ANNOTATION_NODE_NAME = "topograph.run/node-name"
ANNOTATION_LABEL_KEY = "topograph.run/label-key"
ANNOTATION_LABEL_VALUE = "topograph.run/label-value"
MANAGED_BY = "topograph"
ENGINE = "nfd"
RESOURCE_NODE_FEATURE = "nodefeature"
RESOURCE_NODE_FEATURE_GROUP = "nodefeaturegroup"

_DNS_UNSAFE = re.compile(r"[^a-z0-9]+")


def selector(resource):
    """The label selector of the managed objects of one kind (what stale cleanup lists)."""
    return f"{LABEL_MANAGED_BY}={MANAGED_BY},{LABEL_ENGINE}={ENGINE},{LABEL_RESOURCE}={resource}"


def kinds(namespace):
    """The two kinds of NFD object in ``namespace`` (k8s_desired.Kind), in apply order: created and JSON-patched
    (a same-named object without our labels is taken over), listed by our labels."""
    return [Kind(API_VERSION, "NodeFeature", "nodefeatures", namespace, CREATE, selector(RESOURCE_NODE_FEATURE)),
            Kind(API_VERSION, "NodeFeatureGroup", "nodefeaturegroups", namespace, CREATE,
                 selector(RESOURCE_NODE_FEATURE_GROUP))]


def dns_label_part(value):
    """Lowercase, runs of anything but [a-z0-9] become one '-', no leading or trailing '-'."""
    return _DNS_UNSAFE.sub("-", value.lower()).strip("-")


def stable_object_name(prefix, value):
    """``<prefix>-<dns-safe value>-<sha256(value)[:8]>``, at most 63 characters (Topograph's rule)."""
    prefix = dns_label_part(prefix) or "topograph"
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:8]
    part = dns_label_part(value) or "value"
    room = max(1, 63 - len(prefix) - len(digest) - 2)
    if len(part) > room:
        part = part[:room].strip("-") or "value"
    return f"{prefix}-{part}-{digest}"


def attribute_kind(key):
    """The NFD attribute name of a default topology label key, or None for other keys."""
    if key == _labels.ACCELERATOR_LABEL:
        return "accelerator-domain"
    if key == _labels.SUB_DOMAIN_LABEL:
        return "accelerator-sub-domain"
    if key.startswith(_labels.FABRIC_PREFIX) and key[len(_labels.FABRIC_PREFIX):].isdigit():
        return "fabric-tier-" + key[len(_labels.FABRIC_PREFIX):]
    return None


def node_feature(node, elements, namespace):
    return {
        "apiVersion": API_VERSION,
        "kind": "NodeFeature",
        "metadata": {
            "name": stable_object_name("topograph-node", node),
            "namespace": namespace,
            "labels": {
                LABEL_NODE_NAME: node,
                LABEL_MANAGED_BY: MANAGED_BY,
                LABEL_ENGINE: ENGINE,
                LABEL_RESOURCE: RESOURCE_NODE_FEATURE,
            },
            "annotations": {ANNOTATION_NODE_NAME: node},
        },
        "spec": {
            "features": {
                "attributes": {
                    "system.name": {"elements": {"nodename": node}},
                    FEATURE_SET: {"elements": dict(sorted(elements.items()))},
                },
            },
        },
    }


def node_feature_group(kind, value, label_key, namespace):
    return {
        "apiVersion": API_VERSION,
        "kind": "NodeFeatureGroup",
        "metadata": {
            "name": stable_object_name("topograph-" + kind, value),
            "namespace": namespace,
            "labels": {
                LABEL_MANAGED_BY: MANAGED_BY,
                LABEL_ENGINE: ENGINE,
                LABEL_RESOURCE: RESOURCE_NODE_FEATURE_GROUP,
                LABEL_GROUP_TYPE: kind,
            },
            "annotations": {ANNOTATION_LABEL_KEY: label_key, ANNOTATION_LABEL_VALUE: value},
        },
        "spec": {
            "featureGroupRules": [{
                "name": f"{kind} equals {value}",
                "matchFeatures": [{
                    "feature": FEATURE_SET,
                    "matchExpressions": {kind: {"op": "In", "value": [value]}},
                }],
            }],
        },
    }


def build_objects(node_labels, namespace):
    """(NodeFeatures, NodeFeatureGroups) from node -> default topology labels, sorted by name.

    A node without topology attributes gets no NodeFeature. A node name that is not a valid
    label value cannot be named by ``nfd.node.kubernetes.io/node-name`` and is an error.
    """
    features, groups = [], {}
    for node in sorted(node_labels):
        if not _labels.is_valid_label_value(node):
            raise TopologyError(f"node name {node!r} cannot be used as the {LABEL_NODE_NAME} label value")
        elements = {}
        for key, value in sorted(node_labels[node].items()):
            kind = attribute_kind(key)
            value = value.strip()
            if kind is None or not value:
                continue
            elements[kind] = value
            groups.setdefault((kind, value), key)
        if elements:
            features.append(node_feature(node, elements, namespace))
    group_objects = [node_feature_group(kind, value, key, namespace) for (kind, value), key in sorted(groups.items())]
    return features, group_objects
