# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Slinky ConfigMap key (server-side apply with our own field manager, so we own only our key),
the pods that map Slurm nodes to Kubernetes nodes, and the slinky_topology job that writes both.
"""

from __future__ import annotations

import datetime

from ansible_collections.aifactory.topology.plugins.module_utils import _hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils import _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._engines import slinky
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
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "annotations": wanted},
        "data": {key: content},
    }
    result = client.request("PATCH", path, options.query(force="true"), body, APPLY_PATCH)
    return True, before, (result.get("data") or {}).get(key)


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
    """The slinky_topology module without Ansible: a result dict."""
    warn = warn or (lambda message: None)
    skeleton = bool(params.get("skeleton_only"))
    content, summary = slinky.render(topology, params, warn, skeleton=skeleton)
    specs = slinky.dynamic_specs(topology, params) if params.get("use_dynamic_nodes") else None
    pod_selector = _k8s.selector_string(params.get("pod_selector"), "pod_selector")
    topologies = params.get("topologies")
    annotations = slinky.configmap_annotations(
        params["namespace"], None if topologies else (params.get("plugin") or "topology/tree"),
        None if topologies else params.get("block_sizes"))

    name, key, namespace = params["configmap_name"], params.get("configmap_key") or "topology.conf", params["namespace"]

    def guard(before, after):
        if before is not None and not skeleton:
            message = shrink_guard.check_shrink(before, after, params.get("max_node_loss", 10.0),
                                                params.get("force", False),
                                                where=f"the current key {key} of configmap/{namespace}/{name}")
            if message:
                warn(message)

    changed, before, _after = apply_configmap_key(
        client, namespace, name, key, content, annotations, options,
        owned_annotations=(slinky.ANNOTATION_PLUGIN, slinky.ANNOTATION_BLOCK_SIZES),
        timestamp_annotation=slinky.ANNOTATION_LAST_UPDATED, guard=guard)
    result = {"changed": changed, "configmap_changed": changed, "content": content, "annotated_nodes": [],
              "summary": summary}
    diffs = [{"before_header": f"configmap/{namespace}/{name} {key}" if before is not None else "/dev/null",
              "after_header": f"configmap/{namespace}/{name} {key}", "before": before or "", "after": content}]
    if specs is not None:
        if pod_selector:
            slurm_to_node = ready_pod_nodes(client, namespace, pod_selector, params.get("slurm_node_name_label"))
        else:
            slurm_to_node = {node: node for node in specs}
        desired = {slurm_to_node[node]: {slinky.SPEC_ANNOTATION: spec} for node, spec in specs.items()
                   if node in slurm_to_node}
        nodes = list_nodes(client)
        unplaced = sorted(node for node in specs if slurm_to_node.get(node) not in nodes)
        if unplaced:
            warn(f"{len(unplaced)} Slurm nodes run on no listed Kubernetes node and get no spec annotation: "
                 f"{hostlist.compress(unplaced)}")
        keys = AnnotationKeys()
        written, error = patch_nodes(client, plan_node_changes(nodes, desired, keys, "annotations"), nodes, keys,
                                     options, "annotations")
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
