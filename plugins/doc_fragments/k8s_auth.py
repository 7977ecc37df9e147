# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # Kubernetes connection options (_transport/k8s_auth.CONNECTION); names and K8S_AUTH_* variables as kubernetes.core's.
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path of a kubeconfig file.
      - Falls back to the E(K8S_AUTH_KUBECONFIG) environment variable, then (only when no option or
        variable is set at all) the in-cluster service account, then E(KUBECONFIG) or C(~/.kube/config).
    type: path
  context:
    description:
      - The kubeconfig context to use; defaults to the file's current context.
      - Falls back to E(K8S_AUTH_CONTEXT).
    type: str
  host:
    description:
      - URL of the API server, for example V(https://api.example.com:6443).
      - With O(api_key), or O(client_cert) and O(client_key), nothing else is read (no kubeconfig,
        no in-cluster service account); otherwise it overrides the kubeconfig's server.
      - Falls back to E(K8S_AUTH_HOST), which AWX's Kubernetes credential sets.
    type: str
  api_key:
    description:
      - A bearer token for the API server. Never logged.
      - Falls back to E(K8S_AUTH_API_KEY), which AWX's Kubernetes credential sets.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. Leave it on; use O(ca_cert) for a private CA.
      - Falls back to E(K8S_AUTH_VALIDATE_CERTS) or E(K8S_AUTH_VERIFY_SSL) (V(false), V(no) or V(0) turn it off).
      - Defaults to the kubeconfig's setting, else true.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path of the CA certificate that signed the API server's certificate.
      - Falls back to E(K8S_AUTH_CA_CERT) or E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path of a client certificate for TLS client authentication, with O(client_key).
      - Falls back to E(K8S_AUTH_CLIENT_CERT) or E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path of the key of O(client_cert).
      - Falls back to E(K8S_AUTH_CLIENT_KEY) or E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  request_timeout:
    description:
      - Seconds each API request may take, from sending it to the end of the answer (a list, page by page).
    type: float
    default: 60
requirements:
  - kubernetes (the Python client) on the host that runs the task
notes:
  - When any connection option or E(K8S_AUTH_*) variable is set, the in-cluster service account is never
    used in its place.
"""

    # Write options shared by the modules that write to the API server (_orchestration/k8s_module.WRITES).
    WRITES = r"""
options:
  concurrency:
    description:
      - How many write requests run at once.
    type: int
    default: 8
  conflict_retries:
    description:
      - How often a write that lost a race (HTTP 409, the object changed since it was read) is
        recomputed from a fresh read and sent again.
    type: int
    default: 5
attributes:
  check_mode:
    support: full
    details:
      - Every write is sent with C(dryRun=All), so the API server validates and authorises it and stores nothing;
        check mode therefore needs the same RBAC permissions as a real run.
  diff_mode:
    support: full
  idempotent:
    support: full
"""
