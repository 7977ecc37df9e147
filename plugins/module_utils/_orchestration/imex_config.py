# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""imex_config: a node's two IMEX files, config.cfg and nodes_config.cfg, in one task."""

from __future__ import annotations

import os

from ansible_collections.aifactory.topology.plugins.module_utils._base import command
from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    AifactoryTopologyError,
    TopologyError,
    failing_cleanly,
)
from ansible_collections.aifactory.topology.plugins.module_utils._engines.imex import (
    driver_branch,
    render_config,
    render_nodes_config,
)
from ansible_collections.aifactory.topology.plugins.module_utils._writers.file import FileWriteError, ensure_file

NVIDIA_SMI_TIMEOUT = 60
MAX_VERSION_FILE = 64 * 1024  # /proc/driver/nvidia/version is two lines


def _directories(module, paths):
    """Create the missing parent directories of ``paths`` (mode 0755); the list of those made (or that
    would be, in check mode)."""
    made = []
    for path in paths:
        directory = os.path.dirname(os.path.abspath(path))
        missing = []
        while directory and not os.path.isdir(directory):
            if os.path.lexists(directory):
                raise FileWriteError(f"{directory} exists and is not a directory; nothing was written")
            missing.append(directory)
            directory = os.path.dirname(directory)
        for directory in reversed(missing):
            if directory in made:
                continue
            made.append(directory)
            if not module.check_mode:
                try:
                    os.mkdir(directory, 0o755)
                    os.chmod(directory, 0o755)  # whatever the umask
                except FileExistsError:
                    if not os.path.isdir(directory):  # made meanwhile by another process: fine if a directory
                        raise FileWriteError(f"{directory} exists and is not a directory; nothing was written") from None
                except OSError as exc:
                    raise FileWriteError(f"cannot create {directory}: {exc.strerror}; nothing was written") from None
    return made


def _driver(params):
    """The driver branch and where it came from, in the same process as the files (one module run a node):
    the driver's version file when it can be read, else nvidia-smi's answer; a driver that cannot be
    read is not an error (the branch is then '')."""
    version_file, nvidia_smi = params["driver_version_file"], params["nvidia_smi_command"]
    if version_file:
        try:
            text = _input_file.read_text(version_file, "driver_version_file", max_bytes=MAX_VERSION_FILE)
        except _input_file.InputFileError:  # no driver loaded (no file), or not a version file: ask nvidia-smi
            text = None
        if text is not None:
            return {"branch": driver_branch(text), "origin": version_file}
    if nvidia_smi:
        try:
            _rc, out, _err = command.run_text(nvidia_smi, timeout=NVIDIA_SMI_TIMEOUT)
        except AifactoryTopologyError:  # not installed, hung, not UTF-8: no branch, as from no answer
            out = ""
        return {"branch": driver_branch(out, from_nvidia_smi=True), "origin": "nvidia-smi"}
    return {"branch": "", "origin": None}


def run(module):
    """What the module does; exits the module."""
    params = module.params
    with failing_cleanly(module):
        try:
            config = render_config(params["config"], params["domain"], params["nodes_config_path"])
        except ValueError as exc:
            raise TopologyError(str(exc)) from None
        nodes_config = render_nodes_config(params["addresses"])
        made = _directories(module, [params["config_path"], params["nodes_config_path"]])
        files = {}
        diffs = []
        # The peer list first: a daemon restarted between the two writes never reads a config.cfg
        # that names a peer file not written yet.
        for name, dest, content in (("nodes_config", params["nodes_config_path"], nodes_config),
                                    ("config", params["config_path"], config)):
            written = ensure_file(module, dest, content)
            if "diff" in written:
                diffs.append(written.pop("diff"))
            files[name] = written
        result = {
            "changed": bool(made) or any(written["changed"] for written in files.values()),
            "directories": made,
            "nodes_config": files["nodes_config"],
            "config": files["config"],
        }
        if params["driver_version_file"] or params["nvidia_smi_command"]:
            result["driver"] = _driver(params)
        if module._diff:
            result["diff"] = diffs
    module.exit_json(**result)
