"""What the AWX and execution-environment tests share: the checkout as AWX clones it, a clean environment,
commands that must succeed, and the job events ansible-runner wrote."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ansible_run import REPO

AWX_SETUP = REPO / "docs" / "examples" / "awx_setup.yml"


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    assert result.returncode == 0, f"{shlex.join(map(str, command))} failed:\n{result.stdout}\n{result.stderr}"
    return result


def clean_env(**extra):
    """The environment without this checkout's collection (`make` points Ansible and Python at it)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("ANSIBLE_CONFIG", "PYTHONPATH", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["ANSIBLE_NOCOLOR"] = "1"
    env.update(extra)
    return env


def scm_checkout(dest):
    """The files a clone of this repository would have (tracked, plus new files not ignored)."""
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=REPO, capture_output=True, check=False)
    if listing.returncode != 0:
        pytest.fail(f"git cannot list the repository's files: {listing.stderr.decode().strip()}")
    for name in listing.stdout.decode().split("\0"):
        source = REPO / name
        if name and source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def job_events(artifacts):
    events = [json.loads(path.read_text()) for path in (artifacts / "job_events").glob("*.json")]
    return sorted(events, key=lambda event: event.get("counter", 0))
