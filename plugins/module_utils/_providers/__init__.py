# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Providers: each turns one source of truth into the canonical Topology.

A provider is a function ``discover(params, creds, warn) -> Topology`` in a module of this
package; ``_specs.PROVIDERS`` names it and holds the ``ArgumentSpec`` objects of its params and
creds. ``discover`` validates both against them (``ArgumentSpec.check``: Ansible's
``ArgumentSpecValidator`` for types, choices, required and defaults, unknown keys at every level,
creds values masked, then the spec's own checks), then imports only the provider it runs.
"""

from __future__ import annotations

import math

from ansible_collections.aifactory.topology.plugins.module_utils._base import deadline as _deadline
from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, clip
from ansible_collections.aifactory.topology.plugins.module_utils._model import quarantine_summary, quarantine_warning
from ansible_collections.aifactory.topology.plugins.module_utils._providers._specs import PROVIDERS


def _validated(name, section, value, spec):
    # Every value of creds is masked in the validator's messages.
    return spec.check(value, section, prefix=f"provider {name}: ", secret=section == "creds")


def validate(name, params=None, creds=None):
    """(params, creds) of provider ``name``, checked against its specs, defaults filled in."""
    provider = PROVIDERS.get(name)
    if provider is None:
        raise TopologyError(f"unknown provider {name!r}; known providers: {', '.join(sorted(PROVIDERS))}")
    return (_validated(name, "params", params, provider.params),
            _validated(name, "creds", creds, provider.creds))


def load(name):
    """The discover function of provider ``name``, importing its module (and SDK) now."""
    provider = PROVIDERS[name]
    return getattr(_provider_module(provider.module), provider.function)


def _provider_module(module):
    # Static imports inside a function, on purpose: AnsiballZ's dependency finder walks function
    # bodies, so every provider is shipped with a module, but only the one a task names is imported.
    # pylint: disable=import-outside-toplevel
    if module == "simulation":
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import simulation as found
    elif module == "inventory_vars":
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import inventory_vars as found
    elif module == "infiniband":
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import infiniband as found
    elif module == "netq":
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import netq as found
    elif module == "aws":
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import aws as found
    elif module == "gcp":
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import gcp as found
    elif module == "oci":
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import oci as found
    elif module == "lambda_cloud":
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import lambda_cloud as found
    elif module == "nebius":
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import nebius as found
    elif module == "nscale":
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import nscale as found
    elif module == "kubernetes_nodes":
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import kubernetes_nodes as found
    else:
        raise TopologyError(f"no provider module {module!r}")
    return found


def discover(name, params=None, creds=None, warn=None, k8s_client=None):
    """Run provider ``name`` on validated params and creds and return a validated Topology.

    ``k8s_client``: the caller's own Kubernetes connection; a provider that reads Node objects uses it
    instead of building its own when its creds and ``request_timeout`` resolve to that very connection
    (``K8sClient.serves``), so a caller that lists the nodes too can list them once (``sharing_lists``).
    """
    params, creds = validate(name, params, creds)
    shared = {}
    if (k8s_client is not None and PROVIDERS[name].module == "kubernetes_nodes"
            and k8s_client.serves(creds, params["request_timeout"])):
        shared["client"] = k8s_client
    accelerator = params.pop("accelerator", None)  # any provider can take nvidia-smi domains
    deadline = params.pop("discovery_timeout")
    if not math.isfinite(deadline) or deadline <= 0:
        raise TopologyError(f"provider {name}: params.discovery_timeout must be a positive number of seconds, "
                            f"got {clip(deadline)}")
    invalid_nodes = params.pop("invalid_nodes")
    warn = warn or (lambda message: None)
    # One registry of the run's secrets: every message that leaves the provider is scrubbed of them.
    with _deadline.discovery_deadline(deadline), _secrets.scope():
        _register_secrets(creds, PROVIDERS[name].creds.argument_spec)
        try:
            topology = load(name)(params, creds, _secrets.scrubbing(warn), **shared)
            for record in topology.quarantined.values():
                record.reason = _secrets.scrub(record.reason)
        except BaseException as exc:
            _secrets.scrub_exception(exc)
            raise
    if accelerator is not None:
        # pylint: disable-next=import-outside-toplevel
        from ansible_collections.aifactory.topology.plugins.module_utils._providers._nvidia_smi import apply_accelerator
        apply_accelerator(topology, accelerator, warn)
    if topology.locations:
        for problem in topology.rack_problems():
            warn(problem)
    if topology.quarantined:
        if invalid_nodes == "fail":
            raise TopologyError(f"provider {name}: {len(topology.quarantined)} nodes have unusable data "
                                f"(params.invalid_nodes is fail): {quarantine_summary(topology)}")
        warn(quarantine_warning(topology))
    return topology.validate()


def _register_secrets(values, spec):
    """Every ``no_log`` value of ``values`` (creds, validated against ``spec``), at any depth, is a secret of the run."""
    for key, option in (spec or {}).items():
        value = (values or {}).get(key)
        if option.get("no_log"):
            _secrets.register(value)
        if isinstance(value, dict) and option.get("options"):
            _register_secrets(value, option["options"])
        elif isinstance(value, list) and option.get("options"):
            for item in value:
                if isinstance(item, dict):
                    _register_secrets(item, option["options"])
