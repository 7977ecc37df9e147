"""Running ansible-playbook from tests: the one that sits beside this interpreter, with the repo's config."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The venv's ansible-playbook (with the 'ansible' package's collections), whatever PATH says.
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))


def ansible_env(**extra):
    return dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", **extra)


def run_playbook(*args, env=None, cwd=REPO):
    """subprocess.CompletedProcess of ``ansible-playbook *args``."""
    return subprocess.run([ANSIBLE_PLAYBOOK, *map(str, args)], capture_output=True, text=True,
                          env=env or ansible_env(), cwd=cwd, check=False)


def recap(stdout, host):
    """(changed, failed) from the PLAY RECAP line of ``host``; (None, None) when there is none."""
    match = re.search(rf"^{re.escape(host)}\s+: ok=\d+\s+changed=(\d+).*failed=(\d+)", stdout, re.M)
    return (int(match.group(1)), int(match.group(2))) if match else (None, None)
