# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument specs and input handling shared by the modules."""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils import _providers
from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology

# Where the topology comes from (doc fragments provider, provider.MODEL, provider.OUTPUT_FILE): one source,
# never both.
PROVIDER = ArgumentSpec({
    "provider": {
        "type": "dict",
        "options": {
            "name": {"type": "str", "required": True, "choices": list(_providers.PROVIDERS)},
            "params": {"type": "dict", "default": {}},
            "creds": {"type": "dict", "default": {}, "no_log": True},
        },
    },
}, fragments=["provider"])
MODEL = ArgumentSpec({"model": {"type": "dict"}}, fragments=["provider.MODEL"],
                     mutually_exclusive=[("provider", "model")], required_one_of=[("provider", "model")])
OUTPUT_FILE = ArgumentSpec({"dest": {"type": "path"}, "backup": {"type": "bool", "default": False}},
                           fragments=["provider.OUTPUT_FILE"])

# The shrink guard of the modules that replace a topology (doc fragment render.SHRINK_GUARD).
SHRINK_GUARD = ArgumentSpec({
    "max_node_loss": {"type": "float", "default": 10.0},
    "force": {"type": "bool", "default": False},
}, fragments=["render.SHRINK_GUARD"])


def provider_spec(model=False, output_file=False):
    """``PROVIDER``, with ``MODEL`` (and its constraints: one source of the topology) and ``OUTPUT_FILE``."""
    return PROVIDER.merge(*([MODEL] if model else []), *([OUTPUT_FILE] if output_file else []))


def warning_collector(module):
    """(warn, warnings): warn() shows an Ansible warning and keeps it for the result's summary."""
    warnings = []

    def warn(message):
        warnings.append(message)
        module.warn(message)

    return warn, warnings


def load_topology(module, warn=None, k8s_client=None):
    """The validated Topology from ``provider`` (discovery) or ``model`` (compact form).

    ``warn`` receives the provider's warnings: a module with a summary passes the ``warn`` of its
    ``warning_collector`` so they reach ``summary.warnings``; the default shows them only.
    ``k8s_client``: the module's own Kubernetes connection, which a node provider on the same
    connection uses (``_providers.discover``).
    The quarantine line is one of those warnings either way: a model passed on from the discovery
    (``topology_info``) carries its quarantined nodes, which this module leaves out of the map too.
    """
    warn = warn or module.warn
    if module.params.get("model") is not None:
        topology = Topology.from_compact(module.params["model"])
        if topology.quarantined:
            warn(_providers.quarantine_warning(topology))
        return topology
    provider = module.params["provider"]
    return _providers.discover(provider["name"], provider["params"], provider["creds"], warn=warn,
                               k8s_client=k8s_client)


def load_model_file(path):
    """The validated Topology in a model file: the compact form (JSON or YAML, as topology_info
    returns it, recognised by its ``format``) or an NVIDIA Topograph simulation model."""
    data = _input_file.read_yaml(path, "model file")
    if isinstance(data, dict) and "format" in data:
        return Topology.from_compact(data)
    # Imported here, as _providers imports providers: only where a model file is read.
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import simulation
    return simulation.from_model(data, source=str(path)).validate()
