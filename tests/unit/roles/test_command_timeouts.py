"""Every command a role or playbook runs has a time limit (the task keyword ``timeout``).

The modules run their commands through one runner with a timeout (plugins/module_utils/_base/command.py);
the tasks that call ``ansible.builtin.command`` or ``shell`` directly (scontrol, squeue, nvidia-smi,
nvidia-imex-ctl, stat, mknod) are bounded by Ansible's ``timeout`` keyword instead (docs/security.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
COMMAND_MODULES = {"ansible.builtin.command", "ansible.builtin.shell", "command", "shell"}
FILES = sorted([*REPO.glob("roles/*/tasks/*.yml"), *REPO.glob("roles/*/handlers/*.yml"), *REPO.glob("playbooks/*.yml")])


def command_tasks(data):
    """(name, task) of every task in ``data`` (a task file or a playbook) that runs a command module."""
    if isinstance(data, list):
        for item in data:
            yield from command_tasks(item)
    elif isinstance(data, dict):
        if COMMAND_MODULES & data.keys():
            yield data.get("name", "?"), data
        for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            yield from command_tasks(data.get(key))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_command_task_has_a_timeout(path):
    untimed = [name for name, task in command_tasks(yaml.safe_load(path.read_text(encoding="utf-8")))
               if not isinstance(task.get("timeout"), int) or task["timeout"] <= 0]
    assert untimed == [], f"{path.relative_to(REPO)}: command tasks without a timeout"


def test_the_check_finds_a_command_nested_in_a_block():
    play = [{"hosts": "x", "tasks": [{"block": [{"name": "inner", "ansible.builtin.command": {"argv": ["true"]}}]}]}]
    assert [name for name, _task in command_tasks(play)] == ["inner"]
