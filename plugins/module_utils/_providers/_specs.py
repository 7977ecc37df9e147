# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The provider registry: each provider's module and the argument specs of its params and creds.

Pure data, cheap to import: the registry is read (to validate, to document) without importing
any provider or its SDK. Each provider's params and its creds are one ``ArgumentSpec`` object each
(``_base/arguments.py``): the Ansible argument spec (``type``, ``choices``, ``required``,
``default``, ``no_log``, ``options``, ``elements``, ``aliases``) and the checks that go with it
(``node_labels``' preset, ``aws``' key pair), checked once, centrally, with
``ArgumentSpecValidator`` before discovery (``_providers.validate``). Each option also carries a
``description`` (markdown, backticks for literals): ``tools/provider_docs.py`` generates the
parameter tables of ``docs/providers/*.md`` and the ``provider`` doc fragment from it, and
``tests/unit/plugins/module_utils/test_provider_specs.py`` fails when they drift.
"""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._base.deadline import DEFAULT_DISCOVERY_TIMEOUT
from ansible_collections.aifactory.topology.plugins.module_utils._base.labels import GPU_CLIQUE_LABEL, INSTANCE_ANNOTATION
from ansible_collections.aifactory.topology.plugins.module_utils._transport.k8s_auth import AUTH_OPTIONS, CONNECTION

# module: the file in _providers/; function: its discover function; params, creds: ArgumentSpec objects;
# doc: the provider's page.
Provider = namedtuple("Provider", "module function params creds doc summary")

SOURCES = ("nvidia_smi", "nvidia-smi", "none")

ACCELERATOR = {
    "type": "dict",
    "description": "NVLink domains from `nvidia-smi` on each node, on top of the tree (see nvidia_smi.md).",
    "options": {
        "source": {"type": "str", "choices": list(SOURCES), "default": "nvidia_smi",
                   "description": "`nvidia_smi` (or Topograph's spelling `nvidia-smi`); `none` turns it off."},
        "nvidia_smi": {"type": "dict",
                       "description": "Node to the output of `nvidia-smi --query-gpu=fabric.clusterUuid,"
                                      "fabric.cliqueId,fabric.state,fabric.status --format=csv,noheader` there "
                                      "(the older two columns `fabric.clusterUuid,fabric.cliqueId` are still read) "
                                      "or of `nvidia-smi -q` (its `Fabric` sections, with the health), its "
                                      "registered result (`stdout` is read), or the node's `topology_node` fact "
                                      "from `aifactory.topology.topology_facts` (or its `nvlink` part). A fabric "
                                      "registration not `Completed` with `Success`, or a degraded health, makes the "
                                      "node unhealthy and quarantines it; facts without a clique quarantine the "
                                      "node too (with `invalid_nodes: fail` either fails the run, naming the node). "
                                      "Required unless `source` is `none`."},
        "require_domain": {"type": "list", "elements": "str", "default": [],
                           "description": "Nodes (hostlist expressions, or `all`) that must be in a multi-node NVLink "
                                          "domain: such a node whose GPUs are in none (an HGX-like all-zero cluster "
                                          "UUID, or no fabric) is unhealthy. Without it only the hardware says so: "
                                          "a GPU that reports an NVL chassis serial number belongs in a domain."},
        "rack_trays": {"type": "int", "default": 18,
                       "description": "Trays of a full rack (18 for an NVL72): a rack, named by its NVLink domain and "
                                      "chassis serial number, that reports fewer is reported with the missing trays."},
        "rack_from_name": {"type": "str",
                           "description": "A regular expression with a named group `rack` that a node name matches "
                                          "whole, such as `gb200-r(?P<rack>[0-9]+)-n[0-9]+`: a tray whose name puts "
                                          "it in another rack than its hardware (NVLink domain and chassis) does is "
                                          "reported with both racks. It passes the cost rules of name patterns "
                                          "(at most 256 characters and 2 repetitions, none nested; "
                                          "docs/security.md#bounded-patterns-and-numbers)."},
        "rack_escalation": {"type": "dict",
                            "description": "Opt-in: take a whole rack out of NVLink placement when this many of its "
                                           "trays are unhealthy or missing; its other trays are quarantined as "
                                           "unhealthy with one reason naming the rack, the count and the trays (so "
                                           "its block holds no nodes, and the opt-in drain and taint act on them), "
                                           "within the shrink guard; the next run without the fault restores them. "
                                           "Trays quarantined as invalid never count, and a rack with healthy trays "
                                           "is only reported unless a witness other than the trays (NMX, "
                                           "`rack_from_name`) agrees: the witness rule, docs/security.md.",
                            "options": {
                                "trays": {"type": "int",
                                          "description": "A count of bad trays (a whole number from 1 to 255, "
                                                         "not a boolean)."},
                                "share": {"type": "float",
                                          "description": "A share of the rack's trays, in percent (of `rack_trays`)."},
                            }},
    },
}

# Every provider: one deadline for all its requests, retries and waits, so a server that drips or
# pages forever cannot hold the task (positive and finite: checked in _providers.discover).
DISCOVERY_TIMEOUT = {
    "type": "float", "default": DEFAULT_DISCOVERY_TIMEOUT,
    "description": "Seconds the whole discovery may take: every request, retry and wait of it.",
}

INVALID_NODES = {
    "type": "str", "choices": ["quarantine", "fail"], "default": "quarantine",
    "description": "What unusable data about one node does (a name the rule refuses, GPUs outside their NVLink "
                   "fabric or in two cliques, a malformed per-node record): `quarantine` leaves that node out of "
                   "the map and reports it in `quarantined`; `fail` fails the run. Problems with the whole input "
                   "always fail.",
}
# inventory and simulation: what they declare is the operator's and always fails; only accelerator data quarantines.
DECLARED_INVALID_NODES = dict(INVALID_NODES, description=(
    "What unusable `accelerator.nvidia_smi` data about one node does (GPUs outside their NVLink fabric or in two "
    "cliques, a degraded fabric, a failed nvidia-smi): `quarantine` leaves that node out of the map and reports it "
    "in `quarantined`; `fail` fails the run. An error in the declared topology itself (a name the rule refuses, a "
    "node under two switches) always fails the run, whatever this says: it is the operator's to fix."))

# Retry and TLS settings of every provider that speaks HTTP or gRPC (_providers._cloud).
HTTP_SETTINGS = {
    "timeout": {"type": "float", "default": 30.0, "description": "Seconds per request."},
    "retry_attempts": {"type": "int", "default": 5,
                       "description": "Tries per request for timeouts, 408, 429 and 5xx (gRPC: UNAVAILABLE, "
                                      "RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, ABORTED); at least 1."},
    "retry_backoff": {"type": "float", "default": 0.5, "description": "First delay in seconds, doubled per retry."},
    "retry_after_max": {"type": "float", "default": 300.0,
                        "description": "Cap in seconds on a server's `Retry-After` (gRPC: `grpc-retry-pushback-ms`)."},
    "validate_certs": {"type": "bool", "default": True,
                       "description": "TLS verification; turning it off is an explicit choice."},
    "ca_bundle": {"type": "path", "description": "CA bundle of a private CA (verification stays on)."},
}


def _preset_conflict(params):
    """node_labels: a ``preset`` names its labels; ``fabric_labels`` or ``accelerator_label`` given too is an error."""
    given = [key for key in ("fabric_labels", "accelerator_label") if params.get(key) is not None]
    if params.get("preset") is None or not given:
        return None
    return (f"params.preset {params['preset']} sets {' and '.join(given)}; leave {'them' if len(given) > 1 else 'it'} "
            "out, or name every label without the preset")


def _aws_key_pair(creds):
    """aws: a key id and its secret key go together; without either, boto3's default credential chain applies."""
    if bool(creds.get("access_key_id")) == bool(creds.get("secret_access_key")):
        return None
    return ("the aws provider needs both creds.access_key_id and creds.secret_access_key, or neither (then boto3's "
            "default credential chain applies)")


NO_CREDS = ArgumentSpec({})


def _cloud_params(page_size, page_size_means, extra, region="region"):
    """The params every cloud provider takes, plus its own."""
    spec = {
        "instances": {
            "type": "list", "elements": "dict", "required": True,
            "description": "The instances to map, Topograph's request form: a list of `region` and `instances` "
                           "(instance id to node name). Other instances of the API are ignored.",
            "options": {
                "region": {"type": "str", "description": f"The {region}."},
                "instances": {"type": "dict", "required": True, "description": "Instance id to node name."},
            },
        },
        "page_size": {"type": "int", "default": page_size,
                      "description": f"{page_size_means}; 0 or less warns and uses the default."},
        "trim_tiers": {"type": "int", "choices": [0, 1, 2], "default": 0,
                       "description": "Drop the 0, 1 or 2 highest fabric tiers (Topograph's `trimTiers`)."},
    }
    spec.update(HTTP_SETTINGS)
    spec.update(extra)
    return _with_accelerator(spec)


def _with_accelerator(spec, invalid_nodes=None):
    """``spec`` plus what every provider takes: ``accelerator``, ``discovery_timeout``, ``invalid_nodes`` (its
    option spec: INVALID_NODES unless given)."""
    spec = dict(spec)
    spec["accelerator"] = ACCELERATOR
    spec["discovery_timeout"] = DISCOVERY_TIMEOUT
    spec["invalid_nodes"] = INVALID_NODES if invalid_nodes is None else invalid_nodes
    return spec


SIMULATION_PARAMS = ArgumentSpec(_with_accelerator({
    "model_path": {"type": "path", "required": True,
                   "description": "The NVIDIA Topograph simulation model YAML file (`switches`, `blocks`), read unchanged."},
    "normalize_switch_names": {"type": "bool", "default": False,
                               "description": "Name switches `switch.<tier>.<n>`, as Topograph's OCI providers do."},
}, DECLARED_INVALID_NODES))

_SUB_DOMAIN = {
    "name": {"type": "str", "description": "The sub-domain (for example an NVLink tray group)."},
    "nodes": {"type": "raw", "description": "Its nodes: a hostlist string or a list of them."},
    "switch": {"type": "str", "description": "Their leaf switch; default the domain's."},
}
INVENTORY_PARAMS = ArgumentSpec(_with_accelerator({
    "domains": {
        "type": "list", "elements": "dict",
        "description": "Racks (accelerator domains) in physical order. A domain without nodes is a declared rack "
                       "whose nodes are not there yet: an empty placeholder block at its position.",
        "options": {
            "name": {"type": "str", "description": "The domain (rack) name."},
            "nodes": {"type": "raw", "description": "Its nodes: a hostlist string or a list of them."},
            "switch": {"type": "str", "description": "The leaf switch of its nodes."},
            "sub_domains": {"type": "list", "elements": "dict", "options": _SUB_DOMAIN,
                            "description": "Sub-domains of the rack, each `name`, `nodes` and `switch`."},
        },
    },
    "switches": {"type": "dict",
                 "description": "Switch id to its parent id (or null), or to a mapping of `parent` and `name`."},
    "nodes": {
        "type": "list", "elements": "dict",
        "description": "Node groups outside any domain (service nodes).",
        "options": {
            "nodes": {"type": "raw", "description": "The nodes: a hostlist string or a list of them."},
            "switch": {"type": "str", "description": "Their leaf switch."},
            "domain": {"type": "str", "description": "Their accelerator domain."},
        },
    },
    "hosts": {"type": "dict",
              "description": "Hostname to a mapping of `domain`, `switch` and `sub_domain`, for example built from hostvars."},
}, DECLARED_INVALID_NODES))

INFINIBAND_PARAMS = ArgumentSpec(_with_accelerator({
    "ibnetdiscover": {"type": "dict",
                      "description": "Node to the text `ibnetdiscover` printed there, or the registered result of the "
                                     "task (its `stdout` is read; a failed result is an error); or to a list of them, "
                                     "or a loop's registered result (`results`): one run per port, "
                                     "`ibnetdiscover -C <ca> -P <port>`."},
    "ibnetdiscover_files": {"type": "list", "elements": "path", "description": "Paths of saved outputs."},
    "nodes": {"type": "raw",
              "description": "The cluster's nodes, a list or a hostlist (`gpu[001-128]`); default every host named by "
                             "an HCA. Others are ignored; listed nodes without an HCA are kept without a switch and "
                             "named in a warning."},
    "node_map": {"type": "dict",
                 "description": "HCA GUID (`H-<guid>`, `0x<guid>` or `<guid>`) or described host name to node name, for "
                                "HCAs whose node description does not carry the node's name."},
    "node_facts": {"type": "dict",
                   "description": "Node to its `topology_node` fact from `aifactory.topology.topology_facts`: every HCA "
                                  "GUID the node found in its sysfs is that node's, whatever the HCA's description says "
                                  "(`node_map` wins where both name one HCA). Facts unusable for one node (no "
                                  "`infiniband` list, an HCA entry that is not a mapping, a `node_guid` that is not "
                                  "a GUID) quarantine that node; a GUID in two nodes' facts quarantines both."},
    "switches": {"type": "dict",
                 "description": "Which switches make the tree (Topograph's `switchSelector`): regular expressions "
                                "matched whole against a switch's display name (`DC1-STOR-LEAF-1`) or GUID id "
                                "(`S-...`). Needed where storage or management leaves share the compute subnet.",
                 "options": {
                     "include": {"type": "list", "elements": "str",
                                 "description": "Only leaves (switches with host HCAs) that match are leaves; the "
                                                "switches above are found as usual."},
                     "exclude": {"type": "list", "elements": "str",
                                 "description": "Switches that match leave the fabric, at every tier, with their "
                                                "links; hosts only they reach get no switch."},
                 }},
    "hcas": {"type": "dict",
             "description": "Which HCAs put a node under a leaf: regular expressions matched whole against the HCA's "
                            "name (`mlx5_0`, the second word of its node description) or GUID id (`H-...`); for "
                            "nodes whose storage HCA (`mlx5_1`) is on the same subnet as the compute ones.",
             "options": {
                 "include": {"type": "list", "elements": "str",
                             "description": "Only HCAs that match count (`[mlx5_0]`, `['mlx5_[02-9]']`)."},
                 "exclude": {"type": "list", "elements": "str", "description": "HCAs that match do not count."},
             }},
}))

NETQ_PARAMS = ArgumentSpec(_with_accelerator(dict({
    "api_url": {"type": "str", "required": True, "description": "NetQ's base URL, such as `https://netq.example.com`."},
    "nmx_url": {"type": "str", "description": "NMX's base URL; default `api_url`."},
    "nmx": {"type": "bool", "default": True, "description": "Read NVLink domains from NMX; `false` skips it."},
    "nodes": {"type": "raw",
              "description": "The cluster's nodes (list or hostlist); default every host of the graph. Listed nodes "
                             "NetQ does not know are kept without a switch and named in a warning."},
}, **HTTP_SETTINGS)))
NETQ_CREDS = ArgumentSpec({
    "username": {"type": "str", "description": "NetQ (and NMX) user; else `NETQ_USERNAME`."},
    "password": {"type": "str", "no_log": True, "description": "Its password; else `NETQ_PASSWORD`."},
})

AWS_PARAMS = ArgumentSpec(_cloud_params(100, "`MaxResults` when a region has more than 100 instances", {
    "endpoint_url": {"type": "str", "description": "Another EC2 endpoint (a VPC endpoint, a test server)."},
    "profile": {"type": "str", "description": "A named profile from `~/.aws/config`."},
}, region="AWS region"))
AWS_CREDS = ArgumentSpec({
    "access_key_id": {"type": "str", "no_log": True,
                      "description": "Static or temporary key id; without keys boto3's default chain applies "
                                     "(`AWS_*` variables, `AWS_PROFILE`, IRSA, Pod Identity, the instance role)."},
    "secret_access_key": {"type": "str", "no_log": True, "description": "Its secret key."},
    "session_token": {"type": "str", "no_log": True, "description": "The session token of temporary keys."},
}, checks=[_aws_key_pair])

GCP_API_URL = "https://compute.googleapis.com"
GCP_PARAMS = ArgumentSpec(_cloud_params(500, "`maxResults` (500 is the API's maximum)", {
    "project_id": {"type": "str",
                   "description": "The project; else `GOOGLE_CLOUD_PROJECT`, `CLOUDSDK_CORE_PROJECT`, else the "
                                  "credentials document's `project_id`, else the metadata server."},
    "api_url": {"type": "str", "default": GCP_API_URL,
                "description": "Another endpoint (Private Service Connect, a test server)."},
}, region="zone (as in Topograph)"))
GCP_CREDS = ArgumentSpec({
    "access_token": {"type": "str", "no_log": True,
                     "description": "An OAuth access token (`gcloud auth print-access-token`), sent as given; else "
                                    "`GOOGLE_OAUTH_ACCESS_TOKEN`. Without one, Application Default Credentials "
                                    "apply: `credentials_json`, `credentials_file`, `GOOGLE_APPLICATION_CREDENTIALS`, "
                                    "gcloud's `application_default_credentials.json`, else the metadata server."},
    "credentials_json": {"type": "str", "no_log": True,
                         "description": "A Google credentials document (JSON): a service-account key, a workload "
                                        "identity federation configuration (`external_account`), an "
                                        "`authorized_user`."},
    "credentials_file": {"type": "path",
                         "description": "Or its path; else `GOOGLE_APPLICATION_CREDENTIALS`."},
})

OCI_IDENTITY_URL = "https://identity.{region}.oraclecloud.com"
OCI_COMPUTE_URL = "https://iaas.{region}.oraclecloud.com"
OCI_PARAMS = ArgumentSpec(_cloud_params(100, "`limit` of `ListComputeHosts`", {
    "compartment_id": {"type": "str", "description": "The compartment whose hosts are listed; default the tenancy."},
    "identity_url": {"type": "str", "default": OCI_IDENTITY_URL,
                     "description": "Identity endpoint; `{region}` is replaced."},
    "compute_url": {"type": "str", "default": OCI_COMPUTE_URL, "description": "Core endpoint; `{region}` is replaced."},
    "concurrency": {"type": "int", "default": 8, "description": "`GetComputeHost` calls at a time; at least 1."},
    "federation_url": {"type": "str",
                       "description": "auth instance_principal: the federation endpoint (default the SDK's, "
                                      "`https://auth.<region>.oraclecloud.com`); the metadata service is the SDK's "
                                      "or `OCI_METADATA_BASE_URL`."},
}, region="OCI region (`us-ashburn-1`)"))
OCI_AUTH_METHODS = ["api_key", "config_file", "security_token", "instance_principal", "resource_principal"]
OCI_CREDS = ArgumentSpec({
    "auth": {"type": "str", "choices": OCI_AUTH_METHODS, "default": "api_key",
             "description": "How the SDK signs: an API key (the fields below), a `config_file` profile, a session "
                            "token profile (`security_token`), `instance_principal`, `resource_principal` (the "
                            "`OCI_RESOURCE_PRINCIPAL_*` variables)."},
    "tenancy_id": {"type": "str", "description": "auth api_key: tenancy OCID; else `OCI_CLI_TENANCY`."},
    "user_id": {"type": "str", "description": "auth api_key: user OCID; else `OCI_CLI_USER`."},
    "fingerprint": {"type": "str", "description": "auth api_key: the key's fingerprint; else `OCI_CLI_FINGERPRINT`."},
    "private_key": {"type": "str", "no_log": True,
                    "description": "auth api_key: the API signing key (PEM); else `OCI_CLI_KEY_CONTENT`."},
    "private_key_file": {"type": "path", "description": "Or its path; else `OCI_CLI_KEY_FILE`."},
    "passphrase": {"type": "str", "no_log": True,
                   "description": "The key's passphrase (api_key: else `OCI_CLI_PASSPHRASE`; a profile's "
                                  "`pass_phrase` otherwise)."},
    "config_file": {"type": "path",
                    "description": "auth config_file or security_token: the OCI config file (default `~/.oci/config`)."},
    "profile": {"type": "str", "description": "Its profile (default `DEFAULT`)."},
})

LAMBDA_API_URL = "https://cloud.lambda.ai"
LAMBDA_PARAMS = ArgumentSpec(_cloud_params(200, "`page_size`", {
    "workspace_id": {"type": "str",
                     "description": "Sent as `workspace_id` (an identifier, not a secret); or in creds, else "
                                    "`LAMBDA_WORKSPACE_ID`."},
    "api_url": {"type": "str", "default": LAMBDA_API_URL, "description": "The topology API's base URL."},
}, region="Lambda region"))
LAMBDA_CREDS = ArgumentSpec({
    "token": {"type": "str", "no_log": True,
              "description": "The API key (Bearer); else `LAMBDA_API_TOKEN`, else `LAMBDA_API_KEY`, else the "
                             "workload identity below."},
    "workspace_id": {"type": "str", "description": "The workspace, when not in params."},
    "identity_lrn": {"type": "str",
                     "description": "Workload identity: the identity to assume; else `LAMBDA_IDENTITY_LRN` (or "
                                    "`LAMBDA_ROLE_LRN`), which lambda-pod-identity-webhook injects."},
    "token_file": {"type": "path",
                   "description": "Its projected service-account token; else `LAMBDA_WORKLOAD_IDENTITY_TOKEN_FILE`, "
                                  "else `/var/run/secrets/lambda.ai/serviceaccount/token`."},
})

NEBIUS_ENDPOINT = "compute.api.nebius.cloud:443"
NEBIUS_PARAMS = ArgumentSpec(_cloud_params(200, "`page_size`", {
    "project_id": {"type": "str", "description": "The project (`project-...`); else `NEBIUS_PROJECT_ID`."},
    "endpoint": {"type": "str", "default": NEBIUS_ENDPOINT,
                 "description": "The gRPC endpoint. The default uses the SDK's addresses (compute and the IAM token "
                                "service under `api.nebius.cloud`); another value serves every service, token "
                                "exchange included (a private endpoint, a test server)."},
    "tls": {"type": "bool", "default": True,
            "description": "`false` only for a plaintext test server; `ca_bundle` sets the roots."},
}, region="region (optional: the project decides)"))
NEBIUS_CREDS = ArgumentSpec({
    "iam_token": {"type": "str", "no_log": True,
                  "description": "An IAM access token (`nebius iam get-access-token`); else `NEBIUS_IAM_TOKEN`."},
    "service_account_id": {"type": "str",
                           "description": "A service account (`serviceaccount-...`) whose key the SDK exchanges "
                                          "for tokens; with `public_key_id` and `private_key` or `private_key_file`."},
    "public_key_id": {"type": "str", "description": "The id of its authorized key (`publickey-...`)."},
    "private_key": {"type": "str", "no_log": True, "description": "That key's private half (PEM, RSA)."},
    "private_key_file": {"type": "path", "description": "Or its path."},
    "credentials_file": {"type": "path",
                         "description": "Or the CLI's service-account credentials file (JSON `subject-credentials`)."},
    "token_endpoint": {"type": "str",
                       "description": "Or the metadata service's token URL (the instance's service account; the "
                                      "SDK sends `Metadata: true`, reads `access_token` and `expires_at`)."},
})

NSCALE_PARAMS = ArgumentSpec(_cloud_params(100, "`limit`", {
    "api_url": {"type": "str", "required": True,
                "description": "The Radar API's base URL (Topograph's `radarApiUrl`/`baseUrl`)."},
    "organization": {"type": "str",
                     "description": "Sent as `X-Organization`; or in creds, else `NSCALE_ORGANIZATION`."},
}, region="region (sent as `X-Region`)"))
NSCALE_CREDS = ArgumentSpec({
    "token": {"type": "str", "no_log": True, "description": "Bearer token; else `NSCALE_TOKEN`."},
    "organization": {"type": "str", "description": "The organization, when not in params."},
})

_KUBERNETES_COMMON = {
    "node_selector": {"type": "dict", "description": "Label to value: only matching Nodes are read."},
    "instance_annotation": {"type": "str", "default": INSTANCE_ANNOTATION,
                            "description": "The Node annotation that holds the model's node name (Topograph's node "
                                           "data broker writes it); nodes without it keep their Kubernetes name; an "
                                           "empty string always uses the Kubernetes name."},
    # The Kubernetes modules' option (_transport/k8s_auth.CONNECTION): one default.
    "request_timeout": dict(CONNECTION.argument_spec["request_timeout"], description="Seconds each API request may take."),
}
DRA_PARAMS = ArgumentSpec(_with_accelerator(dict(_KUBERNETES_COMMON, label={
    "type": "str", "default": GPU_CLIQUE_LABEL, "description": "The Node label that holds the accelerator domain."})))
# preset -> (fabric_labels, accelerator_label) of the node_labels provider.
NODE_LABEL_PRESETS = {
    # Crusoe's control plane: tier 0 the rail-optimized pod, tier 1 the InfiniBand partition; the
    # NVLink domain from GPU feature discovery's clique, verbatim (Topograph's crusoe provider).
    "crusoe": (["crusoe.ai/pod.id", "crusoe.ai/ib.partition.id"], GPU_CLIQUE_LABEL),
}
ON_MISSING_LABEL = ("partial", "skip", "fail")
SWITCH_IDS = ("label", "topograph")
NODE_LABELS_PARAMS = ArgumentSpec(_with_accelerator(dict(
    _KUBERNETES_COMMON,
    preset={"type": "str", "choices": list(NODE_LABEL_PRESETS),
            "description": "Labels of a known platform instead of `fabric_labels` and `accelerator_label` (an error "
                           "with either): `crusoe` reads `crusoe.ai/pod.id` (tier 0), `crusoe.ai/ib.partition.id` "
                           "(tier 1) and the domain from `nvidia.com/gpu.clique`, verbatim."},
    fabric_labels={"type": "list", "elements": "str",
                   "description": "The tier labels, tier 0 (closest to the node) first; default "
                                  "`fabric.topograph.run/tier-N`."},
    accelerator_label={"type": "str", "description": "The domain label; default `accelerator.topograph.run/domain`."},
    sub_domain_label={"type": "str", "description": "The sub-domain label; default `accelerator.topograph.run/sub-domain`."},
    on_missing_label={"type": "str", "choices": list(ON_MISSING_LABEL), "default": "partial",
                      "description": "A node without one of the `fabric_labels` (or a preset's): `partial` keeps the "
                                     "tiers from 0 up to the first missing one (a node with a gap is quarantined); `skip` leaves the "
                                     "node out with a warning, `fail` fails naming the node and label (Topograph's "
                                     "`onMissingLabel`; `skip` is its default)."},
    require_ready={"type": "bool", "default": False,
                   "description": "Leave out, with a warning, Nodes whose `Ready` condition is not `True` "
                                  "(Topograph's `requireReady`; cordoned nodes stay). Nodes being deleted are always "
                                  "left out, with a warning."},
    switch_ids={"type": "str", "choices": list(SWITCH_IDS), "default": "label",
                "description": "`label`: a switch is its label value (one value under two parents is an error). "
                               "`topograph`: Topograph's `kubernetes` provider's ids, the top tier's value kept and "
                               "each lower tier `<first 30 characters>-<32 hex digits of the SHA-256 of its path>`, "
                               "so equal values under different parents are different switches."},
)), checks=[_preset_conflict])
_AUTH_DESCRIPTIONS = {
    "kubeconfig": "Path of a kubeconfig file; else `K8S_AUTH_KUBECONFIG`.",
    "context": "The kubeconfig context; else `K8S_AUTH_CONTEXT`.",
    "host": "URL of the API server; else `K8S_AUTH_HOST`.",
    "api_key": "A bearer token; else `K8S_AUTH_API_KEY`.",
    "validate_certs": "Verify the API server's certificate; else `K8S_AUTH_VALIDATE_CERTS`.",
    "ca_cert": "The CA that signed the API server's certificate; else `K8S_AUTH_CA_CERT`.",
    "client_cert": "Client certificate, with `client_key`; else `K8S_AUTH_CLIENT_CERT`.",
    "client_key": "Its key; else `K8S_AUTH_CLIENT_KEY`.",
}
KUBERNETES_CREDS = ArgumentSpec({name: dict(spec, description=_AUTH_DESCRIPTIONS[name])
                                 for name, (spec, _env) in AUTH_OPTIONS.items()})

PROVIDERS = {
    "simulation": Provider("simulation", "discover", SIMULATION_PARAMS, NO_CREDS, "simulation.md",
                           "reads an NVIDIA Topograph simulation model file, unchanged"),
    "inventory": Provider("inventory_vars", "discover", INVENTORY_PARAMS, NO_CREDS, "inventory.md",
                          "reads racks, switches and nodes declared in inventory variables"),
    "infiniband": Provider("infiniband", "discover", INFINIBAND_PARAMS, NO_CREDS, "infiniband.md",
                           "reads C(ibnetdiscover) output gathered on the nodes"),
    "netq": Provider("netq", "discover", NETQ_PARAMS, NETQ_CREDS, "netq.md",
                     "reads the NVIDIA NetQ topology graph and NMX NVLink domains"),
    "aws": Provider("aws", "discover", AWS_PARAMS, AWS_CREDS, "aws.md",
                    "reads EC2 DescribeInstanceTopology through boto3"),
    "gcp": Provider("gcp", "discover", GCP_PARAMS, GCP_CREDS, "gcp.md",
                    "reads Compute Engine instances.list physicalHostTopology"),
    "oci": Provider("oci", "discover", OCI_PARAMS, OCI_CREDS, "oci.md",
                    "reads OCI compute hosts, their network blocks and GPU memory fabrics"),
    "lambda": Provider("lambda_cloud", "discover", LAMBDA_PARAMS, LAMBDA_CREDS, "lambda.md",
                       "reads the Lambda topology API"),
    "nebius": Provider("nebius", "discover", NEBIUS_PARAMS, NEBIUS_CREDS, "nebius.md",
                       "reads Nebius compute instances' InfiniBand topology paths over gRPC"),
    "nscale": Provider("nscale", "discover", NSCALE_PARAMS, NSCALE_CREDS, "nscale.md",
                       "reads the Nscale Radar topology API"),
    "dra": Provider("kubernetes_nodes", "discover_dra", DRA_PARAMS, KUBERNETES_CREDS, "dra.md",
                    "reads accelerator domains from a Kubernetes node label"),
    "node_labels": Provider("kubernetes_nodes", "discover_node_labels", NODE_LABELS_PARAMS, KUBERNETES_CREDS,
                            "node_labels.md", "reads fabric tiers and domains back from Kubernetes node labels"),
}
