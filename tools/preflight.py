"""Preflight: the cheapest real check of everything `make setup` and `make test` rely on.

It runs twice, in seconds each, so a missing prerequisite stops the run before the long builds
(the Kubernetes test bed, the Slurm root, the container images) with a message that names the
package to install, instead of a failure minutes into a build:

* ``python tools/preflight.py host``: what the project's files cannot install: the Python that
  makes .venv, root (the Slurm test bed, podman and apt need it), Go for the Kubernetes test bed,
  and free disk for the caches. Runs before ``apt-get``.
* ``python tools/preflight.py packages``: after `make system-packages`: every command the suite
  calls from a Debian package answers (``--version``), the Python makes a virtual environment with
  pip (Debian's needs python3-venv), Java is new enough for ansible-rulebook, and
  podman runs a tiny container (busybox, imported once) on a bridge network of its own, which needs
  runc, conmon, netavark, aardvark-dns and iptables to work together.

Each check says ``ok``, ``MISSING`` or ``NOTE``. Outside CI, what only some suites need (root,
Go, podman) is a NOTE: those suites skip, loudly. Under ``CI=true`` every check must pass, since
a green CI run has to mean every suite ran. Exit code 1 when a check fails.

Standard library only: the host stage runs before .venv exists.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ci_mode  # noqa: E402
import k8s_testbed  # noqa: E402
from slurm_testbed import cache_dir  # noqa: E402

MIN_PYTHON = (3, 11)
MIN_JAVA = 17
JAVA_PACKAGE = "openjdk-17-jre-headless"
# Debian's own python3 cannot make a virtual environment with pip without it (no ensurepip).
VENV_PACKAGE = "python3-venv"
# The caches (Slurm root, Kubernetes test bed, images, compat venvs) take about 5 GB; builds need room beside them.
MIN_FREE_GB = 10
# Seconds any one probe may take: a probe that hangs is a failed probe, not a hung setup.
PROBE_TIMEOUT = 60
PREFLIGHT_NETWORK = "aifactory-preflight"

# Commands from Debian packages the suite calls: (argv that proves it runs, package, who needs it).
COMMANDS = [
    (["debootstrap", "--version"], "debootstrap", "the Slurm test bed's root and the container images"),
    (["luac5.1", "-v"], "lua5.1", "the cli_filter.lua syntax check (role and tests)"),
    (["shellcheck", "--version"], "shellcheck", "ansible-test sanity's shellcheck test"),
    (["chromium", "--version"], "chromium", "the segment report's page test (headless)"),
    (["podman", "--version"], "podman", "the Molecule scenarios and the execution environment"),
    (["runc", "--version"], "runc", "podman's runtime (crun fails on hybrid cgroup hosts)"),
    (["iptables", "--version"], "iptables", "netavark sets up every podman bridge network with it"),
    (["/usr/lib/podman/netavark", "--version"], "netavark", "podman's networks"),
    (["/usr/lib/podman/aardvark-dns", "--version"], "aardvark-dns", "name resolution on podman's networks"),
    (["busybox", "--help"], "busybox-static", "the preflight's own tiny container"),
    (["git", "--version"], "git", "the AWX tests' project sync and the release notes"),
    (["prometheus", "--version"], "prometheus", "the alert rules' test: a real Prometheus and promtool"),
    (["prometheus-node-exporter", "--version"], "prometheus-node-exporter",
     "the alert rules' test: node_exporter's textfile collector"),
]


class Report:
    def __init__(self, ci: bool):
        self.ci = ci
        self.failed = False

    def ok(self, what: str, detail: str = "") -> None:
        print(f"preflight: ok       {what}{': ' + detail if detail else ''}")

    def missing(self, what: str, fix: str) -> None:
        print(f"preflight: MISSING  {what}: {fix}")
        self.failed = True

    def optional(self, what: str, why: str, fix: str) -> None:
        """What only some suites need: outside CI they skip, loudly; under CI it is a failure."""
        if self.ci:
            self.missing(what, f"{fix} (under CI=true every suite must run: {why})")
        else:
            print(f"preflight: NOTE     {what}: {fix}; {why} will be SKIPPED")


def probe(argv: list[str], **kwargs) -> subprocess.CompletedProcess | str:
    """Run ``argv``; the completed process, or why it could not run."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False,
                              stdin=subprocess.DEVNULL, **kwargs)
    except FileNotFoundError:
        return "not installed"
    except subprocess.TimeoutExpired:
        return f"did not answer within {PROBE_TIMEOUT} s"
    except OSError as exc:
        return f"cannot run ({exc.strerror})"


def failure(done: subprocess.CompletedProcess | str) -> str | None:
    """Why a probe failed (it could not run, or its exit code and first line), or None when it passed."""
    if isinstance(done, str):
        return done
    return f"exit {done.returncode}: {first_line(done)}" if done.returncode != 0 else None


def first_line(done: subprocess.CompletedProcess) -> str:
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0][:80] if text else ""


def check_host(report: Report) -> None:
    if sys.version_info[:2] >= MIN_PYTHON:
        report.ok("python", sys.version.split()[0])
    else:
        report.missing("python", f"{sys.executable} is {sys.version.split()[0]}; .venv needs Python >= "
                       f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]} (set PYTHON=/path/to/python3.11)")
    if os.geteuid() == 0:
        report.ok("root")
    else:
        report.optional("root", "the Slurm tests, the Molecule scenarios and the execution environment test",
                        "run as root (apt-get, chroot, mknod and rootful podman need it)")
    go = k8s_testbed.go_binary()
    found = k8s_testbed.go_version(go) if go else None
    want = ".".join(map(str, k8s_testbed.MIN_GO))
    if k8s_testbed.is_built():
        report.ok("go", "the Kubernetes test bed and Kueue are already built")
    elif found and found >= k8s_testbed.MIN_GO:
        report.ok("go", f"{go} is {'.'.join(map(str, found))}")
    else:
        have = f"{go} is {'.'.join(map(str, found))}" if found else "no go on PATH or in /usr/local/go/bin"
        report.optional("go", "the Kubernetes and EDA tests (kube-apiserver is built from the Go module proxy)",
                        f"install Go >= {want} ({have})")
    cache = cache_dir()
    existing = next(p for p in (cache, *cache.parents) if p.exists())
    free_gb = shutil.disk_usage(existing).free / 1e9
    if free_gb >= MIN_FREE_GB:
        report.ok("disk", f"{free_gb:.0f} GB free for {cache}")
    else:
        report.missing("disk", f"{free_gb:.1f} GB free for {cache}; the caches and builds need {MIN_FREE_GB} GB")


def java_version(home: str) -> int | None:
    done = probe([os.path.join(home, "bin", "java"), "-version"])
    if isinstance(done, str):
        return None
    match = re.search(r'version "(\d+)', done.stderr + done.stdout)
    return int(match.group(1)) if match else None


def check_commands(report: Report, commands=None) -> None:
    for argv, package, why in COMMANDS if commands is None else commands:
        done = probe(argv)
        name = argv[0].rsplit("/", 1)[-1]
        problem = failure(done)
        if problem:
            report.missing(name, f"{problem}; apt-get install {package} ({why}; the Makefile's APT_PACKAGES "
                           "lists it)")
        else:
            report.ok(name, first_line(done))


def check_java(report: Report) -> None:
    # JAVA_HOME as the Makefile sets it; a JDK installed by this very run is found where Debian puts it.
    home = os.environ.get("JAVA_HOME") or next(iter(sorted(glob.glob("/usr/lib/jvm/java-1[7-9]-openjdk-*"))), "")
    version = java_version(home) if home else None
    if version and version >= MIN_JAVA:
        report.ok("java", f"{home} is Java {version}")
    else:
        found = f"Java {version}" if version else "no JDK"
        report.missing("java", f"JAVA_HOME={home or '(unset)'} is {found}; apt-get install {JAVA_PACKAGE} "
                       f"(ansible-rulebook's rule engine needs Java >= {MIN_JAVA})")


def check_container(report: Report) -> None:
    if os.geteuid() != 0:
        report.optional("podman container", "the Molecule scenarios and the execution environment test",
                        "run as root (the scenarios use rootful podman)")
        return
    problem = container_problem()
    if problem:
        report.missing("podman container", problem)
    else:
        report.ok("podman container", f"busybox ran on the bridge network {PREFLIGHT_NETWORK}")


def check_packages(report: Report) -> None:
    check_commands(report)
    check_venv(report)
    check_java(report)
    check_container(report)


def check_venv(report: Report, python: str = sys.executable) -> None:
    """Make a throw-away virtual environment with pip, as `make venv` and the compat environments do."""
    with tempfile.TemporaryDirectory(prefix="aifactory-preflight-venv.") as scratch:
        done = probe([python, "-m", "venv", os.path.join(scratch, "venv")])
    problem = failure(done)
    if problem:
        report.missing("venv", f"{python} -m venv: {problem}; apt-get install {VENV_PACKAGE} (.venv, the compat "
                       "environments and ansible-test's sanity environments; the Makefile's APT_PACKAGES lists it)")
    else:
        report.ok("venv", f"{python} -m venv makes an environment with pip")


def container_problem() -> str | None:
    """Run a tiny container on a bridge network of its own with the project's podman configuration."""
    import container_images  # the project's podman configuration (containers.conf, storage, networks)

    env = {**os.environ, **container_images.podman_env()}
    busybox = shutil.which("busybox")
    if busybox is None:
        return "busybox is not installed (apt-get install busybox-static)"
    digest = hashlib.sha256(Path(busybox).read_bytes()).hexdigest()[:16]
    tag = f"localhost/aifactory-preflight:{digest}"
    if not container_images.image_exists(tag):
        with tempfile.TemporaryDirectory(prefix="aifactory-preflight-") as work:
            root = Path(work) / "root"
            (root / "bin").mkdir(parents=True)
            shutil.copy2(busybox, root / "bin" / "busybox")
            tarball = Path(work) / "root.tar"
            subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(tarball), "."], check=True,
                           timeout=PROBE_TIMEOUT)
            imported = probe(["podman", "import", str(tarball), tag], env=env)
            if isinstance(imported, str) or imported.returncode != 0:
                return f"podman import failed: {explain(imported)}"
    exists = probe(["podman", "network", "exists", PREFLIGHT_NETWORK], env=env)
    if isinstance(exists, str) or exists.returncode != 0:
        created = probe(["podman", "network", "create", PREFLIGHT_NETWORK], env=env)
        if isinstance(created, str) or created.returncode != 0:
            return f"podman network create failed: {explain(created)}"
    ran = probe(["podman", "run", "--rm", "--network", PREFLIGHT_NETWORK, tag, "/bin/busybox", "ip", "-o", "addr"],
                env=env)
    if isinstance(ran, str) or ran.returncode != 0:
        return f"podman run on a bridge network failed: {explain(ran)}"
    if "eth0" not in ran.stdout:
        return f"the container got no network interface (ip addr: {ran.stdout.strip()[:200]!r})"
    return None


def explain(done: subprocess.CompletedProcess | str) -> str:
    """podman's error, with the package to install when it names a missing helper."""
    if isinstance(done, str):
        return done
    text = (done.stderr or done.stdout).strip()[-300:]
    for needle, package in (("iptables", "iptables"), ("netavark", "netavark (and iptables)"),
                            ("aardvark", "aardvark-dns"), ("runc", "runc"), ("conmon", "conmon")):
        if needle in text:
            return f"{text}; apt-get install {package}"
    return text


def main(argv: list[str]) -> int:
    stages = {"host": check_host, "packages": check_packages}
    if len(argv) != 2 or argv[1] not in stages:
        print(f"usage: {argv[0]} {'|'.join(stages)}", file=sys.stderr)
        return 2
    report = Report(ci=ci_mode.under_ci())
    stages[argv[1]](report)
    if report.failed:
        print(f"preflight: FAILED ({argv[1]}): install what is MISSING above, then run make again")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
