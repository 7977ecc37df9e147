# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one node knows about its place in the fabric (the role of Topograph's Node Data Broker).

* InfiniBand HCAs from sysfs: ``<sysfs>/class/infiniband/<dev>/node_guid``, ``sys_image_guid``,
  ``node_desc``, ``node_type`` and per port ``ports/<n>/state``, ``phys_state``, ``rate``,
  ``link_layer``, as the kernel's ib_core publishes them (Documentation/ABI/stable/sysfs-class-infiniband).
* The NVLink clique, cluster UUID, fabric registration and health, and the tray's place, from one
  ``_nvidia_smi.QUERY`` (``nvlink_facts``), read and decided by ``_nvidia_smi``.

A node without HCAs or GPUs gives empty facts, not an error. The facts feed the ``infiniband``
provider (``params.node_facts``: HCA GUID -> node) and the ``nvidia_smi`` accelerator source
(``accelerator.nvidia_smi`` values may be these facts), and the Kubernetes node annotations
(``annotations``; keys in ``_labels``).
"""

from __future__ import annotations

import os
import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _nvidia_smi
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import LocalFileError, NodeUnhealthy, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._base.input_file import read_text
from ansible_collections.aifactory.topology.plugins.module_utils._base.numbers import whole_number_or_none

# sysfs values are a few bytes; never read more from a file there.
_MAX_SYSFS_READ = 4096
_NUMBERED = re.compile(r"^\d+:\s*(.*)$")  # "4: ACTIVE" -> "ACTIVE"
_GUID = re.compile(r"^([0-9a-fA-F]{4}):([0-9a-fA-F]{4}):([0-9a-fA-F]{4}):([0-9a-fA-F]{4})$")
# nvidia-smi exit code when the driver is loaded but no GPU is present.
NVIDIA_SMI_NO_DEVICES = 6


def _read(path):
    """A sysfs value, or None when it cannot be read: through the one input reader, so a FIFO or a
    device planted in the tree is refused, never opened for a read that blocks."""
    try:
        return read_text(path, "sysfs file", max_bytes=_MAX_SYSFS_READ).strip()
    except LocalFileError:
        return None


def _state(text):
    if text is None:
        return None
    match = _NUMBERED.match(text)
    return match.group(1).strip() if match else text


def guid(text):
    """sysfs ``e09d:7303:0037:311c`` -> ``0xe09d73030037311c`` (how ibnetdiscover's ``H-``/``S-`` ids read)."""
    match = _GUID.match(text or "")
    return "0x" + "".join(match.groups()).lower() if match else None


def infiniband_hcas(sysfs_root="/sys"):
    """One dict per HCA under ``<sysfs_root>/class/infiniband``, in natural device order; [] without any."""
    base = os.path.join(sysfs_root, "class", "infiniband")
    try:
        devices = sorted(os.listdir(base), key=hostlist.natural_key)
    except OSError:
        return []
    hcas = []
    for device in devices:
        root = os.path.join(base, device)
        ports_dir = os.path.join(root, "ports")
        try:
            port_names = sorted(os.listdir(ports_dir), key=hostlist.natural_key)
        except OSError:
            port_names = []
        ports = []
        for port in port_names:
            where = os.path.join(ports_dir, port)
            # A port directory named other than by ASCII digits ('²' is str.isdigit()) stays a name.
            number = whole_number_or_none(port, high=65535)
            ports.append({
                "port": port if number is None else number,
                "state": _state(_read(os.path.join(where, "state"))),
                "phys_state": _state(_read(os.path.join(where, "phys_state"))),
                "rate": _read(os.path.join(where, "rate")),
                "link_layer": _read(os.path.join(where, "link_layer")),
            })
        hcas.append({
            "device": device,
            "node_guid": guid(_read(os.path.join(root, "node_guid"))),
            "sys_image_guid": guid(_read(os.path.join(root, "sys_image_guid"))),
            "node_desc": _read(os.path.join(root, "node_desc")),
            "node_type": _state(_read(os.path.join(root, "node_type"))),
            "ports": ports,
        })
    return hcas


def _text(output):
    """``output`` (bytes or str) as text; a message, never a traceback, for bytes that are not UTF-8."""
    if isinstance(output, str):
        return output
    return (output or b"").decode("utf-8", "replace")


def _decoded(node, rc, stdout, stderr):
    """(text, problem) of one nvidia-smi run: (None, None) without a GPU, (None, problem) when it
    failed or printed bytes that are not UTF-8 (a replacement character would pass as part of a
    clique id: the output is refused instead)."""
    if rc == NVIDIA_SMI_NO_DEVICES:
        return None, None
    if rc != 0:
        detail = (_text(stderr) or _text(stdout)).strip().replace("\n", " ")[:500]
        return None, f"nvidia-smi failed (rc={rc}): {detail}"
    if isinstance(stdout, bytes):
        try:
            return stdout.decode("utf-8"), None
        except UnicodeDecodeError as exc:
            row = stdout[:exc.start].count(b"\n") + 1
            return None, (f"nvidia-smi output of {node}, row {row}: not UTF-8 (byte 0x{stdout[exc.start]:02x}); "
                          "its fabric fields cannot be read")
    return stdout, None


def nvlink_facts(node, run, fabric_health=True):
    """(nvlink facts, problem) of this node: one ``_nvidia_smi.QUERY`` process through ``run(args) -> (rc,
    stdout, stderr)``, read by the parser and decided by the decision of the ``nvidia_smi`` source.

    A driver that answers ``Field "..." is not a valid field to query`` is asked again without that
    field's group (the health or the platform fields; without the fabric fields it knows no NVLink),
    and, where the health fields are missing, ``nvidia-smi -q`` gives the health. ``query`` in the facts
    says which fields were read and where the health came from. No GPU (the driver's "no devices"
    exit) or a driver without fabric fields give ``{}``; a failed run gives ``{unhealthy}``, output
    that cannot be read ``{invalid}``, each with the problem for a warning.
    """
    fields = _nvidia_smi.FIELDS if fabric_health else _nvidia_smi.FABRIC_FIELDS + _nvidia_smi.PLATFORM_FIELDS
    for _attempt in range(len(_nvidia_smi.FIELD_GROUPS) + 1):
        rc, stdout, stderr = run(_nvidia_smi.query(fields).split()[1:])
        unknown = _nvidia_smi.UNKNOWN_FIELD.search(_text(stderr) + _text(stdout)) if rc not in (0, NVIDIA_SMI_NO_DEVICES) \
            else None
        if unknown is None:
            break
        group = next((names for names in _nvidia_smi.FIELD_GROUPS.values() if unknown.group(1) in names), None)
        if group is None or not set(group) & set(fields):
            return {}, None  # a driver that knows no fabric fields: no NVLink to report
        fields = tuple(field for field in fields if field not in group)
    text, problem = _decoded(node, rc, stdout, stderr)
    if text is None:
        if problem is None:  # no GPU
            return {}, None
        # A run that failed is the node's driver or GPUs (unhealthy); output that cannot be decoded is invalid.
        return ({"unhealthy": problem} if rc != 0 else {"invalid": problem}), problem
    try:
        records, _attached = _nvidia_smi.parse(node, text, fields)
        query = {"fields": list(fields), "health": "query" if set(_nvidia_smi.HEALTH_FIELDS) <= set(fields) else None}
        attached = None
        if fabric_health and query["health"] is None:
            records, attached, problem = _health_from_report(node, run, records)
            query["health"] = "nvidia-smi -q" if problem is None else None
        facts = _nvidia_smi.summarize(node, records, attached)
    except NodeUnhealthy as exc:
        return {"unhealthy": str(exc)}, str(exc)
    except TopologyError as exc:
        return {"invalid": str(exc)}, str(exc)
    facts["query"] = query
    facts["health_checked"] = query["health"] is not None
    try:
        _nvidia_smi.decide(node, facts)
    except NodeUnhealthy as exc:
        facts["unhealthy"] = str(exc)
        return facts, str(exc)
    except TopologyError as exc:
        return {"gpus": facts["gpus"], "invalid": str(exc)}, str(exc)
    return facts, problem


def _health_from_report(node, run, records):
    """``records`` with the health rows (and any platform fields they lack) of ``nvidia-smi -q``, GPU by
    GPU in the same order, and the GPU count it prints; or the records as they were and why not."""
    rc, stdout, stderr = run(_nvidia_smi.HEALTH_QUERY.split()[1:])
    text, problem = _decoded(node, rc, stdout, stderr)
    if text is None:
        return records, None, f"{node}: the NVLink fabric health was not checked: {problem or 'nvidia-smi -q found no GPU'}"
    try:
        reported, attached = _nvidia_smi.parse(node, text)
    except TopologyError as exc:
        return records, None, f"{node}: the NVLink fabric health was not checked: {exc}"
    if len(reported) != len(records):
        return records, None, (f"{node}: the NVLink fabric health was not checked: nvidia-smi -q prints "
                               f"{len(reported)} GPUs, the query {len(records)}")
    merged = []
    for (where, record), (_line, full) in zip(records, reported):
        extra = {field: value for field, value in full.items() if field not in record and
                 (field in _nvidia_smi.HEALTH_FIELDS or field in _nvidia_smi.PLATFORM_FIELDS)}
        merged.append((where, dict(record, **extra)))
    return merged, attached, None


def annotations(facts, region="local"):
    """Topograph's broker annotations of one node from its ``topology_node`` facts (cluster-id only with a clique)."""
    if not isinstance(facts, dict) or not facts.get("hostname"):
        raise TopologyError("node facts must be the topology_node fact of aifactory.topology.topology_facts "
                            "(a mapping with hostname)")
    result = {_labels.INSTANCE_ANNOTATION: str(facts["hostname"]), _labels.REGION_ANNOTATION: region}
    domain = (facts.get("nvlink") or {}).get("domain")
    if domain:
        result[_labels.CLUSTER_ID_ANNOTATION] = str(domain)
    return result


def broker_annotations(node_facts, region="local"):
    """Kubernetes node name -> its broker annotations, from node name -> ``topology_node`` fact."""
    if not isinstance(node_facts, dict) or not node_facts:
        raise TopologyError("node_facts must map each Kubernetes node name to its topology_node fact")
    problem = _labels.one_line_problem(region)
    if problem:
        raise TopologyError(f"region {problem}")
    desired = {}
    for name, facts in node_facts.items():
        try:
            desired[str(name)] = annotations(facts, region)
        except TopologyError as exc:
            raise TopologyError(f"node_facts.{name}: {exc}") from None
    return desired
