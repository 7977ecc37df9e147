# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the cloud providers share: the instance-to-node map, credentials, client settings, placement.

Every cloud provider takes ``params.instances`` in NVIDIA Topograph's request form, a list of
``{region, instances: {instance id: node name}}``, and maps **only** those instances; the API's
other instances are ignored. Requested instances the API gives no topology for are kept as
nodes without a switch (the tree engine puts them under ``no-topology``) and reported in one
warning with their names and count.

Settings every cloud provider accepts (documented once in the ``provider`` doc fragment):
``page_size``, ``trim_tiers`` (drop the 0-2 highest fabric tiers), ``timeout`` (seconds per
request attempt, body included), ``retry_attempts``, ``retry_backoff`` (first delay in seconds, doubled per retry),
``retry_after_max`` (cap on a server's Retry-After), ``validate_certs`` and ``ca_bundle``.
"""

from __future__ import annotations

import math
import os
import time

from ansible_collections.aifactory.topology.plugins.module_utils import _hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._http import HttpClient
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError, credential_problem

COMMON_PARAMS = frozenset({
    "instances", "page_size", "trim_tiers", "timeout", "retry_attempts", "retry_backoff",
    "retry_after_max", "validate_certs", "ca_bundle",
})


def check_keys(mapping, allowed, where):
    """Unknown keys are an error naming them (never their values: creds are secret)."""
    extra = set(mapping) - set(allowed)
    if extra:
        raise TopologyError(f"{where} has unknown keys: {', '.join(sorted(map(str, extra)))}; "
                            f"known: {', '.join(sorted(allowed))}")


def requested_instances(params, provider, require_region=True):
    """``params.instances`` as ``[(region, {instance id: node name})]``, validated.

    An instance listed twice, or two instances mapped to one node, is an error naming both.
    """
    entries = params.get("instances")
    form = "a list of {region, instances: {instance id: node name}}"
    if not isinstance(entries, list) or not entries:
        raise TopologyError(f"the {provider} provider needs params.instances: {form}")
    where_instance: dict[str, str] = {}
    instance_of_node: dict[str, str] = {}
    result = []
    for index, entry in enumerate(entries):
        where = f"params.instances[{index}]"
        if not isinstance(entry, dict):
            raise TopologyError(f"{where} must be a mapping {{region, instances}}")
        check_keys(entry, {"region", "instances"}, where)
        region = entry.get("region")
        if region is not None and not isinstance(region, str):
            raise TopologyError(f"{where}.region must be a string, got {region!r}")
        if require_region and not (region or "").strip():
            raise TopologyError(f"{where}.region is required by the {provider} provider")
        mapping = entry.get("instances")
        if not isinstance(mapping, dict) or not mapping:
            raise TopologyError(f"{where}.instances must be a non-empty mapping of instance id to node name")
        clean = {}
        for raw_id, node in mapping.items():
            instance_id = str(raw_id).strip()
            if not instance_id:
                raise TopologyError(f"{where}.instances has an empty instance id")
            if not isinstance(node, str) or not node.strip():
                raise TopologyError(f"{where}.instances[{instance_id!r}]: the node name must be a non-empty string, "
                                    f"got {node!r}")
            if instance_id in where_instance:
                raise TopologyError(f"instance {instance_id!r} is listed twice: {where_instance[instance_id]} and {where}")
            if node in instance_of_node:
                raise TopologyError(f"node {node!r} is mapped from two instances: {instance_of_node[node]!r} "
                                    f"and {instance_id!r}")
            where_instance[instance_id] = where
            instance_of_node[node] = instance_id
            clean[instance_id] = node
        result.append((region, clean))
    return result


def secret(creds, key, env=(), required_by=None, multiline=False):
    """``creds[key]``, else the first set environment variable in ``env``; messages never show values.

    A credential is checked before any use: one with a line break (a YAML ``|`` block or a vault
    file adds a trailing newline), a control or a non-ASCII character is refused by name, since
    the libraries that would send it quote it in their errors. ``multiline`` allows line breaks
    (a PEM key).
    """
    value = creds.get(key)
    source = f"creds.{key}"
    if value is None or value == "":
        value = None
        for name in env:
            if os.environ.get(name):
                value, source = os.environ[name], f"the environment variable {name}"
                break
        if value is None:
            if required_by:
                hint = f" (or the environment variable {' or '.join(env)})" if env else ""
                raise TopologyError(f"the {required_by} provider needs creds.{key}{hint}")
            return None
    if not isinstance(value, str):
        raise TopologyError(f"{source} must be a string")
    problem = credential_problem(value.replace("\r\n", "").replace("\n", "") if multiline else value)
    if problem:
        raise TopologyError(f"{source} {problem}; the value is not shown")
    return value


def setting(params, key, default=None, env=(), required_by=None):
    """A non-secret string setting from params, else the environment, else ``default``."""
    value = params.get(key)
    if value is None or value == "":
        value = next((os.environ[name] for name in env if os.environ.get(name)), default)
    if value is not None and not isinstance(value, str):
        raise TopologyError(f"params.{key} must be a string, got {value!r}")
    if required_by and not value:
        hint = f" (or the environment variable {' or '.join(env)})" if env else ""
        raise TopologyError(f"the {required_by} provider needs params.{key}{hint}")
    return value


def number(params, key, default, minimum=0.0, integer=False):
    value = params.get(key, default)
    if value is None:
        value = default
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value) or value < minimum:
        raise TopologyError(f"params.{key} must be {'an integer' if integer else 'a number'} >= {minimum}, "
                            f"got {value!r}")
    return value


def page_size(params, default, warn, maximum=None):
    """Topograph's lesson: a page size of 0 or less never reaches the API (warn, use the default)."""
    value = params.get("page_size")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise TopologyError(f"params.page_size must be an integer, got {value!r}")
    if value <= 0:
        warn(f"params.page_size {value} is not positive; using the default {default}")
        return default
    if maximum is not None and value > maximum:
        warn(f"params.page_size {value} is above the API's maximum; using {maximum}")
        return maximum
    return value


def client_settings(params):
    """Timeout and retry policy, as keyword arguments for HttpClient (and the boto3/gRPC clients)."""
    return {
        "timeout": number(params, "timeout", 30.0, minimum=0.001),
        "attempts": number(params, "retry_attempts", 5, minimum=1, integer=True),
        "backoff": number(params, "retry_backoff", 0.5),
        "max_retry_after": number(params, "retry_after_max", 300.0),
        "sleep": _sleep,
    }


def tls_settings(params):
    verify = params.get("validate_certs", True)
    if not isinstance(verify, bool):
        raise TopologyError(f"params.validate_certs must be true or false, got {verify!r}")
    ca_bundle = params.get("ca_bundle")
    if ca_bundle is not None and not isinstance(ca_bundle, str):
        raise TopologyError("params.ca_bundle must be the path of a CA bundle file")
    return verify, ca_bundle


def http_client(params, base_url, headers=None, auth=None):
    verify, ca_bundle = tls_settings(params)
    return HttpClient(base_url, headers=headers, auth=auth, verify=verify, ca_bundle=ca_bundle,
                      **client_settings(params))


def _sleep(seconds):
    # Looked up at call time, so tests record the delays instead of waiting them out.
    time.sleep(seconds)


class Placements:
    """What the API said about the requested instances; ``topology()`` builds the model.

    ``add`` takes fabric tiers closest-first (tier 0 = the switch next to the node), as every
    provider maps them the way Topograph does; empty tier ids are skipped.
    """

    def __init__(self, provider, requested, trim_tiers=0):
        self.provider = provider
        self.requested = requested  # instance id -> node name
        self.trim_tiers = trim_tiers
        self.found: dict[str, tuple] = {}

    def wants(self, instance_id):
        return instance_id in self.requested

    def add(self, instance_id, tiers, domain=None, sub_domain=None):
        """Record one instance; False when it was not requested (ignored, as Topograph does)."""
        if instance_id not in self.requested:
            return False
        tiers = tuple(str(tier) for tier in tiers if tier not in (None, ""))
        if self.trim_tiers:
            tiers = tiers[:max(0, len(tiers) - self.trim_tiers)]
        record = (tiers, domain or None, (sub_domain or None) if domain else None)
        known = self.found.get(instance_id)
        if known is not None and known != record:
            raise TopologyError(f"the {self.provider} API returned instance {instance_id!r} twice with different "
                                f"topology: {known[0]} and {record[0]}")
        self.found[instance_id] = record
        return True

    def missing(self):
        return {iid: node for iid, node in self.requested.items() if iid not in self.found}

    def topology(self, warn):
        topo = Topology()
        for instance_id, (tiers, domain, sub_domain) in self.found.items():
            where = f"{self.provider} instance {instance_id!r}"
            for level, switch in enumerate(tiers):
                parent = tiers[level + 1] if level + 1 < len(tiers) else None
                topo.add_switch(switch, parent, source=where)
            topo.add_node(self.requested[instance_id], tiers[0] if tiers else None, domain, sub_domain, source=where)
        missing = self.missing()
        if missing:
            names = hostlist.compress(missing.values())
            warn(f"{len(missing)} of {len(self.requested)} requested instances have no topology data in the "
                 f"{self.provider} API; they have no switch (the tree topology puts them under no-topology): {names}")
            for node in missing.values():
                topo.add_node(node, source=f"{self.provider} requested instance")
        return topo


def trim_tiers(params):
    value = params.get("trim_tiers", 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2:
        raise TopologyError(f"params.trim_tiers must be 0, 1 or 2, got {value!r}")
    return value


def placements(params, provider, require_region=True):
    """The per-region request list and a Placements over all of it."""
    regions = requested_instances(params, provider, require_region)
    everything = {iid: node for _region, mapping in regions for iid, node in mapping.items()}
    return regions, Placements(provider, everything, trim_tiers(params))
