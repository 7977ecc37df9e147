# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A ConfigMap key (server-side apply with our own field manager, so we own only our key), a part of
``k8s_reconcile.reconcile``; and the pods that map Slurm nodes to Kubernetes nodes."""

from __future__ import annotations

import base64
import datetime

from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import APPLY_PATCH, WriteReport, read


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def prepare(client, part, options, now=now_rfc3339):
    """Read and check one ConfigMap key (``k8s_desired.ConfigMapKey``); the function that then applies it and our
    annotations (server-side, forced), only when something differs, returning a WriteReport.

    The guard runs when the content changes; the ConfigMap's data and annotations must stay within what the API
    server takes. The report: ``applied configmap/<namespace>/<name>`` when written; its diff is the key's text
    before (empty when there was none) and the content, under headers naming the key.
    """
    namespace, name, key, content = part.namespace, part.name, part.key, part.content
    path = _k8s.namespaced_path("/api/v1", namespace, "configmaps", name)
    current = read(client, path)
    shown = f"configmap/{namespace}/{name}"
    metadata = (current or {}).get("metadata") or {}
    have_annotations = metadata.get("annotations") or {}
    before = ((current or {}).get("data") or {}).get(key) if current is not None else None
    content_changed = before != content
    if content_changed and part.guard is not None:
        part.guard(before, content)
    wanted = dict(part.annotations)
    if part.timestamp_annotation:
        kept = have_annotations.get(part.timestamp_annotation)
        wanted[part.timestamp_annotation] = now() if content_changed or not kept else kept
    stale = [k for k in part.owned_annotations if k in have_annotations and k not in wanted]
    report = WriteReport(headers=(f"{shown} {key}" if before is not None else "/dev/null", f"{shown} {key}"))
    report.before, report.after = before or "", content
    if not content_changed and not stale and all(have_annotations.get(k) == v for k, v in wanted.items()):
        return lambda: report
    _check_configmap_sizes(current, key, content, wanted, stale, f"configmap {namespace}/{name}")
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "annotations": wanted},
        "data": {key: content},
    }

    def apply():
        try:
            client.request("PATCH", path, options.query(force="true"), body, APPLY_PATCH)
        except _k8s.K8sError as exc:
            report.error = exc
        else:
            report.done.append(("applied", shown))
        return report

    return apply


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
