# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  provider:
    description:
      - The discovery source to read the topology from.
    type: dict
    suboptions:
      name:
        description:
          - The provider.
          - V(simulation) reads an NVIDIA Topograph simulation model file, unchanged.
          - V(inventory) reads racks, switches and nodes declared in inventory variables.
        type: str
        required: true
      params:
        description:
          - Provider parameters.
          - For V(simulation), C(model_path), the path of the model YAML file, and C(normalize_switch_names)
            (default false) to name switches C(switch.<tier>.<n>) as Topograph's OCI providers do.
          - For V(inventory), C(domains) (racks in physical order, each C(name), C(nodes), C(switch) and
            optional C(sub_domains)), C(switches) (switch id to parent id, or to C(parent) and C(name)),
            C(nodes) (node groups outside any domain, each C(nodes) and C(switch)) and C(hosts)
            (hostname to C(domain), C(switch), C(sub_domain)).
          - A declared domain without nodes becomes an empty placeholder block at its position.
        type: dict
        default: {}
      creds:
        description:
          - Provider credentials. Never logged.
          - The providers of this release need none.
        type: dict
        default: {}
"""

    # For modules that also take the model that topology_info returns.
    MODEL = r"""
options:
  model:
    description:
      - The topology model in compact form, as returned by M(aifactory.topology.topology_info) in
        RV(aifactory.topology.topology_info#module:topology).
      - Mutually exclusive with O(provider); one of them is required.
    type: dict
"""

    # For modules that render a file.
    OUTPUT_FILE = r"""
options:
  dest:
    description: The file to write. Without it nothing is written and RV(content) is returned.
    type: path
  backup:
    description: Keep a timestamped copy of the file it replaces.
    type: bool
    default: false
"""
