"""Every list and dict variable of every role is read as its argument spec types it.

Ansible checks meta/argument_specs.yml before a role's tasks but keeps the values as given, so
`-e slurm_topology_admin_allow_groups=wheel` stayed the string `wheel` (written `AllowGroups=w,h,e,e,l`).
Each role types its list and dict variables in its first task (the filter
aifactory.topology.typed_variables, into `<role>__args`); this checks that the task types every one
of them, and that no task, handler, template or vars file reads one untyped. The conversion itself
is tested in tests/unit/plugins/filter/test_typed_variables.py, the role runs with `-e` strings in
tests/integration/test_role_variables_as_text.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
ROLE_NAMES = sorted(path.name for path in ROLES.iterdir() if (path / "meta" / "argument_specs.yml").exists())


def structured_options(role):
    spec = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())
    return sorted(name for name, option in spec["argument_specs"]["main"]["options"].items()
                  if option.get("type") in ("list", "dict"))


def typing_task(role):
    tasks = yaml.safe_load((ROLES / role / "tasks" / "main.yml").read_text())
    first = tasks[0]
    if "block" in first:  # a block around every task (the run's metrics in its always): its first task
        first = first["block"][0]
    assert "typed_variables" in str(first), f"{role}: the first task of tasks/main.yml must type the variables"
    return first


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_the_first_task_types_every_list_and_dict_variable(role):
    expression = typing_task(role)["ansible.builtin.set_fact"][f"{role}__args"]
    typed = sorted(re.findall(r"'(\w+)': \1\b", expression))
    assert typed == structured_options(role)
    assert f"'{role}_')" in expression  # the prefix, so tasks read {role}__args.<name without it>


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_no_file_of_the_role_reads_a_list_or_dict_variable_untyped(role):
    names = structured_options(role)
    raw = re.compile(r"(?<![\w.'\"])(" + "|".join(map(re.escape, names)) + r")\b(?![:'\"]| is (not )?defined)")
    found = []
    for path in sorted(ROLES.glob(f"{role}/**/*")):
        if not path.is_file() or "meta" in path.relative_to(ROLES / role).parts or path.suffix not in (".yml", ".j2"):
            continue
        if path.relative_to(ROLES / role).parts[0] == "defaults":
            continue
        text = path.read_text()
        if path.parent == ROLES / role / "tasks" and path.stem in entry_points(role):
            text = text.replace(typing_task_text(role, path.stem), "")
        for number, line in enumerate(text.splitlines(), start=1):
            code = line.split("#", 1)[0] if path.suffix == ".yml" else line
            # Messages may name a variable for the user (inside quotes), never read it.
            code = re.sub(r"\"[^\"]*\"|'[^']*'", "''", code)
            if raw.search(code):
                found.append(f"{path.relative_to(ROLES)}:{number}: {line.strip()}")
    assert found == []


def entry_points(role):
    return yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]


def typing_task_text(role, entry="main"):
    """The typing task of an entry point's task file (each types what it reads, as main does); '' if none."""
    text = (ROLES / role / "tasks" / f"{entry}.yml").read_text()
    if "- name: Type the list and dict variables" not in text:
        return ""
    start = text.index("- name: Type the list and dict variables")
    indent = text[text.rindex("\n", 0, start) + 1:start]  # the task may sit in a block
    end = text.index(f"\n{indent}- name:", start + 1)
    return text[start:end]
