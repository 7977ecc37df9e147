# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's health and freshness as Prometheus metrics in node_exporter's textfile format.

``metrics(params, previous, now)`` turns the registered results of a run (slurm_topology,
k8s_node_labels, ...) and whether it failed into the values of one file,
``<directory>/aifactory_topology_<target>.prom``; ``render`` writes them with the official client
(prometheus-client, imported only here, so no other module needs it). A failed run keeps the
last success time and the map's counts of the previous file: the map on disk is still that one.

``changed`` is a change of the map's state (nodes, blocks, placeholders, quarantined, failure,
consecutive failures), not of the per-run values (the timestamps, the duration, files changed):
those differ on every run, and the file is rewritten on every run outside check mode, which is
the point of a freshness metric, but a second run over an unchanged cluster reports no change.
"""

from __future__ import annotations

import math
import os
import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, clip

PREFIX = "aifactory_topology_"
TARGET_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
LABEL = "target"

# name (without PREFIX) -> help; state metrics decide ``changed``, the per-run ones do not.
STATE = {
    "nodes": "Nodes in the topology the last run read (the previous run's when this one reported none).",
    "blocks": "Blocks written, placeholders included (the previous run's when this one reported none).",
    "placeholder_blocks": "Empty placeholder blocks written (the previous run's when this one reported none).",
    "quarantined_nodes": "Nodes left out of the map because their data was invalid or unhealthy.",
    "last_run_failed": "1 when the last run failed, 0 when it succeeded.",
    "consecutive_failures": "Runs that failed in a row (0 after a success).",
}
PER_RUN = {
    "last_run_timestamp_seconds": "When the last run ended, in seconds since the epoch.",
    "last_success_timestamp_seconds": "When the last successful run ended, in seconds since the epoch "
                                      "(0: no run has succeeded yet).",
    "last_run_duration_seconds": "How long the last run took.",
    "last_run_files_changed": "Files or objects the last run changed.",
}
COUNTS = {"nodes": "nodes", "blocks": "blocks", "placeholder_blocks": "placeholders",
          "quarantined_nodes": "quarantined"}


def dest(params):
    """The textfile of ``params``; an error naming the field for a target node_exporter would not read."""
    target = params["target"]
    if not isinstance(target, str) or not TARGET_RE.match(target):
        raise TopologyError(f"target must be a lower-case name of letters, digits and '_' starting with a letter "
                            f"(at most 63 characters; it names the file and the {LABEL!r} label), got {clip(target)}")
    for name in ("nodes", "blocks", "placeholders", "quarantined"):
        if params.get(name) is not None and params[name] < 0:
            raise TopologyError(f"{name} must be >= 0, got {params[name]}")
    started = params.get("started")
    if started is not None and (not math.isfinite(started) or started < 0):
        raise TopologyError(f"started must be a time in seconds since the epoch, got {clip(started)}")
    return os.path.join(params["directory"], f"{PREFIX}{target}.prom")


def _client():
    try:
        import prometheus_client  # pylint: disable=import-outside-toplevel
        from prometheus_client import parser  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise TopologyError("writing metrics needs the Python package prometheus-client on the host that writes "
                            "them (pip install prometheus-client, or Debian's python3-prometheus-client)") from None
    return prometheus_client, parser


def previous(text, target, warn):
    """Values of ``target`` in an earlier file's ``text`` (name without PREFIX -> float); {} if none."""
    if not text:
        return {}
    _prometheus, parser = _client()
    values = {}
    try:
        for family in parser.text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name.startswith(PREFIX) and sample.labels.get(LABEL) == target:
                    values[sample.name[len(PREFIX):]] = float(sample.value)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        warn(f"the previous metrics file could not be read ({exc.__class__.__name__}); the last success time "
             "and the counts start again")
        return {}
    return {name: value for name, value in values.items() if math.isfinite(value)}


def _summary_counts(result):
    """The counts one registered result reports (a skipped or failed task reports none)."""
    if not isinstance(result, dict):
        return {}
    summary = result.get("summary")
    summary = summary if isinstance(summary, dict) else {}
    counts = {}
    nodes = summary.get("nodes", summary.get("nodes_in_topology"))
    if isinstance(nodes, int) and not isinstance(nodes, bool):
        counts["nodes"] = nodes
    if isinstance(summary.get("blocks"), int):
        counts["blocks"] = summary["blocks"]
        placeholders = summary.get("placeholders", [])
        counts["placeholders"] = len(placeholders) if isinstance(placeholders, list) else 0
    elif summary.get("format") == "topology.yaml" and isinstance(result.get("content"), str):
        counts.update(_yaml_blocks(result["content"]))
    quarantined = summary.get("quarantined")
    if isinstance(quarantined, int) and not isinstance(quarantined, bool):
        counts["quarantined"] = quarantined
    elif isinstance(result.get("quarantined"), list):
        counts["quarantined"] = len(result["quarantined"])
    return counts


def _yaml_blocks(content):
    """Blocks and placeholders of every block topology of a topology.yaml."""
    try:
        entries = _yaml.safe_load(content)
    except _yaml.YAMLError:
        return {}
    blocks = [block for entry in entries if isinstance(entry, dict) and isinstance(entry.get("block"), dict)
              for block in entry["block"].get("blocks") or [] if isinstance(block, dict)] \
        if isinstance(entries, list) else []
    if not blocks:
        return {}
    return {"blocks": len(blocks), "placeholders": sum(1 for block in blocks if not block.get("nodes"))}


def metrics(params, before, now):
    """The values to write (name without PREFIX -> number), from the run and the previous values ``before``."""
    failed = bool(params["failed"])
    counts = {}
    files_changed = 0
    for result in params["results"] or []:
        for name, value in _summary_counts(result).items():
            counts[name] = max(counts.get(name, value), value)
        if isinstance(result, dict) and result.get("changed") is True:
            files_changed += 1
    values = {}
    for metric, key in COUNTS.items():
        given = params.get(key)
        if given is None:
            # What the tasks that succeeded report; else the map on disk is still the previous run's.
            given = counts.get(key, before.get(metric, 0))
        values[metric] = int(given)
    values["last_run_failed"] = int(failed)
    values["consecutive_failures"] = int(before.get("consecutive_failures", 0)) + 1 if failed else 0
    values["last_run_timestamp_seconds"] = now
    values["last_success_timestamp_seconds"] = before.get("last_success_timestamp_seconds", 0) if failed else now
    if params.get("started") is not None:
        values["last_run_duration_seconds"] = max(0.0, now - params["started"])
    values["last_run_files_changed"] = files_changed
    return values


def state_changed(values, before):
    """Whether the map's state differs from the previous file's (the per-run values never count)."""
    return any(before.get(name) != values[name] for name in STATE)


def render(values, target):
    """The textfile, formatted by prometheus-client, every metric a gauge labelled ``target``."""
    prometheus_client, _parser = _client()
    registry = prometheus_client.CollectorRegistry(auto_describe=False)
    for name, help_text in {**STATE, **PER_RUN}.items():
        if name not in values:
            continue
        gauge = prometheus_client.Gauge(PREFIX + name, help_text, [LABEL], registry=registry)
        gauge.labels(target).set(values[name])
    return prometheus_client.generate_latest(registry).decode("utf-8")
