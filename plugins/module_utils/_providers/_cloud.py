# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the cloud providers share: the instance-to-node map, credentials, client settings, placement.

Every cloud provider takes ``params.instances`` in NVIDIA Topograph's request form, a list of
``{region, instances: {instance id: node name}}``, and maps **only** those instances; the API's
other instances are ignored. Requested instances the API gives no topology for are kept as
nodes without a switch (the tree engine puts them under ``no-topology``) and reported in one
warning with their names and count. A requested instance whose own record is unusable (a field
of the wrong shape, an id that cannot be a name or is not a string, an empty id inside a path, one id
at two tiers of a path, two records that disagree) quarantines its node;
a response that is not the API's (no list, no ids, a loop) fails the run.

Their params and creds are declared in ``_specs`` and validated before ``discover`` runs, so
the helpers here read values of the right type, with defaults filled in.
``timeout`` bounds a whole request attempt, body included (``_http``).
"""

from __future__ import annotations

import contextlib
import math
import os
import time

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import HttpClient
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology, name_problem
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    NodeDataError,
    TopologyError,
    clip,
    credential_problem,
)


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
        region = entry.get("region")
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

    The value is registered as a secret of the run (``_base.secrets``), wherever it came from.

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
    _secrets.register(value)  # from creds or the environment: no message of the run may show it
    problem = credential_problem(value.replace("\r\n", "").replace("\n", "") if multiline else value)
    if problem:
        raise TopologyError(f"{source} {problem}; the value is not shown")
    return value


def setting(params, key, default=None, env=(), required_by=None):
    """A non-secret string setting from params, else the environment, else ``default``."""
    value = params.get(key)
    if value is None or value == "":
        value = next((os.environ[name] for name in env if os.environ.get(name)), default)
    if required_by and not value:
        hint = f" (or the environment variable {' or '.join(env)})" if env else ""
        raise TopologyError(f"the {required_by} provider needs params.{key}{hint}")
    return value


def at_least(params, key, minimum):
    """``params[key]`` (typed and defaulted by the spec): finite and not below ``minimum``."""
    value = params[key]
    if not math.isfinite(value) or value < minimum:
        raise TopologyError(f"params.{key} must be at least {minimum:g}, got {value!r}")
    return value


def page_size(params, default, warn, maximum=None):
    """Topograph's lesson: a page size of 0 or less never reaches the API (warn, use the default)."""
    value = params.get("page_size")
    if value is None:
        return default
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
        "timeout": at_least(params, "timeout", 0.001),
        "attempts": at_least(params, "retry_attempts", 1),
        "backoff": at_least(params, "retry_backoff", 0),
        "max_retry_after": at_least(params, "retry_after_max", 0),
        "sleep": _sleep,
    }


def tls_settings(params):
    return params["validate_certs"], params.get("ca_bundle")


def http_client(params, base_url, headers=None, auth=None, session=None):
    """An HttpClient with the provider's settings; ``session`` is a requests session to send through."""
    verify, ca_bundle = tls_settings(params)
    return HttpClient(base_url, headers=headers, auth=auth, verify=verify, ca_bundle=ca_bundle, session=session,
                      **client_settings(params))


def _sleep(seconds):
    # Looked up at call time, so tests record the delays instead of waiting them out.
    time.sleep(seconds)


class Placements:
    """What the API said about the requested instances; ``topology()`` builds the model.

    ``add`` takes fabric tiers closest-first (tier 0 = the switch next to the node), as every
    provider maps them the way Topograph does. Empty ids at the top of a path are a shorter path
    (dropped); an empty id below a non-empty one quarantines the instance (see ``add``).
    """

    def __init__(self, provider, requested, trim_tiers=0):
        self.provider = provider
        self.requested = requested  # instance id -> node name
        self.trim_tiers = trim_tiers
        self.found: dict[str, tuple] = {}
        self.refused: dict[str, str] = {}  # instance id -> why its record was unusable (its node is quarantined)

    @contextlib.contextmanager
    def instance(self, instance_id):
        """Read one instance's record: a NodeDataError in it quarantines that instance's node (when requested)."""
        try:
            yield
        except NodeDataError as exc:
            self.refuse(instance_id, str(exc))

    def refuse(self, instance_id, reason):
        """Quarantine the node of ``instance_id`` (when requested; others are ignored) for ``reason``."""
        if instance_id in self.requested:
            self.refused.setdefault(instance_id, reason)
            self.found.pop(instance_id, None)

    def wants(self, instance_id):
        return instance_id in self.requested

    def add(self, instance_id, tiers, domain=None, sub_domain=None, fields=None, domain_field="domain"):
        """Record one instance; False when it was not requested (ignored, as Topograph does).

        ``fields`` names each tier as the API does (``path_fields``; default ``tier <n>``), for the
        reasons. An id is kept as the API gave it: one that is not a string quarantines the instance
        (the name rule says why), never converted. Empty ids (None or "") above the highest id are a
        shorter path and dropped, as Topograph documents (Lambda: a short path omits the higher
        tiers). An empty id below an id (between two, or in place of the closest switch) quarantines
        the instance: skipping it, as Topograph's graph does, would move every id above it down a
        tier (core as the leaf's parent, or "switch has two parents" with a correct neighbour). One id
        at two tiers of the path (a loop, which the model would see as a switch cycle) quarantines it too. A
        record with neither a tier nor a domain is no topology data (the node is warned as missing).
        """
        if instance_id not in self.requested:
            return False
        if instance_id in self.refused:
            return True
        tiers = list(tiers)
        fields = list(fields) if fields else [f"tier {level}" for level in range(len(tiers))]
        present = [level for level, tier in enumerate(tiers) if tier not in (None, "")]
        top = present[-1] + 1 if present else 0
        gap = next((level for level in range(top) if tiers[level] in (None, "")), None)
        if gap is not None:
            above = next(level for level in present if level > gap)
            self.refuse(instance_id, f"the {self.provider} API's {fields[gap]} of instance {instance_id!r} is empty "
                                     f"({clip(tiers[gap])}) under {fields[above]} {clip(tiers[above])}: a gap in "
                                     f"the path (skipping it would move the ids above it down a tier)")
            return True
        # One id at two tiers of one record is a loop (the switch its own ancestor): that record's problem,
        # where the model would only see a switch cycle that fails the run.
        repeated = next((level for level in range(1, top) if tiers[level] in tiers[:level]), None)
        if repeated is not None:
            first = tiers.index(tiers[repeated])
            self.refuse(instance_id, f"the {self.provider} API's {fields[repeated]} of instance {instance_id!r} is "
                                     f"{clip(tiers[repeated])}, as is its {fields[first]}: one switch at two tiers of "
                                     "one path (a loop)")
            return True
        if not top and not domain:
            return True
        tiers = tuple(tiers[:top])
        if self.trim_tiers:
            tiers = tiers[:max(0, len(tiers) - self.trim_tiers)]
        record = (tiers, domain or None, (sub_domain or None) if domain else None)
        known = self.found.get(instance_id)
        if known is not None and known != record:
            self.refused[instance_id] = (f"the {self.provider} API returned instance {instance_id!r} twice with "
                                         f"different topology: {known[0]} and {record[0]}")
            del self.found[instance_id]
            return True
        # An id or domain of the API (tenants name some of them) that cannot be a name is this instance's problem.
        for value, what in list(zip(tiers, fields)) + \
                [(value, what) for value, what in ((record[1], domain_field), (record[2], "sub-domain")) if value]:
            problem = name_problem(value)
            if problem is not None:
                self.refused[instance_id] = f"the {self.provider} API's {what} of instance {instance_id!r}: {problem}"
                return True
        self.found[instance_id] = record
        return True

    def missing(self):
        return {iid: node for iid, node in self.requested.items() if iid not in self.found and iid not in self.refused}

    def topology(self, warn):
        topo = Topology()
        for instance_id, reason in self.refused.items():
            topo.quarantine(self.requested[instance_id], self.provider, reason)
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


def path_fields(template, count, root_first=False):
    """The API's name of each id of a path of ``count``, closest first, for ``Placements.add``'s reasons.

    ``template`` takes the API's index (``"networkPath[{}].id"``); ``root_first`` for an API that lists
    the root first (the provider reverses the ids, these names follow).
    """
    return [template.format(count - 1 - level if root_first else level) for level in range(count)]


def placements(params, provider, require_region=True):
    """The per-region request list and a Placements over all of it."""
    regions = requested_instances(params, provider, require_region)
    everything = {iid: node for _region, mapping in regions for iid, node in mapping.items()}
    return regions, Placements(provider, everything, params.get("trim_tiers") or 0)
