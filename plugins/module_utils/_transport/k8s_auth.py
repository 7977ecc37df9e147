# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes auth options, pure data: the provider registry reads them without importing the
Kubernetes transport (``k8s.py``: http.client, ssl, threads), which a Slurm module never needs."""

from __future__ import annotations

# Module option -> (argument spec, environment variables read when the option is not set),
# as kubernetes.core names them (plugins/module_utils/args_common.py, k8s/client.py).
AUTH_OPTIONS = {
    "kubeconfig": ({"type": "path"}, ("K8S_AUTH_KUBECONFIG",)),
    "context": ({"type": "str"}, ("K8S_AUTH_CONTEXT",)),
    "host": ({"type": "str"}, ("K8S_AUTH_HOST",)),
    "api_key": ({"type": "str", "no_log": True}, ("K8S_AUTH_API_KEY",)),
    "validate_certs": ({"type": "bool", "aliases": ["verify_ssl"]}, ("K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL")),
    "ca_cert": ({"type": "path", "aliases": ["ssl_ca_cert"]}, ("K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT")),
    "client_cert": ({"type": "path", "aliases": ["cert_file"]}, ("K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE")),
    "client_key": ({"type": "path", "aliases": ["key_file"]}, ("K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE")),
}
AUTH_ARG_SPEC = {name: dict(spec) for name, (spec, _env) in AUTH_OPTIONS.items()}
