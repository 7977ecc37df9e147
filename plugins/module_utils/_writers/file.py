# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The file writer every render module uses: compare, diff, validate, write atomically.

Check mode and diff mode live here so every engine gets them the same way
(patterns from ansible.posix authorized_key and community.crypto _io.write_file).

Only a regular file (or nothing) at ``dest`` is ever replaced: a directory, FIFO, socket or
device there is an error, and nothing is opened for a blocking read. A symbolic link is
followed, as Ansible's ``follow: true``, only when root or the user running the task owns it
(and every link it leads through): its target is written (atomically, in the target's
directory) and must be a regular file or not exist, so a link into a shared configuration
directory keeps working; the diff names the link and the target. A link another user owns is
refused: whoever can plant a link in the directory would otherwise choose the file a root task
overwrites (Linux's ``fs.protected_symlinks`` rule, for every directory). ``follow=False``
(a directory other users write, as node_exporter's textfile directory) refuses every link.

The new content goes to a temporary file created in the destination's directory (``O_EXCL``,
never through a link); the old file's mode and owner are set on its open descriptor, and it is
renamed over the directory entry, which replaces a link planted meanwhile instead of writing
through it. Nothing is changed by path between the rename and the end but what the task's own
``owner``, ``group`` and ``mode`` ask for. Owner, group and mode are applied to the temporary
file before the rename, so an invalid one fails with nothing replaced.

Every write holds ``locked`` from its read to its rename (``ensure_file`` takes it, or checks that its
caller holds it when it hands over the content it read): two runs never both edit one old file.

A temporary file's name carries the writer's host and process id
(``.topology.conf.aifactory-topology.<pid>@<host>.<random>``). A run killed mid-write (``kill -9``)
leaves one; the next write removes it when it is this host's and that process is gone, or when it is
older than ``STALE_TEMP_SECONDS`` (a day) whatever its host: on a directory several controllers share
(NFS), a process id says nothing about another host's processes, and a write keeps its temporary
file for minutes at most (``VALIDATE_TIMEOUT`` and the write), so a day is far beyond any live one and
any clock skew between hosts.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shlex
import stat
import tempfile
import threading
import time

from ansible_collections.aifactory.topology.plugins.module_utils._base import command as _command
from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import CommandError, LocalFileError
from ansible_collections.aifactory.topology.plugins.module_utils._base.input_file import file_kind
from ansible_collections.aifactory.topology.plugins.module_utils._base.numbers import whole_number_or_none

TEMP_MARK = ".aifactory-topology."
LOCK_WAIT_SECONDS = 300.0
STALE_TEMP_SECONDS = 24 * 3600.0  # another host's temporary file (or one without a host) is removed after this
VALIDATE_TIMEOUT = 300.0  # slurmctld -t or a site's checker on a large file; then it is killed
VALIDATE_MAX_OUTPUT = 16 * 1024 * 1024  # of a checker's messages


class FileWriteError(LocalFileError):
    """The destination could not be read, validated or replaced; it is left as it was."""


MAX_LINKS = 40  # links followed in a row, as the kernel's limit


def _trusted_links_end(dest):
    """Where the links at ``dest`` lead (``dest`` itself when it is no link); every link on the way must be
    owned by root or the effective user, else FileWriteError."""
    path = dest
    for _hop in range(MAX_LINKS):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return path
        except OSError as exc:
            raise FileWriteError(f"cannot use {dest}: {exc.strerror}") from None
        if not stat.S_ISLNK(info.st_mode):
            return path
        if info.st_uid not in (0, os.geteuid()):
            shown = dest if path == dest else f"{dest} (through the link {path})"
            raise FileWriteError(f"{shown} is a symbolic link owned by uid {info.st_uid}, neither root nor the user "
                                 f"running the task (uid {os.geteuid()}); it is not followed (whoever can plant a "
                                 "link there would choose the file this task overwrites) and nothing was written")
        try:
            path = os.path.join(os.path.dirname(path), os.readlink(path))
        except OSError as exc:
            raise FileWriteError(f"cannot use {dest}: {exc.strerror}") from None
    raise FileWriteError(f"cannot use {dest}: more than {MAX_LINKS} symbolic links in a row")


def resolve_dest(dest, follow=True):
    """The path to write for ``dest`` (a link's target); an error unless that is a regular file or absent.

    ``follow``: a link is followed when root or the effective user owns it; with False every link is refused.
    """
    try:
        is_link = stat.S_ISLNK(os.lstat(dest).st_mode)
    except FileNotFoundError:
        return dest
    except OSError as exc:
        raise FileWriteError(f"cannot use {dest}: {exc.strerror}") from None
    if is_link and not follow:
        raise FileWriteError(f"{dest} is a symbolic link; links are not followed there (a user who can write the "
                             "directory could point it at any file), so it is not replaced and nothing was written")
    target = os.path.realpath(_trusted_links_end(dest)) if is_link else dest
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


def read_text(path, follow=True, max_bytes=None):
    """Current content of the regular file ``path``, or None when there is none.

    A link is followed as ``resolve_dest`` allows; the file is then opened without following a link
    and without blocking, and checked on the descriptor: a FIFO or device is an error, never read.
    ``max_bytes``: a larger file is an error.
    """
    if not os.path.lexists(path):
        return None
    target = resolve_dest(path, follow)
    try:
        return _input_file.read_text(target, "the destination", follow=False, max_bytes=max_bytes)
    except _input_file.InputFileError as exc:
        if not os.path.exists(path):  # removed meanwhile, or a dangling link
            return None
        raise FileWriteError(f"{exc}; it is not a file this module wrote, so it is not replaced") from None


def read_own(dest, max_bytes):
    """``(text, None)`` of the file at ``dest`` when it can be one this user wrote, ``(None, None)`` when there
    is none, ``(None, why)`` when the regular file there cannot be: owned by another user, more than one hard
    link, more than ``max_bytes`` bytes (at most max_bytes + 1 are read), or not UTF-8 text.

    Such a file is replaced, never shown: it may be a hard link to a file of someone else (a token), or a
    file another user planted. A link, FIFO, device or directory at ``dest`` is an error (FileWriteError),
    found on the descriptor opened without following a link and without blocking.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(dest, flags)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            resolve_dest(dest, follow=False)  # raises: a link is never followed here
        raise FileWriteError(f"cannot read {dest}: {exc.strerror}; nothing was written") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileWriteError(f"{dest} is {file_kind(info.st_mode)}; only a regular file is ever replaced")
        if info.st_uid != os.geteuid():
            return None, f"is owned by uid {info.st_uid}, not by the user running the task (uid {os.geteuid()})"
        if info.st_nlink != 1:
            return None, f"has {info.st_nlink} hard links (a file this module writes has one)"
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 16, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise FileWriteError(f"cannot read {dest}: {exc.strerror}; nothing was written") from None
    finally:
        os.close(fd)
    if size > max_bytes:
        return None, f"holds more than {max_bytes} bytes, more than this module writes"
    try:
        return b"".join(chunks).decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"is not UTF-8 text (byte {exc.start})"


_held = threading.local()  # per thread: directory -> how many ``locked`` blocks hold it


def _lock_directory(dest):
    """The directory whose lock covers ``dest``: its target's, when ``dest`` is a link."""
    return os.path.dirname(os.path.realpath(os.path.abspath(dest)))


def holds_lock(dest):
    """Whether this thread holds ``locked`` for ``dest``."""
    return getattr(_held, "directories", {}).get(_lock_directory(dest), 0) > 0


@contextlib.contextmanager
def locked(dest, wait=None):
    """Hold an exclusive flock on ``dest``'s directory while reading, checking and renaming.

    Two runs cannot then both pass the shrink guard against the same old file, nor both edit it.
    The directory is locked, not ``dest`` (a rename replaces that inode under a waiting run) nor a
    lock file (it would stay beside ``dest``); other runs of this collection honour the lock. A
    thread that holds it already enters again at once (``ensure_file`` inside a caller's block).
    ``wait``: seconds to wait for it (``LOCK_WAIT_SECONDS``), then FileWriteError.
    """
    held = _held.__dict__.setdefault("directories", {})
    directory = _lock_directory(dest)
    if held.get(directory):
        held[directory] += 1
        try:
            yield
        finally:
            held[directory] -= 1
        return
    wait = LOCK_WAIT_SECONDS if wait is None else wait
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
                time.sleep(0.05)  # polls the lock: flock cannot wait with a timeout
        held[directory] = 1
        try:
            yield
        finally:
            held.pop(directory, None)
    finally:
        os.close(fd)


def _host():
    """This host's name as a temporary file's name carries it (letters, digits, '.', '-'; others '_')."""
    return re.sub(r"[^A-Za-z0-9.-]", "_", os.uname().nodename)[:64] or "_"


def temp_prefix(name):
    """The start of the name of a temporary file written for the file ``name`` by this process on this host."""
    return f".{name}{TEMP_MARK}{os.getpid()}@{_host()}."


def remove_stale_temp_files(dest, now=None):
    """Remove the temporary files of ``dest`` no live writer holds (see the module's docstring).

    This host's, whose process is gone; any, this host's or another's or one of a name without a host
    (written before names carried it), older than ``STALE_TEMP_SECONDS``. ``now``: the time to age them by.
    """
    directory, name = os.path.split(os.path.abspath(dest))
    prefix = f".{name}{TEMP_MARK}"
    host = _host()
    now = time.time() if now is None else now
    removed = []
    try:
        entries = os.listdir(directory)
    except OSError:
        return removed
    for entry in entries:
        if not entry.startswith(prefix):
            continue
        writer = entry[len(prefix):].rpartition(".")[0]  # mkstemp's random part has no '.'
        pid_text, _at, writer_host = writer.partition("@")
        path = os.path.join(directory, entry)
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                continue
            pid = whole_number_or_none(pid_text, low=1, high=2 ** 31)
            mine_and_dead = writer_host == host and pid is not None and not _alive(pid)
            if mine_and_dead or now - info.st_mtime > STALE_TEMP_SECONDS:
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


def ensure_file(module, dest, content, backup=False, validate=None, current=None, follow=True, withheld=None):
    """Make ``dest`` hold ``content``; returns a result dict (changed, diff, backup_file).

    Writes nothing in check mode. ``validate`` is a command with ``%s`` that runs on the
    temporary file before it replaces ``dest``; a failing validation leaves ``dest`` as it was.
    ``current`` is the content already read (under ``locked``), or None to read it here.
    ``follow``: see ``resolve_dest``. ``withheld``: why the file at ``dest`` is replaced without being
    read or shown (``read_own``'s reason); the diff then has no before content.

    Outside check mode all of it runs under ``locked(dest)``, so the file is read, compared and replaced
    by one run at a time: taken here (the file is then read here, under it), or held already by the
    caller that hands over ``current`` or ``withheld``, found under that same hold. Content handed over
    without the lock held is a bug (another run may have replaced the file since): RuntimeError.
    """
    if module.check_mode:
        return _ensure(module, dest, content, backup, validate, current, follow, withheld)
    if (current is not None or withheld is not None) and not holds_lock(dest):
        raise RuntimeError(f"ensure_file: the content of {dest} was read without holding locked() on it")
    with locked(dest):
        return _ensure(module, dest, content, backup, validate, current, follow, withheld)


def _ensure(module, dest, content, backup, validate, current, follow, withheld):
    target = resolve_dest(dest, follow)
    if withheld is not None:
        current = None
    elif current is None:
        current = read_text(target, follow)
    result = {"changed": withheld is not None or current != content, "dest": dest}
    if module._diff:
        # Name what is replaced: for a link, its target (the link itself stays).
        shown = target if target == dest else f"{dest} -> {target}"
        before_header = shown if current is not None else "/dev/null"
        if withheld is not None:
            before_header = f"{shown} (its content is not shown: it {withheld})"
        result["diff"] = {"before": current or "", "after": content,
                          "before_header": before_header, "after_header": shown}
    file_args = module.load_file_common_arguments(module.params, path=target)
    if result["changed"] and not module.check_mode:
        # A withheld file is not ours: its owner and mode are not carried over (its owner would stay its owner).
        _write(module, target, content, backup and current is not None, validate, file_args, result,
               keep_attributes=withheld is None)
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


def _write(module, target, content, backup, validate, file_args, result, keep_attributes=True):
    directory, name = os.path.split(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise FileWriteError(f"destination directory {directory} does not exist")
    remove_stale_temp_files(target)
    try:
        fd, tmp_path = tempfile.mkstemp(prefix=temp_prefix(name), dir=directory)
    except OSError as exc:
        raise FileWriteError(f"cannot write {target}: cannot create a temporary file in {directory}: "
                             f"{exc.strerror}") from None
    try:
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
                _prepare(module, handle.fileno(), tmp_path, target, file_args, keep_attributes)
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
        if backup:
            result["backup_file"] = module.backup_local(target)
        try:
            os.rename(tmp_path, target)  # the directory entry: a link planted there is replaced, never followed
        except OSError as exc:
            raise FileWriteError(f"cannot replace {target}: {exc.strerror}; it was left as it was") from None
    finally:
        if os.path.lexists(tmp_path):
            os.unlink(tmp_path)


def _prepare(module, fd, tmp_path, target, file_args, keep_attributes):
    """The temporary file's mode, owner and SELinux context before the rename, set on its descriptor.

    Keep the old file's mode and owner (``keep_attributes``) unless the task sets them (a new file: 0666
    less the umask, as Ansible's atomic_move); the task's own owner, group and mode are applied here too,
    so an invalid one fails with the old file untouched.
    """
    try:
        existing = os.lstat(target)
    except FileNotFoundError:
        existing = None
    if keep_attributes and existing is not None and stat.S_ISREG(existing.st_mode):
        os.fchmod(fd, existing.st_mode & 0o7777)
        with contextlib.suppress(OSError):
            os.fchown(fd, existing.st_uid, existing.st_gid)
    else:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
    if module.selinux_enabled():
        context = module.selinux_context(target) if existing is not None else module.selinux_default_context(target)
        module.set_context_if_different(tmp_path, context, False)
    tmp_args = dict(file_args, path=tmp_path, attributes=None)  # chattr +i would block the rename
    module.set_fs_attributes_if_different(tmp_args, False, diff=None)
