"""A real slurmctld 26.05 in a Debian sid chroot, for tests.

Recipe and safety rules: docs/testing.md. The root file system is
built once with debootstrap and cached on the machine (see ``cache_dir``); every test
run starts its own ``slurmctld -D -c`` inside it with a private configuration
directory and stops exactly that process.

Safety: the host's /dev is never bind-mounted; device nodes are made with mknod.
Nothing under the root is deleted while anything is mounted below it, and deletion
uses ``rm -rf --one-file-system``.

Command line: ``python slurm_testbed.py build`` builds (or reuses) the cached root and
prints its path; ``status`` says whether it is usable; ``check FILE`` loads a topology.conf
or topology.yaml into a real slurmctld and prints what Slurm made of it (usable as the
``validate`` command of aifactory.topology.slurm_topology: ``... check %s``).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from build_progress import heartbeat

DEBIAN_MIRROR = os.environ.get("AIFACTORY_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# lua5.1: Slurm's cli_filter_lua.so links Lua 5.1, so cli_filter.lua is checked with luac5.1.
# python3: roles converge into the root through the community.general.chroot connection.
PACKAGES = "slurmctld,slurm-client,lua5.1,python3"
MARKER = "aifactory-testbed-ready"
# Bump when the recipe changes so cached roots are rebuilt.
RECIPE_VERSION = "3"


class TestbedUnavailable(RuntimeError):
    """Raised when the machine cannot host the test bed (not root, no debootstrap)."""


def cache_dir() -> Path:
    return Path(os.environ.get("AIFACTORY_CACHE", "/var/cache/aifactory-topology"))


def root_path() -> Path:
    return cache_dir() / "slurm-sid"


def mounts_below(path: Path) -> list[str]:
    prefix = str(path.resolve()).rstrip("/") + "/"
    found = []
    with open("/proc/mounts", encoding="utf-8") as handle:
        for line in handle:
            target = line.split()[1].replace("\\040", " ")
            if target.startswith(prefix) or target == prefix.rstrip("/"):
                found.append(target)
    return found


def unmount_all(path: Path) -> None:
    # Deepest first, so nested mounts go before their parents.
    for target in sorted(mounts_below(path), key=len, reverse=True):
        subprocess.run(["umount", "-l", target], check=False)


def safe_remove(path: Path) -> None:
    """Delete a root file system; refuses while anything is mounted below it."""
    if not path.exists():
        return
    unmount_all(path)
    if mounts_below(path):
        raise RuntimeError(f"refusing to delete {path}: still mounted: {mounts_below(path)}")
    if subprocess.run(["mountpoint", "-q", str(path / "dev")], check=False).returncode == 0:
        raise RuntimeError(f"refusing to delete {path}: {path}/dev is a mount point")
    subprocess.run(["rm", "-rf", "--one-file-system", str(path)], check=True)


def unavailable_reason() -> str | None:
    if os.geteuid() != 0:
        return "the Slurm test bed needs root (chroot, mknod, mount proc)"
    if is_ready(root_path()):
        return None
    if shutil.which("debootstrap") is None:
        return "the Slurm test bed needs debootstrap (apt-get install debootstrap) to build its root"
    return None


def is_ready(root: Path) -> bool:
    marker = root / "etc" / MARKER
    return marker.is_file() and marker.read_text(encoding="utf-8").strip() == RECIPE_VERSION


def chroot_run(root: Path, *argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["chroot", str(root), *argv], capture_output=True, text=True, check=False, env=env)


def _make_devices(root: Path) -> None:
    dev = root / "dev"
    dev.mkdir(exist_ok=True)
    for name, minor in (("null", 3), ("zero", 5), ("random", 8), ("urandom", 9)):
        node = dev / name
        if not node.exists():
            subprocess.run(["mknod", "-m", "666", str(node), "c", "1", str(minor)], check=True)


@contextlib.contextmanager
def _flock(path: Path, mode: int = fcntl.LOCK_EX):
    """Hold an flock on ``path`` (created if missing); the kernel drops it if the process dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle, mode)
        yield handle


def build(root: Path | None = None) -> Path:
    """Build the cached root (1 to 4 minutes on a fresh machine, docs/testing.md) or reuse it.

    Under a lock, like .venv: two test runs at once build it once, and neither sees a half-built root.
    """
    root = root or root_path()
    if is_ready(root):
        return root
    with contextlib.ExitStack() as stack:
        with heartbeat("slurm-testbed", "waiting for another build of the root to finish"):
            stack.enter_context(_flock(root.with_name(root.name + ".build.lock")))
        return _build_locked(root)


def _build_locked(root: Path) -> Path:
    if is_ready(root):
        return root
    reason = unavailable_reason()
    if reason:
        raise TestbedUnavailable(reason)
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = root.with_name(root.name + ".building")
    safe_remove(staging)
    print(f"slurm-testbed: building the Debian sid root with Slurm in {root} (debootstrap, 1 to 4 minutes)",
          file=sys.stderr, flush=True)
    try:
        with heartbeat("slurm-testbed", "debootstrap"):
            subprocess.run(
                ["debootstrap", "--variant=minbase", f"--include={PACKAGES}", "sid", str(staging), DEBIAN_MIRROR],
                check=True, stdout=subprocess.DEVNULL,
            )
    finally:
        unmount_all(staging)
    _make_devices(staging)
    (staging / "etc" / "hosts").write_text("127.0.0.1 localhost\n", encoding="utf-8")
    # Symlinks inside the root point at /etc/alternatives: test through chroot, not on the host.
    if chroot_run(staging, "test", "-x", "/usr/sbin/slurmctld").returncode != 0:
        raise RuntimeError("debootstrap finished but slurmctld is missing from the root")
    (staging / "etc" / MARKER).write_text(RECIPE_VERSION + "\n", encoding="utf-8")
    safe_remove(root)
    staging.rename(root)
    return root


def slurm_version(root: Path) -> str:
    out = chroot_run(root, "slurmctld", "-V").stdout
    match = re.search(r"(\d+\.\d+\.\d+)", out)
    return match.group(1) if match else out.strip()


class Slurmctld:
    """One slurmctld started from a private configuration directory inside the root."""

    def __init__(self, root: Path, conf_dir: str, process: subprocess.Popen, log_path: Path):
        self.root = root
        self.conf_dir = conf_dir  # path inside the chroot
        self.process = process
        self.log_path = log_path

    @property
    def env(self) -> dict:
        return {**os.environ, "SLURM_CONF": f"{self.conf_dir}/slurm.conf"}

    def run(self, *argv: str) -> subprocess.CompletedProcess:
        return chroot_run(self.root, *argv, env=self.env)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def scontrol(self, *args: str) -> str:
        result = self.run("scontrol", *args)
        if result.returncode != 0:
            raise RuntimeError(f"scontrol {' '.join(args)} failed: {result.stderr}")
        return result.stdout

    def test_only(self, *args: str) -> subprocess.CompletedProcess:
        return self.run("sbatch", "--test-only", *args, "--wrap=true")

    def placement(self, *args: str) -> str:
        """The hostlist `sbatch --test-only` would place the job on; raises with Slurm's words otherwise."""
        result = self.test_only(*args)
        match = re.search(r"on nodes (\S+) in partition (\S+)", result.stderr)
        if not match:
            raise PlacementRefused(result.stderr.strip())
        return match.group(1)


class PlacementRefused(RuntimeError):
    pass


class StartFailed(RuntimeError):
    pass


def _wait_until_up(ctld: Slurmctld, deadline_s: float = 60.0) -> None:
    # Poll until the controller answers or the process exits: event-driven on both ends,
    # the deadline only bounds a hung start.
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if ctld.process.poll() is not None:
            raise StartFailed(ctld.log())
        if "UP" in ctld.run("scontrol", "ping").stdout:
            return
        time.sleep(0.2)
    raise StartFailed("slurmctld did not answer within the deadline:\n" + ctld.log())


@contextlib.contextmanager
def _proc_mounted(root: Path):
    """ROOT/proc mounted while any run, of any process, uses the root; the last one unmounts it.

    Each run holds a shared lock on ``users.lock``; mounting and unmounting happen under
    ``mount.lock``, and the run that can take ``users.lock`` exclusively is the last. A killed run
    leaves proc mounted for the next last run to unmount (the kernel drops a dead process's locks).
    """
    locks = root.with_name(root.name + ".locks")
    proc = root / "proc"
    with _flock(locks / "mount.lock"):
        if subprocess.run(["mountpoint", "-q", str(proc)], check=False).returncode != 0:
            subprocess.run(["mount", "-t", "proc", "proc", str(proc)], check=True)
        users = open(locks / "users.lock", "a+b")  # pylint: disable=consider-using-with
        fcntl.flock(users, fcntl.LOCK_SH)
    try:
        yield
    finally:
        with _flock(locks / "mount.lock"):
            fcntl.flock(users, fcntl.LOCK_UN)
            try:
                fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass  # another run still uses the root: it unmounts when it is the last
            else:
                subprocess.run(["umount", str(proc)], check=False)
                if mounts_below(root):
                    raise RuntimeError(f"still mounted below {root} after the last slurmctld: {mounts_below(root)}")
            finally:
                users.close()


def cluster_name(slurm_conf_text: str) -> str:
    match = re.search(r"(?im)^\s*ClusterName\s*=\s*(\S+)", slurm_conf_text)
    if not match:
        raise ValueError("the test bed's slurm.conf needs a ClusterName")
    return match.group(1).lower()


@contextlib.contextmanager
def slurmctld(root: Path, files: dict[str, str]):
    """Start slurmctld with `files` (name -> content; must include slurm.conf) and stop it after.

    Several controllers may run in one root at once, each with its own ClusterName. slurmctld
    serves auth/slurm credentials on /run/slurmctld/sack.socket, one path for all of them; clients
    look for /run/slurm-<ClusterName>/sack.socket first. So each controller starts alone (under
    ``start.lock``), and its socket is hard-linked to its cluster's path before the next one can
    replace the shared one; stopping takes the same lock, since slurmctld removes that path on exit.
    """
    cluster = cluster_name(files["slurm.conf"])
    own_socket_dir = root / "run" / f"slurm-{cluster}"
    start_lock = root.with_name(root.name + ".locks") / "start.lock"
    with _proc_mounted(root):
        run_dir = Path(tempfile.mkdtemp(prefix="ctld-", dir=root / "tmp"))
        inside = "/" + str(run_dir.relative_to(root))
        process = None
        try:
            key = run_dir / "slurm.key"
            key.write_bytes(os.urandom(1024))
            key.chmod(0o600)
            (run_dir / "state").mkdir()
            for name, content in files.items():
                content = content.replace("@CONFDIR@", inside)
                (run_dir / name).write_text(content, encoding="utf-8")
            log_path = run_dir / "slurmctld.log"
            with _flock(start_lock):
                shutil.rmtree(own_socket_dir, ignore_errors=True)  # a killed run's link to a dead socket
                with open(log_path, "wb") as log:
                    process = subprocess.Popen(
                        ["chroot", str(root), "slurmctld", "-D", "-c", "-f", f"{inside}/slurm.conf"],
                        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "SLURM_CONF": f"{inside}/slurm.conf"},
                    )
                ctld = Slurmctld(root, inside, process, log_path)
                _wait_until_up(ctld)  # answered through the shared socket: ours while we hold the lock
                own_socket_dir.mkdir(parents=True, exist_ok=True)
                os.link(root / "run" / "slurmctld" / "sack.socket", own_socket_dir / "sack.socket")
            yield ctld
        finally:
            with _flock(start_lock):
                if process is not None and process.poll() is None:
                    process.send_signal(signal.SIGTERM)
                    try:
                        process.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()
                shutil.rmtree(own_socket_dir, ignore_errors=True)
            subprocess.run(["rm", "-rf", "--one-file-system", str(run_dir)], check=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def slurm_conf(nodes, *, plugin=None, partitions=None) -> str:
    """slurm.conf for the test bed: every node a powered-down CLOUD node (schedulable for --test-only)."""
    nodes = sorted(nodes)
    if not nodes:
        raise ValueError("slurm.conf needs at least one node")
    port = free_port()
    from ansible_collections.aifactory.topology.plugins.module_utils._base.hostlist import compress

    lines = [
        # A private port and cluster name: controllers of concurrent test runs never collide.
        f"ClusterName=aifactory-{port}",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={port}",
        "SlurmUser=root",
        "AuthType=auth/slurm",
        "CredType=cred/slurm",
        "StateSaveLocation=@CONFDIR@/state",
        "SlurmctldPidFile=@CONFDIR@/slurmctld.pid",
        "SelectType=select/cons_tres",
        "SuspendProgram=/bin/true",
        "ResumeProgram=/bin/true",
        "SuspendTime=600",
        "MailProg=/bin/true",
    ]
    if plugin:
        lines.append(f"TopologyPlugin={plugin}")
    lines.append(f"NodeName={compress(nodes)} State=CLOUD NodeAddr=127.0.0.1 CPUs=1")
    lines += partitions or ["PartitionName=all Nodes=ALL Default=YES"]
    return "\n".join(lines) + "\n"


def ensure_collection_importable() -> None:
    """Make ``ansible_collections.aifactory.topology`` importable from this checkout."""
    import importlib.util

    try:
        if importlib.util.find_spec("ansible_collections.aifactory.topology") is not None:
            return
    except ImportError:
        pass
    repo = Path(__file__).resolve().parent.parent
    linked = repo / ".collections"
    if not (linked / "ansible_collections" / "aifactory" / "topology").exists():
        linked = Path(tempfile.mkdtemp(prefix="aifactory-collections-"))
        # rmtree removes the link to the checkout, never what it points to.
        atexit.register(shutil.rmtree, linked, True)
        (linked / "ansible_collections" / "aifactory").mkdir(parents=True)
        os.symlink(repo, linked / "ansible_collections" / "aifactory" / "topology")
    sys.path.insert(0, str(linked))


def files_for_topology(path: Path) -> dict[str, str]:
    """slurm.conf plus the topology file, so slurmctld loads `path` as it would in production."""
    ensure_collection_importable()
    import yaml

    from ansible_collections.aifactory.topology.plugins.module_utils._writers.shrink_guard import nodes_in_file

    text = path.read_text(encoding="utf-8")
    nodes = nodes_in_file(text) or {"placeholder-node"}
    if re.search(r"(?im)^\s*(SwitchName|BlockName|BlockSizes)\s*=", text):
        plugin = "topology/block" if re.search(r"(?im)^\s*Block", text) else "topology/tree"
        return {"slurm.conf": slurm_conf(nodes, plugin=plugin), "topology.conf": text}
    entries = yaml.safe_load(text) or []
    names = [entry["topology"] for entry in entries if isinstance(entry, dict) and "topology" in entry]
    partitions = [f"PartitionName=p-{name} Nodes=ALL Topology={name}" + (" Default=YES" if i == 0 else "")
                  for i, name in enumerate(names)]
    return {"slurm.conf": slurm_conf(nodes, partitions=partitions), "topology.yaml": text}


def log_complaints(log: str) -> list[str]:
    """The lines of a slurmctld log that object to the configuration it loaded."""
    # slurmctld's clock self-test complains on a busy machine; that says nothing about the files.
    return [line for line in log.splitlines()
            if re.search(r"error:|Invalid hostnames|Ignoring", line)
            and not re.search(r"High latency for \d+ calls to gettimeofday", line)]


def check(path: Path) -> int:
    """Load one topology file into slurmctld; 0 when Slurm accepts it without complaint."""
    root = build()
    try:
        with slurmctld(root, files_for_topology(path)) as ctld:
            shown = ctld.scontrol("show", "topoconf")
            complaints = log_complaints(ctld.log())
    except StartFailed as exc:
        print(f"slurmctld {slurm_version(root)} rejected {path}:\n{exc}", file=sys.stderr)
        return 1
    if complaints:
        print(f"slurmctld {slurm_version(root)} loaded {path} with complaints:\n" + "\n".join(complaints),
              file=sys.stderr)
        return 1
    print(f"slurmctld {slurm_version(root)} accepted {path}\n{shown}")
    return 0


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "status"
    if command == "build":
        root = build()
        print(root)
        print("slurmctld", slurm_version(root))
        return 0
    if command == "status":
        reason = unavailable_reason()
        ready = is_ready(root_path())
        print(f"root={root_path()} ready={ready}" + (f" unavailable: {reason}" if reason else ""))
        return 0 if ready else 1
    if command == "check" and len(argv) == 3:
        return check(Path(argv[2]))
    print(f"usage: {argv[0]} build|status|check FILE", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
