# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The file writer every render module uses: compare, diff, validate, write atomically.

Check mode and diff mode live here so every engine gets them the same way
(patterns from ansible.posix authorized_key and community.crypto _io.write_file).

Only a regular file (or nothing) at ``dest`` is ever replaced: a directory, FIFO, socket or
device there is an error, and nothing is opened for a blocking read. A symbolic link is
followed, as Ansible's ``follow: true``: its target is written (atomically, in the target's
directory) and must be a regular file or not exist, so a link into a shared configuration
directory keeps working; the diff names the link and the target. Owner, group and
mode are applied to the temporary file before the rename, so an invalid one fails with nothing
replaced. A temporary file left by a run that was killed (``kill -9``) is removed by the next
run: its name carries the writer's process id.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shlex
import stat
import tempfile
import time

from ansible_collections.aifactory.topology.plugins.module_utils._base import command as _command
from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import CommandError, LocalFileError
from ansible_collections.aifactory.topology.plugins.module_utils._base.input_file import file_kind

TEMP_MARK = ".aifactory-topology."
LOCK_WAIT_SECONDS = 300.0
VALIDATE_TIMEOUT = 300.0  # slurmctld -t or a site's checker on a large file; then it is killed
VALIDATE_MAX_OUTPUT = 16 * 1024 * 1024  # of a checker's messages


class FileWriteError(LocalFileError):
    """The destination could not be read, validated or replaced; it is left as it was."""


def resolve_dest(dest):
    """The path to write for ``dest`` (a link's target); an error unless that is a regular file or absent."""
    target = os.path.realpath(dest) if os.path.islink(dest) else dest
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise FileWriteError(f"cannot use {dest}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        shown = dest if target == dest else f"{dest} (a link to {target})"
        raise FileWriteError(f"{shown} is {file_kind(info.st_mode)}; only a regular file is ever replaced")
    return target


def read_text(path):
    """Current content of the regular file ``path`` (a link is followed), or None when there is none.

    Opened without blocking and checked on the descriptor: a FIFO or device is an error, never read.
    """
    if not os.path.lexists(path):
        return None
    try:
        return _input_file.read_text(path, "the destination")
    except _input_file.InputFileError as exc:
        if not os.path.exists(path):  # removed meanwhile, or a dangling link
            return None
        raise FileWriteError(f"{exc}; it is not a file this module wrote, so it is not replaced") from None


@contextlib.contextmanager
def locked(dest, wait=None):
    """Hold an exclusive flock on ``dest``'s directory while reading, checking and renaming.

    Two runs cannot then both pass the shrink guard against the same old file. The directory
    is locked, not ``dest`` (a rename replaces that inode under a waiting run) nor a lock file
    (it would stay beside ``dest``); other runs of this collection honour the lock.
    """
    wait = LOCK_WAIT_SECONDS if wait is None else wait
    directory = os.path.dirname(os.path.abspath(dest))
    if not os.path.isdir(directory):
        raise FileWriteError(f"destination directory {directory} does not exist")
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise FileWriteError(f"cannot lock {directory} to write {dest}: {exc.strerror}") from None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise FileWriteError(f"cannot lock {directory} to write {dest}: {exc.strerror}") from None
                if time.monotonic() > deadline:
                    raise FileWriteError(f"another run has held the lock on {directory} for {wait:g} s; "
                                         f"{dest} was not written") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def remove_stale_temp_files(dest):
    """Remove temporary files of ``dest`` whose writer process is gone (killed mid-write)."""
    directory, name = os.path.split(os.path.abspath(dest))
    prefix = f".{name}{TEMP_MARK}"
    removed = []
    try:
        entries = os.listdir(directory)
    except OSError:
        return removed
    for entry in entries:
        if not entry.startswith(prefix):
            continue
        pid_text = entry[len(prefix):].split(".", 1)[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        path = os.path.join(directory, entry)
        try:
            if stat.S_ISREG(os.lstat(path).st_mode):
                os.unlink(path)
                removed.append(path)
        except OSError:
            pass
    return removed


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def ensure_file(module, dest, content, backup=False, validate=None, current=None):
    """Make ``dest`` hold ``content``; returns a result dict (changed, diff, backup_file).

    Writes nothing in check mode. ``validate`` is a command with ``%s`` that runs on the
    temporary file before it replaces ``dest``; a failing validation leaves ``dest`` as it was.
    ``current`` is the content already read (under ``locked``), or None to read it here.
    """
    target = resolve_dest(dest)
    if current is None:
        current = read_text(target)
    result = {"changed": current != content, "dest": dest}
    if module._diff:
        # Name what is replaced: for a link, its target (the link itself stays).
        shown = target if target == dest else f"{dest} -> {target}"
        result["diff"] = {"before": current or "", "after": content,
                          "before_header": shown if current is not None else "/dev/null", "after_header": shown}
    file_args = module.load_file_common_arguments(module.params, path=target)
    if result["changed"] and not module.check_mode:
        _write(module, target, content, backup and current is not None, validate, file_args, result)
    if os.path.exists(target) or not module.check_mode:
        result["changed"] = module.set_fs_attributes_if_different(file_args, result["changed"], diff=None)
    return result


def _validate(command, target):
    """(rc, stdout, stderr) of a ``validate`` command, split as Ansible's run_command splits a string
    (no shell; ``~`` and ``$VAR`` expanded in each word), run by the one command runner: at most
    VALIDATE_TIMEOUT seconds, children holding its output included, and VALIDATE_MAX_OUTPUT bytes."""
    argv = [os.path.expanduser(os.path.expandvars(word)) for word in shlex.split(command)]
    try:
        rc, out, err = _command.run(argv, timeout=VALIDATE_TIMEOUT, max_output=VALIDATE_MAX_OUTPUT)
    except CommandError as exc:
        raise FileWriteError(f"validation of {target} did not complete, nothing was written: {exc}") from None
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _write(module, target, content, backup, validate, file_args, result):
    directory, name = os.path.split(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise FileWriteError(f"destination directory {directory} does not exist")
    remove_stale_temp_files(target)
    try:
        fd, tmp_path = tempfile.mkstemp(prefix=f".{name}{TEMP_MARK}{os.getpid()}.", dir=directory)
    except OSError as exc:
        raise FileWriteError(f"cannot write {target}: cannot create a temporary file in {directory}: "
                             f"{exc.strerror}") from None
    try:
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise FileWriteError(f"cannot write {target}: {exc.strerror}; it was left as it was") from None
        if validate:
            if "%s" not in validate:
                raise FileWriteError(f"validate must contain %s for the file to check: {validate!r}")
            rc, out, err = _validate(validate % tmp_path, target)
            if rc != 0:
                raise FileWriteError(
                    f"validation failed (rc={rc}) for {target}, nothing was written:\n{(err or out).strip()}"
                )
        # Keep the old file's mode and owner unless the task sets them; set them on the temporary
        # file, so an invalid owner or mode fails here with the old file untouched.
        existing = os.stat(target) if os.path.exists(target) else None
        os.chmod(tmp_path, existing.st_mode & 0o7777 if existing else 0o644)
        if existing is not None:
            with contextlib.suppress(OSError):
                os.chown(tmp_path, existing.st_uid, existing.st_gid)
        tmp_args = dict(file_args, path=tmp_path, attributes=None)  # chattr +i would block the rename
        module.set_fs_attributes_if_different(tmp_args, False, diff=None)
        if backup:
            result["backup_file"] = module.backup_local(target)
        try:
            module.atomic_move(tmp_path, target, unsafe_writes=False, keep_dest_attrs=False)
        except Exception as exc:  # ansible-core 2.19 raises a bare Exception (an immutable file, say)
            cause = exc.__cause__ or exc.__context__
            reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(exc)
            raise FileWriteError(f"cannot replace {target}: {reason}; it was left as it was") from None
    finally:
        if os.path.lexists(tmp_path):
            os.unlink(tmp_path)
