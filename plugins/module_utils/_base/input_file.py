# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading an input file an operator named (a model, saved ibnetdiscover output): regular files only.

Every input file is read here. A FIFO, socket or device would block the module forever (or feed
it endless data), so the file is opened without blocking and checked on the open descriptor
before anything is read. The text must be UTF-8; an error names the file and the byte offset,
never quotes the content.
"""

from __future__ import annotations

import errno
import os
import stat

from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import LocalFileError, clip


class InputFileError(LocalFileError):
    """An input file that cannot be used; the message names the file and why."""


def read_text(path, what, path_is_secret=False, max_bytes=None, follow=True):
    """The UTF-8 text of the regular file ``path``; ``what`` names the option in errors.

    ``path_is_secret``: a credential's path, left out of messages (creds values never reach one).
    ``max_bytes``: a file that holds more is refused (sysfs values, whose size says nothing).
    ``follow``: False refuses a symbolic link at ``path`` (``O_NOFOLLOW``): the writer resolves links itself.
    """
    if not isinstance(path, str) or not path or "\x00" in path:  # os.open raises ValueError on a NUL
        raise InputFileError(f"{what} must be the path of a file" + ("" if path_is_secret else f", got {clip(path)}"))
    shown = what if path_is_secret else f"{what} {path!r}"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                     | (0 if follow else os.O_NOFOLLOW))
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise InputFileError(f"{shown} is a symbolic link; it is not followed") from None
        raise InputFileError(f"{shown}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(f"{shown} is not a regular file ({file_kind(info.st_mode)}); only regular files are read")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                raise InputFileError(f"{shown} holds more than {max_bytes} bytes")
            chunks.append(chunk)
    except OSError as exc:
        raise InputFileError(f"{shown}: {exc.strerror}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFileError(f"{shown} is not UTF-8 text (line {line}, byte {exc.start})") from None


def read_yaml(path, what):
    """The data of the YAML (or JSON, which is YAML) file ``path``, read by read_text."""
    text = read_text(path, what)
    try:
        return _yaml.safe_load(text)
    except _yaml.PyYAMLMissing as exc:  # the one policy of a host without PyYAML: see _base/yaml.py
        raise InputFileError(f"{what} {path!r}: {exc}") from None
    except _yaml.YAMLError as exc:
        raise InputFileError(f"{what} {path!r} is not valid YAML: {exc}") from None


def file_kind(mode):
    """What a non-regular file is, for messages: ``a FIFO``, ``a character device``, ..."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"
