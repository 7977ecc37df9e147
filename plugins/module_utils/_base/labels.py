# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The label vocabulary: Topograph's label keys, and Kubernetes' rules for what the writers send.

Neutral ground for everything that reads or writes labels: the label engine, the Kubernetes
transport and the providers that read labels back. Values longer than 63 characters become
``x`` + the lowercase, unpadded hex of their FNV-64a hash, as Topograph does.

The rules are the API server's own (k8s.io/apimachinery ``validation.IsQualifiedName``,
``IsValidLabelValue``, ``IsDNS1123Subdomain``, ``IsDNS1123Label``, ``IsConfigMapKey``;
``ValidateAnnotations`` and its ``TotalAnnotationSizeLimitB``), so the writers refuse, before any
request, what the server would refuse after some writes were made. Every pattern is matched
whole (``fullmatch``): ``$`` alone also matches before a trailing newline.
"""

from __future__ import annotations

import re

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, clip

FABRIC_PREFIX = "fabric.topograph.run/tier-"
ACCELERATOR_LABEL = "accelerator.topograph.run/domain"
# The Node label of NVIDIA's DRA driver and GPU feature discovery: <ClusterUUID>.<CliqueId> of the node's NVLink domain.
GPU_CLIQUE_LABEL = "nvidia.com/gpu.clique"
SUB_DOMAIN_LABEL = "accelerator.topograph.run/sub-domain"
MAX_VALUE_LENGTH = 63
# Node annotations of Topograph's Node Data Broker (k8s_node_annotations writes them from topology_facts):
# the host name, the region ("local" outside the clouds) and the nvidia-smi domain <ClusterUUID>.<CliqueId>.
INSTANCE_ANNOTATION = "topograph.run/instance"
REGION_ANNOTATION = "topograph.run/region"
CLUSTER_ID_ANNOTATION = "topograph.run/cluster-id"
BROKER_ANNOTATIONS = (INSTANCE_ANNOTATION, REGION_ANNOTATION, CLUSTER_ID_ANNOTATION)
# Where the hardware says a tray is (k8s_node_labels' location_labels), under the collection's own prefix: the
# model's place keys -> label keys. With the NVLink domain label they name the rack (domain, chassis).
LOCATION_LABELS = {"chassis_serial_number": "topology.aifactory.dev/chassis", "slot_number": "topology.aifactory.dev/slot",
                   "tray_index": "topology.aifactory.dev/tray", "host_id": "topology.aifactory.dev/host"}

_LOCATION_KEYS = frozenset(LOCATION_LABELS.values())
_FNV64_OFFSET = 0xCBF29CE484222325
_FNV64_PRIME = 0x100000001B3
_MASK64 = 0xFFFFFFFFFFFFFFFF
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = _DNS_LABEL + r"(\." + _DNS_LABEL + r")*"
_QUALIFIED_NAME = re.compile(r"(?:(?P<prefix>" + _DNS_SUBDOMAIN + r")/)?(?P<name>" + _NAME + r")")
_LABEL_VALUE = re.compile(r"(" + _NAME + r")?")
_DNS_LABEL_NAME = re.compile(_DNS_LABEL)
_DNS_SUBDOMAIN_NAME = re.compile(_DNS_SUBDOMAIN)
_CONFIGMAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")
# C0 and C1 controls, DEL, and the line and paragraph separators: nothing a one-line value may hold.
_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
MAX_NAME_LENGTH = 63
MAX_PREFIX_LENGTH = 253
MAX_DNS_SUBDOMAIN_LENGTH = 253
MAX_CONFIGMAP_KEY_LENGTH = 253
# apimachinery's TotalAnnotationSizeLimitB: the keys and values of all of an object's annotations, in bytes.
MAX_ANNOTATIONS_BYTES = 256 * (1 << 10)
# core.MaxSecretSize: the values of all of a ConfigMap's data, in bytes.
MAX_CONFIGMAP_DATA_BYTES = 1 << 20


def fnv64a_hex(value):
    digest = _FNV64_OFFSET
    for byte in value.encode("utf-8"):
        digest = ((digest ^ byte) * _FNV64_PRIME) & _MASK64
    return format(digest, "x")


def label_value(value):
    """The label value Topograph writes for ``value``: unchanged up to 63 characters, else hashed."""
    return value if len(value) <= MAX_VALUE_LENGTH else "x" + fnv64a_hex(value)


def qualified_name_problem(key):
    """Why ``key`` is not a valid label key (an optional DNS-subdomain prefix and '/', a name), or None."""
    if not isinstance(key, str):
        return f"must be a string, got {clip(key)}"
    match = _QUALIFIED_NAME.fullmatch(key)
    if match is None:
        return ("is not an optional DNS prefix (lower case) and '/', then a name of letters, digits, '-', '_', '.' "
                "starting and ending with a letter or digit")
    if len(match.group("name")) > MAX_NAME_LENGTH:
        return f"has a name of more than {MAX_NAME_LENGTH} characters"
    if len(match.group("prefix") or "") > MAX_PREFIX_LENGTH:
        return f"has a prefix of more than {MAX_PREFIX_LENGTH} characters"
    return None


def check_label_key(key, where):
    problem = qualified_name_problem(key)
    if problem:
        raise TopologyError(f"{where}: {clip(key)} is not a valid Kubernetes label key: it {problem}")


def is_valid_label_value(value):
    return isinstance(value, str) and len(value) <= MAX_VALUE_LENGTH and _LABEL_VALUE.fullmatch(value) is not None


def dns_subdomain_problem(name):
    """Why ``name`` cannot name a node, ConfigMap or other object (RFC 1123 subdomain, <= 253), or None."""
    if not isinstance(name, str):
        return f"must be a string, got {clip(name)}"
    if len(name) > MAX_DNS_SUBDOMAIN_LENGTH:
        return f"is longer than {MAX_DNS_SUBDOMAIN_LENGTH} characters"
    if _DNS_SUBDOMAIN_NAME.fullmatch(name) is None:
        return "is not lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
    return None


def check_node_names(names, where):
    """TopologyError naming every name of ``names`` that can never be a Kubernetes node name."""
    bad = [name for name in names if dns_subdomain_problem(name)]
    if bad:
        shown = ", ".join(clip(name) for name in bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise TopologyError(f"{where}: {len(bad)} names can never be Kubernetes node names (lower-case RFC 1123 "
                            f"subdomains of at most {MAX_DNS_SUBDOMAIN_LENGTH} characters): {shown}")


def check_object_name(name, where, dns_label=False):
    """A namespace (``dns_label``: RFC 1123 label, <= 63) or object name (RFC 1123 subdomain, <= 253)."""
    if dns_label:
        ok = isinstance(name, str) and len(name) <= MAX_NAME_LENGTH and _DNS_LABEL_NAME.fullmatch(name) is not None
        problem = None if ok else (f"is not at most {MAX_NAME_LENGTH} lower-case letters, digits and '-', starting "
                                   "and ending with a letter or digit")
    else:
        problem = dns_subdomain_problem(name)
    if problem:
        raise TopologyError(f"{where}: {clip(name)} {problem}")


def check_configmap_key(key, where):
    ok = (isinstance(key, str) and len(key) <= MAX_CONFIGMAP_KEY_LENGTH and _CONFIGMAP_KEY.fullmatch(key) is not None
          and key not in (".", "..") and not key.startswith(".."))
    if not ok:
        raise TopologyError(f"{where}: {clip(key)} is not a valid ConfigMap key (at most {MAX_CONFIGMAP_KEY_LENGTH} "
                            "letters, digits, '-', '_', '.'; not '.', '..' or starting with '..')")


def one_line_problem(value):
    """Why ``value`` cannot be a one-line string (not a string, a line break or control character), or None."""
    if not isinstance(value, str):
        return f"must be a string, got {clip(value)}"
    found = _NOT_ONE_LINE.search(value)
    return None if found is None else f"holds the control character U+{ord(found.group()):04X}"


def annotations_size(annotations):
    """Bytes the API server counts against MAX_ANNOTATIONS_BYTES: UTF-8 keys plus values."""
    return sum(len(key.encode("utf-8")) + len(value.encode("utf-8")) for key, value in annotations.items())


def check_annotations(annotations, where, one_line=()):
    """TopologyError when the API server would refuse these annotations of one object: a key that is not
    a qualified name (checked in lower case, as the server does), a value in ``one_line`` that is not one
    line, or more than MAX_ANNOTATIONS_BYTES in all."""
    for key, value in annotations.items():
        problem = qualified_name_problem(key.lower() if isinstance(key, str) else key)
        if problem:
            raise TopologyError(f"{where}: {clip(key)} is not a valid Kubernetes annotation key: it {problem}")
        problem = one_line_problem(value) if key in one_line else (
            None if isinstance(value, str) else f"must be a string, got {clip(value)}")
        if problem:
            raise TopologyError(f"{where}: annotation {key} {problem}")
    size = annotations_size(annotations)
    if size > MAX_ANNOTATIONS_BYTES:
        raise TopologyError(f"{where}: the annotations would total {size} bytes; the API server takes at most "
                            f"{MAX_ANNOTATIONS_BYTES} (keys and values of all of an object's annotations)")


_DEFAULT_TIER = re.compile(r"^" + re.escape(FABRIC_PREFIX) + r"[0-9]+$")


class ManagedKeys:
    """The keys of a node's labels or annotations the collection manages: a fixed set (``keys``); ``LabelKeys``
    decides by rule. The writers touch only these, and remove the managed entries a node no longer gets."""

    def __init__(self, keys=()):
        self._fixed = frozenset(keys)

    def is_managed(self, key):
        return key in self._fixed

    def managed(self, entries):
        return {key: value for key, value in (entries or {}).items() if self.is_managed(key)}


class LabelKeys(ManagedKeys):
    """The label keys the collection manages: configured fabric tier keys and accelerator key.

    ``fabric_labels`` replaces the tier keys by index (tiers beyond the list get no label);
    ``accelerator_label`` replaces the domain key. The sub-domain key is fixed, as in Topograph.
    """

    def __init__(self, fabric_labels=None, accelerator_label=None, location_labels=False):
        super().__init__()
        if fabric_labels is not None and not isinstance(fabric_labels, (list, tuple)):
            raise TopologyError("fabric_labels must be a list of label keys, tier 0 first")
        self.fabric_labels = list(fabric_labels) if fabric_labels else None
        self.accelerator_label = accelerator_label or ACCELERATOR_LABEL
        self.location_labels = location_labels
        seen = {}
        for index, key in enumerate(self.fabric_labels or []):
            check_label_key(key, f"fabric_labels[{index}]")
            seen.setdefault(key, f"fabric_labels[{index}]")
        check_label_key(self.accelerator_label, "accelerator_label")
        used = list(self.fabric_labels or []) + [self.accelerator_label, SUB_DOMAIN_LABEL]
        duplicates = sorted({key for key in used if used.count(key) > 1})
        if duplicates:
            raise TopologyError(f"label keys must be unique; used more than once: {', '.join(duplicates)}")
        # The location keys are managed whether written or not: a tier or domain key among them would be
        # overwritten with a chassis or slot (or removed when location_labels is off).
        for option, key in [*((f"fabric_labels[{index}]", key) for index, key in enumerate(self.fabric_labels or [])),
                            ("accelerator_label", self.accelerator_label)]:
            if key in _LOCATION_KEYS:
                raise TopologyError(f"{option} is {key}, a key of location_labels (where the hardware says a tray "
                                    "is); give the tier or domain a key of its own")
        self._configured = frozenset(used)

    def fabric_key(self, tier):
        if self.fabric_labels is None:
            return f"{FABRIC_PREFIX}{tier}"
        return self.fabric_labels[tier] if tier < len(self.fabric_labels) else None

    def is_managed(self, key):
        """Managed keys: the configured ones, Topograph's defaults, any ``fabric.topograph.run/tier-<n>`` and the
        location labels (managed whether written or not, so turning ``location_labels`` off removes them)."""
        return (key in self._configured or key == ACCELERATOR_LABEL or key in _LOCATION_KEYS
                or _DEFAULT_TIER.match(key) is not None)
