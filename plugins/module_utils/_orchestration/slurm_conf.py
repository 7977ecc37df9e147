# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_conf: read slurm.conf and the files it includes, edit it (``_engines/slurm_conf``), validate and write it."""

from __future__ import annotations

import contextlib
import os

from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._engines.slurm_conf import (
    MAX_INCLUDED_BYTES, apply, restart_settings)
from ansible_collections.aifactory.topology.plugins.module_utils._writers.file import ensure_file, locked, read_text


class LocalFiles:
    """The included files on this host: regular files only, read without blocking (a FIFO named would hang)."""

    @staticmethod
    def read(path, where, max_bytes):
        return _input_file.read_text(path, where, max_bytes=max_bytes)

    @staticmethod
    def identity(path):
        return os.path.realpath(path)


LOCAL_FILES = LocalFiles()


def run(module):
    """What the module does: read slurm.conf, edit, validate and write it; exits the module."""
    path = module.params["path"]
    with failing_cleanly(module):
        # Read, edit and rename under the lock every writer of the collection takes (slurm_topology's on
        # topology.conf in the same directory too): a run never rewrites a slurm.conf another run just changed.
        with contextlib.nullcontext() if module.check_mode else locked(path):
            current = read_text(path, max_bytes=MAX_INCLUDED_BYTES)
            if current is None:
                raise TopologyError(f"{path} does not exist; this module edits settings in an existing slurm.conf")
            content, settings, partitions = apply(current, module.params["settings"], module.params["partitions"],
                                                  path=path, files=LOCAL_FILES)
            result = ensure_file(module, path, content, module.params["backup"], module.params["validate"],
                                 current=current)
    restart = restart_settings(settings)
    result.update(changed_settings=settings, changed_partitions=partitions, restart_settings=restart,
                  restart_required=bool(restart))
    module.exit_json(**result)
