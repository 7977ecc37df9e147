# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading an input file an operator named (a model, saved ibnetdiscover output): regular files only.

A FIFO, socket or device would block the module forever (or feed it endless data), so the file
is opened without blocking and checked on the open descriptor before anything is read. The
text must be UTF-8; an error names the file and the byte offset, never quotes the content.
"""

from __future__ import annotations

import os
import stat

from ansible_collections.aifactory.topology.plugins.module_utils._errors import LocalFileError, clip


class InputFileError(LocalFileError):
    """An input file that cannot be used; the message names the file and why."""


def read_text(path, what, max_bytes=None):
    """The UTF-8 text of the regular file ``path``; ``what`` names the option in errors."""
    if not isinstance(path, str) or not path or "\x00" in path:  # os.open raises ValueError on a NUL
        raise InputFileError(f"{what} must be the path of a file, got {clip(path)}")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise InputFileError(f"{what} {path!r}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(f"{what} {path!r} is not a regular file ({file_kind(info.st_mode)}); "
                                 "only regular files are read")
        if max_bytes is not None and info.st_size > max_bytes:
            raise InputFileError(f"{what} {path!r} is larger than {max_bytes} bytes")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError as exc:
        raise InputFileError(f"{what} {path!r}: {exc.strerror}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFileError(f"{what} {path!r} is not UTF-8 text (line {line}, byte {exc.start})") from None


def file_kind(mode):
    """What a non-regular file is, for messages: ``a FIFO``, ``a character device``, ..."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"
