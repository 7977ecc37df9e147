# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OCI: compute hosts and their network blocks, GPU memory fabric as the accelerator domain.

Per region: Identity ``ListAvailabilityDomains`` (compartment = tenancy), then per availability
domain Core ``ListComputeHosts`` (paged by the ``opc-next-page`` header, ``limit=page_size``),
then ``GetComputeHost`` for each requested instance's host (a few at a time). Tiers, closest
first: ``localBlockId``, ``networkBlockId``, ``hpcIslandId`` (all three or no topology data);
domain ``gpuMemoryFabricId``, sub-domain ``<fabric>.<rack>`` when the host reports
``additionalData.locationDetails.rack``. Switches get Topograph's normalised names
(``switch.<tier>.<n>``): OCIDs are too long for Slurm files.

Requests are signed with an API signing key (HTTP Signature, rsa-sha256, the ``cryptography``
library). params: ``instances`` (region = OCI region), ``compartment_id`` (default: the tenancy),
``identity_url``/``compute_url`` (``{region}`` is replaced), ``concurrency``. creds:
``tenancy_id``, ``user_id``, ``fingerprint``, ``private_key`` (PEM) or ``private_key_file``,
``passphrase``; else the OCI CLI's variables ``OCI_CLI_TENANCY``, ``OCI_CLI_USER``,
``OCI_CLI_FINGERPRINT``, ``OCI_CLI_KEY_CONTENT``/``OCI_CLI_KEY_FILE``, ``OCI_CLI_PASSPHRASE``.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import paginate
from ansible_collections.aifactory.topology.plugins.module_utils._model import normalize_switch_names
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _cloud, _specs

try:
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    HAS_CRYPTOGRAPHY = True
except ImportError:  # pragma: no cover - exercised only where cryptography is missing
    HAS_CRYPTOGRAPHY = False

try:
    from requests.auth import AuthBase
except ImportError:  # pragma: no cover - HttpClient reports the missing library
    AuthBase = object

NAME = "oci"
API_VERSION = "/20160918"
DEFAULT_IDENTITY_URL = _specs.OCI_IDENTITY_URL
DEFAULT_COMPUTE_URL = _specs.OCI_COMPUTE_URL
DEFAULT_PAGE_SIZE = _specs.OCI_PARAMS["page_size"]["default"]


def discover(params, creds, warn):
    regions, placed = _cloud.placements(params, NAME)
    signer = Signer.from_creds(creds)
    compartment = _cloud.setting(params, "compartment_id") or signer.tenancy
    limit = _cloud.page_size(params, DEFAULT_PAGE_SIZE, warn)
    workers = _cloud.at_least(params, "concurrency", 1)
    for region, _mapping in regions:
        identity = _cloud.http_client(params, _url(params, "identity_url", DEFAULT_IDENTITY_URL, region), auth=signer)
        compute = _cloud.http_client(params, _url(params, "compute_url", DEFAULT_COMPUTE_URL, region), auth=signer)
        domains = identity.json("GET", f"{API_VERSION}/availabilityDomains", params={"compartmentId": signer.tenancy})
        if not isinstance(domains, list) or not all(isinstance(d, dict) and d.get("name") for d in domains):
            raise RemoteAPIError(f"OCI ListAvailabilityDomains in {region}: expected a list of {{name}}, "
                                 f"got {str(domains)[:100]}")
        for domain in domains:
            hosts = [host for host in paginate(lambda page: _hosts_page(compute, compartment, domain["name"], limit, page))
                     if placed.wants(host.get("instanceId"))]
            with ThreadPoolExecutor(max_workers=workers) as pool:
                details = list(pool.map(lambda host: _host(compute, host), hosts))
            for host in details:
                _place(placed, host)
    return normalize_switch_names(placed.topology(warn))


def _url(params, key, default, region):
    return _cloud.setting(params, key, default).replace("{region}", region)


def _hosts_page(compute, compartment, availability_domain, limit, page):
    query = {"compartmentId": compartment, "availabilityDomain": availability_domain, "limit": limit}
    if page:
        query["page"] = page
    path = f"{API_VERSION}/computeHosts"
    response = compute.request("GET", path, params=query)
    try:
        body = response.json()
    except ValueError:
        raise RemoteAPIError(f"OCI ListComputeHosts in {availability_domain}: the response is not JSON: "
                             f"{response.text[:200]!r}") from None
    items = body.get("items") if isinstance(body, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise RemoteAPIError(f"OCI ListComputeHosts in {availability_domain}: expected a ComputeHostCollection "
                             f"{{items: [...]}}, got {str(body)[:100]}")
    return items, response.headers.get("opc-next-page")


def _host(compute, summary):
    host_id = summary.get("id")
    if not isinstance(host_id, str) or not host_id:
        raise RemoteAPIError(f"OCI ListComputeHosts: a host of instance {summary.get('instanceId')!r} has no id")
    host = compute.json("GET", f"{API_VERSION}/computeHosts/{host_id}")
    if not isinstance(host, dict):
        raise RemoteAPIError(f"OCI GetComputeHost {host_id}: expected a ComputeHost object, got {str(host)[:100]}")
    return host


def _place(placed, host):
    tiers = [host.get("localBlockId"), host.get("networkBlockId"), host.get("hpcIslandId")]
    if not all(isinstance(tier, str) and tier for tier in tiers):
        return  # Topograph needs all three: otherwise the host has no topology data
    fabric = host.get("gpuMemoryFabricId") or None
    additional = host.get("additionalData")
    location = additional.get("locationDetails") if isinstance(additional, dict) else None
    rack = location.get("rack") if isinstance(location, dict) else None
    placed.add(host.get("instanceId"), tiers, fabric, f"{fabric}.{rack}" if fabric and rack else None)


class Signer(AuthBase):
    """OCI API request signing: draft-cavage HTTP Signatures, rsa-sha256.

    Signed headers: ``date (request-target) host``, plus ``content-length content-type
    x-content-sha256`` for requests with a body (POST, PUT, PATCH).
    """

    def __init__(self, tenancy, user, fingerprint, private_key):
        self.tenancy = tenancy
        self.key_id = f"{tenancy}/{user}/{fingerprint}"
        self._key = private_key

    @classmethod
    def from_creds(cls, creds):
        if not HAS_CRYPTOGRAPHY:
            raise TopologyError("the oci provider needs the Python library 'cryptography' to sign requests")
        tenancy = _cloud.secret(creds, "tenancy_id", env=("OCI_CLI_TENANCY",), required_by=NAME)
        user = _cloud.secret(creds, "user_id", env=("OCI_CLI_USER",), required_by=NAME)
        fingerprint = _cloud.secret(creds, "fingerprint", env=("OCI_CLI_FINGERPRINT",), required_by=NAME)
        pem = _cloud.secret(creds, "private_key", env=("OCI_CLI_KEY_CONTENT",), multiline=True)
        if not pem:
            path = _cloud.secret(creds, "private_key_file", env=("OCI_CLI_KEY_FILE",), required_by=NAME)
            try:
                pem = _input_file.read_text(path, "oci creds.private_key_file", path_is_secret=True)
            except _input_file.InputFileError as exc:
                raise TopologyError(str(exc)) from None
        passphrase = _cloud.secret(creds, "passphrase", env=("OCI_CLI_PASSPHRASE",))
        try:
            key = serialization.load_pem_private_key(pem.encode(), passphrase.encode() if passphrase else None)
        except (ValueError, TypeError, UnsupportedAlgorithm):
            # Never echo the key: name only what is wrong with it.
            raise TopologyError("oci creds.private_key is not a PEM RSA private key, or the passphrase is wrong") from None
        if not isinstance(key, rsa.RSAPrivateKey):
            raise TopologyError("oci creds.private_key must be an RSA key (OCI API signing keys are RSA)")
        return cls(tenancy, user, fingerprint, key)

    def __call__(self, request):
        parts = urlsplit(request.url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        request.headers["date"] = email.utils.formatdate(usegmt=True)
        signed = {"date": request.headers["date"], "(request-target)": f"{request.method.lower()} {target}",
                  "host": parts.netloc}
        if request.method.upper() in ("POST", "PUT", "PATCH"):
            body = request.body or b""
            body = body.encode() if isinstance(body, str) else body
            request.headers["x-content-sha256"] = base64.b64encode(hashlib.sha256(body).digest()).decode()
            request.headers["content-length"] = str(len(body))
            request.headers.setdefault("content-type", "application/json")
            for name in ("content-length", "content-type", "x-content-sha256"):
                signed[name] = request.headers[name]
        text = "\n".join(f"{name}: {value}" for name, value in signed.items())
        signature = base64.b64encode(self._key.sign(text.encode(), padding.PKCS1v15(), hashes.SHA256())).decode()
        request.headers["Authorization"] = (
            f'Signature version="1",keyId="{self.key_id}",algorithm="rsa-sha256",'
            f'headers="{" ".join(signed)}",signature="{signature}"')
        return request
