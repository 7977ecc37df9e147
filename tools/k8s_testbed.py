"""A real Kubernetes control plane (etcd, kube-apiserver, kube-scheduler) on 127.0.0.1, for tests.

Recipe, reasoning and what the tests prove: docs/testing.md (The Kubernetes test bed).

Build (once per machine): kube-apiserver, kube-scheduler, etcd, the Kueue controller manager and
nfd-master are compiled by one ``go build`` in one wrapper module, so the packages they share
(k8s.io/api, apimachinery, client-go, apiserver, grpc, protobuf, otel...: about 56 % of the source
the first four compile separately) are compiled once. The module's replace directives are generated from k8s's
own go.mod (every ``k8s.io/X => ./staging/...`` line becomes ``k8s.io/X => k8s.io/X
v0.<minor>.<patch>``); Kueue (``sigs.k8s.io/kueue/cmd/kueue``), nfd-master
(``sigs.k8s.io/node-feature-discovery/cmd/nfd-master``, with its ``api/nfd`` module, which its own go.mod
replaces by ``./api/nfd`` and the module zip leaves out, resolved by a replace to the same version from
the proxy) and the etcd server (a five-line ``main`` calling ``etcdmain.Main``) join it with ``go get``,
so Go's minimal version selection gives every shared dependency one version: the highest that any of
the five requires (docs/testing.md lists what that moves). Everything (wrapper module, GOPATH, GOMODCACHE, GOCACHE, binaries) lives
under ``$AIFACTORY_CACHE/k8s`` (default /var/cache/aifactory-topology/k8s), so only the first run
on a machine pays; nothing built is committed.

Run: ``start`` makes a CA and certificates (the ``cryptography`` package), starts etcd and
kube-apiserver (and kube-scheduler when asked) on free loopback ports, waits for their health
endpoints (polling, no fixed sleeps), and writes ``admin.kubeconfig`` into the run directory.
Only the processes recorded in the run directory's pid files are ever stopped.

Python API (pytest fixtures in tests/integration/conftest.py wrap it)::

    with control_plane(scheduler=False) as plane:   # or: plane = start(run_dir); ...; plane.stop()
        plane.kubeconfig                 # Path of the admin kubeconfig (group system:masters)
        plane.server                     # https://127.0.0.1:<port>
        plane.kubectl                    # Kubectl as admin: get/list/create/apply/patch/delete/wait_for
        plane.user_kubeconfig("alice", groups=["team"])  # Path: client cert with CN=alice, O=team
        plane.kubectl_as("alice", groups=["team"])       # Kubectl authenticated as that user
        plane.service_account_token("ns", "sa")          # bearer token (TokenRequest) for K8S_AUTH_API_KEY
        plane.create_nodes(topology_or_names, labels={name: {...}}, allocatable={"pods": "4"})
        plane.install_nfd_crds()         # NFD CRDs from the NFD Go module, waited until Established
        plane.install_kueue_crds()       # Kueue's Topology and ResourceFlavor CRDs from the Kueue Go module
        plane.start_scheduler()          # real kube-scheduler, if not started with scheduler=True
    kueue = start_kueue(plane)           # Kueue's CRDs + controller manager, webhooks at 127.0.0.1; kueue.stop()
    nfd = start_nfd_master(plane, "ns")  # the real nfd-master for the NFD objects of namespace "ns"; nfd.stop()
    wait_until(lambda: alice.can_i("list", "nodes"))   # poll a condition that has no object to watch
    node_manifest(name, labels, allocatable)           # the Node dict create_nodes() sends

``Kubectl`` methods take and return plain dicts (or YAML text for manifests); API errors raise
``kubernetes.dynamic.exceptions.DynamicApiError`` subclasses (ForbiddenError, ConflictError ...)
with ``.status`` (403, 409, 422 ...).

Command line::

    python tools/k8s_testbed.py build                 # build or reuse the five binaries; prints their
                                                      # directory (exit 3: no usable Go, so nothing can be built)
    python tools/k8s_testbed.py start [--scheduler]   # prints the admin kubeconfig path
    python tools/k8s_testbed.py kubeconfig USER [--group G ...]   # prints a new user's kubeconfig path
    python tools/k8s_testbed.py status | stop
    python tools/k8s_testbed.py nfd-crds              # prints the path of the NFD CRD YAML
    python tools/k8s_testbed.py kueue-crds            # prints the paths of Kueue's CRD YAML files

``start``/``status``/``stop``/``kubeconfig`` take ``--dir`` (default ``$AIFACTORY_K8S_RUN_DIR`` or
/tmp/aifactory-k8s-testbed).

What is not there (no kube-controller-manager, no kubelet): namespaces stay Terminating when
deleted, pods bound to a node must be deleted with grace period 0, no garbage collection, no
ServiceAccount admission (so no ``default`` service account is created automatically).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import fcntl
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from build_progress import heartbeat
from ports import free_port  # noqa: F401 (also the tests' free_port)

K8S_VERSION = os.environ.get("AIFACTORY_K8S_VERSION", "v1.36.3")
# etcd server module: 3.6 is what k8s 1.36 is tested with (its client is v3.6.x).
ETCD_VERSION = os.environ.get("AIFACTORY_ETCD_VERSION", "v3.6.16")
# Node Feature Discovery (sigs.k8s.io/node-feature-discovery): cmd/nfd-master is built in the same wrapper
# module; the CRDs (deployment/base/nfd-crds/nfd-api-crds.yaml) come from the same module zip. Its go.mod
# replaces the nested module api/nfd by ./api/nfd, which the zip leaves out: the wrapper module takes
# that module from the proxy at the same version.
NFD_VERSION = os.environ.get("AIFACTORY_NFD_VERSION", "v0.19.0")
NFD_API_MODULE = "sigs.k8s.io/node-feature-discovery/api/nfd"
NFD_CRD_FILE = "deployment/base/nfd-crds/nfd-api-crds.yaml"
# Kueue (sigs.k8s.io/kueue): cmd/kueue is built in the same wrapper module as Kubernetes (v0.19 requires
# the k8s.io v0.36 line); the CRDs and webhook manifests come from the same module zip.
KUEUE_VERSION = os.environ.get("AIFACTORY_KUEUE_VERSION", "v0.19.2")
KUEUE_CRD_DIR = "config/components/crd/bases"
KUEUE_WEBHOOK_FILE = "config/components/webhook/manifests.yaml"
MIN_GO = (1, 26)
# Bump when the build recipe changes so cached binaries are rebuilt.
# 3: nfd-master joins the wrapper module (2: the four binaries from one wrapper module and one go
# build; 1: Kubernetes, etcd and Kueue apart).
RECIPE_VERSION = "3"
BINARIES = ("kube-apiserver", "kube-scheduler", "etcd", "kueue", "nfd-master")
DEFAULT_RUN_DIR = os.environ.get("AIFACTORY_K8S_RUN_DIR", "/tmp/aifactory-k8s-testbed")
START_TIMEOUT = 180.0  # bounds a hung start on a loaded 2-core machine; readiness is polled
POLL_INTERVAL = 0.2

ETCD_MAIN = """\
// Generated by aifactory.topology tools/k8s_testbed.py: the etcd server binary (package ./etcd of the wrapper module).
package main

import (
\t"os"

\t"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
"""


class TestbedUnavailable(RuntimeError):
    """The machine cannot build the test bed (no Go, or a Go older than the recipe needs)."""


class StartFailed(RuntimeError):
    """A component exited or did not become ready; the message carries its log tail."""


def log(message: str) -> None:
    print(f"k8s-testbed: {message}", file=sys.stderr, flush=True)


# -- paths and environment --------------------------------------------------------------------

def cache_dir() -> Path:
    """$AIFACTORY_CACHE/k8s; by default the machine-wide cache, or ~/.cache for a user who cannot write it."""
    if os.environ.get("AIFACTORY_CACHE"):
        return Path(os.environ["AIFACTORY_CACHE"]) / "k8s"
    machine = Path("/var/cache/aifactory-topology/k8s")
    existing = next((p for p in (machine, *machine.parents) if p.exists()), machine)
    if os.access(existing, os.W_OK) or (machine / K8S_VERSION / "bin" / "RECIPE").is_file():
        return machine
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aifactory-topology" / "k8s"


def version_dir(version: str = K8S_VERSION) -> Path:
    return cache_dir() / version


def bin_dir(version: str = K8S_VERSION) -> Path:
    return version_dir(version) / "bin"


def go_binary() -> str | None:
    return shutil.which("go") or next((p for p in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go") if os.access(p, os.X_OK)), None)


def go_env() -> dict:
    """The Go environment of every build step: caches under cache_dir(), no cgo, no toolchain switch."""
    gopath = cache_dir() / "go"
    flags = [f for f in os.environ.get("GOFLAGS", "").split() if f not in ("-modcacherw", "-buildvcs=false")]
    return {
        **os.environ,
        "GOPATH": str(gopath),
        "GOMODCACHE": str(gopath / "pkg" / "mod"),
        "GOCACHE": str(gopath / "cache"),
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
        # -modcacherw: the module cache stays deletable with plain rm -rf.
        "GOFLAGS": " ".join(flags + ["-modcacherw", "-buildvcs=false"]),
    }


def go_version(go: str) -> tuple[int, int] | None:
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False).stdout
    match = re.match(r"go(\d+)\.(\d+)", out.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def is_built(version: str = K8S_VERSION) -> bool:
    return _stamped(bin_dir(version), _recipe(version), BINARIES)


def _stamped(directory: Path, recipe: dict, binaries) -> bool:
    """True when ``directory``'s RECIPE stamp is ``recipe`` and every binary is executable."""
    marker = directory / "RECIPE"
    if not marker.is_file():
        return False
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except ValueError:
        return False
    return recorded == recipe and all(os.access(directory / b, os.X_OK) for b in binaries)


def unavailable_reason(version: str = K8S_VERSION) -> str | None:
    """None when the binaries are cached or can be built here; otherwise what is missing."""
    return None if is_built(version) else _go_problem(f"kube-apiserver {version}", bin_dir(version))


def _go_problem(what: str, where: Path) -> str | None:
    go = go_binary()
    if go is None:
        return (f"{what} is not built in {where} and Go is not installed "
                f"(needs Go >= {MIN_GO[0]}.{MIN_GO[1]} to build it from the Go module proxy)")
    found = go_version(go)
    if found is None or found < MIN_GO:
        return f"{what} needs Go >= {MIN_GO[0]}.{MIN_GO[1]} to build; {go} is {found}"
    return None


def _recipe(version: str) -> dict:
    return {"recipe": RECIPE_VERSION, "kubernetes": version, "etcd": ETCD_VERSION, "kueue": KUEUE_VERSION,
            "nfd": NFD_VERSION}


def _staging_version(version: str) -> str:
    match = re.fullmatch(r"v1\.(\d+)\.(\d+)", version)
    if not match:
        raise ValueError(f"not a Kubernetes release version: {version!r} (expected v1.<minor>.<patch>)")
    return f"v0.{match.group(1)}.{match.group(2)}"


# -- build ------------------------------------------------------------------------------------

def _go(args: list[str], cwd: Path, env: dict | None = None) -> str:
    with heartbeat("k8s-testbed", f"go {args[0]} {args[1] if len(args) > 1 else ''}".rstrip()):
        result = subprocess.run([go_binary() or "go", *args], cwd=cwd, env={**go_env(), **(env or {})},
                                capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"go {' '.join(args)} failed in {cwd}:\n{result.stderr[-4000:]}")
    return result.stdout


def go_mod_download(module: str, version: str) -> dict:
    """``go mod download -json module@version`` into the cache's GOMODCACHE; returns its JSON."""
    cwd = cache_dir()
    cwd.mkdir(parents=True, exist_ok=True)
    info = json.loads(_go(["mod", "download", "-json", f"{module}@{version}"], cwd))
    if info.get("Error"):
        raise RuntimeError(f"go mod download {module}@{version}: {info['Error']}")
    return info


def staging_replacements(k8s_go_mod: str, staging_version: str) -> list[str]:
    """``-replace`` arguments for every staging module k8s's go.mod maps to ./staging/."""
    names = re.findall(r"^\s*(?:replace\s+)?(k8s\.io/\S+)\s+=>\s+\./staging/", k8s_go_mod, flags=re.M)
    if not names:
        raise RuntimeError("k8s.io/kubernetes go.mod has no './staging/' replace directives: recipe outdated?")
    return [f"-replace={name}={name}@{staging_version}" for name in sorted(set(names))]


def _version_ldflags(version: str) -> str:
    """-s -w, and the version stamps each binary prints (Kubernetes', Kueue's, nfd-master's; etcd's is in its code)."""
    major, minor = version.lstrip("v").split(".")[:2]
    kueue_commit = _kueue_module().get("Origin", {}).get("Hash", "unknown")
    stamp = [
        f"k8s.io/component-base/version.gitVersion={version}",
        f"k8s.io/component-base/version.gitMajor={major}",
        f"k8s.io/component-base/version.gitMinor={minor}",
        "k8s.io/component-base/version.gitTreeState=clean",
        f"k8s.io/client-go/pkg/version.gitVersion={version}",
        f"sigs.k8s.io/kueue/pkg/version.GitVersion={KUEUE_VERSION}",
        f"sigs.k8s.io/kueue/pkg/version.GitCommit={kueue_commit}",
        f"sigs.k8s.io/node-feature-discovery/pkg/version.version={NFD_VERSION}",
    ]
    return "-s -w " + " ".join(f"-X {item}" for item in stamp)


def _build_all(version: str, src: Path, out: Path) -> None:
    """The five binaries from one wrapper module in ``src``, by one ``go build`` into ``out``."""
    staging = _staging_version(version)
    shutil.rmtree(src, ignore_errors=True)
    (src / "etcd").mkdir(parents=True)
    (src / "etcd" / "main.go").write_text(ETCD_MAIN, encoding="utf-8")
    _go(["mod", "init", "example.invalid/aifactory-k8s-testbed"], src)
    _go(["mod", "edit", "-go=1.26.0", "-godebug=default=go1.26"], src)
    info = go_mod_download("k8s.io/kubernetes", version)
    k8s_go_mod = Path(info["GoMod"]).read_text(encoding="utf-8")
    _go(["mod", "edit", *staging_replacements(k8s_go_mod, staging),
         f"-replace={NFD_API_MODULE}={NFD_API_MODULE}@{NFD_VERSION}"], src)
    _go(["get", "-tool", f"k8s.io/kubernetes/cmd/kube-apiserver@{version}",
         f"k8s.io/kubernetes/cmd/kube-scheduler@{version}", f"sigs.k8s.io/kueue/cmd/kueue@{KUEUE_VERSION}",
         f"sigs.k8s.io/node-feature-discovery/cmd/nfd-master@{NFD_VERSION}"], src)
    _go(["get", f"go.etcd.io/etcd/server/v3@{ETCD_VERSION}"], src)
    _go(["mod", "tidy"], src)
    _go(["build", "-trimpath", "-ldflags", _version_ldflags(version), "-o", str(out) + "/",
         "k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-scheduler",
         "sigs.k8s.io/kueue/cmd/kueue", "sigs.k8s.io/node-feature-discovery/cmd/nfd-master", "./etcd"], src)


def build(version: str = K8S_VERSION) -> Path:
    """Build (or reuse) kube-apiserver, kube-scheduler, etcd, Kueue and nfd-master; returns the binary directory.

    A cold build takes minutes on two cores (see docs/testing.md); the module and build caches
    stay under cache_dir() so a rebuild after a recipe change is quick.
    """
    def steps(staging: Path) -> None:
        log(f"building kube-apiserver and kube-scheduler {version}, etcd {ETCD_VERSION}, Kueue {KUEUE_VERSION} "
            f"and nfd-master {NFD_VERSION} in one go build (Go module proxy; cold: many minutes)")
        _build_all(version, version_dir(version) / "src" / "testbed", staging)
        nfd_crds_file()

    return _build_once(version_dir(version), _recipe(version), BINARIES, steps,
                       lambda: unavailable_reason(version))


def _build_once(root: Path, recipe: dict, binaries, steps, unavailable) -> Path:
    """``root``/bin built by ``steps(staging)`` once per recipe: under a lock (a concurrent build, e.g.
    make setup and pytest, waits for this one), into ``bin.partial`` renamed when complete."""
    out = root / "bin"
    if _stamped(out, recipe, binaries):
        return out
    reason = unavailable()
    if reason:
        raise TestbedUnavailable(reason)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w", encoding="utf-8") as lock:
        with heartbeat("k8s-testbed", f"waiting for another build in {root} to finish"):
            fcntl.flock(lock, fcntl.LOCK_EX)
        if _stamped(out, recipe, binaries):
            return out
        staging = root / "bin.partial"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        started = time.monotonic()
        steps(staging)
        (staging / "RECIPE").write_text(json.dumps(recipe), encoding="utf-8")
        shutil.rmtree(out, ignore_errors=True)
        staging.rename(out)
        log(f"built in {time.monotonic() - started:.0f}s: {out}")
    return out


def _kueue_module(version: str = KUEUE_VERSION) -> dict:
    return go_mod_download("sigs.k8s.io/kueue", version)


def kueue_manifests(version: str = KUEUE_VERSION) -> tuple[list[dict], list[dict]]:
    """Kueue's CRDs and its webhook configurations, as its module zip ships them."""
    import yaml

    root = Path(_kueue_module(version)["Dir"])
    crds = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted((root / KUEUE_CRD_DIR).glob("*.yaml"))]
    webhooks = [d for d in yaml.safe_load_all((root / KUEUE_WEBHOOK_FILE).read_text(encoding="utf-8")) if d]
    if not crds or not webhooks:
        raise RuntimeError(f"sigs.k8s.io/kueue@{version} has no {KUEUE_CRD_DIR} or {KUEUE_WEBHOOK_FILE}")
    return crds, webhooks


def nfd_crds_file(version: str = NFD_VERSION) -> Path:
    """The NFD CRD YAML inside the NFD Go module (downloaded into the cache on first use)."""
    info = go_mod_download("sigs.k8s.io/node-feature-discovery", version)
    path = Path(info["Dir"]) / NFD_CRD_FILE
    if not path.is_file():
        raise RuntimeError(f"sigs.k8s.io/node-feature-discovery@{version} has no {NFD_CRD_FILE}")
    return path


def kueue_crd_files(version: str = KUEUE_VERSION) -> dict[str, Path]:
    """Plural resource -> its CRD YAML inside the Kueue Go module (downloaded into the cache on first use)."""
    directory = Path(_kueue_module(version)["Dir"]) / KUEUE_CRD_DIR
    files = {path.name.split("_", 1)[1][:-len(".yaml")]: path for path in sorted(directory.glob("kueue.x-k8s.io_*.yaml"))}
    if "topologies" not in files or "resourceflavors" not in files:
        raise RuntimeError(f"sigs.k8s.io/kueue@{version} has no topologies and resourceflavors CRDs in {KUEUE_CRD_DIR}")
    return files


def binary_version(path: Path) -> str:
    result = subprocess.run([str(path), "--version"], capture_output=True, text=True, check=False)
    return (result.stdout or result.stderr).strip().splitlines()[0] if (result.stdout or result.stderr).strip() else "?"


# -- certificates and kubeconfigs -------------------------------------------------------------

class CertificateAuthority:
    """A throw-away CA in ``pki_dir`` (ca.crt, ca.key) that issues server and client certificates."""

    def __init__(self, pki_dir: Path):
        # Imported here: `build` must work without the cryptography package.
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        self.dir = pki_dir
        self.cert_file = pki_dir / "ca.crt"
        self.key_file = pki_dir / "ca.key"
        if self.key_file.exists():
            self.key = serialization.load_pem_private_key(self.key_file.read_bytes(), password=None)
            self.cert = x509.load_pem_x509_certificate(self.cert_file.read_bytes())
            return
        pki_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "aifactory-testbed-ca")])
        self.cert = self._sign(name, self.key.public_key(), ca=True, extensions=[])
        _write_key(self.key_file, self.key)
        self.cert_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def _sign(self, subject, public_key, ca: bool, extensions: list):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes

        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (x509.CertificateBuilder()
                   .subject_name(subject)
                   .issuer_name(subject if ca else self.cert.subject)
                   .public_key(public_key)
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(days=365))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ca:
            builder = builder.add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False), critical=True)
        for extension in extensions:
            builder = builder.add_extension(extension, critical=False)
        return builder.sign(self.key, hashes.SHA256())

    def issue(self, name: str, common_name: str, groups=(), server: bool = False) -> tuple[Path, Path]:
        """Write ``<name>.crt``/``<name>.key``: a client cert (CN=user, O=groups) or a loopback server cert."""
        import ipaddress

        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        if server:
            extensions = [x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                          x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                       x509.DNSName("localhost")])]
        else:
            extensions = [x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH])]
        cert = self._sign(x509.Name(attributes), key.public_key(), ca=False, extensions=extensions)
        cert_file, key_file = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        _write_key(key_file, key)
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return cert_file, key_file


def _write_key(path: Path, key) -> None:
    from cryptography.hazmat.primitives import serialization

    data = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def key_pair(stem: Path) -> tuple[Path, Path]:
    """``<stem>.key`` and ``<stem>.pub``: the service-account token signing key pair."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    key_file, pub_file = stem.with_suffix(".key"), stem.with_suffix(".pub")
    _write_key(key_file, key)
    pub_file.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo))
    return key_file, pub_file


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


def write_kubeconfig(path: Path, server: str, ca_file: Path, user: str, cert_file: Path, key_file: Path) -> Path:
    """A self-contained kubeconfig (certificates embedded) with one context named ``testbed``."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "testbed", "cluster": {"server": server, "certificate-authority-data": _b64(ca_file)}}],
        "users": [{"name": user, "user": {"client-certificate-data": _b64(cert_file), "client-key-data": _b64(key_file)}}],
        "contexts": [{"name": "testbed", "context": {"cluster": "testbed", "user": user}}],
        "current-context": "testbed",
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(config, handle, indent=2)  # JSON is YAML: every kubeconfig reader accepts it
    return path


# -- processes --------------------------------------------------------------------------------

def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _pid_file(run_dir: Path, name: str) -> Path:
    return run_dir / f"{name}.pid"


def _die_with_parent() -> None:
    """In the child: SIGKILL when the starting process dies (a killed pytest leaks nothing).

    SIGKILL, not SIGTERM: etcd would go first and kube-apiserver would hang in its graceful shutdown.
    """
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _spawn(run_dir: Path, name: str, argv: list[str], detach: bool, exe: str | None = None,
           env: dict | None = None) -> subprocess.Popen:
    """Start ``argv`` logging to ``<name>.log``; ``detach``: outlive this process (the CLI's start);
    ``env``: its environment (default: this process's).

    ``exe``: the binary the process ends up running when ``argv[0]`` is a launcher that execs it
    (the pid file names it, so stop() recognises the process)."""
    log_path = run_dir / f"{name}.log"
    with open(log_path, "ab") as log_file:
        # Own session: a terminal's Ctrl-C does not reach it; stop() ends it by its pid file.
        process = subprocess.Popen(  # pylint: disable=subprocess-popen-preexec-fn
            argv, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=run_dir, env=env,
            start_new_session=True, preexec_fn=None if detach else _die_with_parent)
    _pid_file(run_dir, name).write_text(f"{process.pid}\n{exe or argv[0]}\n", encoding="utf-8")
    return process


def _is_ours(pid: int, exe: str) -> bool:
    """True while ``pid`` runs ``exe`` (so a recycled pid is never signalled)."""
    try:
        return os.path.realpath(f"/proc/{pid}/exe") == os.path.realpath(exe)
    except OSError:
        return False


def _stop_process(run_dir: Path, name: str, process: subprocess.Popen | None = None, timeout: float = 30.0) -> bool:
    """Stop the process recorded in ``<name>.pid`` (SIGTERM, then SIGKILL); True if one was running."""
    pid_path = _pid_file(run_dir, name)
    try:
        pid_text, exe = pid_path.read_text(encoding="utf-8").split("\n")[:2]
        pid = int(pid_text)
    except (OSError, ValueError):
        return False
    running = _is_ours(pid, exe)
    if running:
        os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + timeout
        while _is_ours(pid, exe) and time.monotonic() < end:
            if process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=POLL_INTERVAL)
            else:
                time.sleep(POLL_INTERVAL)
        if _is_ours(pid, exe):
            os.kill(pid, signal.SIGKILL)
    if process is not None:
        process.wait()
    pid_path.unlink(missing_ok=True)
    return running


def _get(url: str, ssl_context=None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5, context=ssl_context) as response:  # noqa: S310 (loopback)
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(exc)


def _wait_ready(name: str, process: subprocess.Popen, log_path: Path, check, timeout: float) -> None:
    """Poll ``check()`` until it is true; fail at once if the process exits."""
    end = time.monotonic() + timeout
    last = ""
    while True:
        if process.poll() is not None:
            raise StartFailed(f"{name} exited with {process.returncode}:\n{_tail(log_path)}")
        ok, last = check()
        if ok:
            return
        if time.monotonic() > end:
            raise StartFailed(f"{name} not ready after {timeout:.0f}s (last answer: {last[:300]}):\n{_tail(log_path)}")
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=POLL_INTERVAL)  # returns early if the process dies


def _health_check(url: str, ssl_context=None, expect: str = "ok"):
    def check():
        status, body = _get(url, ssl_context)
        return status == 200 and expect in body, f"{status} {body}"
    return check


# -- the control plane ------------------------------------------------------------------------

class ControlPlane:
    """A running etcd + kube-apiserver (+ kube-scheduler) described by ``<run_dir>/state.json``."""

    def __init__(self, run_dir: Path, state: dict, processes: dict | None = None):
        self.dir = Path(run_dir)
        self.state = state
        self.processes = processes or {}  # name -> Popen, when started by this Python process
        self._kubectl = None

    # where things are
    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.state['ports']['apiserver']}"

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "admin.kubeconfig"

    @property
    def ca_file(self) -> Path:
        return self.dir / "pki" / "ca.crt"

    @property
    def version(self) -> str:
        return self.state["version"]

    @property
    def bin_dir(self) -> Path:
        return Path(self.state["bin_dir"])

    def log(self, name: str = "kube-apiserver") -> str:
        return (self.dir / f"{name}.log").read_text(encoding="utf-8", errors="replace")

    def _save(self) -> None:
        (self.dir / "state.json").write_text(json.dumps(self.state, indent=2), encoding="utf-8")

    @classmethod
    def load(cls, run_dir: Path | str = DEFAULT_RUN_DIR) -> "ControlPlane":
        run_dir = Path(run_dir)
        return cls(run_dir, json.loads((run_dir / "state.json").read_text(encoding="utf-8")))

    # users
    def user_kubeconfig(self, user: str, groups=()) -> Path:
        """A kubeconfig for ``user`` in ``groups`` (client certificate CN=user, O=group...)."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", user) + "".join("+" + re.sub(r"[^A-Za-z0-9_.-]", "_", g) for g in groups)
        cert, key = CertificateAuthority(self.dir / "pki").issue(f"user-{safe}", user, groups)
        return write_kubeconfig(self.dir / f"user-{safe}.kubeconfig", self.server, self.ca_file, user, cert, key)

    def api_client(self, kubeconfig: Path | str | None = None):
        """A ``kubernetes.client.ApiClient`` for ``kubeconfig`` (default: admin)."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(kubeconfig or self.kubeconfig))

    @property
    def kubectl(self) -> "Kubectl":
        if self._kubectl is None:
            self._kubectl = Kubectl(self.api_client())
        return self._kubectl

    def kubectl_as(self, user: str, groups=()) -> "Kubectl":
        return Kubectl(self.api_client(self.user_kubeconfig(user, groups)))

    def service_account_token(self, namespace: str, name: str, expiration_seconds: int = 3600) -> str:
        """A bearer token for ServiceAccount ``namespace/name`` (created if missing) via TokenRequest."""
        from kubernetes import client

        core = client.CoreV1Api(self.kubectl.api)
        if self.kubectl.get("ServiceAccount", name, namespace=namespace) is None:
            core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
        request = {"spec": {"expirationSeconds": expiration_seconds}}
        return core.create_namespaced_service_account_token(name, namespace, request).status.token

    # nodes and CRDs
    def create_nodes(self, nodes, labels=None, allocatable=None) -> list[str]:
        """Create one Node per name of ``nodes`` (a Topology model or an iterable of names), KWOK-style.

        ``labels``: mapping name -> labels, or a callable name -> labels. ``allocatable``: resources
        merged over the defaults (cpu 32, memory 256Gi, pods 110). Returns the names in order.
        """
        names = sorted(nodes.nodes) if hasattr(nodes, "nodes") else list(nodes)
        for name in names:
            extra = labels(name) if callable(labels) else (labels or {}).get(name, {})
            self.kubectl.create(node_manifest(name, extra, allocatable))
        return names

    def delete_nodes(self, names) -> None:
        for name in names:
            self.kubectl.delete("Node", name)

    def install_crds(self, documents, timeout: float = 60.0) -> list[str]:
        """Apply CRD documents and wait until each is Established; returns their names."""
        names = []
        for crd in documents:
            self.kubectl.apply(crd, field_manager="aifactory-testbed")
            names.append(crd["metadata"]["name"])
        for name in names:
            self.kubectl.wait_for("CustomResourceDefinition", name, crd_established,
                                  api_version="apiextensions.k8s.io/v1", timeout=timeout)
        self.kubectl.refresh_discovery()
        return names

    def install_nfd_crds(self, timeout: float = 60.0) -> list[str]:
        """Install the NFD CRDs from the NFD Go module and wait until each is Established."""
        import yaml

        documents = [d for d in yaml.safe_load_all(nfd_crds_file().read_text(encoding="utf-8")) if d]
        return self.install_crds(documents, timeout)

    def install_kueue_crds(self, resources=("topologies", "resourceflavors"), timeout: float = 60.0) -> list[str]:
        """Install Kueue's CRDs of ``resources`` (None: all of them) from its Go module; wait until Established."""
        import yaml

        files = kueue_crd_files()
        chosen = sorted(files) if resources is None else resources
        return self.install_crds([yaml.safe_load(files[r].read_text(encoding="utf-8")) for r in chosen], timeout)

    # lifecycle
    def start_scheduler(self, timeout: float = START_TIMEOUT) -> None:
        """Start the real kube-scheduler against this API server (no-op if it runs)."""
        if self.state.get("scheduler"):
            return
        _start_scheduler(self, timeout)
        self._save()

    def restart_apiserver(self, timeout: float = START_TIMEOUT) -> None:
        """Stop kube-apiserver and start it again on the same port and certificates (etcd keeps running):
        what a control-plane upgrade or crash looks like to watchers."""
        _stop_process(self.dir, "kube-apiserver", self.processes.pop("kube-apiserver", None))
        _start_apiserver(self, timeout)
        self._save()

    def stop(self) -> list[str]:
        return stop(self.dir, self.processes)


def node_manifest(name: str, labels=None, allocatable=None) -> dict:
    """A Node as KWOK creates it: Ready, no pressure, capacity = allocatable, hostname/os/arch labels."""
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", **(allocatable or {})}
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def condition(kind, status, reason, message):
        return {"type": kind, "status": status, "reason": reason, "message": message,
                "lastHeartbeatTime": now, "lastTransitionTime": now}

    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            # A kubelet registers its Node with this annotation (--enable-controller-attach-detach, on by
            # default). Clients that JSON-patch /metadata/annotations/<key> (nfd-master) need the map.
            "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "type": "aifactory-testbed", **(labels or {})},
        },
        "spec": {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [
                condition("Ready", "True", "KubeletReady", "fake node (aifactory test bed)"),
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "no pressure"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "no pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "no pressure"),
                condition("NetworkUnavailable", "False", "RouteCreated", "fake route"),
            ],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "osImage": "aifactory-testbed",
                         "kernelVersion": "testbed", "kubeletVersion": K8S_VERSION,
                         "containerRuntimeVersion": "testbed://0", "machineID": "", "systemUUID": "", "bootID": ""},
            "phase": "Running",
        },
    }


def crd_established(crd: dict) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def start(run_dir: Path | str = DEFAULT_RUN_DIR, scheduler: bool = False, version: str = K8S_VERSION,
          apiserver_args=(), timeout: float = START_TIMEOUT, detach: bool = False,
          scheduler_args=()) -> ControlPlane:
    """Start etcd and kube-apiserver (and kube-scheduler) with state in ``run_dir``; wait until ready.

    ``apiserver_args`` are appended to kube-apiserver's flags (e.g. an audit log for benchmarks),
    ``scheduler_args`` to kube-scheduler's (e.g. ``--feature-gates=...`` of alpha gang scheduling).
    Without ``detach`` the components get SIGTERM when this process dies; the CLI detaches.
    A port taken between choosing and binding it (another test bed starting) is retried.
    """
    run_dir = Path(run_dir)
    binaries = build(version)
    if (run_dir / "state.json").exists() and status(run_dir)["running"]:
        raise StartFailed(f"a control plane is already running from {run_dir}; stop it first")
    attempts = 3
    for attempt in range(1, attempts + 1):
        _reset_run_dir(run_dir)
        plane = ControlPlane(run_dir, {"version": version, "bin_dir": str(binaries), "scheduler": False,
                                       "ports": {}, "apiserver_args": list(apiserver_args),
                                       "scheduler_args": list(scheduler_args), "detach": detach})
        try:
            _start_components(plane, timeout)
            if scheduler:
                _start_scheduler(plane, timeout)
        except StartFailed as exc:
            plane.stop()
            if "address already in use" in str(exc) and attempt < attempts:
                log(f"a port was taken while starting (attempt {attempt}); retrying with new ports")
                continue
            raise
        plane._save()  # pylint: disable=protected-access
        return plane
    raise AssertionError("unreachable")


def _reset_run_dir(run_dir: Path) -> None:
    """Remove what an earlier start left (only the files this module writes)."""
    for name in ("etcd-data", "pki"):
        shutil.rmtree(run_dir / name, ignore_errors=True)
    for pattern in ("etcd.log", "kube-apiserver.log", "kube-scheduler.log", "admin.kubeconfig",
                    "scheduler.kubeconfig", "user-*.kubeconfig", "scheduler.yaml", "state.json"):
        for path in run_dir.glob(pattern):
            path.unlink()
    run_dir.mkdir(parents=True, exist_ok=True)


def _start_components(plane: ControlPlane, timeout: float) -> None:
    run_dir, binaries = plane.dir, plane.bin_dir
    ports = plane.state["ports"]
    ports.update(etcd=free_port(), etcd_peer=free_port(), apiserver=free_port())
    ca = CertificateAuthority(run_dir / "pki")
    serving_cert, serving_key = ca.issue("apiserver", "kube-apiserver", server=True)
    admin_cert, admin_key = ca.issue("admin", "admin", groups=["system:masters"])
    ca.issue("scheduler", "system:kube-scheduler")
    sa_key, sa_pub = key_pair(run_dir / "pki" / "service-accounts")
    write_kubeconfig(plane.kubeconfig, plane.server, ca.cert_file, "admin", admin_cert, admin_key)

    etcd_url = f"http://127.0.0.1:{ports['etcd']}"
    peer_url = f"http://127.0.0.1:{ports['etcd_peer']}"
    data_dir = run_dir / "etcd-data"
    data_dir.mkdir(mode=0o700)
    process = _spawn(run_dir, "etcd", detach=plane.state["detach"], argv=[
        str(binaries / "etcd"), "--name=testbed", f"--data-dir={data_dir}",
        f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
        f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=testbed={peer_url}", "--unsafe-no-fsync", "--log-level=warn",
    ])
    plane.processes["etcd"] = process
    _wait_ready("etcd", process, run_dir / "etcd.log", _health_check(f"{etcd_url}/health", expect='"true"'), timeout)

    pki = run_dir / "pki"
    plane.state["apiserver_argv"] = [
        str(binaries / "kube-apiserver"),
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={ports['apiserver']}",
        "--endpoint-reconciler-type=none",
        f"--cert-dir={pki}", f"--tls-cert-file={serving_cert}", f"--tls-private-key-file={serving_key}",
        f"--client-ca-file={ca.cert_file}",
        "--authorization-mode=RBAC",
        f"--service-account-issuer={plane.server}", f"--service-account-key-file={sa_pub}",
        f"--service-account-signing-key-file={sa_key}",
        "--service-cluster-ip-range=10.0.0.0/24",
        # No kube-controller-manager: nothing would create `default` service accounts or lift the
        # not-ready taint that TaintNodesByCondition puts on every new Node.
        "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
        "--allow-privileged=true",
        *plane.state["apiserver_args"],
    ]
    _start_apiserver(plane, timeout)


def _start_apiserver(plane: ControlPlane, timeout: float) -> None:
    process = _spawn(plane.dir, "kube-apiserver", detach=plane.state["detach"], argv=plane.state["apiserver_argv"])
    plane.processes["kube-apiserver"] = process
    context = ssl.create_default_context(cafile=str(plane.ca_file))
    _wait_ready("kube-apiserver", process, plane.dir / "kube-apiserver.log",
                _health_check(f"{plane.server}/readyz", context), timeout)


def _start_scheduler(plane: ControlPlane, timeout: float) -> None:
    run_dir = plane.dir
    pki = run_dir / "pki"
    kubeconfig = write_kubeconfig(run_dir / "scheduler.kubeconfig", plane.server, plane.ca_file,
                                  "system:kube-scheduler", pki / "scheduler.crt", pki / "scheduler.key")
    config = run_dir / "scheduler.yaml"
    config.write_text(json.dumps({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": False},
    }, indent=2), encoding="utf-8")
    port = free_port()
    plane.state["ports"]["scheduler"] = port
    process = _spawn(run_dir, "kube-scheduler", detach=plane.state["detach"], argv=[
        str(plane.bin_dir / "kube-scheduler"), f"--config={config}",
        "--bind-address=127.0.0.1", f"--secure-port={port}",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez",
        *plane.state.get("scheduler_args", []),
    ])
    plane.processes["kube-scheduler"] = process
    # The scheduler serves a self-signed certificate it made in memory: checked for liveness only.
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    _wait_ready("kube-scheduler", process, run_dir / "kube-scheduler.log",
                _health_check(f"https://127.0.0.1:{port}/readyz", insecure), timeout)
    plane.state["scheduler"] = True


# -- Kueue -------------------------------------------------------------------------------------

KUEUE_NAMESPACE = "kueue-system"
# Kueue reads its metrics certificate from this fixed path when its internal cert management is off
# (cmd/kueue/main.go); the launcher mounts a private tmpfs over /etc in a mount namespace of its own,
# so the host's /etc is never touched and parallel controllers do not share the files.
KUEUE_METRICS_CERT_DIR = "/etc/kueue/metrics/certs"
_KUEUE_LAUNCHER = (
    'set -e; mount -t tmpfs -o mode=0755,size=1m aifactory-kueue /etc; mkdir -p "$2"; '
    'cp "$1/tls.crt" "$1/tls.key" "$2/"; shift 2; exec "$@"'
)
# The webhooks the test bed registers: Kueue's own objects and batch/v1 Jobs (the one integration it
# enables). Those of the other integrations would refuse every Deployment, Pod ... of the plane.
KUEUE_WEBHOOK_RESOURCES = {("kueue.x-k8s.io", None), ("batch", "jobs")}


class KueueController:
    """A Kueue controller manager running against a ControlPlane, its webhooks at 127.0.0.1."""

    def __init__(self, plane: ControlPlane, directory: Path, process: subprocess.Popen, webhooks: list[tuple[str, str]]):
        self.plane = plane
        self.dir = directory
        self.process = process
        self.webhooks = webhooks  # (kind, name) of the webhook configurations registered

    def log(self) -> str:
        return (self.dir / "kueue.log").read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        """Unregister the webhooks first (the plane stays usable), then stop the process."""
        for kind, name in self.webhooks:
            with contextlib.suppress(Exception):
                self.plane.kubectl.delete(kind, name, api_version="admissionregistration.k8s.io/v1", grace_period=None)
        _stop_process(self.dir, "kueue", self.process)


def kueue_webhook_configurations(webhooks: list[dict], base_url: str, ca_file: Path) -> list[dict]:
    """Kueue's webhook configurations pointed at ``base_url`` (no Service), only for KUEUE_WEBHOOK_RESOURCES."""
    def wanted(hook):
        return any((group, resource) in KUEUE_WEBHOOK_RESOURCES or (group, None) in KUEUE_WEBHOOK_RESOURCES
                   for rule in hook.get("rules", []) for group in rule["apiGroups"] for resource in rule["resources"])

    result = []
    for configuration in webhooks:
        hooks = []
        for hook in configuration["webhooks"]:
            if wanted(hook):
                path = hook["clientConfig"]["service"]["path"]
                hook = dict(hook, clientConfig={"url": base_url + path, "caBundle": _b64(ca_file)})
                hooks.append(hook)
        if hooks:
            name = "aifactory-testbed-kueue-" + configuration["metadata"]["name"]
            result.append(dict(configuration, metadata={"name": name}, webhooks=hooks))
    return result


def start_kueue(plane: ControlPlane, feature_gates: dict | None = None,
                timeout: float = START_TIMEOUT) -> KueueController:
    """Install Kueue's CRDs and start its controller manager against ``plane``; wait until it is ready.

    Certificates come from the plane's CA (webhook and metrics serving certificates for 127.0.0.1);
    Kueue authenticates with the admin kubeconfig. TopologyAwareScheduling is beta and on by default
    in v0.19; ``feature_gates`` overrides Kueue's gates (VisibilityOnDemand is off: its API server
    would want certificates under /visibility and is not needed).
    """
    binary = build() / "kueue"  # KUEUE_VERSION, built with the rest of the test bed
    crds, webhooks = kueue_manifests()
    kubectl = plane.kubectl
    for crd in crds:
        kubectl.apply(crd, field_manager="aifactory-testbed")
    for crd in crds:
        kubectl.wait_for("CustomResourceDefinition", crd["metadata"]["name"], crd_established,
                         api_version="apiextensions.k8s.io/v1", timeout=timeout)
    kubectl.refresh_discovery()
    if kubectl.get("Namespace", KUEUE_NAMESPACE) is None:
        kubectl.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}})

    directory = plane.dir / "kueue"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    ca = CertificateAuthority(plane.dir / "pki")
    certs = {}
    for purpose in ("webhook", "metrics"):
        cert_dir = directory / f"{purpose}-certs"
        cert_dir.mkdir(mode=0o700)
        cert, key = ca.issue(f"kueue-{purpose}", f"kueue-{purpose}", server=True)
        shutil.move(cert, cert_dir / "tls.crt")
        shutil.move(key, cert_dir / "tls.key")
        certs[purpose] = cert_dir
    ports = {"webhook": free_port(), "metrics": free_port(), "health": free_port()}
    config = directory / "config.yaml"
    config.write_text(json.dumps({
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['health']}"},
        "metrics": {"bindAddress": f"127.0.0.1:{ports['metrics']}"},
        "webhook": {"host": "127.0.0.1", "port": ports["webhook"], "certDir": str(certs["webhook"])},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "integrations": {"frameworks": ["batch/job"]},
        "featureGates": {"VisibilityOnDemand": False, **(feature_gates or {})},
    }, indent=2), encoding="utf-8")
    process = _spawn(directory, "kueue", detach=False, exe=str(binary), argv=[
        shutil.which("unshare") or "unshare", "--mount", "--propagation", "private", "--",
        "/bin/sh", "-c", _KUEUE_LAUNCHER, "kueue-launcher", str(certs["metrics"]), KUEUE_METRICS_CERT_DIR,
        str(binary), f"--config={config}", f"--kubeconfig={plane.kubeconfig}", "--zap-log-level=2",
    ])
    try:
        _wait_ready("kueue", process, directory / "kueue.log",
                    _health_check(f"http://127.0.0.1:{ports['health']}/readyz"), timeout)
        registered = []
        for configuration in kueue_webhook_configurations(webhooks, f"https://127.0.0.1:{ports['webhook']}",
                                                          plane.ca_file):
            kubectl.apply(configuration, field_manager="aifactory-testbed")
            registered.append((configuration["kind"], configuration["metadata"]["name"]))
    except BaseException:
        _stop_process(directory, "kueue", process)
        raise
    return KueueController(plane, directory, process, registered)


# -- Node Feature Discovery --------------------------------------------------------------------

NFD_FEATURE_GATES = "NodeFeatureGroupAPI=true"


class NfdMaster:
    """A real nfd-master running against a ControlPlane for the NFD objects of one namespace."""

    def __init__(self, plane: ControlPlane, directory: Path, process: subprocess.Popen, namespace: str, node: str):
        self.plane = plane
        self.dir = directory
        self.process = process
        self.namespace = namespace  # its KUBERNETES_NAMESPACE: the only namespace whose groups get a status
        self.node = node  # its NODE_NAME: the Node it runs on (made for it, unschedulable)

    def log(self) -> str:
        return (self.dir / "nfd-master.log").read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        """Stop the process, then delete the Node made for it."""
        _stop_process(self.dir, "nfd-master", self.process)
        self.plane.kubectl.delete("Node", self.node)


def start_nfd_master(plane: ControlPlane, namespace: str, timeout: float = START_TIMEOUT) -> NfdMaster:
    """Start nfd-master (NFD_VERSION, built with the rest of the test bed) for ``namespace``; wait until ready.

    As a Deployment runs it: ``KUBERNETES_NAMESPACE`` (its own namespace, where it writes the status of
    NodeFeatureGroups) and ``NODE_NAME`` (the Node it runs on, which it annotates at start: a Node
    ``nfd-master-<namespace>``, unschedulable and tainted like a control-plane node, is made for it and
    deleted by ``stop()``), ``-feature-gates NodeFeatureGroupAPI=true``, no leader election, the admin
    kubeconfig, no configuration file (its defaults), its health and metrics server on a free port
    (nfd-master binds it on every address; it has no flag for one). The NFD CRDs are installed first.
    """
    binary = build() / "nfd-master"
    plane.install_nfd_crds()
    node = f"nfd-master-{namespace}"
    manifest = node_manifest(node)
    manifest["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
    manifest["spec"] = {"unschedulable": True, "taints": [
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}
    if plane.kubectl.get("Node", node) is None:
        plane.kubectl.create(manifest)
    directory = plane.dir / f"nfd-master-{namespace}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    port = free_port()
    env = {**os.environ, "KUBERNETES_NAMESPACE": namespace, "NODE_NAME": node}
    process = _spawn(directory, "nfd-master", detach=False, env=env, argv=[
        str(binary), f"-kubeconfig={plane.kubeconfig}", f"-feature-gates={NFD_FEATURE_GATES}",
        "-enable-leader-election=false", "-config=", f"-port={port}", "-v=2",
    ])
    try:
        _wait_ready("nfd-master", process, directory / "nfd-master.log",
                    _health_check(f"http://127.0.0.1:{port}/healthz", expect=""), timeout)
    except BaseException:
        _stop_process(directory, "nfd-master", process)
        plane.kubectl.delete("Node", node)
        raise
    return NfdMaster(plane, directory, process, namespace, node)


def stop(run_dir: Path | str = DEFAULT_RUN_DIR, processes: dict | None = None) -> list[str]:
    """Stop what ``run_dir``'s pid files name (scheduler, apiserver, then etcd); returns what ran."""
    run_dir = Path(run_dir)
    stopped = [name for name in ("kube-scheduler", "kube-apiserver", "etcd")
               if _stop_process(run_dir, name, (processes or {}).get(name))]
    state_file = run_dir / "state.json"
    if state_file.exists():
        state = json.loads(state_file.read_text(encoding="utf-8"))
        state["scheduler"] = False
        state_file.write_text(json.dumps(state, indent=2), encoding="utf-8")
    return stopped


def status(run_dir: Path | str = DEFAULT_RUN_DIR) -> dict:
    run_dir = Path(run_dir)
    components = {}
    for name in ("etcd", "kube-apiserver", "kube-scheduler"):
        try:
            pid_text, exe = _pid_file(run_dir, name).read_text(encoding="utf-8").split("\n")[:2]
            components[name] = _is_ours(int(pid_text), exe)
        except (OSError, ValueError):
            components[name] = False
    ready = False
    if components["kube-apiserver"] and (run_dir / "state.json").exists():
        plane = ControlPlane.load(run_dir)
        context = ssl.create_default_context(cafile=str(plane.ca_file))
        ready = _health_check(f"{plane.server}/readyz", context)()[0]
    return {"dir": str(run_dir), "running": any(components.values()), "ready": ready, "components": components}


@contextlib.contextmanager
def control_plane(scheduler: bool = False, run_dir: Path | str | None = None, **kwargs):
    """Start a private control plane (in a new temporary directory by default) and stop it after."""
    owned = run_dir is None
    run_dir = Path(run_dir) if run_dir else Path(tempfile.mkdtemp(prefix="aifactory-k8s-"))
    plane = start(run_dir, scheduler=scheduler, **kwargs)
    try:
        yield plane
    finally:
        plane.stop()
        if owned:
            shutil.rmtree(run_dir, ignore_errors=True)


# -- a small kubectl on the Python client ------------------------------------------------------

class Kubectl:
    """kubectl-like helpers on the ``kubernetes`` DynamicClient; objects in and out are plain dicts.

    ``kind``/``api_version`` name a resource as in a manifest (``"Node"``, ``"v1"``;
    ``"NodeFeature"``, ``"nfd.k8s-sigs.io/v1alpha1"``). Errors raise the dynamic client's
    ``DynamicApiError`` subclasses, each with ``.status`` (HTTP code).
    """

    def __init__(self, api_client):
        from kubernetes.dynamic import DynamicClient

        self.api = api_client
        self.dynamic = DynamicClient(api_client)

    def refresh_discovery(self) -> None:
        """Forget cached API discovery (after installing CRDs)."""
        self.dynamic.resources.invalidate_cache()

    def resource(self, kind: str, api_version: str = "v1"):
        from kubernetes.dynamic.exceptions import ResourceNotFoundError

        try:
            return self.dynamic.resources.get(api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            self.refresh_discovery()
            return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def get(self, kind: str, name: str, namespace: str | None = None, api_version: str = "v1") -> dict | None:
        """The object as a dict, or None when it does not exist."""
        from kubernetes.dynamic.exceptions import NotFoundError

        try:
            return self.resource(kind, api_version).get(name=name, namespace=namespace).to_dict()
        except NotFoundError:
            return None

    def list(self, kind: str, namespace: str | None = None, api_version: str = "v1", label_selector: str | None = None) -> list[dict]:
        result = self.resource(kind, api_version).get(namespace=namespace, label_selector=label_selector)
        return result.to_dict()["items"]

    def create(self, manifest):
        """Create one object (dict) or every document of a YAML text; returns dict(s) as created."""
        if isinstance(manifest, str):
            return [self.create(doc) for doc in _documents(manifest)]
        resource = self.resource(manifest["kind"], manifest.get("apiVersion", "v1"))
        namespace = manifest.get("metadata", {}).get("namespace") if resource.namespaced else None
        return resource.create(body=manifest, namespace=namespace).to_dict()

    def apply(self, manifest, field_manager: str = "aifactory-testbed", force: bool = True):
        """Server-side apply of one object (dict) or every document of a YAML text."""
        if isinstance(manifest, str):
            return [self.apply(doc, field_manager, force) for doc in _documents(manifest)]
        resource = self.resource(manifest["kind"], manifest.get("apiVersion", "v1"))
        metadata = manifest["metadata"]
        return self.dynamic.server_side_apply(
            resource, body=manifest, name=metadata["name"],
            namespace=metadata.get("namespace") if resource.namespaced else None,
            field_manager=field_manager, force_conflicts=force).to_dict()

    def patch(self, kind: str, name: str, patch, namespace: str | None = None, api_version: str = "v1",
              content_type: str = "application/merge-patch+json") -> dict:
        return self.resource(kind, api_version).patch(
            body=patch, name=name, namespace=namespace, content_type=content_type).to_dict()

    def delete(self, kind: str, name: str, namespace: str | None = None, api_version: str = "v1",
               grace_period: int | None = 0) -> bool:
        """Delete (grace period 0 by default: no kubelet confirms pods); False if it did not exist."""
        from kubernetes.dynamic.exceptions import NotFoundError

        body = {"gracePeriodSeconds": grace_period} if grace_period is not None else None
        try:
            self.resource(kind, api_version).delete(name=name, namespace=namespace, body=body)
        except NotFoundError:
            return False
        return True

    def wait_for(self, kind: str, name: str, predicate, namespace: str | None = None, api_version: str = "v1",
                 timeout: float = 60.0) -> dict:
        """Watch one object until ``predicate(obj_dict)`` is true; returns it. TimeoutError after ``timeout``."""
        resource = self.resource(kind, api_version)
        end = time.monotonic() + timeout
        last = None
        while True:
            listing = resource.get(namespace=namespace, field_selector=f"metadata.name={name}")
            items = listing.to_dict()["items"]
            if items:
                last = items[0]
                if predicate(last):
                    return last
            remaining = end - time.monotonic()
            if remaining <= 0:
                seen = f"its status: {json.dumps(last.get('status'))[:2000]}" if last else "it was never seen"
                raise TimeoutError(f"{kind} {namespace + '/' if namespace else ''}{name}: condition not met "
                                   f"within {timeout:.0f}s; {seen}")
            for event in self.dynamic.watch(resource, namespace=namespace, field_selector=f"metadata.name={name}",
                                            resource_version=listing.metadata.resourceVersion,
                                            timeout=max(1, int(remaining))):
                obj = event["object"].to_dict() if hasattr(event["object"], "to_dict") else event["object"]
                if event["type"] in ("ADDED", "MODIFIED"):
                    last = obj
                    if predicate(obj):
                        return obj
                elif event["type"] == "ERROR":
                    break  # e.g. 410 Gone: list again from a fresh resourceVersion

    def can_i(self, verb: str, resource: str, namespace: str | None = None, group: str = "",
              name: str | None = None, subresource: str | None = None) -> bool:
        """``kubectl auth can-i`` for this client's own identity (SelfSubjectAccessReview)."""
        attributes = {"verb": verb, "resource": resource, "group": group}
        for key, value in (("namespace", namespace), ("name", name), ("subresource", subresource)):
            if value:
                attributes[key] = value
        review = self.create({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                              "spec": {"resourceAttributes": attributes}})
        return bool(review["status"].get("allowed"))


def wait_until(predicate, timeout: float = 60.0, interval: float = POLL_INTERVAL, what: str = "condition"):
    """Poll ``predicate()`` until it returns something truthy (returned); TimeoutError after ``timeout``.

    For conditions with no watchable object, e.g. an RBAC binding reaching the authorizer's cache
    (poll ``kubectl.can_i``). Objects are better waited on with ``Kubectl.wait_for`` (a watch).
    """
    end = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > end:
            raise TimeoutError(f"{what} not met within {timeout:.0f}s")
        time.sleep(interval)


def _documents(text: str) -> list[dict]:
    import yaml

    return [doc for doc in yaml.safe_load_all(text) if doc]


# -- command line -----------------------------------------------------------------------------

def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="k8s_testbed.py", description=__doc__.split("\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="build or reuse the cached binaries; prints their directory")
    commands.add_parser("nfd-crds", help="print the path of the NFD CRD YAML (from the NFD Go module)")
    commands.add_parser("kueue-crds", help="print the paths of Kueue's CRD YAML files (from the Kueue Go module)")
    for name, text in (("start", "start a control plane; prints the admin kubeconfig path"),
                       ("stop", "stop the processes this run directory's pid files name"),
                       ("status", "say what runs; exit 0 when the API server is ready"),
                       ("kubeconfig", "mint a kubeconfig for a user (client certificate); prints its path")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--dir", default=DEFAULT_RUN_DIR, help=f"run directory (default {DEFAULT_RUN_DIR})")
        if name == "start":
            sub.add_argument("--scheduler", action="store_true", help="also start kube-scheduler")
        if name == "kubeconfig":
            sub.add_argument("user", help="user name (certificate CN)")
            sub.add_argument("--group", action="append", default=[], help="group (certificate O); repeatable")
    args = parser.parse_args(argv[1:])

    try:
        if args.command == "build":
            path = build()
            print(path)
            for binary in BINARIES:
                if binary != "kueue":  # kueue has no --version; it logs its stamped version when it starts
                    log(f"{binary}: {binary_version(path / binary)}")
            return 0
        if args.command == "nfd-crds":
            print(nfd_crds_file())
            return 0
        if args.command == "kueue-crds":
            for path in kueue_crd_files().values():
                print(path)
            return 0
        if args.command == "start":
            plane = start(args.dir, scheduler=args.scheduler, detach=True)
            log(f"API server {plane.server} ({plane.version}); logs and pid files in {plane.dir}")
            print(plane.kubeconfig)
            return 0
        if args.command == "stop":
            stopped = stop(args.dir)
            log("stopped " + (", ".join(stopped) if stopped else "nothing (no process of ours was running)"))
            return 0
        if args.command == "status":
            state = status(args.dir)
            print(json.dumps(state, indent=2))
            return 0 if state["ready"] else 1
        if args.command == "kubeconfig":
            print(ControlPlane.load(args.dir).user_kubeconfig(args.user, args.group))
            return 0
    except TestbedUnavailable as exc:
        log(f"UNAVAILABLE: {exc}")
        return 3
    except (StartFailed, RuntimeError) as exc:
        log(f"ERROR: {exc}")
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
