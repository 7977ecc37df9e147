# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's health and freshness as Prometheus metrics in node_exporter's textfile format.

``metrics(options, previous, now)`` turns the registered results of a run (slurm_topology,
k8s_node_labels, ...) and whether it failed into the values of one file,
``<directory>/aifactory_topology_<target>.prom``; ``render`` writes them with the official client
(prometheus-client, imported only here, so no other module needs it). A failed run keeps the
last success time and the map's counts of the previous file: the map on disk is still that one.

The previous file is read back only when it is exactly what this engine writes (``previous``): our
metric names, our ``target`` label, counts and times from 0 to MAX_COUNT, nothing else; anything else
is not read, not shown, and replaced. Counts given or reported are whole numbers from 0 to MAX_COUNT.

``changed`` is a change of the map's state (nodes, blocks, placeholders, quarantined, failure,
consecutive failures), not of the per-run values (the timestamps, the duration, files changed):
those differ on every run, and the file is rewritten on every run outside check mode, which is
the point of a freshness metric, but a second run over an unchanged cluster reports no change.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml
from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, clip


@dataclasses.dataclass(frozen=True)
class MetricsOptions:
    """One run of the pipeline as topology_metrics takes it (``METRICS``); a count given wins over ``results``."""

    directory: str
    target: str
    failed: bool
    started: float | None
    results: list
    nodes: int | None
    blocks: int | None
    placeholders: int | None
    quarantined: int | None


# topology_metrics' options (documented in the module), defaults stated once.
METRICS = ArgumentSpec({
    "directory": {"type": "path", "required": True},
    "target": {"type": "str", "required": True},
    "failed": {"type": "bool", "default": False},
    "started": {"type": "float"},
    "results": {"type": "list", "elements": "raw", "default": []},
    "nodes": {"type": "int"},
    "blocks": {"type": "int"},
    "placeholders": {"type": "int"},
    "quarantined": {"type": "int"},
}, options_class=MetricsOptions)

PREFIX = "aifactory_topology_"
TARGET_RE = re.compile(r"[a-z][a-z0-9_]{0,62}")  # fullmatch: "$" would match before a final newline
LABEL = "target"
MAX_COUNT = 2 ** 53  # every count and time below it is exact as a float (Prometheus keeps float64 values)
MAX_PREVIOUS_BYTES = 64 * 1024  # what this engine writes is about 2.5 KB

# name (without PREFIX) -> help; state metrics decide ``changed``, the per-run ones do not.
STATE = {
    "nodes": "Nodes in the topology the last run read (the previous run's when this one reported none).",
    "blocks": "Blocks written, placeholders included (the previous run's when this one reported none).",
    "placeholder_blocks": "Empty placeholder blocks written (the previous run's when this one reported none).",
    "quarantined_nodes": "Nodes left out of the map because their data was invalid or unhealthy.",
    "last_run_failed": "1 when the last run failed, 0 when it succeeded.",
    "consecutive_failures": "Runs that failed in a row (0 after a success).",
    "cabling_mismatches": "Differences between the designed and the discovered topology that the last comparison "
                          "(topology_compare) found; absent until one ran.",
    "controller_mismatches": "Differences between the topology file and what the running slurmctld holds, probes "
                             "answered across blocks included, that the last check (slurm_topology_verify) found; "
                             "absent until one ran.",
}
# Counts written only once a run reported them (then kept): a 0 would claim a check nobody ran.
REPORTED_ONLY = ("cabling_mismatches", "controller_mismatches")
PER_RUN = {
    "last_run_timestamp_seconds": "When the last run ended, in seconds since the epoch.",
    "last_success_timestamp_seconds": "When the last successful run ended, in seconds since the epoch "
                                      "(0: no run has succeeded yet).",
    "last_run_duration_seconds": "How long the last run took.",
    "last_run_files_changed": "Files or objects the last run changed.",
}
COUNTS = {"nodes": "nodes", "blocks": "blocks", "placeholder_blocks": "placeholders",
          "quarantined_nodes": "quarantined"}


def dest(options):
    """The textfile of ``options`` (``MetricsOptions``); an error naming the field for a target node_exporter would not read."""
    target = options.target
    if not isinstance(target, str) or not TARGET_RE.fullmatch(target):
        raise TopologyError(f"target must be a lower-case name of letters, digits and '_' starting with a letter "
                            f"(at most 63 characters; it names the file and the {LABEL!r} label), got {clip(target)}")
    for name in ("nodes", "blocks", "placeholders", "quarantined"):
        if getattr(options, name) is not None:
            _count(getattr(options, name), name)
    started = options.started
    if started is not None and (not math.isfinite(started) or started < 0):
        raise TopologyError(f"started must be a time in seconds since the epoch, got {clip(started)}")
    return os.path.join(options.directory, f"{PREFIX}{target}.prom")


def _client():
    try:
        import prometheus_client  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise TopologyError("writing metrics needs the Python package prometheus-client on the host that writes "
                            "them (pip install prometheus-client, or Debian's python3-prometheus-client)") from None
    return prometheus_client


def _count(value, where):
    """``value`` as a count; TopologyError naming ``where`` unless it is a whole number from 0 to MAX_COUNT."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise TopologyError(f"{where} must be a whole number from 0 to {MAX_COUNT} (2**53), got {clip(value)}")
    return value


_NUMBER = r"[0-9]+(?:\.[0-9]*)?(?:e[-+][0-9]+)?"  # prometheus-client's floatToGoString of a value >= 0
_NAMES = "|".join(sorted({**STATE, **PER_RUN}))
_HELP_LINE = re.compile(rf"# HELP {PREFIX}({_NAMES}) [^\n]*")
_TYPE_LINE = re.compile(rf"# TYPE {PREFIX}({_NAMES}) gauge")
_SAMPLE_LINE = re.compile(rf'{PREFIX}({_NAMES})\{{{LABEL}="([a-z][a-z0-9_]*)"\}} ({_NUMBER})')


def previous(text, target):
    """``(values, None)``: the values of ``target`` in an earlier file's ``text`` (name without PREFIX -> float),
    {} for no text; or ``({}, why)`` when ``text`` is not a file this engine wrote for ``target``: a line that is
    not one of our HELP, TYPE or sample lines (lines end at ``\\n`` only), another target, a metric twice, a value
    beyond MAX_COUNT. Such a file is neither read nor shown (it may be anything), only replaced."""
    if not text:
        return {}, None
    values = {}
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if _HELP_LINE.fullmatch(line) or _TYPE_LINE.fullmatch(line):
            continue
        sample = _SAMPLE_LINE.fullmatch(line)
        if sample is None or sample.group(2) != target or sample.group(1) in values:
            return {}, f"is not a file this module wrote for target {target} (line {number})"
        value = float(sample.group(3))
        if math.isnan(value) or value > MAX_COUNT:  # NaN compares false with everything
            return {}, f"is not a file this module wrote for target {target} (line {number}: a value beyond 2**53)"
        values[sample.group(1)] = value
    return values, None


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _summary_counts(result, where):
    """The counts one registered result reports (a skipped or failed task reports none); ``where`` names it."""
    if not isinstance(result, dict):
        return {}
    summary = result.get("summary")
    summary = summary if isinstance(summary, dict) else {}
    counts = {}
    nodes_key = "nodes" if "nodes" in summary else "nodes_in_topology"
    if _is_int(summary.get(nodes_key)):
        counts["nodes"] = _count(summary[nodes_key], f"{where}.summary.{nodes_key}")
    if _is_int(summary.get("blocks")):
        counts["blocks"] = _count(summary["blocks"], f"{where}.summary.blocks")
        placeholders = summary.get("placeholders", [])
        counts["placeholders"] = len(placeholders) if isinstance(placeholders, list) else 0
    elif summary.get("format") == "topology.yaml" and isinstance(result.get("content"), str):
        counts.update(_yaml_blocks(result["content"]))
    for name in REPORTED_ONLY:
        if _is_int(summary.get(name)):
            counts[name] = _count(summary[name], f"{where}.summary.{name}")
    if _is_int(summary.get("quarantined")):
        counts["quarantined"] = _count(summary["quarantined"], f"{where}.summary.quarantined")
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


def metrics(options, before, now):
    """The values to write (name without PREFIX -> number), from the run (``MetricsOptions``) and the previous values ``before``."""
    failed = options.failed
    counts = {}
    files_changed = 0
    for index, result in enumerate(options.results):
        for name, value in _summary_counts(result, f"results[{index}]").items():
            counts[name] = max(counts.get(name, value), value)
        if isinstance(result, dict) and result.get("changed") is True:
            files_changed += 1
    values = {}
    for metric, key in COUNTS.items():
        given = getattr(options, key)
        if given is None:
            # What the tasks that succeeded report; else the map on disk is still the previous run's.
            given = counts.get(key, before.get(metric, 0))
        values[metric] = int(given)
    for name in REPORTED_ONLY:
        reported = counts.get(name, before.get(name))
        if reported is not None:
            values[name] = int(reported)
    values["last_run_failed"] = int(failed)
    values["consecutive_failures"] = min(int(before.get("consecutive_failures", 0)) + 1, MAX_COUNT) if failed else 0
    values["last_run_timestamp_seconds"] = now
    values["last_success_timestamp_seconds"] = before.get("last_success_timestamp_seconds", 0) if failed else now
    if options.started is not None:
        values["last_run_duration_seconds"] = max(0.0, now - options.started)
    values["last_run_files_changed"] = files_changed
    return values


def state_changed(values, before):
    """Whether the map's state differs from the previous file's (the per-run values never count)."""
    return any(before.get(name) != values.get(name) for name in STATE)


def render(values, target):
    """The textfile, formatted by prometheus-client, every metric a gauge labelled ``target``."""
    prometheus_client = _client()
    registry = prometheus_client.CollectorRegistry(auto_describe=False)
    for name, help_text in {**STATE, **PER_RUN}.items():
        if name not in values:
            continue
        gauge = prometheus_client.Gauge(PREFIX + name, help_text, [LABEL], registry=registry)
        gauge.labels(target).set(values[name])
    return prometheus_client.generate_latest(registry).decode("utf-8")
