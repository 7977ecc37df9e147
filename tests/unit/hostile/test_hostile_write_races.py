"""Writes on a directory several runs share: every writer holds one lock from its read to its rename.

Two writers racing on one file leave one of their two whole contents, never a mix; slurm_conf reads,
edits and renames slurm.conf under the lock slurm_topology takes, so it waits for a run that holds it
and fails, with nothing written, once ``LOCK_WAIT_SECONDS`` have passed.
"""

from __future__ import annotations

import errno
import threading

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._writers import file as writer
from ansible_collections.aifactory.topology.plugins.modules import slurm_conf

from ..plugins.modules.module_runner import run_module

CONF = "ClusterName=ai\nPartitionName=gpu Nodes=n[1-4] Default=YES\n"


class _Module:
    """What ensure_file asks of a module, for threads that cannot share AnsibleModule's global arguments."""

    check_mode = False
    _diff = False
    params = {}

    def load_file_common_arguments(self, params, path=None):
        return {"path": path}

    def set_fs_attributes_if_different(self, file_args, changed, diff=None):
        return changed

    def selinux_enabled(self):
        return False


def test_two_writers_racing_on_one_file_leave_one_whole_content_never_a_mix(tmp_path):
    dest = tmp_path / "topology.conf"
    contents = ["".join(f"SwitchName={who}{i} Nodes={who}n{i}\n" for i in range(40000)) for who in "ab"]
    start = threading.Barrier(3)
    seen, errors = [], []

    def write(content):
        try:
            start.wait()
            for _round in range(5):
                writer.ensure_file(_Module(), str(dest), content)
        except Exception as exc:  # pylint: disable=broad-except  # reported by the test below
            errors.append(exc)

    def read():
        start.wait()
        while any(thread.is_alive() for thread in writers):
            seen.append(writer.read_text(str(dest)))

    writers = [threading.Thread(target=write, args=(content,)) for content in contents]
    reader = threading.Thread(target=read)
    for thread in [*writers, reader]:
        thread.start()
    for thread in [*writers, reader]:
        thread.join()
    assert errors == []
    assert dest.read_text() in contents
    assert {text for text in seen if text is not None} <= set(contents)  # no reader ever saw a mix
    assert sorted(path.name for path in tmp_path.iterdir()) == ["topology.conf"]  # no temporary file left


def test_ensure_file_refuses_content_read_without_the_lock(tmp_path):
    dest = tmp_path / "topology.conf"
    dest.write_text("old\n")
    with pytest.raises(RuntimeError, match="read without holding locked"):
        writer.ensure_file(_Module(), str(dest), "new\n", current="old\n")
    assert dest.read_text() == "old\n"
    with writer.locked(str(dest)):  # read under the lock: ensure_file enters it again, in the same thread
        assert writer.ensure_file(_Module(), str(dest), "new\n", current=writer.read_text(str(dest)))["changed"]
    assert dest.read_text() == "new\n"


def test_slurm_conf_fails_within_its_lock_wait_while_another_run_holds_the_lock(monkeypatch, tmp_path, lock_holder):
    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF)
    monkeypatch.setattr(writer, "LOCK_WAIT_SECONDS", 0.2)
    result = run_module(slurm_conf, {"path": str(conf), "settings": {"SwitchType": "switch/nvidia_imex"}},
                        monkeypatch=monkeypatch)
    assert result["failed"] and result["msg"] == (f"another run has held the lock on {tmp_path} for 0.2 s; "
                                                  f"{conf} was not written")
    assert conf.read_text() == CONF


def test_slurm_conf_waits_for_the_lock_then_edits_what_the_other_run_wrote(monkeypatch, tmp_path, lock_holder):
    """The other run rewrites slurm.conf while slurm_conf waits: its edit is kept, not overwritten by a stale read."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF)
    real_flock = writer.fcntl.flock

    def flock(fd, operation):
        try:
            return real_flock(fd, operation)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES) and not lock_holder.is_set():
                conf.write_text(CONF + "SchedulerType=sched/backfill\n")  # the other run's write, under its lock
                lock_holder.set()  # slurm_conf is waiting for the lock: the other run ends
            raise

    monkeypatch.setattr(writer.fcntl, "flock", flock)
    result = run_module(slurm_conf, {"path": str(conf), "settings": {"SwitchType": "switch/nvidia_imex"}},
                        monkeypatch=monkeypatch)
    assert not result["failed"] and result["changed_settings"] == ["SwitchType"], result.get("msg")
    assert lock_holder.is_set()  # it did wait
    assert "SchedulerType=sched/backfill\n" in conf.read_text() and "SwitchType=switch/nvidia_imex\n" in conf.read_text()
