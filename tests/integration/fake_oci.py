"""The OCI tenancy, user and API signing key the oci tests' fake servers check signatures against.

Shared by ``test_provider_oci.py`` and ``test_provider_errors.py`` (a test module never imports
another one).
"""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

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
