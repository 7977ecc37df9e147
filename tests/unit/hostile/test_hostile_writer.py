"""The file writer and the shrink guard against hostile destinations, attributes, kills and races.

Only a regular file (or a link to one that root or the task's user owns) is ever replaced; a link
another user planted is refused, one planted after the checks is replaced, never written through;
owner and mode fail before anything is replaced; a temporary file of a killed run is removed by the next one; read, check and rename
happen under a lock; the guard fails closed on a file it cannot read and on a limit that is
not a percentage.
"""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml
from ansible_collections.aifactory.topology.plugins.module_utils._model import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._writers import file as writer
from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard
from ansible_collections.aifactory.topology.plugins.modules import slurm_topology

from ..plugins.modules.module_runner import run_module
from tests.nvidia_smi_shapes import UNHEALTHY_TRAY

MODEL = {"format": "aifactory.topology/v1", "switches": {"leaf": None}, "nodes": [{"nodes": "n[1-10]", "switch": "leaf"}]}
OLD = "SwitchName=leaf Nodes=n[1-9]\n"


@pytest.fixture
def run(monkeypatch):
    def runner(args, **kwargs):
        return run_module(slurm_topology, dict({"model": MODEL}, **args), monkeypatch=monkeypatch, **kwargs)
    return runner


def _entries(directory):
    return sorted(path.name for path in directory.iterdir())


def _special(tmp_path, kind):
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "chardev":
        if os.geteuid() != 0:
            pytest.skip("making a character device needs root")
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a copy of /dev/null
    else:
        path.mkdir()
    return path


@pytest.mark.parametrize("kind, what", [("fifo", "a FIFO"), ("chardev", "a character device"), ("dir", "a directory")])
def test_only_a_regular_file_is_ever_replaced(run, tmp_path, kind, what):
    path = _special(tmp_path, kind)
    before = os.lstat(path)
    for check_mode in (True, False):
        result = run({"dest": str(path)}, check_mode=check_mode, diff=True)
        assert result["failed"] and result["msg"] == f"{path} is {what}; only a regular file is ever replaced"
    after = os.lstat(path)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    assert _entries(tmp_path) == [kind]


@pytest.mark.parametrize("attribute, message", [
    ({"owner": "no-such-user-aifactory"}, "chown failed: failed to look up user no-such-user-aifactory"),
    ({"group": "no-such-group-aifactory"}, "chgrp failed: failed to look up group no-such-group-aifactory"),
    ({"mode": "u=banana"}, "mode must be in octal or symbolic form"),
])
def test_an_invalid_owner_group_or_mode_fails_with_nothing_replaced(run, tmp_path, attribute, message):
    dest = tmp_path / "topology.conf"
    dest.write_text(OLD)
    inode = dest.stat().st_ino
    result = run(dict({"dest": str(dest)}, **attribute))
    assert result["failed"] and message in result["msg"]
    assert dest.read_text() == OLD and dest.stat().st_ino == inode
    assert _entries(tmp_path) == ["topology.conf"]  # no temporary file left


def test_owner_and_mode_are_on_the_file_when_it_appears(run, tmp_path):
    dest = tmp_path / "topology.conf"
    dest.write_text(OLD)
    os.chmod(dest, 0o600)
    result = run({"dest": str(dest), "mode": "0640", "owner": str(os.getuid())})
    assert result["changed"] and oct(dest.stat().st_mode & 0o777) == "0o640"
    kept = run({"dest": str(dest), "model": dict(MODEL, nodes=[{"nodes": "n[1-11]", "switch": "leaf"}])})
    assert kept["changed"] and oct(dest.stat().st_mode & 0o777) == "0o640"  # the old file's mode is kept


def test_a_temporary_file_of_a_killed_run_is_removed_by_the_next_run(run, tmp_path):
    dest = tmp_path / "topology.conf"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    here = writer._host()
    stale = tmp_path / f".topology.conf{writer.TEMP_MARK}{dead}@{here}.abc123"
    stale.write_text("half a file")
    live = tmp_path / f".topology.conf{writer.TEMP_MARK}{os.getpid()}@{here}.def456"  # a run still writing
    live.write_text("being written")
    other = tmp_path / ".slurm.conf.aifactory-topology.1.x"  # another file's: not ours to judge
    other.write_text("x")
    assert run({"dest": str(dest)})["changed"]
    assert _entries(tmp_path) == sorted([other.name, live.name, "topology.conf"])


def test_a_temporary_file_of_another_host_is_never_removed_while_it_can_be_live(tmp_path):
    """On a directory two controllers share (NFS), a process id says nothing about another host's processes."""
    dest = tmp_path / "topology.conf"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    names = [f".topology.conf{writer.TEMP_MARK}{dead}@other-{writer._host()}.abc123",  # another host's, its pid dead here
             f".topology.conf{writer.TEMP_MARK}{os.getpid()}@ctl02.example.org.def456",
             f".topology.conf{writer.TEMP_MARK}{dead}.ghi789"]  # a name without a host (before names carried it)
    for name in names:
        (tmp_path / name).write_text("being written elsewhere")
    now = os.stat(tmp_path / names[0]).st_mtime
    assert writer.remove_stale_temp_files(str(dest), now=now + writer.STALE_TEMP_SECONDS) == []
    assert _entries(tmp_path) == sorted(names)
    # Older than a day, whatever its host: no write keeps its temporary file that long.
    removed = writer.remove_stale_temp_files(str(dest), now=now + writer.STALE_TEMP_SECONDS + 1)
    assert sorted(removed) == sorted(str(tmp_path / name) for name in names) and _entries(tmp_path) == []


def test_the_temporary_file_names_its_host_and_process(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(writer, "_validate", lambda command, target: seen.append(command) or (0, "", ""))
    dest = tmp_path / "topology.conf"
    result = run_module(slurm_topology, {"model": MODEL, "dest": str(dest), "validate": "true %s"},
                        monkeypatch=monkeypatch)
    assert result["changed"] and len(seen) == 1
    tmp_name = os.path.basename(seen[0].split(" ", 1)[1])
    assert tmp_name.startswith(f".topology.conf{writer.TEMP_MARK}{os.getpid()}@{writer._host()}.")


def test_kill_9_mid_write_then_a_run_leaves_one_whole_file_and_no_temporary_file(tmp_path):
    """A real kill: a child writes through ensure_file's temporary file and is killed while it writes."""
    dest = tmp_path / "topology.conf"
    code = (
        "import os, sys, tempfile\n"
        "from ansible_collections.aifactory.topology.plugins.module_utils._writers import file as w\n"
        f"fd, path = tempfile.mkstemp(prefix=w.temp_prefix('topology.conf'), dir={str(tmp_path)!r})\n"
        "os.write(fd, b'SwitchName=half')\n"
        "print(path, flush=True)\n"
        "sys.stdin.read()\n"  # holds here until killed
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    partial = child.stdout.readline().strip()
    child.kill()
    child.wait()
    assert os.path.exists(partial)
    writer.remove_stale_temp_files(str(dest))
    assert not os.path.exists(partial)


def test_diff_of_a_symlinked_dest_names_the_link_and_writes_its_target(run, tmp_path):
    site = tmp_path / "site-config"
    site.mkdir()
    (site / "topology.conf").write_text(OLD)
    dest = tmp_path / "topology.conf"
    dest.symlink_to(site / "topology.conf")
    dry = run({"dest": str(dest)}, check_mode=True, diff=True)
    assert dry["diff"]["before_header"] == f"{dest} -> {site / 'topology.conf'}" and dry["diff"]["before"] == OLD
    assert run({"dest": str(dest)})["changed"]
    assert dest.is_symlink() and (site / "topology.conf").read_text().endswith("Nodes=n[1-10]\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "to-fifo"
    link.symlink_to(fifo)
    result = run({"dest": str(link)})
    assert result["failed"] and result["msg"] == f"{link} (a link to {fifo}) is a FIFO; only a regular file is ever replaced"


def _planted_link(tmp_path, owner):
    """A 0600 file outside the directory, and a link to it at dest owned by ``owner`` (root only for another)."""
    secret = tmp_path / "secret"
    secret.mkdir()
    token = secret / "token"
    token.write_text("s3cr3t-token\n")
    os.chmod(token, 0o600)
    dest = tmp_path / "topology.conf"
    dest.symlink_to(token)
    if owner != os.geteuid():
        if os.geteuid() != 0:
            pytest.skip("a link owned by another user needs root to make (lchown)")
        os.lchown(dest, owner, owner)
    return dest, token


def test_a_link_another_user_planted_is_never_followed_nor_its_target_shown(run, tmp_path):
    dest, token = _planted_link(tmp_path, 65534)
    for check_mode in (True, False):
        result = run({"dest": str(dest)}, check_mode=check_mode, diff=True)
        assert result["failed"] and result["msg"].startswith(f"{dest} is a symbolic link owned by uid 65534, neither "
                                                             "root nor the user running the task")
        assert "diff" not in result and "s3cr3t" not in str(result)
    assert token.read_text() == "s3cr3t-token\n" and stat.S_IMODE(token.stat().st_mode) == 0o600
    assert dest.is_symlink() and _entries(tmp_path) == ["secret", "topology.conf"]


def test_a_chain_of_links_is_followed_only_when_every_link_is_trusted(run, tmp_path):
    dest, token = _planted_link(tmp_path, os.geteuid())
    hop = tmp_path / "secret" / "hop"
    hop.symlink_to(token)
    dest.unlink()
    dest.symlink_to(hop)  # ours, to a link of another user
    if os.geteuid() != 0:
        pytest.skip("a link owned by another user needs root to make (lchown)")
    os.lchown(hop, 65534, 65534)
    result = run({"dest": str(dest)})
    assert result["failed"] and result["msg"].startswith(f"{dest} (through the link {hop}) is a symbolic link owned "
                                                         "by uid 65534")
    assert token.read_text() == "s3cr3t-token\n"


def test_a_link_planted_after_the_checks_is_replaced_not_written_through(run, tmp_path):
    dest, token = _planted_link(tmp_path, os.geteuid())
    dest.unlink()
    # The validate command runs after every check and before the rename: it plants the link then.
    plant = f"sh -c 'ln -s {token} {dest}' %s"
    result = run({"dest": str(dest), "validate": plant})
    assert not result["failed"] and result["changed"], result.get("msg")
    assert not dest.is_symlink() and dest.read_text().endswith("SwitchName=leaf Nodes=n[1-10]\n")
    assert token.read_text() == "s3cr3t-token\n" and stat.S_IMODE(token.stat().st_mode) == 0o600


def test_read_check_and_rename_happen_under_the_lock(run, tmp_path, monkeypatch, lock_holder):
    dest = tmp_path / "topology.conf"
    dest.write_text(OLD)
    monkeypatch.setattr(writer, "LOCK_WAIT_SECONDS", 0.3)
    result = run({"dest": str(dest)})  # another run holds the lock
    lock_holder.set()
    monkeypatch.setattr(writer, "LOCK_WAIT_SECONDS", 300.0)  # the holder lets go: the next runs wait for it
    assert result["failed"] and result["msg"] == (f"another run has held the lock on {tmp_path} for 0.3 s; "
                                                  f"{dest} was not written")
    assert dest.read_text() == OLD
    assert run({"dest": str(dest)})["changed"]
    assert run({"dest": str(dest)}, check_mode=True)["changed"] is False  # check mode takes no lock


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -0.5, 100.5])
def test_max_node_loss_must_be_a_finite_percentage(run, tmp_path, value):
    dest = tmp_path / "topology.conf"
    dest.write_text("SwitchName=leaf Nodes=n[1-100]\n")
    result = run({"dest": str(dest), "max_node_loss": value})
    assert result["failed"] and "max_node_loss must be a number from 0 to 100" in result["msg"]
    assert dest.read_text() == "SwitchName=leaf Nodes=n[1-100]\n"


@pytest.mark.parametrize("text", ["SwitchName=leaf Nodes=n[1-\n", "- topology: [\n", "BlockName=b Nodes=n[9-1]\n",
                                  "- &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
                                      f"- &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)),
                                  "SwitchName=leaf Switches=spine[1-2]\n", "topology: default\n"])
def test_a_current_file_the_guard_cannot_read_fails_closed_unless_forced(run, tmp_path, text):
    dest = tmp_path / "topology.conf"
    dest.write_text(text)
    refused = run({"dest": str(dest)})
    assert refused["failed"] and refused["msg"].startswith(f"the shrink guard cannot read the current file {dest} (")
    assert "set force: true to replace it" in refused["msg"] and dest.read_text() == text
    forced = run({"dest": str(dest), "force": True})
    assert forced["changed"] and forced["warnings"][0].startswith("force: the shrink guard cannot read the current file")


@pytest.mark.parametrize("has_yaml", [True, False], ids=["pyyaml", "no-pyyaml"])
def test_a_flow_style_topology_yaml_keeps_its_nodes_on_a_controller_with_or_without_pyyaml(monkeypatch, tmp_path,
                                                                                           has_yaml):
    """A 40-node topology.yaml in flow style was replaced by a 1-node one where PyYAML was missing."""
    dest = tmp_path / "topology.yaml"
    text = '- topology: default\n  cluster_default: true\n  block:\n    blocks: [{block: b1, nodes: "n[01-40]"}]\n'
    dest.write_text(text)
    monkeypatch.setattr(_yaml, "HAS_YAML", has_yaml)
    model = {"format": "aifactory.topology/v1", "nodes": [{"nodes": "n01", "domain": "b1"}]}
    args = {"model": model, "dest": str(dest), "max_node_loss": 10,
            "topologies": {"default": {"plugin": "topology/block", "cluster_default": True}}}
    refused = run_module(slurm_topology, args, monkeypatch=monkeypatch)
    assert refused["failed"] and "refusing to drop 39 of 40 nodes (97.5% > max_node_loss 10%): n[02-40]" in refused["msg"]
    assert dest.read_text() == text
    forced = run_module(slurm_topology, dict(args, force=True), monkeypatch=monkeypatch)
    assert forced["changed"] and "nodes: n01" in dest.read_text()


def test_the_guard_message_quotes_a_short_prefix_of_the_lost_nodes():
    before = "SwitchName=leaf Nodes=" + ",".join(f"host{i * 7}x" for i in range(5000)) + "\n"
    with pytest.raises(TopologyError) as info:
        shrink_guard.check_shrink(before, "SwitchName=leaf Nodes=host0x\n", 10, False)
    assert len(str(info.value)) < 600 and "refusing to drop 4999 of 5000 nodes" in str(info.value)


@pytest.mark.parametrize("args, message", [
    ({"topologies": {}}, "topologies is empty: name at least one topology"),
    ({"header": "SwitchName=rogue Nodes=x[1-9]"}, "header line 1 must be a comment starting with '#'"),
    ({"header": "# ok\nSwitchName=rogue"}, "header line 2 must be a comment starting with '#'"),
    ({"header": "# ok\r"}, "header line 1 contains a control character"),
])
def test_options_written_verbatim_fail_before_anything_is_written(run, tmp_path, args, message):
    dest = tmp_path / "topology.yaml"
    dest.write_text("- topology: default\n  cluster_default: true\n  flat: true\n")
    result = run(dict({"dest": str(dest)}, **args))
    assert result["failed"] and message in result["msg"]
    assert dest.read_text() == "- topology: default\n  cluster_default: true\n  flat: true\n"


def _root_only():
    if os.geteuid() != 0:
        pytest.skip("mounting a file system and chattr +i need root")


def test_a_full_disk_fails_naming_the_file_and_keeps_the_old_one(run, tmp_path):
    _root_only()
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(mount)], check=True)
    try:
        dest = mount / "topology.conf"
        dest.write_text(OLD)
        big = dict(MODEL, nodes=[{"nodes": f"n{i}x", "switch": "leaf"} for i in range(0, 40000, 7)])
        result = run({"dest": str(dest), "model": big, "force": True})
        assert result["failed"] and result["msg"].startswith(f"cannot write {dest}: No space left on device")
        assert dest.read_text() == OLD and _entries(mount) == ["topology.conf"]
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_read_only_mount_or_an_immutable_file_fails_naming_the_file(run, tmp_path):
    _root_only()
    dest = tmp_path / "topology.conf"
    dest.write_text(OLD)
    subprocess.run(["chattr", "+i", str(dest)], check=True)
    try:
        result = run({"dest": str(dest)})
    finally:
        subprocess.run(["chattr", "-i", str(dest)], check=True)
    assert result["failed"] and str(dest) in result["msg"] and dest.read_text() == OLD
    assert _entries(tmp_path) == ["topology.conf"]
    mount = tmp_path / "ro"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=True)
    try:
        (mount / "topology.conf").write_text(OLD)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        result = run({"dest": str(mount / "topology.conf")})
        assert result["failed"] and result["msg"].startswith(f"cannot write {mount / 'topology.conf'}: ")
        assert "Read-only file system" in result["msg"] and (mount / "topology.conf").read_text() == OLD
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_the_drain_guard_refuses_before_topology_conf_is_written(monkeypatch, tmp_path):
    # A fabric manager restarting: 3 of 8 nodes report no fabric. The drain's guard refuses, and it refuses
    # before the file is written (it used to write the file, fail on the drain and report no change).
    nodes = [f"n{index}" for index in range(1, 9)]
    data = tmp_path / "nodes.json"
    data.write_text(json.dumps({"nodes": [{"name": node, "state": ["IDLE"]} for node in nodes], "errors": []}),
                    encoding="utf-8")
    scontrol = tmp_path / "scontrol"  # prints the nodes; any other command (a drain) leaves a mark
    scontrol.write_text(f"#!/bin/sh\ncase \"$1\" in show) exec cat {data};; *) touch {tmp_path}/sent;; esac\n",
                        encoding="utf-8")
    scontrol.chmod(0o755)
    outputs = {node: (UNHEALTHY_TRAY if node in nodes[:3] else "3bd4c4b2-4a2c-4b1f-9b4e-7a8b1c2d3e4f, 1\n")
               for node in nodes}
    provider = {"name": "inventory", "params": {"switches": {"leaf": None},
                                                "nodes": [{"nodes": "n[1-8]", "switch": "leaf"}],
                                                "accelerator": {"source": "nvidia_smi", "nvidia_smi": outputs}}}
    fresh, existing = tmp_path / "fresh.conf", tmp_path / "topology.conf"
    existing.write_text("SwitchName=leaf Nodes=n[1-8]\n", encoding="utf-8")
    for dest in (fresh, existing):
        result = run_module(slurm_topology, {"provider": provider, "dest": str(dest), "drain_unhealthy": True,
                                             "scontrol_path": str(scontrol)}, monkeypatch=monkeypatch)
        assert result["failed"] and result["msg"].startswith(
            "refusing to drain 3 of 8 nodes quarantined as unhealthy (37.5% > max_node_loss 10%): n[1-3]; "
            "nothing was written, no node was drained")
    assert not fresh.exists() and existing.read_text(encoding="utf-8") == "SwitchName=leaf Nodes=n[1-8]\n"
    assert not (tmp_path / "sent").exists()
