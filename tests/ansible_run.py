"""The one way tests find and run Ansible's command-line tools.

``tool("ansible-playbook")`` is the project's .venv copy (the one whose Python has boto3, grpcio,
kubernetes and the 'ansible' package's collections): the one beside the interpreter running the
tests, else the checkout's .venv/bin, else PATH. A missing tool is an error, never a skip: it is
installed by `make venv` from tests/requirements.txt.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def tool(name):
    """Full path of an executable of the project's environment; raises FileNotFoundError when there is none."""
    for candidate in (Path(sys.executable).with_name(name), REPO / ".venv" / "bin" / name):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} is neither beside {sys.executable}, nor in {REPO / '.venv' / 'bin'}, "
                                f"nor on PATH: run `make venv` (it is in tests/requirements.txt)")
    return found


ANSIBLE_PLAYBOOK = tool("ansible-playbook")


def ansible_env(**extra):
    """The environment for a playbook run: this checkout's ansible.cfg, no colours, plus ``extra``."""
    return dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", **extra)


def run_playbook(*args, env=None, cwd=REPO, timeout=None):
    """subprocess.CompletedProcess of ``ansible-playbook *args``."""
    return subprocess.run([ANSIBLE_PLAYBOOK, *map(str, args)], capture_output=True, text=True,
                          env=env or ansible_env(), cwd=cwd, check=False, timeout=timeout)


def recap(stdout, host):
    """(changed, failed) from the PLAY RECAP line of ``host``; (None, None) when there is none."""
    match = re.search(rf"^{re.escape(host)}\s+: ok=\d+\s+changed=(\d+).*failed=(\d+)", stdout, re.M)
    return (int(match.group(1)), int(match.group(2))) if match else (None, None)
