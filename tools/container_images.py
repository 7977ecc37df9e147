"""Container images and the podman configuration for the Molecule scenarios and the EE build.

No image registry is reachable from the test machines, so every image starts from a Debian
root made here with debootstrap and turned into an image with ``podman import``; a recipe
directory under tools/images/<name>/ then finishes it with ``podman build``:

* ``packages.txt``: the Debian packages debootstrapped into the root (one per line),
* ``Containerfile``: built ``FROM`` the imported root (build argument ``BASE``),
* ``suite`` (optional): the Debian suite to debootstrap, ``sid`` when absent.

Images are tagged ``localhost/aifactory-<name>:<hash>``, where <hash> covers every file of
the recipe directory and this tool's ``RECIPE_VERSION``: an unchanged recipe is never rebuilt,
a changed one is. podman keeps them in its own storage under the cache directory
(``$AIFACTORY_CACHE``, default /var/cache/aifactory-topology), so they survive between runs.

podman is told what this machine needs through project-owned configuration files, written
into the cache directory and passed with ``CONTAINERS_CONF`` and ``CONTAINERS_STORAGE_CONF``
(the machine's /etc is never edited): runc rather than crun (crun fails on hybrid cgroup
hierarchies), the cgroupfs manager, ulimits the host allows (nofile 20000, nproc 32768), and
its own networks directory.

Command line::

    python tools/container_images.py build [NAME...]   # build or reuse; prints the tags
    python tools/container_images.py tag NAME          # the tag a recipe builds (no build)
    python tools/container_images.py env               # shell exports for podman/molecule
    python tools/container_images.py status            # can podman run containers here?
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from slurm_testbed import DEBIAN_MIRROR, _flock, cache_dir, safe_remove  # noqa: E402

RECIPES = Path(__file__).resolve().parent / "images"
# Bump when this tool changes how an image is made, so every cached image is rebuilt.
RECIPE_VERSION = "1"
# The Debian suite of a recipe: its `suite` file, else this.
SUITE = "sid"
# Exit code of `status`/`build` when this machine cannot run podman at all (the Makefile skips loudly).
EXIT_UNAVAILABLE = 3


class ImagesUnavailable(RuntimeError):
    """This machine cannot build or run the images (not root, no podman, no runc, no debootstrap)."""


def podman_dir() -> Path:
    return cache_dir() / "podman"


CONTAINERS_CONF = """\
# Written by tools/container_images.py; passed to podman as CONTAINERS_CONF.
[containers]
# Higher limits are refused on the test machines.
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
log_driver = "k8s-file"

[engine]
# crun fails on hybrid (v1 + named systemd) cgroup hierarchies; runc works.
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"

[network]
network_backend = "netavark"
network_config_dir = "{networks}"
"""

STORAGE_CONF = """\
# Written by tools/container_images.py; passed to podman as CONTAINERS_STORAGE_CONF.
[storage]
driver = "overlay"
graphroot = "{graphroot}"
runroot = "/run/aifactory-topology/podman"
"""


def podman_env() -> dict[str, str]:
    """Environment for podman (and for molecule, which runs podman) with the project's configuration."""
    base = podman_dir()
    (base / "networks").mkdir(parents=True, exist_ok=True)
    files = {
        base / "containers.conf": CONTAINERS_CONF.format(networks=base / "networks"),
        base / "storage.conf": STORAGE_CONF.format(graphroot=base / "storage"),
    }
    for path, text in files.items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
    return {"CONTAINERS_CONF": str(base / "containers.conf"),
            "CONTAINERS_STORAGE_CONF": str(base / "storage.conf")}


def podman(*argv: str, check: bool = True, capture: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *argv], env={**os.environ, **podman_env()}, check=check,
                          capture_output=capture, text=True)


def unavailable_reason() -> str | None:
    if os.geteuid() != 0:
        return "the container images need root (rootful podman with systemd containers)"
    for tool, package in (("podman", "podman"), ("runc", "runc"), ("netavark", "netavark")):
        if shutil.which(tool) is None and not Path(f"/usr/lib/podman/{tool}").exists():
            return f"{tool} is not installed (apt-get install {package}; `make system-packages` does it)"
    return None


def recipe_files(name: str) -> list[Path]:
    folder = RECIPES / name
    if not (folder / "Containerfile").is_file() or not (folder / "packages.txt").is_file():
        raise ValueError(f"no image recipe {name!r}: {folder} needs Containerfile and packages.txt")
    return sorted(p for p in folder.rglob("*") if p.is_file())


def recipe_hash(name: str) -> str:
    digest = hashlib.sha256(f"{RECIPE_VERSION}\n{SUITE}\n".encode())
    for path in recipe_files(name):
        digest.update(path.relative_to(RECIPES).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def suite(name: str) -> str:
    path = RECIPES / name / "suite"
    return path.read_text(encoding="utf-8").strip() if path.is_file() else SUITE


def root_tag(name: str) -> str:
    """The imported debootstrap root: depends on suite and packages.txt only (a Containerfile change reuses it)."""
    digest = hashlib.sha256(f"{RECIPE_VERSION}\n{suite(name)}\n".encode())
    digest.update((RECIPES / name / "packages.txt").read_bytes())
    return f"localhost/aifactory-{name}-root:{digest.hexdigest()[:16]}"


def image_tag(name: str) -> str:
    return f"localhost/aifactory-{name}:{recipe_hash(name)}"


def image_exists(tag: str) -> bool:
    return podman("image", "exists", tag, check=False).returncode == 0


def packages(name: str) -> list[str]:
    lines = (RECIPES / name / "packages.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def build(name: str) -> str:
    """Build the image of recipe ``name`` unless its tag exists; returns the tag. Under a lock."""
    reason = unavailable_reason()
    if reason:
        raise ImagesUnavailable(reason)
    tag = image_tag(name)
    if image_exists(tag):
        return tag
    with _flock(podman_dir() / f"{name}.build.lock"):
        if not image_exists(tag):
            _build_locked(name, tag)
    return tag


def _build_locked(name: str, tag: str) -> None:
    base = root_tag(name)
    if not image_exists(base):
        _import_root(name, base)
    print(f"images: podman build {tag}", file=sys.stderr)
    built = podman("build", "--build-arg", f"BASE={base}", "--tag", tag,
                   "--file", str(RECIPES / name / "Containerfile"), str(RECIPES / name), check=False)
    if built.returncode != 0:
        raise RuntimeError(f"podman build of {tag} failed:\n{built.stdout}\n{built.stderr}")
    _remove_stale(f"localhost/aifactory-{name}", tag)
    _remove_stale(f"localhost/aifactory-{name}-root", base)


def _import_root(name: str, base: str) -> None:
    """debootstrap the recipe's packages and import the root as image ``base`` (the slow part)."""
    if shutil.which("debootstrap") is None:
        raise ImagesUnavailable("debootstrap is not installed (apt-get install debootstrap)")
    work = podman_dir() / "build"
    work.mkdir(parents=True, exist_ok=True)
    staging = work / f"{name}.root"
    safe_remove(staging)
    try:
        print(f"images: debootstrap {suite(name)} for {name} (a minute or two, once per packages.txt)", file=sys.stderr)
        subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(packages(name))}",
                        suite(name), str(staging), DEBIAN_MIRROR], check=True, stdout=subprocess.DEVNULL)
        # Make the root an image: tar streamed into podman import (one file-system, no mounts).
        tar = subprocess.Popen(["tar", "-C", str(staging), "--one-file-system", "--numeric-owner",
                                "-cf", "-", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["podman", "import", "-", base], stdin=tar.stdout, check=False,
                                  env={**os.environ, **podman_env()}, capture_output=True, text=True)
        tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise RuntimeError(f"podman import of {staging} failed: {imported.stderr}")
    finally:
        safe_remove(staging)


def _remove_stale(repository: str, keep: str) -> None:
    """Older builds of the same recipe: unused once the recipe changed; they only take disk."""
    listed = podman("images", "--format", "{{.Repository}}:{{.Tag}}", repository, check=False)
    for line in listed.stdout.split():
        if line != keep and line.rsplit(":", 1)[0] == repository:
            podman("rmi", line, check=False)


def status() -> int:
    reason = unavailable_reason()
    if reason:
        print(f"podman unavailable: {reason}")
        return EXIT_UNAVAILABLE
    for name in sorted(p.name for p in RECIPES.iterdir() if p.is_dir()):
        tag = image_tag(name)
        print(f"{tag} {'built' if image_exists(tag) else 'not built'}")
    return 0


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "status"
    try:
        if command == "build":
            names = argv[2:] or sorted(p.name for p in RECIPES.iterdir() if p.is_dir())
            for name in names:
                print(build(name))
            return 0
        if command == "tag" and len(argv) == 3:
            print(image_tag(argv[2]))
            return 0
        if command == "env":
            for key, value in podman_env().items():
                print(f"export {key}={shlex.quote(value)}")
            return 0
        if command == "status":
            return status()
    except ImagesUnavailable as exc:
        print(f"images: unavailable: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    print(f"usage: {argv[0]} build [NAME...]|tag NAME|env|status", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
