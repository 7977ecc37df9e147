# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OCI: compute hosts and their network blocks, GPU memory fabric as the accelerator domain.

Through Oracle's ``oci`` SDK (imported only when this provider runs). Per region: Identity
``ListAvailabilityDomains`` (compartment = tenancy), then per availability domain Core
``ListComputeHosts`` (paged by ``opc-next-page``, ``limit=page_size``), then ``GetComputeHost``
for each requested instance's host (a few at a time). Tiers, closest first: ``localBlockId``,
``networkBlockId``, ``hpcIslandId`` (all three or no topology data); domain
``gpuMemoryFabricId``, sub-domain ``<fabric>.<rack>`` when the host reports
``additionalData.locationDetails.rack``. Switches get Topograph's normalised names
(``switch.<tier>.<n>``): OCIDs are too long for Slurm files. A host record of the wrong shape
quarantines its instance's node.

The SDK signs every request; ``creds.auth`` picks the signer (the OCI CLI's ``--auth`` forms):
``api_key`` (tenancy, user, fingerprint and key in creds or the ``OCI_CLI_*`` variables),
``config_file`` (a profile of an OCI config file), ``security_token`` (a session token profile:
``security_token_file`` and ``key_file``), ``instance_principal`` (the instance metadata service's
certificate exchanged for a token at the federation endpoint) and ``resource_principal`` (the
``OCI_RESOURCE_PRINCIPAL_*`` variables, versions 2.2 and later). The SDK's own retries are off:
``_http.call_with_retries`` applies the collection's one policy (``Retry-After``, backoff).
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._base.numbers import number_value
from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
from ansible_collections.aifactory.topology.plugins.module_utils._base.deadline import attempt_budget, call_within
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import (
    MAX_CREDENTIAL_BYTES,
    MAX_RESPONSE_BYTES,
    HttpClient,
    HttpError,
    RetryableError,
    bound_session,
    call_with_retries,
    paginate,
    retry_after_seconds,
)
from ansible_collections.aifactory.topology.plugins.module_utils._model import normalize_switch_names
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    NodeDataError,
    RemoteAPIError,
    TopologyError,
    clip,
    credential_problem,
)
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _cloud, _specs

NAME = "oci"
DEFAULT_IDENTITY_URL = _specs.OCI_IDENTITY_URL
DEFAULT_COMPUTE_URL = _specs.OCI_COMPUTE_URL
DEFAULT_PAGE_SIZE = _specs.OCI_PARAMS.argument_spec["page_size"]["default"]
DEFAULT_CONFIG_FILE = "~/.oci/config"
TIER_FIELDS = ("local_block_id", "network_block_id", "hpc_island_id")
METADATA_BASE_URL = "http://169.254.169.254/opc/v2"
METADATA_ENV = "OCI_METADATA_BASE_URL"
METADATA = "the OCI instance metadata service"
# The SDK refreshes a token that expires within this many seconds before every request it signs.
TOKEN_JITTER = 60


def _sdk():
    try:
        import oci
    except ImportError:
        raise TopologyError("the oci provider needs the Python library 'oci' (Oracle's SDK) on the host that "
                            "runs it") from None
    return oci


def discover(params, creds, warn):
    oci = _sdk()
    regions, placed = _cloud.placements(params, NAME)
    config, signer, tenancy = credentials(oci, creds, params, regions[0][0])
    compartment = _cloud.setting(params, "compartment_id") or tenancy
    limit = _cloud.page_size(params, DEFAULT_PAGE_SIZE, warn)
    workers = _cloud.at_least(params, "concurrency", 1)
    for region, _mapping in regions:
        identity = _client(oci, oci.identity.IdentityClient, config, signer, params,
                           _url(params, "identity_url", DEFAULT_IDENTITY_URL, region), region)
        compute = _client(oci, oci.core.ComputeClient, config, signer, params,
                          _url(params, "compute_url", DEFAULT_COMPUTE_URL, region), region)
        domains = _call(oci, params, f"OCI ListAvailabilityDomains in {region}",
                        lambda: identity.list_availability_domains(tenancy)).data
        if not isinstance(domains, list) or not all(isinstance(getattr(d, "name", None), str) and d.name
                                                    for d in domains):
            raise RemoteAPIError(f"OCI ListAvailabilityDomains in {region}: expected a list of {{name}}")
        for domain in domains:
            hosts = [host for host in paginate(lambda page: _hosts_page(oci, params, compute, compartment,
                                                                        domain.name, limit, page))
                     if placed.wants(host.instance_id)]
            with ThreadPoolExecutor(max_workers=workers) as pool:
                details = list(pool.map(lambda host: _host(oci, params, compute, host), hosts))
            for instance_id, host in details:
                with placed.instance(instance_id):
                    _place(placed, instance_id, host)
    return normalize_switch_names(placed.topology(warn))


def credentials(oci, creds, params, region):
    """``(config, signer, tenancy OCID)`` for ``creds.auth``; no message shows a secret or a key path."""
    auth = creds.get("auth") or "api_key"
    try:
        if auth == "api_key":
            config = _api_key_config(oci, creds, region)
            return config, oci.signer.Signer.from_config(config), config["tenancy"]
        if auth in ("config_file", "security_token"):
            config = _profile(oci, creds, region)
            if auth == "config_file":
                return config, oci.signer.Signer.from_config(config), config["tenancy"]
            return config, _session_signer(oci, config), config["tenancy"]
        if auth == "instance_principal":
            return _instance_principal(oci, params)
        if auth == "resource_principal":
            return _resource_principal(oci, params)
    except TopologyError:
        raise
    except (oci.exceptions.InvalidPrivateKey, ValueError, TypeError) as exc:
        if isinstance(exc, oci.exceptions.MissingPrivateKeyPassphrase) or "passphrase" in str(exc).lower() or \
                isinstance(exc, oci.exceptions.InvalidPrivateKey):
            # Never echo the key: name only what is wrong with it.
            raise TopologyError(f"oci creds ({auth}): the private key is not a PEM RSA private key, or the "
                                "passphrase is wrong") from None
        raise TopologyError(f"oci creds ({auth}): {type(exc).__name__}; the values are not shown") from None
    except oci.exceptions.ClientError as exc:
        raise TopologyError(f"oci creds ({auth}): {type(exc).__name__}; the values are not shown") from None
    except oci.exceptions.ServiceError as exc:
        raise RemoteAPIError(f"oci creds ({auth}): the token service answered HTTP {exc.status} "
                             f"{_secrets.excerpt(exc.code, 100)}", exc.status) from None
    except (oci.exceptions.RequestException, oci.exceptions.ConnectTimeout) as exc:
        raise RemoteAPIError(f"oci creds ({auth}): the token or metadata service is unreachable "
                             f"({type(exc).__name__})") from None
    raise TopologyError(f"oci creds.auth must be one of {', '.join(_specs.OCI_AUTH_METHODS)}, got {auth!r}")


def _within(params, what, function):
    """``function()`` (an SDK call that may use the network) within one attempt's time and the deadline."""
    budget = attempt_budget(_cloud.client_settings(params)["timeout"])
    if budget <= 0:
        raise RemoteAPIError(f"{what}: the discovery deadline has passed")
    try:
        return call_within(function, budget)
    except TimeoutError:
        raise RemoteAPIError(f"{what}: no result within {budget:g} s") from None


# -- resource principal: the OCI_RESOURCE_PRINCIPAL_* environment ------------------------------------------------

RP_ENV = "OCI_RESOURCE_PRINCIPAL_"
RP_TOKEN_VERSIONS = ("1.1", "2.1", "2.1.1", "2.1.2")
# The SDK's path of the resource principal token for version 1.1 (OCI_RESOURCE_PRINCIPAL_RPT_PATH overrides it).
RPT_PATH_TEMPLATE = "/20180711/resourcePrincipalToken/{id}"


def _resource_principal(oci, params):
    """``({}, signer, tenancy)`` from the ``OCI_RESOURCE_PRINCIPAL_*`` environment.

    Versions 1.1 and 2.1 (2.1.1, 2.1.2) fetch a resource principal token and a service principal session token
    from the RPT endpoint, then exchange them at the RPST endpoint for the session token. The SDK's signers do
    both with its default retries over an unbounded session (1.1 reaches the metadata service and the
    federation endpoint with the SDK's instance principal first). Here the SDK's signer runs without retries
    over a bounded session (MAX_CREDENTIAL_BYTES per answer, no redirect to another host) under the collection's
    retry policy, 1.1's instance principal is the collection's bounded one, and the session token is checked
    as the federation's is. Version 2.2 (the token and key from the environment or files, no request) is the
    SDK's; 3.0 (nested: its parents' endpoints over the SDK's own sessions) is refused.
    """
    version = (os.environ.get(RP_ENV + "VERSION") or "").strip()
    if version == "3.0":
        # The nested signer reaches its parents' endpoints over sessions of its own that nothing here can bound.
        raise TopologyError("oci creds (resource_principal 3.0): nested resource principals are not supported: "
                            "their parent resources' token endpoints cannot be held to the collection's time and byte "
                            "limits; give this resource's own principal (version 1.1, 2.1 or 2.2) instead")
    if version not in RP_TOKEN_VERSIONS:
        signer = _within(params, f"the resource principal signer (OCI_RESOURCE_PRINCIPAL_* version {version or 'unset'})",
                         oci.auth.signers.get_resource_principals_signer)
        return {}, signer, signer.tenancy_id
    auth = f"resource_principal {version}"
    rpt_endpoint = _rp_setting("RPT_ENDPOINT", auth)
    if version == "1.1":
        make, tenancy = _rp_v1_1_signer(oci, params, auth, rpt_endpoint)
    else:
        make, tenancy = _rp_v2_1_signer(oci, params, auth, version, rpt_endpoint), None
    rpst_endpoint = _rp_setting("RPST_ENDPOINT", auth, required=False) or "the region's auth endpoint"
    what = f"oci creds ({auth}): the token endpoints ({RP_ENV}RPT_ENDPOINT {rpt_endpoint}, {RP_ENV}RPST_ENDPOINT " \
           f"{rpst_endpoint})"
    signer = _retrying(oci, params, what, make, _token_answer_unusable)
    container = getattr(signer, "security_token", None)
    claims = _session_token(what, getattr(container, "security_token", None), getattr(container, "jwt", None))
    tenancy = claims.get("res_tenant") or tenancy
    if not isinstance(tenancy, str) or not tenancy:
        raise RemoteAPIError(f"{what}: the session token names no tenancy (res_tenant); it is not shown")
    return {}, signer, tenancy


def _rp_setting(name, auth, required=True):
    value = (os.environ.get(RP_ENV + name) or "").strip()
    if required and not value:
        raise TopologyError(f"oci creds ({auth}): the environment variable {RP_ENV}{name} is not set")
    if value and name.endswith("_ENDPOINT"):
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path.strip("/") or parts.query:
            raise TopologyError(f"oci creds ({auth}): the environment variable {RP_ENV}{name} must be a scheme and "
                                "host (https://host[:port]), without a path")
    return value or None


def _bounded_token_signer(oci, cls, params):
    """``cls`` (an SDK resource principal signer) whose token client's session is bounded the moment it is made."""
    settings = _cloud.client_settings(params)
    verify, ca_bundle = _cloud.tls_settings(params)

    class Bounded(cls):  # pylint: disable=too-few-public-methods
        @property
        def base_client(self):
            return self.__dict__["base_client"]

        @base_client.setter
        def base_client(self, client):
            client.session.verify = ca_bundle or verify
            bound_session(client.session, settings["timeout"], MAX_CREDENTIAL_BYTES)
            self.__dict__["base_client"] = client

        # Each token registered with the scrubber the moment it arrives: a refusal may echo it.
        def _get_resource_principal_token_and_service_principal_session_token(self):
            tokens = super()._get_resource_principal_token_and_service_principal_session_token()
            _secrets.register(*tokens)
            return tokens

        def _get_resource_principal_session_token(self):
            token = super()._get_resource_principal_session_token()
            _secrets.register(token)
            return token

    return Bounded


def _rp_v2_1_signer(oci, params, auth, version, rpt_endpoint):
    """A function that makes the version 2.1 signer (its two exchanges), the key checked first."""
    from oci.auth.signers.ephemeral_resource_principals_v21_signer import (  # pylint: disable=import-outside-toplevel
        EphemeralResourcePrincipalV21Signer)

    rpst_endpoint = _rp_setting("RPST_ENDPOINT", auth)
    resource_id = _rp_setting("RESOURCE_ID", auth)
    tenancy = _rp_setting("TENANCY_ID", auth, required=version != "2.1")
    key = _rp_setting("PRIVATE_PEM", auth)
    passphrase = _rp_setting("PRIVATE_PEM_PASSPHRASE", auth, required=False)
    # The key read before any exchange, so a wrong key is named as the key (credentials() words it).
    EphemeralResourcePrincipalV21Signer.construct_session_key_supplier(key, passphrase)
    signer = _bounded_token_signer(oci, EphemeralResourcePrincipalV21Signer, params)
    return lambda: signer(
        resource_principal_token_endpoint=rpt_endpoint, resource_principal_session_token_endpoint=rpst_endpoint,
        resource_id=resource_id, tenancy_id=tenancy, private_key=key, private_key_passphrase=passphrase,
        rp_version=version, region=_rp_setting("REGION", auth, required=False),
        security_context=_rp_setting("SECURITY_CONTEXT", auth, required=False),
        resource_principal_token_path=_rp_setting("RPT_PATH", auth, required=False),
        retry_strategy=oci.retry.NoneRetryStrategy())


def _rp_v1_1_signer(oci, params, auth, rpt_endpoint):
    """``(a function that makes the version 1.1 signer, the instance's tenancy)``: the SDK's steps, with the
    collection's bounded instance principal and metadata client in place of the SDK's own."""
    import threading  # pylint: disable=import-outside-toplevel
    from oci.auth.session_key_supplier import SessionKeySupplier  # pylint: disable=import-outside-toplevel
    from oci.auth.signers.resource_principals_federation_signer import (  # pylint: disable=import-outside-toplevel
        ResourcePrincipalsFederationSigner)
    from oci.auth.signers.security_token_signer import SecurityTokenSigner  # pylint: disable=import-outside-toplevel

    client = _metadata_client(params)
    instance, tenancy, region = _instance_principal_signer(oci, params, client, auth)
    rpt_id = _rp_setting("RPT_ID", auth, required=False)
    if not rpt_id:
        rpt_id = _metadata_get(client, "/instance/id", auth).strip().lower()
        if not rpt_id or len(rpt_id) > 255 or not all(char.isascii() and (char.isalnum() or char in ".-_")
                                                      for char in rpt_id):
            raise RemoteAPIError(f"oci creds ({auth}): {METADATA} GET /instance/id: not an instance OCID: "
                                 f"{clip(_secrets.scrub(rpt_id))}")
    path = (_rp_setting("RPT_PATH", auth, required=False) or RPT_PATH_TEMPLATE).replace("{id}", rpt_id)
    rpst_endpoint = _rp_setting("RPST_ENDPOINT", auth, required=False) or oci.regions.endpoint_for("auth", region)
    bounded = _bounded_token_signer(oci, ResourcePrincipalsFederationSigner, params)

    class Signer(bounded):  # pylint: disable=too-few-public-methods
        def __init__(self):  # pylint: disable=super-init-not-called  # the SDK's own steps, but the parts above
            self.resource_principal_token_path = path
            self._reset_signers_lock = threading.Lock()
            self.resource_principal_token_endpoint = rpt_endpoint
            self.instance_principal_signer = instance
            self.session_key_supplier = SessionKeySupplier()
            self.region, self.tenancy_id = region, tenancy
            self.resource_principal_session_token_endpoint = rpst_endpoint
            self.retry_strategy = oci.retry.NoneRetryStrategy()
            self.rpt = self.spst = None
            self.base_client = oci.BaseClient("", {}, instance, {}, region_client=False, service_endpoint=rpt_endpoint)
            self.rpst = self.get_security_token()
            SecurityTokenSigner.__init__(self, self.rpst, self.session_key_supplier.get_key_pair()["private"])

    return Signer, tenancy


# -- instance principal: the metadata service's certificate, federated for a session token ---------------------

def _instance_principal(oci, params):
    """``({}, signer, tenancy)`` for an instance principal, every exchange bounded and checked.

    The SDK's own signer reads the metadata service with 8 attempts of 10 + 60 s each and posts to the
    federation endpoint with its default retries and no byte limit: a metadata service answering 500 held a
    run for 93 s, a 300 MB body took a gigabyte, a 2 MB HTML page became the error message. Here the
    metadata documents come through the collection's HTTP client (MAX_CREDENTIAL_BYTES each, params.timeout,
    the retry policy, the deadline), the SDK's federation client runs without retries or circuit breaker
    over a bounded session, and what each returns is checked before the SDK reads it.
    """
    signer, tenancy, _region = _instance_principal_signer(oci, params, _metadata_client(params), "instance_principal")
    return {}, signer, tenancy


def _metadata_client(params):
    """The collection's HTTP client for the instance metadata service (MAX_CREDENTIAL_BYTES per document)."""
    settings = _cloud.client_settings(params)
    base = (os.environ.get(METADATA_ENV) or "").strip() or METADATA_BASE_URL
    return HttpClient(base, headers={"Authorization": "Bearer Oracle"}, timeout=settings["timeout"],
                      attempts=settings["attempts"], backoff=settings["backoff"],
                      max_retry_after=settings["max_retry_after"], sleep=settings["sleep"],
                      max_response_bytes=MAX_CREDENTIAL_BYTES)


def _metadata_get(client, path, auth):
    try:
        return client.request("GET", path).text
    except HttpError as exc:
        raise RemoteAPIError(f"oci creds ({auth}): {METADATA} failed: {exc}", exc.status) from None


def _instance_principal_signer(oci, params, client, auth):
    """``(signer, tenancy, region)``: the metadata certificate federated for a session token, as ``auth`` needs."""
    from oci.auth.certificate_retriever import PEMStringCertificateRetriever  # pylint: disable=import-outside-toplevel
    from oci.auth.federation_client import X509FederationClient  # pylint: disable=import-outside-toplevel
    from oci.auth.session_key_supplier import SessionKeySupplier  # pylint: disable=import-outside-toplevel
    from oci.auth.signers.security_token_signer import (  # pylint: disable=import-outside-toplevel
        X509FederationClientBasedSecurityTokenSigner)

    settings = _cloud.client_settings(params)
    documents = {path: _metadata_get(client, path, auth)
                 for path in ("/instance/region", "/identity/cert.pem", "/identity/key.pem", "/identity/intermediate.pem")}
    _secrets.register(documents["/identity/key.pem"])
    region = _metadata_region(oci, documents["/instance/region"], auth)
    leaf = _metadata_pem(documents["/identity/cert.pem"], "/identity/cert.pem", "CERTIFICATE", auth)
    key = _metadata_pem(documents["/identity/key.pem"], "/identity/key.pem", "PRIVATE KEY", auth)
    intermediate = _metadata_pem(documents["/identity/intermediate.pem"], "/identity/intermediate.pem", "CERTIFICATE",
                                 auth)
    try:
        leaf_retriever = PEMStringCertificateRetriever(certificate_pem=leaf, private_key_pem=key)
        certificate = leaf_retriever.get_certificate_as_certificate()
        intermediate_retriever = PEMStringCertificateRetriever(certificate_pem=intermediate)
        intermediate_retriever.get_certificate_as_certificate()
        tenancy = oci.auth.auth_utils.get_tenancy_id_from_certificate(certificate)
    except (ValueError, TypeError, RuntimeError, oci.exceptions.InvalidPrivateKey) as exc:
        raise RemoteAPIError(f"oci creds ({auth}): {METADATA} GET /identity/*.pem: the leaf certificate, "
                             f"its key or the intermediate certificate is unusable ({type(exc).__name__}: a PEM "
                             "certificate naming the tenancy, opc-tenant:<ocid>, and its RSA key are needed)") from None
    endpoint = params.get("federation_url") or f"{oci.regions.endpoint_for('auth', region)}/v1/x509"
    verify, ca_bundle = _cloud.tls_settings(params)
    federation = X509FederationClient(
        federation_endpoint=endpoint, tenancy_id=tenancy, session_key_supplier=SessionKeySupplier(),
        leaf_certificate_retriever=leaf_retriever, intermediate_certificate_retrievers=[intermediate_retriever],
        cert_bundle_verify=(ca_bundle or True) if verify else False, retry_strategy=oci.retry.NoneRetryStrategy(),
        circuit_breaker_strategy=oci.circuit_breaker.NoCircuitBreakerStrategy())
    bound_session(federation.requests_session, settings["timeout"], MAX_CREDENTIAL_BYTES)
    _federate(oci, params, federation, f"oci creds ({auth}): the federation endpoint POST {endpoint}")
    return X509FederationClientBasedSecurityTokenSigner(federation), tenancy, region


def _metadata_region(oci, text, auth):
    region = text.strip().lower()
    if not region or len(region) > 64 or not all(char.isascii() and (char.isalnum() or char == "-") for char in region):
        raise RemoteAPIError(f"oci creds ({auth}): {METADATA} GET /instance/region: not a region name: "
                             f"{clip(_secrets.scrub(text))}")
    return oci.regions.REGIONS_SHORT_NAMES.get(region, region)


def _metadata_pem(text, path, kind, auth):
    if not text.isascii() or "-----BEGIN" not in text or kind not in text:
        raise RemoteAPIError(f"oci creds ({auth}): {METADATA} GET {path}: not a PEM {kind.lower()} "
                             "(the content is not shown)")
    return text


def _federate(oci, params, federation, what):
    """The session token, under the collection's retry policy; its shape checked (a JWT whose exp is ahead)."""
    token = _retrying(oci, params, what, federation.refresh_security_token, _federation_unusable)
    _session_token(what, token, getattr(getattr(federation, "security_token", None), "jwt", None))
    return token


def _session_token(what, token, claims):
    """A session token's claims, once it is registered and checked: a JWT with a numeric exp ahead, sendable."""
    _secrets.register(token)
    expires = claims.get("exp") if isinstance(claims, dict) else None
    if isinstance(expires, bool) or not isinstance(expires, (int, float)):
        raise RemoteAPIError(f"{what}: the token (a JWT) has no numeric exp claim; it is not shown")
    # JSON's NaN compares false with every time, and Infinity never expires.
    expires = number_value(expires, f"{what}: the token's exp claim", high=2 ** 53, error=RemoteAPIError)
    if expires - TOKEN_JITTER <= time.time():
        raise RemoteAPIError(f"{what}: the token has expired or expires within {TOKEN_JITTER} s (exp {expires:g})")
    if not isinstance(token, str) or credential_problem(token):
        raise RemoteAPIError(f"{what}: the token is not usable in a header; it is not shown")
    return claims


def _api_key_config(oci, creds, region):
    config = {
        "tenancy": _cloud.secret(creds, "tenancy_id", env=("OCI_CLI_TENANCY",), required_by=NAME),
        "user": _cloud.secret(creds, "user_id", env=("OCI_CLI_USER",), required_by=NAME),
        "fingerprint": _cloud.secret(creds, "fingerprint", env=("OCI_CLI_FINGERPRINT",), required_by=NAME),
        "pass_phrase": _cloud.secret(creds, "passphrase", env=("OCI_CLI_PASSPHRASE",)),
        "key_file": None,
        "region": region,  # each client gets its region's; the SDK's validation wants one
    }
    pem = _cloud.secret(creds, "private_key", env=("OCI_CLI_KEY_CONTENT",), multiline=True)
    if not pem:
        path = _cloud.secret(creds, "private_key_file", env=("OCI_CLI_KEY_FILE",), required_by=NAME)
        pem = _read(path, "oci creds.private_key_file")
    config["key_content"] = pem
    _validate(oci, config)
    return config


def _profile(oci, creds, region):
    path = creds.get("config_file") or DEFAULT_CONFIG_FILE
    profile = creds.get("profile") or "DEFAULT"
    path = os.path.expanduser(path)
    _read(path, "oci creds.config_file", path_is_secret=False)  # a regular UTF-8 file, as every input
    try:
        config = oci.config.from_file(path, profile)
    except oci.exceptions.ProfileNotFound:
        raise TopologyError(f"oci creds.profile {profile!r} is not in the config file") from None
    except oci.exceptions.InvalidKeyFilePath:
        raise TopologyError(f"oci config profile {profile!r}: key_file is not a readable file") from None
    except oci.exceptions.ClientError as exc:
        raise TopologyError(f"oci creds.config_file: {type(exc).__name__}") from None
    config.setdefault("region", region)
    passphrase = _cloud.secret(creds, "passphrase")
    if passphrase:
        config["pass_phrase"] = passphrase
    if config.get("key_file") and creds.get("auth") != "security_token":
        # Read as every input is; the SDK gets the content, never opens the path itself.
        config["key_content"] = _read(config["key_file"], f"oci config profile {profile!r} key_file")
    for key in ("tenancy", "user", "fingerprint", "pass_phrase", "key_content"):
        if config.get(key):
            _cloud.secret(config, key, multiline=key == "key_content")  # a control character is refused by name
    if creds.get("auth") == "security_token":
        for key in ("tenancy", "security_token_file", "key_file"):
            if not config.get(key):
                raise TopologyError(f"oci config profile {profile!r} needs {key} for auth security_token")
    else:
        _validate(oci, config)
    return config


def _session_signer(oci, config):
    token = _read(config["security_token_file"], "the profile's security_token_file").strip()
    _cloud.secret({"security_token": token}, "security_token")
    key = oci.signer.load_private_key(_read(config["key_file"], "the profile's key_file"), config.get("pass_phrase"))
    return oci.auth.signers.SecurityTokenSigner(token, key)


def _validate(oci, config):
    try:
        oci.config.validate_config(config)
    except oci.exceptions.InvalidConfig as exc:
        problems = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
        fields = ", ".join(f"{key} {state}" for key, state in sorted(problems.items())
                           if key in ("tenancy", "user", "fingerprint", "key_file", "region"))
        raise TopologyError(f"oci credentials: {fields or 'invalid'}") from None


def _read(path, what, path_is_secret=True):
    try:
        return _input_file.read_text(path, what, path_is_secret=path_is_secret)
    except _input_file.InputFileError as exc:
        raise TopologyError(str(exc)) from None


def _client(oci, cls, config, signer, params, endpoint, region):
    settings = _cloud.client_settings(params)
    client = cls(dict(config, region=region), signer=signer, service_endpoint=endpoint,
                 retry_strategy=oci.retry.NoneRetryStrategy(), timeout=(settings["timeout"], settings["timeout"]),
                 circuit_breaker_strategy=oci.circuit_breaker.NoCircuitBreakerStrategy())
    verify, ca_bundle = _cloud.tls_settings(params)
    client.base_client.session.verify = ca_bundle or verify
    # Each exchange: its timeouts from the attempt's and the deadline's, its body at most MAX_RESPONSE_BYTES.
    bound_session(client.base_client.session, settings["timeout"], MAX_RESPONSE_BYTES)
    return client


def _url(params, key, default, region):
    return _cloud.setting(params, key, default).replace("{region}", region)


def _call(oci, params, what, function):
    """One SDK call under the collection's retry policy; errors name the call, never the credentials."""
    return _retrying(oci, params, what, function, _api_unusable)


def _retrying(oci, params, what, function, unusable):
    """``function()`` (an SDK exchange) under the collection's one retry policy; ``what`` names its source.

    Each attempt runs within ``params.timeout`` as a whole and the deadline (the SDK's timeouts bound each socket
    read only). 429 and 5xx, a timeout or a dropped connection are retried; any other status is a RemoteAPIError
    naming ``what`` and the status, with the server's code and message scrubbed and clipped; a refusal of the
    bounded session (too large, a redirect to another host) names ``what`` and the request. ``unusable(exc)``
    says what is wrong with an answer the SDK could not read (never quoting it), or None for an error that is not
    about the answer.
    """
    import jwt  # pylint: disable=import-outside-toplevel  # the OCI SDK's own dependency
    from oci._vendor import requests as vendored  # pylint: disable=import-outside-toplevel

    settings = _cloud.client_settings(params)

    def attempt():
        budget = attempt_budget(settings["timeout"])
        if budget <= 0:
            raise RemoteAPIError(f"{what}: the discovery deadline has passed")
        try:
            return call_within(function, budget)
        except TimeoutError:
            raise RetryableError(f"no complete response within {budget:g} s") from None
        except HttpError as exc:  # the bounded session's refusal: too large, a redirect to another host, the deadline
            head, colon, rest = str(exc).partition(": ")
            raise RemoteAPIError(f"{what}: {rest if colon and head in what else exc}", exc.status) from None
        except oci.exceptions.ServiceError as exc:
            if exc.status == 429 or exc.status >= 500:
                raise RetryableError(f"HTTP {exc.status}",
                                     retry_after_seconds((exc.headers or {}).get("Retry-After"))) from None
            raise RemoteAPIError(f"{what}: HTTP {exc.status}: {_secrets.excerpt(exc.code, 100)}: "
                                 f"{_secrets.excerpt(exc.message)}", exc.status) from None
        except (oci.exceptions.RequestException, oci.exceptions.ConnectTimeout, vendored.exceptions.Timeout,
                vendored.exceptions.ConnectionError) as exc:
            raise RetryableError(_connection_problem(oci, exc)) from None
        except vendored.exceptions.RequestException as exc:
            raise RemoteAPIError(f"{what}: the request failed ({type(exc).__name__})") from None
        except (jwt.exceptions.PyJWTError, ValueError, TypeError, AttributeError, KeyError, RuntimeError) as exc:
            reason = unusable(exc)
            if reason is None:
                raise
            raise RemoteAPIError(f"{what}: {reason}") from None

    return call_with_retries(attempt, what, attempts=settings["attempts"], backoff=settings["backoff"],
                             max_retry_after=settings["max_retry_after"], sleep=settings["sleep"])


def _connection_problem(oci, exc):
    if not isinstance(exc, (oci.exceptions.RequestException, oci.exceptions.ConnectTimeout)):
        return type(exc).__name__  # the vendored requests' own: ReadTimeout, ConnectionError, ...
    text = str(exc)
    return "ReadTimeout" if "Read timed out" in text else "ConnectTimeout" if isinstance(
        exc, oci.exceptions.ConnectTimeout) or "timed out" in text else "connection error"


def _api_unusable(exc):
    """An Identity or Compute answer the SDK could not deserialize."""
    return f"the response is not the API's ({type(exc).__name__})" if isinstance(exc, ValueError) else None


def _federation_unusable(exc):
    """The federation client's answer: the SDK's RuntimeError quotes the whole body, so it is never repeated."""
    if isinstance(exc, RuntimeError):
        return "the response is not JSON" if "parse" in str(exc) else "the response has no token"
    return f"the token is not a JWT ({type(exc).__name__}); it is not shown"


def _token_answer_unusable(exc):
    """A resource principal token endpoint's answer (JSON holding the tokens) that the SDK could not read."""
    if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
        return "the response is not JSON"
    if isinstance(exc, (KeyError, TypeError, AttributeError)):
        return f"the response has no token ({type(exc).__name__}: a JSON object holding the tokens is needed)"
    return f"the token is not a JWT ({type(exc).__name__}); it is not shown"


def _hosts_page(oci, params, compute, compartment, availability_domain, limit, page):
    kwargs = {"availability_domain": availability_domain, "limit": limit}
    if page:
        kwargs["page"] = page
    what = f"OCI ListComputeHosts in {availability_domain}"
    response = _call(oci, params, what, lambda: compute.list_compute_hosts(compartment, **kwargs))
    items = getattr(response.data, "items", None)
    if not isinstance(items, list):
        raise RemoteAPIError(f"{what}: expected a ComputeHostCollection {{items: [...]}}")
    return items, response.next_page


def _host(oci, params, compute, summary):
    host_id = summary.id
    if not isinstance(host_id, str) or not host_id:
        return summary.instance_id, NodeDataError(f"OCI ListComputeHosts: the host of instance "
                                                  f"{summary.instance_id!r} has no id")
    return summary.instance_id, _call(oci, params, f"OCI GetComputeHost {host_id}",
                                      lambda: compute.get_compute_host(host_id)).data


def _place(placed, instance_id, host):
    if isinstance(host, NodeDataError):
        raise host
    tiers = [getattr(host, field, None) for field in TIER_FIELDS]
    for field, tier in zip(TIER_FIELDS, tiers):
        if tier is not None and not isinstance(tier, str):
            raise NodeDataError(f"OCI GetComputeHost of instance {instance_id!r}: {field} must be a string")
    if not all(tiers):
        return  # Topograph needs all three: otherwise the host has no topology data
    fabric = host.gpu_memory_fabric_id or None
    if fabric is not None and not isinstance(fabric, str):
        raise NodeDataError(f"OCI GetComputeHost of instance {instance_id!r}: gpu_memory_fabric_id must be a string")
    additional = host.additional_data
    location = additional.get("locationDetails") if isinstance(additional, dict) else None
    rack = location.get("rack") if isinstance(location, dict) else None
    if rack is not None and not isinstance(rack, str):
        raise NodeDataError(f"OCI GetComputeHost of instance {instance_id!r}: locationDetails.rack must be a string")
    placed.add(instance_id, tiers, fabric, f"{fabric}.{rack}" if fabric and rack else None)
