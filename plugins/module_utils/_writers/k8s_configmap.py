# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Slinky ConfigMap key (server-side apply with our own field manager, so we own only our key),
the pods that map Slurm nodes to Kubernetes nodes, and the slinky_topology job that writes both.
"""

from __future__ import annotations

import base64
import datetime

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._engines import slinky
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import APPLY_PATCH, PartialWrite
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s_nodes import list_nodes, node_diff, patch_nodes, plan_node_changes


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def apply_configmap_key(client, namespace, name, key, content, annotations, options, owned_annotations=(),
                        timestamp_annotation=None, guard=None, now=now_rfc3339):
    """Server-side apply of one ConfigMap key and our annotations, only when something differs.

    ``timestamp_annotation`` is set to ``now()`` when the content changes and kept otherwise, so
    a rerun with the same content writes nothing. ``owned_annotations`` are keys we set in earlier
    runs that must disappear when no longer in ``annotations``. ``guard(before, content)`` may
    raise to refuse the write.
    Returns (changed, before content or None, server's content after the apply).
    """
    path = _k8s.namespaced_path("/api/v1", namespace, "configmaps", name)
    try:
        current = client.request("GET", path)
    except _k8s.K8sError as exc:
        if exc.status != 404:
            raise
        current = None
    metadata = (current or {}).get("metadata") or {}
    have_annotations = metadata.get("annotations") or {}
    before = ((current or {}).get("data") or {}).get(key) if current is not None else None
    content_changed = before != content
    if content_changed and guard is not None:
        guard(before, content)
    wanted = dict(annotations)
    if timestamp_annotation:
        kept = have_annotations.get(timestamp_annotation)
        wanted[timestamp_annotation] = now() if content_changed or not kept else kept
    stale = [k for k in owned_annotations if k in have_annotations and k not in wanted]
    if not content_changed and not stale and all(have_annotations.get(k) == v for k, v in wanted.items()):
        return False, before, before
    _check_configmap_sizes(current, key, content, wanted, stale, f"configmap {namespace}/{name}")
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "annotations": wanted},
        "data": {key: content},
    }
    result = client.request("PATCH", path, options.query(force="true"), body, APPLY_PATCH)
    return True, before, (result.get("data") or {}).get(key)


def _check_configmap_sizes(current, key, content, annotations, stale, where):
    """What the API server would refuse after the apply, refused before it: the ConfigMap's data over
    1 MiB (its other keys included) or its annotations over 256 KiB (everyone's, as merged)."""
    _labels.check_annotations(annotations, where, one_line=annotations)
    current = current or {}
    have = (current.get("metadata") or {}).get("annotations") or {}
    merged = {k: v for k, v in have.items() if k not in stale}
    merged.update(annotations)
    size = _labels.annotations_size(merged)
    if size > _labels.MAX_ANNOTATIONS_BYTES:
        raise TopologyError(f"{where}: its annotations would total {size} bytes; the API server takes at most "
                            f"{_labels.MAX_ANNOTATIONS_BYTES}")
    data = dict(current.get("data") or {}, **{key: content})
    size = sum(len(value.encode("utf-8")) for value in data.values())
    size += sum(len(base64.b64decode(value)) for value in (current.get("binaryData") or {}).values())
    if size > _labels.MAX_CONFIGMAP_DATA_BYTES:
        raise TopologyError(f"{where}: its data would total {size} bytes with {key}; the API server takes at most "
                            f"{_labels.MAX_CONFIGMAP_DATA_BYTES} (1 MiB)")


# -- pods (Slinky dynamic nodes) ---------------------------------------------------------------

def ready_pod_nodes(client, namespace, label_selector, name_label):
    """Slurm node name -> Kubernetes node name, from Running and Ready pods carrying ``name_label``."""
    mapping = {}
    for pod in client.list(_k8s.namespaced_path("/api/v1", namespace, "pods"), label_selector):
        status = pod.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        slurm_name = ((pod.get("metadata") or {}).get("labels") or {}).get(name_label, "").strip()
        node = (pod.get("spec") or {}).get("nodeName")
        if status.get("phase") == "Running" and ready and slurm_name and node:
            mapping[slurm_name] = node
    return mapping


# -- Slinky ------------------------------------------------------------------------------------

SLINKY_FIELD_MANAGER = "aifactory-topology-slinky"


class AnnotationKeys:
    """The node annotations slinky_topology manages: only the spec."""

    @staticmethod
    def is_managed(key):
        return key == slinky.SPEC_ANNOTATION

    def managed(self, annotations):
        return {key: value for key, value in (annotations or {}).items() if self.is_managed(key)}


def reconcile_slinky(client, topology, params, options, warn=None, diff=False):
    """The slinky_topology module without Ansible: a result dict.

    Everything is read and checked before the first write (the ConfigMap, then the node annotations).
    """
    warn = warn or (lambda message: None)
    name, key, namespace = params["configmap_name"], params.get("configmap_key") or "topology.conf", params["namespace"]
    _labels.check_object_name(namespace, "namespace", dns_label=True)
    _labels.check_object_name(name, "configmap_name")
    _labels.check_configmap_key(key, "configmap_key")
    skeleton = bool(params.get("skeleton_only"))
    content, summary = slinky.render(topology, params, warn, skeleton=skeleton)
    specs = slinky.dynamic_specs(topology, params) if params.get("use_dynamic_nodes") else None
    pod_selector = _k8s.selector_string(params.get("pod_selector"), "pod_selector")
    if specs is not None and pod_selector:
        _labels.check_label_key(params.get("slurm_node_name_label"), "slurm_node_name_label")
    topologies = params.get("topologies")
    annotations = slinky.configmap_annotations(
        namespace, None if topologies else (params.get("plugin") or "topology/tree"),
        None if topologies else params.get("block_sizes"))

    name, key, namespace = params["configmap_name"], params.get("configmap_key") or "topology.conf", params["namespace"]

    def guard(before, after):
        if before is not None and not skeleton:
            message = shrink_guard.check_shrink(before, after, params.get("max_node_loss", 10.0),
                                                params.get("force", False),
                                                where=f"the current key {key} of configmap/{namespace}/{name}")
            if message:
                warn(message)

    node_plan = _plan_spec_annotations(client, specs, namespace, pod_selector, params, warn) \
        if specs is not None else None
    changed, before, _after = apply_configmap_key(
        client, namespace, name, key, content, annotations, options,
        owned_annotations=(slinky.ANNOTATION_PLUGIN, slinky.ANNOTATION_BLOCK_SIZES),
        timestamp_annotation=slinky.ANNOTATION_LAST_UPDATED, guard=guard)
    result = {"changed": changed, "configmap_changed": changed, "content": content, "annotated_nodes": [],
              "summary": summary}
    diffs = [{"before_header": f"configmap/{namespace}/{name} {key}" if before is not None else "/dev/null",
              "after_header": f"configmap/{namespace}/{name} {key}", "before": before or "", "after": content}]
    if node_plan is not None:
        changes, nodes, keys = node_plan
        written, error = patch_nodes(client, changes, nodes, keys, options, "annotations")
        result["annotated_nodes"] = [change.name for change in written]
        result["changed"] = result["changed"] or bool(written)
        diffs.append(dict(node_diff(written), before_header="node annotations", after_header="node annotations"))
        if error is not None:
            if diff:
                result["diff"] = diffs
            raise PartialWrite(f"{error} (spec annotations already set on: "
                               f"{hostlist.compress(result['annotated_nodes']) or 'no node'})", result)
    if diff:
        result["diff"] = diffs
    return result


def _plan_spec_annotations(client, specs, namespace, pod_selector, params, warn):
    """(changes, listed nodes, keys) for the spec annotations: reads only, and checks every annotation."""
    if pod_selector:
        slurm_to_node = ready_pod_nodes(client, namespace, pod_selector, params.get("slurm_node_name_label"))
    else:
        slurm_to_node = {node: node for node in specs}
    desired = {slurm_to_node[node]: {slinky.SPEC_ANNOTATION: spec} for node, spec in specs.items()
               if node in slurm_to_node}
    for node, wanted in desired.items():
        _labels.check_annotations(wanted, f"node {node}", one_line=wanted)
    nodes = list_nodes(client)
    unplaced = sorted(node for node in specs if slurm_to_node.get(node) not in nodes)
    if unplaced:
        warn(f"{len(unplaced)} Slurm nodes run on no listed Kubernetes node and get no spec annotation: "
             f"{hostlist.compress(unplaced)}")
    keys = AnnotationKeys()
    return plan_node_changes(nodes, desired, keys, "annotations"), nodes, keys
