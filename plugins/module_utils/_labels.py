# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The label vocabulary: Topograph's label keys and Kubernetes' rules for keys and values.

Neutral ground for everything that reads or writes labels: the label engine, the Kubernetes
transport and the providers that read labels back. Values longer than 63 characters become
``x`` + the lowercase, unpadded hex of their FNV-64a hash, as Topograph does.
"""

from __future__ import annotations

import re

from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError

FABRIC_PREFIX = "fabric.topograph.run/tier-"
ACCELERATOR_LABEL = "accelerator.topograph.run/domain"
SUB_DOMAIN_LABEL = "accelerator.topograph.run/sub-domain"
MAX_VALUE_LENGTH = 63
# Node annotations of Topograph's Node Data Broker (k8s_node_annotations writes them from topology_facts):
# the host name, the region ("local" outside the clouds) and the nvidia-smi domain <ClusterUUID>.<CliqueId>.
INSTANCE_ANNOTATION = "topograph.run/instance"
REGION_ANNOTATION = "topograph.run/region"
CLUSTER_ID_ANNOTATION = "topograph.run/cluster-id"
BROKER_ANNOTATIONS = (INSTANCE_ANNOTATION, REGION_ANNOTATION, CLUSTER_ID_ANNOTATION)

_FNV64_OFFSET = 0xCBF29CE484222325
_FNV64_PRIME = 0x100000001B3
_MASK64 = 0xFFFFFFFFFFFFFFFF
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME = re.compile(r"^(?:(?P<prefix>[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/)?"
                             r"(?P<name>" + _NAME + r")$")
_LABEL_VALUE = re.compile(r"^(" + _NAME + r")?$")


def fnv64a_hex(value):
    digest = _FNV64_OFFSET
    for byte in value.encode("utf-8"):
        digest = ((digest ^ byte) * _FNV64_PRIME) & _MASK64
    return format(digest, "x")


def label_value(value):
    """The label value Topograph writes for ``value``: unchanged up to 63 characters, else hashed."""
    return value if len(value) <= MAX_VALUE_LENGTH else "x" + fnv64a_hex(value)


def check_label_key(key, where):
    match = _QUALIFIED_NAME.match(key) if isinstance(key, str) else None
    if match is None or len(match.group("name")) > 63 or len(match.group("prefix") or "") > 253:
        raise TopologyError(f"{where}: {key!r} is not a valid Kubernetes label key "
                            "(an optional DNS prefix and '/', then a name of up to 63 letters, digits, '-', '_', '.')")


def is_valid_label_value(value):
    return len(value) <= MAX_VALUE_LENGTH and _LABEL_VALUE.match(value) is not None


_DEFAULT_TIER = re.compile(r"^" + re.escape(FABRIC_PREFIX) + r"[0-9]+$")


class LabelKeys:
    """The label keys the collection manages: configured fabric tier keys and accelerator key.

    ``fabric_labels`` replaces the tier keys by index (tiers beyond the list get no label);
    ``accelerator_label`` replaces the domain key. The sub-domain key is fixed, as in Topograph.
    """

    def __init__(self, fabric_labels=None, accelerator_label=None):
        if fabric_labels is not None and not isinstance(fabric_labels, (list, tuple)):
            raise TopologyError("fabric_labels must be a list of label keys, tier 0 first")
        self.fabric_labels = list(fabric_labels) if fabric_labels else None
        self.accelerator_label = accelerator_label or ACCELERATOR_LABEL
        seen = {}
        for index, key in enumerate(self.fabric_labels or []):
            check_label_key(key, f"fabric_labels[{index}]")
            seen.setdefault(key, f"fabric_labels[{index}]")
        check_label_key(self.accelerator_label, "accelerator_label")
        used = list(self.fabric_labels or []) + [self.accelerator_label, SUB_DOMAIN_LABEL]
        duplicates = sorted({key for key in used if used.count(key) > 1})
        if duplicates:
            raise TopologyError(f"label keys must be unique; used more than once: {', '.join(duplicates)}")
        self._configured = frozenset(used)

    def fabric_key(self, tier):
        if self.fabric_labels is None:
            return f"{FABRIC_PREFIX}{tier}"
        return self.fabric_labels[tier] if tier < len(self.fabric_labels) else None

    def is_managed(self, key):
        """Managed keys: the configured ones, Topograph's defaults and any ``fabric.topograph.run/tier-<n>``."""
        return key in self._configured or key == ACCELERATOR_LABEL or _DEFAULT_TIER.match(key) is not None

    def managed(self, labels):
        return {key: value for key, value in (labels or {}).items() if self.is_managed(key)}
