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
          - V(infiniband) reads C(ibnetdiscover) output gathered on the nodes (docs/providers/infiniband.md).
          - V(netq) reads the NVIDIA NetQ topology graph and NMX NVLink domains (docs/providers/netq.md).
          - V(dra) reads accelerator domains from a Kubernetes node label (C(nvidia.com/gpu.clique) by default).
          - V(node_labels) reads fabric tiers and domains back from Kubernetes node labels (docs/kubernetes.md).
          - V(aws) reads EC2 DescribeInstanceTopology through boto3 (docs/providers/aws.md).
          - V(gcp) reads Compute Engine instances.list physicalHostTopology (docs/providers/gcp.md).
          - V(oci) reads OCI compute hosts, their network blocks and GPU memory fabrics (docs/providers/oci.md).
          - V(lambda) reads the Lambda topology API (docs/providers/lambda.md).
          - V(nebius) reads Nebius compute instances' InfiniBand topology paths over gRPC (docs/providers/nebius.md).
          - V(nscale) reads the Nscale Radar topology API (docs/providers/nscale.md).
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
          - For V(dra) and V(node_labels), C(node_selector) (label to value) and C(instance_annotation) (default
            C(topograph.run/instance), the model's node name, else the Kubernetes node name); V(dra) takes C(label),
            V(node_labels) C(fabric_labels), C(accelerator_label) and C(sub_domain_label) (docs/kubernetes.md).
          - The cloud providers take C(instances), a list of C(region) and C(instances) (instance id to node name),
            and C(page_size), C(trim_tiers), C(timeout), C(retry_attempts), C(retry_backoff), C(retry_after_max),
            C(validate_certs), C(ca_bundle); see docs/providers/.
          - V(infiniband) takes C(ibnetdiscover) (node to output), C(ibnetdiscover_files), C(nodes), C(node_map) and
            C(node_facts) (node to its C(topology_node) fact from M(aifactory.topology.topology_facts));
            V(netq) takes C(api_url), C(nmx_url), C(nmx), C(nodes) and the HTTP settings of the cloud providers.
          - Any provider takes C(accelerator), C(source=nvidia_smi) and C(nvidia_smi) (node to its nvidia-smi
            fabric output, or its C(topology_node) fact), for NVLink domains (docs/providers/nvidia_smi.md).
          - Any provider takes C(discovery_timeout), the total seconds of the whole discovery (every request,
            retry and wait; default 600). C(timeout) bounds each request attempt as a whole, body included,
            so a server that sends one byte a second is cut off (docs/security.md).
        type: dict
        default: {}
      creds:
        description:
          - Provider credentials. Never logged.
          - A credential with a line break (such as the trailing newline of a YAML C(|) block), a control
            or a non-ASCII character is refused before it is used; the error names it, never its value.
          - The cloud providers take their secrets here or from environment variables (docs/providers/).
          - V(netq) takes C(username) and C(password), else C(NETQ_USERNAME) and C(NETQ_PASSWORD).
          - V(dra) and V(node_labels) take the Kubernetes connection options of M(aifactory.topology.k8s_node_labels)
            (C(kubeconfig), C(context), C(host), C(api_key), C(validate_certs), C(ca_cert), C(client_cert),
            C(client_key)), each falling back to its C(K8S_AUTH_*) variable.
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
    description:
      - The file to write. Without it nothing is written and RV(content) is returned.
      - Only a regular file is ever replaced; a directory, FIFO, socket or device there is an error.
      - A symbolic link is followed (its target is written and the link stays); the diff names both.
      - O(owner), O(group) and O(mode) are applied before the new file replaces the old one.
    type: path
  backup:
    description: Keep a timestamped copy of the file it replaces.
    type: bool
    default: false
"""
