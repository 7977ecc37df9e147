# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes connection options, pure data: the provider registry reads them without importing the
Kubernetes transport (``k8s.py``: http.client, ssl, threads), which a Slurm module never needs.

``CONNECTION`` (doc fragment k8s_auth) is the one argument spec of how the collection connects to an API
server: the auth options and ``request_timeout``. The Kubernetes modules merge it and connect with
``CONNECTION.build(module.params)`` (``_orchestration/k8s_module.connect``); the ``k8s_nodes`` event source
builds the same ``ConnectionOptions`` through the same spec (``_events/eda.k8s_connection_options``), and the
``dra`` and ``node_labels`` providers take its ``request_timeout`` option (one default).
"""

from __future__ import annotations

import dataclasses

from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec

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


@dataclasses.dataclass(frozen=True)
class ConnectionOptions:
    """How to reach the API server (``CONNECTION``): the auth options as given (None: not given, so the
    ``K8S_AUTH_*`` variable, then the kubeconfig or the service account; ``_transport/k8s.resolve_auth``) and
    the seconds each request may take. The token is never in the repr."""

    kubeconfig: str
    context: str
    host: str
    api_key: str = dataclasses.field(repr=False)
    validate_certs: bool
    ca_cert: str
    client_cert: str
    client_key: str
    request_timeout: float

    def auth(self):
        """The auth options alone, as ``_transport/k8s.resolve_auth`` takes them."""
        return {name: getattr(self, name) for name in AUTH_OPTIONS}


CONNECTION = ArgumentSpec(dict(
    AUTH_ARG_SPEC,
    request_timeout={"type": "float", "default": 60.0},
), fragments=["k8s_auth"], options_class=ConnectionOptions)
