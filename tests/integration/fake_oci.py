"""The OCI tenancy, user and API signing key the oci tests' fake servers check signatures against.

Shared by ``test_provider_oci.py`` and ``test_provider_errors.py`` (a test module never imports
another one).

Its playbook cases (``playbook_case`` and the credential forms) are what
``test_provider_creds_playbook.py`` runs with ``ansible-playbook -vvvv``.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import re
import time

import jwt
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization, hashes
from cryptography.hazmat.primitives.asymmetric import rsa, padding

from tests.integration.fake_apis import NO_WAIT, json_reply, text_reply

TENANCY = "ocid1.tenancy.oc1..aaaatenancy"
USER = "ocid1.user.oc1..aaaauser"
FINGERPRINT = "20:3b:97:13:55:1c:5b:0d:d3:37:d8:50:4e:c5:3a:34"
PASSPHRASE = "oci-passphrase-77d1"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PEM = KEY.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                        serialization.BestAvailableEncryption(PASSPHRASE.encode())).decode()
CREDS = {"tenancy_id": TENANCY, "user_id": USER, "fingerprint": FINGERPRINT, "private_key": PEM,
         "passphrase": PASSPHRASE}
AD1, AD2 = "Uocm:PHX-AD-1", "Uocm:PHX-AD-2"


# -- the -vvvv secret cases of test_provider_creds_playbook.py, and what they need --------------------

def _signature_fields(header):
    """The ``name="value"`` parameters of an ``Authorization: Signature ...`` header, and its signed header names."""
    fields = dict(re.findall(r'(\w+)="([^"]*)"', header[len("Signature "):]))
    return fields, fields.get("headers", "").split()


def _signature_mismatch(request, key, fields, names):
    """None when ``fields``' signature over the headers ``names`` of ``request`` verifies with ``key``."""
    lines = [f"(request-target): {request.method.lower()} {request.raw_path}" if name == "(request-target)"
             else f"{name}: {request.headers[name]}" for name in names]
    try:
        key.public_key().verify(base64.b64decode(fields.get("signature", "")), "\n".join(lines).encode(),
                                padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return "the signature does not verify"
    return None


def signature_problem(request, key=KEY, key_id=f"{TENANCY}/{USER}/{FINGERPRINT}"):
    """None when the request carries a valid OCI signature by ``key`` under ``key_id``; else what is wrong.

    The draft-cavage form the OCI SDK sends: ``Signature`` then ``name="value"`` parameters in any order.
    """
    header = request.headers.get("authorization", "")
    if not header.startswith("Signature "):
        return "no Signature authorization header"
    fields, names = _signature_fields(header)
    if fields.get("keyId") != key_id or fields.get("algorithm") != "rsa-sha256" or fields.get("version") != "1" \
            or names != ["date", "(request-target)", "host"]:
        return f"unexpected keyId, algorithm or signed headers: {fields.get('algorithm')} {names}"
    return _signature_mismatch(request, key, fields, names)


def host(host_id, instance_id, local=None, network=None, island=None, fabric=None, rack=None):
    summary = {"id": host_id, "instanceId": instance_id, "availabilityDomain": AD1, "compartmentId": TENANCY,
               "shape": "BM.GPU.GB200.4", "lifecycleState": "IN_USE", "health": "HEALTHY",
               "localBlockId": local, "networkBlockId": network, "hpcIslandId": island, "gpuMemoryFabricId": fabric}
    summary = {k: v for k, v in summary.items() if v is not None}
    detail = dict(summary, additionalData={"locationDetails": {"rack": rack, "building": "B1"}} if rack else {})
    return summary, detail


HOSTS = {
    "h1": host("ocid1.computehost.h1", "ocid1.instance.i1", "lb-1", "nb-1", "hi-1", "gmf-1", "R01"),
    "h2": host("ocid1.computehost.h2", "ocid1.instance.i2", "lb-1", "nb-1", "hi-1", "gmf-1"),
    "h3": host("ocid1.computehost.h3", "ocid1.instance.i3", "lb-2", "nb-1", "hi-1", "gmf-2", "R02"),
    "h4": host("ocid1.computehost.h4", "ocid1.instance.i4", "lb-3", None, "hi-1"),  # no network block
    "h5": host("ocid1.computehost.h5", "ocid1.instance.other", "lb-9", "nb-9", "hi-9"),  # not requested
}


def make_route(pages=None, key=KEY, key_id=f"{TENANCY}/{USER}/{FINGERPRINT}"):
    def route(request):
        problem = signature_problem(request, key, key_id)
        if problem:
            return json_reply({"code": "NotAuthenticated", "message": problem}, status=401)
        path = request.path.split("/20160918", 1)[-1]
        if path == "/availabilityDomains":
            assert request.query == {"compartmentId": TENANCY}
            return json_reply([{"name": AD1, "id": "ocid1.ad.1", "compartmentId": TENANCY},
                               {"name": AD2, "id": "ocid1.ad.2", "compartmentId": TENANCY}])
        if path == "/computeHosts":
            if request.query["availabilityDomain"] == AD2:
                return json_reply({"items": []})
            page = (pages or {}).get(request.query.get("page"))
            if callable(page):
                page = page(request)
            if page is not None:
                return page
            if request.query.get("page") is None:
                return json_reply({"items": [HOSTS[h][0] for h in ("h1", "h2", "h5")]}, headers={"opc-next-page": "p2"})
            return json_reply({"items": [HOSTS[h][0] for h in ("h3", "h4")]})
        for pair in HOSTS.values():
            if path == f"/computeHosts/{pair[0]['id']}":
                return json_reply(pair[1])
        return json_reply({"code": "NotAuthorizedOrNotFound"}, status=404)
    return route


REQUESTED = [{"region": "us-phoenix-1", "instances": {"ocid1.instance.i1": "gb-n01", "ocid1.instance.i2": "gb-n02",
                                                      "ocid1.instance.i3": "gb-n03", "ocid1.instance.i4": "gb-n04",
                                                      "ocid1.instance.i5": "gb-n05"}}]


def params(server, instances=None, **extra):
    return dict(NO_WAIT, instances=instances or REQUESTED, identity_url=f"{server.url}/{{region}}/identity",
                compute_url=f"{server.url}/{{region}}/iaas", **extra)


SESSION_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


# A session token or RPST is a JWT; the SDK reads its claims (tenancy, expiry) unverified, the API verifies it.
SESSION_TOKEN = jwt.encode({"sub": USER, "tenant": TENANCY, "res_tenant": TENANCY, "res_compartment": TENANCY,
                            "exp": int(time.time()) + 3600, "iat": int(time.time())}, "a test key that only the fake API would hold, 32+ bytes",
                           algorithm="HS256")


# A passphrase with the characters a config file, a shell or a YAML scalar treat specially (a "{{" in a
# playbook is Jinja: such a value is given !unsafe or from a vault, as any Ansible value).
ODD_PASSPHRASE = 'p%s"\\$HOME {x} #;=\''


def pem(key, passphrase=None):
    encryption = serialization.BestAvailableEncryption(passphrase.encode()) if passphrase else \
        serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption).decode()


def config_file(tmp_path, text):
    path = tmp_path / "oci-config"
    path.write_text(text)
    return str(path)


def playbook_case(start_http, start_grpc):
    server = start_http(make_route())
    return params(server), CREDS, [PASSPHRASE, PEM.splitlines()[1]], lambda: all(
        signature_problem(request) is None for request in server.requests)


def config_file_case(start_http, start_grpc, tmp_path):
    key_file = tmp_path / "api_key.pem"
    key_file.write_text(pem(KEY, ODD_PASSPHRASE))
    path = config_file(tmp_path, f"[TOPOLOGY]\nuser={USER}\nfingerprint={FINGERPRINT}\ntenancy={TENANCY}\n"
                                 f"key_file={key_file}\n")
    server = start_http(make_route())
    return (params(server), {"auth": "config_file", "config_file": path, "profile": "TOPOLOGY",
                             "passphrase": ODD_PASSPHRASE}, [ODD_PASSPHRASE],
            lambda: bool(server.requests) and all(signature_problem(request) is None for request in server.requests))


def session_token_case(start_http, start_grpc, tmp_path):
    token_file, key_file = tmp_path / "token", tmp_path / "session_key.pem"
    token_file.write_text(SESSION_TOKEN)
    session_pem = pem(SESSION_KEY)
    key_file.write_text(session_pem)
    path = config_file(tmp_path, f"[SESSION]\nfingerprint={FINGERPRINT}\ntenancy={TENANCY}\n"
                                 f"key_file={key_file}\nsecurity_token_file={token_file}\n")
    server = start_http(make_route(key=SESSION_KEY, key_id=f"ST${SESSION_TOKEN}"))
    # The token travels in every request's keyId: it must still never reach the output.
    return (params(server), {"auth": "security_token", "config_file": path, "profile": "SESSION"},
            [SESSION_TOKEN, session_pem.splitlines()[1]],
            lambda: bool(server.requests) and all(
                signature_problem(request, SESSION_KEY, f"ST${SESSION_TOKEN}") is None for request in server.requests))


# Every credential form besides playbook_case's, for the -vvvv secret test (test_provider_creds_playbook.py).
PLAYBOOK_FORMS = {"config-file-profile": config_file_case, "session-token": session_token_case}


def _rsa_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


class InstanceMetadataAndAuth:
    """The instance metadata service (``/opc/v2``) and the federation endpoint (``/v1/x509``) on 127.0.0.1.

    The metadata service serves a leaf certificate naming the tenancy (``OU=opc-tenant:<ocid>``), its key, an
    intermediate and the region, to ``Authorization: Bearer Oracle`` only. The federation endpoint checks the
    SDK's request signature (key id ``<tenancy>/fed-x509/<SHA-1 fingerprint>`` by the leaf key, over the body
    headers too) and that the certificate sent is the leaf, then returns a token for the session public key it
    was sent; the API then accepts only ``ST$<token>`` signed by that session key.
    """

    def __init__(self):
        from cryptography import x509
        from cryptography.x509.oid import NameOID

        now = datetime.datetime.now(datetime.timezone.utc)
        span = datetime.timedelta(hours=1)
        self.ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.leaf_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "PKISVC Identity Intermediate r2")])
        self.intermediate = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
                             .public_key(self.ca_key.public_key()).serial_number(x509.random_serial_number())
                             .not_valid_before(now - span).not_valid_after(now + span)
                             .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                             .sign(self.ca_key, hashes.SHA256()))
        leaf_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ocid1.instance.oc1.phx.i1"),
                               x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "opc-instance:ocid1.instance.i1"),
                               x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, f"opc-tenant:{TENANCY}")])
        self.leaf = (x509.CertificateBuilder().subject_name(leaf_name).issuer_name(ca_name)
                     .public_key(self.leaf_key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - span).not_valid_after(now + span).sign(self.ca_key, hashes.SHA256()))
        self.session_public = None
        self.token = jwt.encode({"sub": "ocid1.instance.i1", "res_tenant": TENANCY, "exp": int(time.time()) + 3600},
                                "a test key that only the fake auth service would hold", algorithm="HS256")
        self.api = lambda request: json_reply({"code": "NotAuthenticated", "message": "no session yet"}, status=401)
        self.federation_reply = None

    def pem(self, cert):
        return cert.public_bytes(serialization.Encoding.PEM).decode()

    def __call__(self, request):
        if request.path.startswith("/opc/v2/"):
            if request.headers.get("authorization") != "Bearer Oracle":
                return json_reply({"code": "NotAuthorized"}, status=401)
            documents = {"/opc/v2/instance/region": "us-phoenix-1", "/opc/v2/identity/cert.pem": self.pem(self.leaf),
                         "/opc/v2/identity/key.pem": _rsa_pem(self.leaf_key),
                         "/opc/v2/identity/intermediate.pem": self.pem(self.intermediate)}
            if request.path not in documents:
                return json_reply({"code": "NotFound"}, status=404)
            return text_reply(documents[request.path])
        if request.path == "/v1/x509":
            return self.federate(request)
        return self.api(request)

    def federate(self, request):
        from cryptography.hazmat.primitives.hashes import SHA1

        if self.federation_reply is not None:  # a hostile federation endpoint's answer
            return self.federation_reply

        fingerprint = ":".join(f"{byte:02X}" for byte in self.leaf.fingerprint(SHA1()))
        problem = body_signature_problem(request, self.leaf_key, f"{TENANCY}/fed-x509/{fingerprint}")
        if problem is None and request.headers.get("x-content-sha256") != base64.b64encode(
                hashlib.sha256(request.body).digest()).decode():
            problem = "x-content-sha256 is not the body's"
        body = json.loads(request.body)
        if problem is None and "".join(self.pem(self.leaf).splitlines()[1:-1]) != body.get("certificate"):
            problem = "the certificate is not the instance's leaf"
        if problem:
            return json_reply({"code": "NotAuthenticated", "message": problem}, status=401)
        self.session_public = serialization.load_pem_public_key(
            f"-----BEGIN PUBLIC KEY-----\n{body['publicKey']}\n-----END PUBLIC KEY-----\n".encode())
        self.api = make_route(key=PublicKeyHolder(self.session_public), key_id=f"ST${self.token}")
        return json_reply({"token": self.token})


class PublicKeyHolder:
    """What signature_problem needs of a key: its public half."""

    def __init__(self, public):
        self._public = public

    def public_key(self):
        return self._public


def body_signature_problem(request, key, key_id):
    """signature_problem for a request with a body: the signed headers must cover the date, the target and the
    body (``content-length content-type x-content-sha256``); the SDK's federation request leaves out ``host``."""
    header = request.headers.get("authorization", "")
    fields, names = _signature_fields(header)
    required = {"date", "(request-target)", "content-length", "content-type", "x-content-sha256"}
    if fields.get("keyId") != key_id or not required <= set(names):
        return f"unexpected keyId or signed headers: {names}"
    return _signature_mismatch(request, key, fields, names)
