# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Providers: each turns one source of truth into the canonical Topology.

A provider is a function ``discover(params, creds, warn) -> Topology``. Imports are
static on purpose: AnsiballZ only ships module_utils that modules import statically.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._model import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import inventory, simulation

PROVIDERS = {
    "simulation": simulation.discover,
    "inventory": inventory.discover,
}


def discover(name, params=None, creds=None, warn=None):
    """Run provider ``name`` and return a validated Topology."""
    provider = PROVIDERS.get(name)
    if provider is None:
        raise TopologyError(f"unknown provider {name!r}; known providers: {', '.join(sorted(PROVIDERS))}")
    if params is not None and not isinstance(params, dict):
        raise TopologyError(f"provider.params must be a mapping, got {type(params).__name__}")
    topology = provider(params or {}, creds or {}, warn or (lambda message: None))
    return topology.validate()
