# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.aifactory.topology.plugins.module_utils._engines import imex
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError


def _topology(model):
    try:
        return Topology.from_compact(model)
    except TopologyError as exc:
        raise AnsibleFilterError(f"topology model: {exc}") from None


def topology_domains(model, by="domain", include_empty=False):
    """Compact model -> {domain: [nodes in natural order]} (``by='node'``: {node: domain})."""
    if by not in ("domain", "node"):
        raise AnsibleFilterError(f"topology_domains: by must be 'domain' or 'node', got {by!r}")
    members = imex.domain_members(_topology(model), include_empty=bool(include_empty))
    if by == "node":
        return {node: domain for domain, nodes in members.items() for node in nodes}
    return members


def imex_peers(model, records):
    """Compact model + per-host address records -> the IMEX peer plan (see the engine)."""
    if not isinstance(records, list) or not all(isinstance(record, dict) for record in records):
        raise AnsibleFilterError("imex_peers: records must be a list of mappings, one per inventory host")
    missing = [index for index, record in enumerate(records) if not record.get("host")]
    if missing:
        raise AnsibleFilterError(f"imex_peers: records[{missing[0]}] has no host")
    return imex.peer_plan(_topology(model), records)


class FilterModule:
    def filters(self):
        return {"topology_domains": topology_domains, "imex_peers": imex_peers}
