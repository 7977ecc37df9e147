"""Build the execution environment of ee/execution-environment.yml without an image registry.

ee/execution-environment.yml names a registry base image (CentOS Stream 9). Where no registry
is reachable (the test machines), this builds the same definition onto the Debian image of
tools/images/ee-base (debootstrapped locally by tools/container_images.py): only the base
image, its Python (/usr/bin/python3, already in the base) and its package manager (apt-get)
differ; the collection, ansible-core, ansible-runner and the collection's own requirements
come from the same definition through ansible-builder.

The image is tagged ``localhost/aifactory-topology-ee:<hash>``; the hash covers the EE
definition, requirements.txt, bindep.txt, the collection version and the base image, so the
image is rebuilt when one of them changes. Code changes alone need no rebuild: AWX runs each
job with the collection of the project's revision first on the collections path
(collections/requirements.yml, docs/awx.md), and tests/integration/test_execution_environment.py
does the same.

Command line::

    python tools/execution_environment.py build    # build or reuse; prints the tag
    python tools/execution_environment.py tag      # the tag a build would make
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import container_images  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
EE_FILE = REPO / "ee" / "execution-environment.yml"
BASE_RECIPE = "ee-base"
# Bump when this tool changes how the image is made.
RECIPE_VERSION = "1"
# The Python of the base image (a virtual environment: see tools/images/ee-base/Containerfile).
EE_PYTHON = "/opt/ee-python/bin/python3"


def collection_version() -> str:
    return yaml.safe_load((REPO / "galaxy.yml").read_text(encoding="utf-8"))["version"]


def ee_tag() -> str:
    digest = hashlib.sha256(f"{RECIPE_VERSION}\n{collection_version()}\n".encode())
    digest.update(container_images.image_tag(BASE_RECIPE).encode() + b"\0")
    for path in (EE_FILE, REPO / "requirements.txt", REPO / "bindep.txt", Path(__file__)):
        digest.update(path.read_bytes() + b"\0")
    return f"localhost/aifactory-topology-ee:{digest.hexdigest()[:16]}"


def local_definition(base_image: str, artifact: Path, tag: str) -> dict:
    """ee/execution-environment.yml with a local base image: Debian's python3 and apt-get."""
    definition = yaml.safe_load(EE_FILE.read_text(encoding="utf-8"))
    definition["images"]["base_image"]["name"] = base_image
    # The base image's virtual environment (tools/images/ee-base): nothing for apt-get to install.
    definition["dependencies"]["python_interpreter"] = {"python_path": EE_PYTHON}
    for entry in definition.get("additional_build_files", []):
        if Path(entry["src"]).name == artifact.name:
            entry["src"] = str(artifact)
    options = definition.setdefault("options", {})
    options["package_manager_path"] = "/usr/bin/apt-get"
    options["tags"] = [tag]
    return definition


def build_cli_args() -> list[str]:
    """Extra `podman build` arguments: the host's network, and the host's CA bundle for pip.

    Build steps reach PyPI through the host's network (no NAT set-up needed). Where TLS goes
    through an intercepting proxy, the host trusts its CA (PIP_CERT or SSL_CERT_FILE): that bundle
    is mounted over the image's own for the build steps only, so the image keeps Debian's.
    """
    args = ["--network=host"]
    bundle = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
    if bundle and Path(bundle).is_file():
        args.append(f"--volume={Path(bundle).resolve()}:/etc/ssl/certs/ca-certificates.crt:ro")
    return args


def build() -> str:
    """Build (or reuse) the EE image; returns its tag. Needs podman (tools/container_images.py)."""
    tag = ee_tag()
    if container_images.image_exists(tag):
        return tag
    base = container_images.build(BASE_RECIPE)
    env = {**os.environ, **container_images.podman_env()}
    venv_bin = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="aifactory-ee-") as work:
        work = Path(work)
        subprocess.run([str(venv_bin / "ansible-galaxy"), "collection", "build", "--force",
                        "--output-path", str(work), str(REPO)], check=True, stdout=subprocess.DEVNULL, env=env)
        artifact = work / f"aifactory-topology-{collection_version()}.tar.gz"
        definition = work / "execution-environment.yml"
        definition.write_text(yaml.safe_dump(local_definition(base, artifact, tag), sort_keys=False),
                              encoding="utf-8")
        print(f"ee: ansible-builder build {tag} (pip installs from PyPI; a few minutes)", file=sys.stderr)
        subprocess.run(
            [str(venv_bin / "ansible-builder"), "build", "--file", str(definition), "--context", str(work / "context"),
             "--container-runtime", "podman", "--tag", tag,
             # apt-get has no `clean all`: keep the cache step out.
             "--build-arg", "PKGMGR_PRESERVE_CACHE=always",
             "--extra-build-cli-args=" + " ".join(build_cli_args()),
             "--verbosity", "1"],
            check=True, env=env)
    return tag


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "tag"
    if command == "tag":
        print(ee_tag())
        return 0
    if command == "build":
        reason = container_images.unavailable_reason()
        if reason:
            print(f"ee: unavailable: {reason}", file=sys.stderr)
            return container_images.EXIT_UNAVAILABLE
        print(build())
        return 0
    print(f"usage: {argv[0]} build|tag", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
