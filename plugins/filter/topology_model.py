# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.aifactory.topology.plugins.module_utils._engines import imex
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.plugin_utils import typed_variables as typing


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
    return imex.peer_plan(_topology(model), _records(records, "imex_peers"))


def _records(records, name):
    if not isinstance(records, list) or not all(isinstance(record, dict) for record in records):
        raise AnsibleFilterError(f"{name}: records must be a list of mappings, one per inventory host")
    missing = [index for index, record in enumerate(records) if not record.get("host")]
    if missing:
        raise AnsibleFilterError(f"{name}: records[{missing[0]}] has no host")
    return records


def imex_fleet(model, records, settings, state, revision, verify_all=False):
    """Plan every NVLink domain on the controller and choose the hosts to visit (see the engine's
    ``fleet_selection``); ``state`` is the text of the applied-state file ('' when there is none)."""
    if not isinstance(settings, dict):
        raise AnsibleFilterError("imex_fleet: settings must be a mapping of host -> its IMEX settings")
    applied, problem = imex.read_applied(state)
    fleet = imex.fleet_selection(_topology(model), _records(records, "imex_fleet"), settings, applied,
                                 str(revision), verify_all=bool(verify_all))
    fleet["applied"] = applied
    fleet["state_problem"] = problem
    return fleet


def imex_applied(fleet, reports):
    """The applied-state file's content after a run: imex_fleet's result and, per host that reached the
    end of the role, the peer addresses it wrote (see the engine's ``applied_after``)."""
    if not isinstance(fleet, dict) or "visit_domains" not in fleet:
        raise AnsibleFilterError("imex_applied: the first argument must be imex_fleet's result")
    if not isinstance(reports, dict):
        raise AnsibleFilterError("imex_applied: reports must be a mapping of host -> addresses")
    return {"format": imex.STATE_FORMAT, "domains": imex.applied_after(fleet["applied"], fleet, reports)}


def imex_driver_branch(text, from_nvidia_smi=False):
    """The driver branch (such as '570') in the driver's version file or nvidia-smi's answer; '' when none.
    The same reading imex_config makes when it reads the driver itself (see the engine's ``driver_branch``)."""
    if text is not None and not isinstance(text, str):
        raise AnsibleFilterError(f"imex_driver_branch: the input must be text, got {type(text).__name__}")
    return imex.driver_branch(text, from_nvidia_smi=bool(from_nvidia_smi))


def imex_settings(values, spec, documented_keys):
    """The role's variables (``imex_*``, as given) checked and typed by their argument spec, keyed without ``imex_``;
    an error naming every problem of this host's settings at once (the mode, driver branch and peer-list path they
    hold included, as given)."""
    try:
        typed = typing.typed_variables(values, spec, "imex_")
    except typing.VariableError as exc:
        raise AnsibleFilterError(str(exc)) from None
    driver_branch = values.get("imex_driver_branch")
    problems = imex.setting_problems(typed.get("config") or {}, typed.get("config_extra_keys") or [],
                                     list(documented_keys or []), typed.get("mode"),
                                     "" if driver_branch is None else driver_branch, values.get("imex_nodes_config_path"))
    if problems:
        raise AnsibleFilterError("\n".join(problems))
    return typed


class FilterModule:
    def filters(self):
        return {"topology_domains": topology_domains, "imex_peers": imex_peers, "imex_fleet": imex_fleet,
                "imex_applied": imex_applied, "imex_driver_branch": imex_driver_branch, "imex_settings": imex_settings}
