# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Providers: each turns one source of truth into the canonical Topology.

A provider is a function ``discover(params, creds, warn) -> Topology``. Imports are
static on purpose: AnsiballZ only ships module_utils that modules import statically.
"""

from __future__ import annotations

import math

from ansible_collections.aifactory.topology.plugins.module_utils import _http
from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError, clip
from ansible_collections.aifactory.topology.plugins.module_utils._providers import inventory, simulation
from ansible_collections.aifactory.topology.plugins.module_utils._providers import infiniband, netq
from ansible_collections.aifactory.topology.plugins.module_utils._providers import aws, gcp, lambda_cloud, nebius, nscale, oci
from ansible_collections.aifactory.topology.plugins.module_utils._providers import kubernetes_nodes
from ansible_collections.aifactory.topology.plugins.module_utils._nvidia_smi import apply_accelerator

PROVIDERS = {
    "simulation": simulation.discover,
    "inventory": inventory.discover,
    "infiniband": infiniband.discover,
    "netq": netq.discover,
    "aws": aws.discover,
    "gcp": gcp.discover,
    "oci": oci.discover,
    "lambda": lambda_cloud.discover,
    "nebius": nebius.discover,
    "nscale": nscale.discover,
    "dra": kubernetes_nodes.discover_dra,
    "node_labels": kubernetes_nodes.discover_node_labels,
}


def discover(name, params=None, creds=None, warn=None):
    """Run provider ``name`` and return a validated Topology."""
    provider = PROVIDERS.get(name)
    if provider is None:
        raise TopologyError(f"unknown provider {name!r}; known providers: {', '.join(sorted(PROVIDERS))}")
    if params is not None and not isinstance(params, dict):
        raise TopologyError(f"provider.params must be a mapping, got {type(params).__name__}")
    params = dict(params or {})
    accelerator = params.pop("accelerator", None)  # any tree provider can take nvidia-smi domains
    # Every provider: one deadline for all its requests, retries and waits (documented in the
    # provider doc fragment); a server that drips or pages forever cannot hold the task.
    deadline = params.pop("discovery_timeout", None)
    if deadline is None:
        deadline = _http.DEFAULT_DISCOVERY_TIMEOUT
    if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not math.isfinite(deadline) \
            or deadline <= 0:
        raise TopologyError(f"provider.params.discovery_timeout must be a positive number of seconds, "
                            f"got {_http.clip(deadline)}")
    warn = warn or (lambda message: None)
    with _http.discovery_deadline(deadline):
        topology = provider(params, creds or {}, warn)
    if accelerator is not None:
        apply_accelerator(topology, accelerator, warn)
    return topology.validate()
