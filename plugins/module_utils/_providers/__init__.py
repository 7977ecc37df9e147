# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Providers: each turns one source of truth into the canonical Topology.

A provider is a function ``discover(params, creds, warn) -> Topology`` in a module of this
package; ``_specs.PROVIDERS`` names it and holds the argument specs of its params and creds.
``discover`` validates both against those specs (Ansible's ``ArgumentSpecValidator``: types,
choices, required, defaults, unknown keys), then imports only the provider it runs.
"""

from __future__ import annotations

import math

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError

from ansible_collections.aifactory.topology.plugins.module_utils import _deadline
from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError, clip, unknown_keys_message
from ansible_collections.aifactory.topology.plugins.module_utils._model import quarantine_summary
from ansible_collections.aifactory.topology.plugins.module_utils._providers._specs import PROVIDERS

REDACTED = "********"


def _unknown_keys(value, spec, where, found):
    """(where, unknown keys, known keys) for every level of ``value`` that ``spec`` describes."""
    if not isinstance(value, dict):
        return found
    known = set(spec)
    for option in spec.values():
        known.update(option.get("aliases") or ())
    unknown = [key for key in value if key not in known]
    if unknown:
        found.append((where, unknown, spec))
    for key, option in spec.items():
        options, item = option.get("options"), value.get(key)
        if not options or item is None:
            continue
        if option.get("type") == "list" and isinstance(item, list):
            for index, element in enumerate(item):
                _unknown_keys(element, options, f"{where}.{key}[{index}]", found)
        else:
            _unknown_keys(item, options, f"{where}.{key}", found)
    return found


def _secrets(value):
    """Every string inside ``value``: creds values never reach a message."""
    if isinstance(value, dict):
        return [text for item in value.values() for text in _secrets(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _secrets(item)]
    return [str(value)] if value not in (None, "") and not isinstance(value, bool) else []


def _validated(name, section, value, spec):
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise TopologyError(f"provider {name}: {section} must be a mapping, got {type(value).__name__}")
    messages = [unknown_keys_message(where, unknown, known) for where, unknown, known in _unknown_keys(value, spec, section, [])]
    result = ArgumentSpecValidator(spec).validate(value)
    # Unknown keys are reported above, per level, with the keys known there. The validator's own
    # messages may quote a value: in creds every value given is masked.
    secrets = sorted(set(_secrets(value)), key=len, reverse=True) if section == "creds" else []
    for error in result.errors:
        if not isinstance(error, UnsupportedError):
            message = str(error)
            for secret in secrets:
                message = message.replace(secret, REDACTED)
            messages.append(f"{section}: {message}")
    if messages:
        raise TopologyError(f"provider {name}: " + "; ".join(messages))
    return result.validated_parameters


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
    elif module == "inventory":
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import inventory as found
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


def discover(name, params=None, creds=None, warn=None):
    """Run provider ``name`` on validated params and creds and return a validated Topology."""
    params, creds = validate(name, params, creds)
    accelerator = params.pop("accelerator", None)  # any provider can take nvidia-smi domains
    deadline = params.pop("discovery_timeout")
    if not math.isfinite(deadline) or deadline <= 0:
        raise TopologyError(f"provider {name}: params.discovery_timeout must be a positive number of seconds, "
                            f"got {clip(deadline)}")
    invalid_nodes = params.pop("invalid_nodes")
    warn = warn or (lambda message: None)
    with _deadline.discovery_deadline(deadline):
        topology = load(name)(params, creds, warn)
    if accelerator is not None:
        # pylint: disable-next=import-outside-toplevel
        from ansible_collections.aifactory.topology.plugins.module_utils._nvidia_smi import apply_accelerator
        apply_accelerator(topology, accelerator, warn)
    if topology.quarantined:
        if invalid_nodes == "fail":
            raise TopologyError(f"provider {name}: {len(topology.quarantined)} nodes have unusable data "
                                f"(params.invalid_nodes is fail): {quarantine_summary(topology)}")
        warn(f"{len(topology.quarantined)} nodes quarantined (left out of the map): {quarantine_summary(topology)}")
    return topology.validate()
