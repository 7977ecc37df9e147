# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The file writer every render module uses: compare, diff, validate, write atomically.

Check mode and diff mode live here so every engine gets them the same way
(patterns from ansible.posix authorized_key and community.crypto _io.write_file).
"""

from __future__ import annotations

import os
import tempfile

from ansible_collections.aifactory.topology.plugins.module_utils._errors import LocalFileError


class FileWriteError(LocalFileError):
    """The destination could not be read, validated or replaced; it is left as it was."""


def read_text(path):
    """Current content, or None when the file does not exist."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FileWriteError(f"cannot read {path}: {exc.strerror}") from None


def ensure_file(module, dest, content, backup=False, validate=None, current=None):
    """Make ``dest`` hold ``content``; returns a result dict (changed, diff, backup_file).

    Writes nothing in check mode. ``validate`` is a command with ``%s`` that runs on the
    temporary file before it replaces ``dest``; a failing validation leaves ``dest`` as it was.
    """
    if current is None:
        current = read_text(dest)
    result = {"changed": current != content, "dest": dest}
    if module._diff:
        result["diff"] = {
            "before": current or "",
            "after": content,
            "before_header": dest if current is not None else "/dev/null",
            "after_header": dest,
        }
    if result["changed"] and not module.check_mode:
        directory = os.path.dirname(os.path.abspath(dest))
        if not os.path.isdir(directory):
            raise FileWriteError(f"destination directory {directory} does not exist")
        fd, tmp_path = tempfile.mkstemp(prefix=".aifactory-topology.", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(content)
            if validate:
                if "%s" not in validate:
                    raise FileWriteError(f"validate must contain %s for the file to check: {validate!r}")
                rc, out, err = module.run_command(validate % tmp_path)
                if rc != 0:
                    raise FileWriteError(
                        f"validation failed (rc={rc}) for {dest}, nothing was written:\n{(err or out).strip()}"
                    )
            if backup and current is not None:
                result["backup_file"] = module.backup_local(dest)
            # Keep the old file's mode unless the task sets one.
            os.chmod(tmp_path, os.stat(dest).st_mode & 0o7777 if current is not None else 0o644)
            module.atomic_move(tmp_path, dest, unsafe_writes=False)
        finally:
            if os.path.exists(tmp_path):
                os.unlink(tmp_path)
    file_args = module.load_file_common_arguments(module.params, path=dest)
    if os.path.exists(dest) or not module.check_mode:
        result["changed"] = module.set_fs_attributes_if_different(file_args, result["changed"],
                                                                  diff=None)
    return result
