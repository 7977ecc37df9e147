# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: topology
short_description: GPU cluster nodes grouped by NVLink domain and switch
version_added: 0.2.0
description:
  - Runs a topology provider (the same O(provider) as the modules) or reads a model file, and makes every
    node a host.
  - Each accelerator (NVLink) domain becomes a group named O(domain_prefix) plus the domain name, and each
    switch a group named O(switch_prefix) plus the switch's display name (else its id). A switch's group has
    the groups of the switches below it as children, so C(ansible-inventory --graph) shows the fabric and a
    spine's group holds every node under it.
  - Names are made group-safe, every character other than an ASCII letter, digit or C(_) becomes C(_)
    (C(nvl-r01) gives C(domain_nvl_r01)); a name starting with a digit gets a C(_) in front. Two domains or
    switches whose group names would be the same are an error that names both.
  - Every host gets C(topology_domain), C(topology_sub_domain) and C(topology_switches) (switch names, tier 0
    first).
  - A node whose name Ansible treats specially is not made a host, with a warning naming it; the other nodes
    are. Such names are an IP address, a name of the controller itself (C(localhost), C(127.1)), C(all) and
    C(ungrouped), a group name of this inventory (C(domain_rack02)), and names host patterns cannot address
    (starting with C(~), C(!), C(&) or C(@); holding C(*), C(?) or C(:)). When every node is refused, the source
    fails.
  - A provider that fails, or a model that is invalid, fails the inventory source with the provider's message.
    Ansible then ignores the source with a warning unless C(ANSIBLE_INVENTORY_UNPARSED_FAILED) (set by AWX
    inventory updates) or C(ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED) is true; set them so a broken source
    never leaves an inventory that silently targets nothing.
  - The configuration file name must end in C(topology.yml) or C(topology.yaml).
author:
  - aifactory.topology contributors (@aifactory)
extends_documentation_fragment:
  - constructed
  - inventory_cache
options:
  plugin:
    description: Marks the file as a source for this plugin.
    required: true
    type: str
    choices: [aifactory.topology.topology]
  provider:
    description:
      - The discovery source, as the O(aifactory.topology.topology_info#module:provider) option of the modules
        (docs/providers/).
      - Mutually exclusive with O(model_path); one of them is required.
    type: dict
    suboptions:
      name:
        description: The provider, for example V(simulation), V(inventory), V(infiniband), V(netq) or a cloud.
        type: str
        required: true
      params:
        description: Provider parameters (docs/providers/).
        type: dict
        default: {}
      creds:
        description:
          - Provider credentials. Prefer the environment variables each provider reads (an AWX credential
            injects them) over secrets in this file.
        type: dict
        default: {}
  model_path:
    description:
      - A model file instead of a provider, JSON or YAML, either the compact model that
        M(aifactory.topology.topology_info) returns in RV(aifactory.topology.topology_info#module:topology)
        (recognised by its C(format)) or an NVIDIA Topograph simulation model.
      - A relative path is relative to the directory of the configuration file (an AWX project's checkout
        moves, the file's neighbours do not).
      - It must be a regular file of UTF-8 text; anything else (a FIFO, a device, another encoding) fails the
        parse naming the file, without blocking.
    type: str
  domain_prefix:
    description: Prefix of the accelerator domain groups.
    type: str
    default: domain_
  switch_prefix:
    description: Prefix of the switch groups.
    type: str
    default: switch_
  domain_groups:
    description: Make a group per accelerator domain.
    type: bool
    default: true
  switch_groups:
    description: Make a group per switch, nested along the switch tree.
    type: bool
    default: true
notes:
  - With O(cache), the model is kept in the cache plugin, so later runs neither discover nor read the file
    until the cache times out or C(ansible-inventory --flush-cache) is used.
seealso:
  - module: aifactory.topology.topology_info
  - module: aifactory.topology.topology_facts
"""

EXAMPLES = r"""
---
# inventories/cluster.topology.yml; check with: ansible-inventory -i inventories/cluster.topology.yml --graph
plugin: aifactory.topology.topology
provider:
  name: simulation
  params:
    model_path: /etc/topology/nvl72.yaml
compose:
  ansible_host: inventory_hostname ~ '.cluster.example'
keyed_groups:
  - key: topology_switches | length
    prefix: tiers

---
# A model file that topology_info saved (copy the registered result's topology to a file).
plugin: aifactory.topology.topology
model_path: model.json
domain_prefix: rack_
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: /var/tmp/topology-inventory
cache_timeout: 3600
"""

import os

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible.utils.display import Display

from ansible_collections.aifactory.topology.plugins.module_utils import _providers
from ansible_collections.aifactory.topology.plugins.module_utils._base import arguments as _arguments
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration.common import PROVIDER, load_model_file
from ansible_collections.aifactory.topology.plugins.module_utils._engines.ansible_groups import (
    GROUP_CLASH, layout, skip_message)
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import AifactoryTopologyError, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology

display = Display()
# The modules' provider option, checked by the same validator; a name outside the registry is left to
# _providers.discover, whose message lists the providers.
PROVIDER_OPTIONS = {key: {name: value for name, value in option.items() if name != "choices"}
                    for key, option in PROVIDER.argument_spec["provider"]["options"].items()}


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "aifactory.topology.topology"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(("topology.yml", "topology.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache
        model = None
        if use_cache:
            model = self._cache.get(cache_key)
        try:
            if model is None:
                model = self._discover(path).to_compact()
                if self.get_option("cache"):
                    self._cache[cache_key] = model
            topology = Topology.from_compact(model)
            groups = layout(topology, self.get_option("domain_prefix"), self.get_option("switch_prefix"),
                            self.get_option("domain_groups"), self.get_option("switch_groups"),
                            warn=lambda message: display.warning(f"{path}: {message}"))
        except AifactoryTopologyError as exc:  # bad input, an API that failed, an unreadable file
            raise AnsibleParserError(f"{path}: {exc}") from None
        self._populate(groups, path)

    def _discover(self, path):
        provider = self.get_option("provider")
        model_path = self.get_option("model_path")
        if (provider is None) == (model_path is None):
            raise TopologyError("set exactly one of provider and model_path")
        if model_path is not None:
            model_path = os.path.join(os.path.dirname(os.path.abspath(path)), os.path.expanduser(model_path))
            return load_model_file(model_path)
        provider = _arguments.validate(provider, PROVIDER_OPTIONS, "provider", none_is_unset=True)
        return _providers.discover(provider["name"], provider["params"], provider["creds"],
                                   warn=display.warning)

    def _populate(self, groups, path):
        strict = self.get_option("strict")
        for group in groups.group_hosts:
            self.inventory.add_group(group)
        for group, children in groups.group_children.items():
            for child in children:
                self.inventory.add_child(group, child)
        for host, variables in groups.hostvars.items():
            self.inventory.add_host(host)
            for name, value in variables.items():
                self.inventory.set_variable(host, name, value)
        for group, hosts in groups.group_hosts.items():
            for host in hosts:
                self.inventory.add_child(group, host)
        if self.get_option("compose") or self.get_option("groups") or self.get_option("keyed_groups"):
            # Reading every host's variables back is Ansible work per host: only when they are used.
            for host in groups.hostvars:
                # Constructable: compose, groups and keyed_groups see the host's variables, ours included.
                hostvars = self.inventory.get_host(host).get_vars()
                self._set_composite_vars(self.get_option("compose"), hostvars, host, strict=strict)
                self._add_host_to_composed_groups(self.get_option("groups"), hostvars, host, strict=strict)
                self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, host, strict=strict)
        # layout() knew only its own groups; those of groups, keyed_groups and earlier sources are
        # known now. A host with a group's name goes, as in layout().
        for host in [host for host in groups.hostvars if host in self.inventory.groups]:
            self.inventory.remove_host(self.inventory.get_host(host))
            display.warning(f"{path}: {skip_message(host, GROUP_CLASH)}")
