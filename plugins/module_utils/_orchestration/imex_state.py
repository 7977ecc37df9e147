# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""imex_state: the IMEX applied-state file updated under its lock, compared with what the plan read."""

from __future__ import annotations

import contextlib
import json
import os

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import failing_cleanly
from ansible_collections.aifactory.topology.plugins.module_utils._engines.imex import (
    STATE_FORMAT,
    merge_applied,
    read_applied,
)
from ansible_collections.aifactory.topology.plugins.module_utils._writers.file import (
    FileWriteError,
    ensure_file,
    locked,
    read_text,
)

MAX_STATE_BYTES = 16 * 1024 * 1024  # a digest a domain: far above any fleet


def _digests(value, name):
    if not isinstance(value, dict) or not all(isinstance(key, str) and isinstance(digest, str)
                                              for key, digest in value.items()):
        raise FileWriteError(f"{name} must map each NVLink domain to its digest (text)")
    return dict(value)


def run(module):
    """What the module does; exits the module."""
    params = module.params
    with failing_cleanly(module):
        path = params["path"]
        read = _digests(params["read"], "read")
        after = _digests(params["after"], "after")
        directory = os.path.dirname(os.path.abspath(path))
        made = False
        if not os.path.isdir(directory) and merge_applied({}, read, after)[0] and not module.check_mode:
            try:
                os.makedirs(directory, mode=0o700)
            except OSError as exc:
                raise FileWriteError(f"cannot create {directory}: {exc.strerror}") from None
            made = True
        # Check mode writes nothing and so takes no lock. Otherwise read, merge and write under one hold: a
        # second imex.yml run waits, then sees this run's record. No directory: no file, and nothing to record.
        hold = locked(path) if os.path.isdir(directory) and not module.check_mode else contextlib.nullcontext()
        with hold:
            text = read_text(path, max_bytes=MAX_STATE_BYTES) if os.path.isdir(directory) else None
            current, problem = read_applied(text)
            domains, conflicts = merge_applied(current, read, after)
            written = {"changed": False}
            if problem is not None or domains != current:
                content = json.dumps({"format": STATE_FORMAT, "domains": domains}, indent=4, sort_keys=True) + "\n"
                written = ensure_file(module, path, content, current=text)
        for domain in conflicts:
            module.warn(f"IMEX domain {domain} was recorded by another run since this one planned it: it is left "
                        "unrecorded, so the next run visits it")
        result = {"changed": made or written["changed"], "domains": domains, "conflicts": conflicts,
                  "state_problem": problem}
    module.exit_json(**result)
