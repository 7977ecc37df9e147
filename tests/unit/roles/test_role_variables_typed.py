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


# The filters that type a role's variables: typed_variables, and imex_settings (typed_variables and the imex
# role's checks in the same task, so that a node pays for one task).
TYPING = ("typed_variables", "imex_settings")


def tasks_of(path):
    """The tasks of a task file, those inside a block included."""
    tasks = []
    for task in yaml.safe_load(path.read_text()) or []:
        tasks.extend(task["block"] if "block" in task else [task])
    return tasks


def typing_tasks(role):
    """(file stem, task) of every task of the role that types variables: main's first such task first."""
    found = []
    for path in sorted((ROLES / role / "tasks").glob("*.yml"), key=lambda path: path.stem != "main"):
        found += [(path.stem, task) for task in tasks_of(path) if any(name in str(task) for name in TYPING)]
    return found


def typing_task(role):
    main = [task for stem, task in typing_tasks(role) if stem == "main"]
    assert main, f"{role}: tasks/main.yml must type the variables"
    first = tasks_of(ROLES / role / "tasks" / "main.yml").index(main[0])
    # Before it, at most a task that reads no list or dict variable (imex: the network facts its address needs).
    assert first <= 1, f"{role}: the variables must be typed before the tasks that read them"
    return main[0]


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_the_first_task_types_every_list_and_dict_variable(role):
    expression = typing_task(role)["ansible.builtin.set_fact"][f"{role}__args"]
    assert f"'{role}_')" in expression or "imex_settings" in expression  # tasks read {role}__args.<name without the prefix>
    # Every one typed: in that task, or (a value the same for the play, such as imex's topology model) once for the
    # play in a run-once task of main's path.
    typed = set()
    for stem, task in typing_tasks(role):
        if stem == "main" or (stem not in entry_points(role) and task.get("run_once")):
            typed.update(typed_names(role, str(task["ansible.builtin.set_fact"])))
    assert sorted(typed) == structured_options(role)


def typed_names(role, expression):
    """The variables an expression types: named one by one (``{'x': x, ...}``), or every option of a spec variable of
    the role's vars/main.yml (``{role}__node_options``: the main entry point's options but those it rejects) read
    with the vars lookup."""
    names = set(re.findall(r"'(\w+)': \1\b", expression))
    for spec_var in re.findall(rf"\b({role}__\w+_options)\b", expression):
        if "query('ansible.builtin.vars'" in expression:
            definition = yaml.safe_load((ROLES / role / "vars" / "main.yml").read_text())[spec_var]
            assert definition.startswith(f"{{{{ {role}__argument_options"), definition
            names.update(set(structured_options(role)) - set(re.findall(r"'equalto', '(\w+)'", definition)))
    return names


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
        if path.parent == ROLES / role / "tasks":
            text = without_typing_tasks(text)
        for number, line in enumerate(text.splitlines(), start=1):
            code = line.split("#", 1)[0] if path.suffix == ".yml" else line
            # Messages may name a variable for the user (inside quotes), never read it.
            code = re.sub(r"\"[^\"]*\"|'[^']*'", "''", code)
            if raw.search(code):
                found.append(f"{path.relative_to(ROLES)}:{number}: {line.strip()}")
    assert found == []


def entry_points(role):
    return yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]


def without_typing_tasks(text):
    """A task file's text without its typing tasks (the tasks named ``Type ...``, each typing what it reads)."""
    kept, skipping, indent = [], False, ""
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("- name:"):
            skipping = stripped.startswith("- name: Type ")
            indent = line[:len(line) - len(stripped)]
        elif skipping and line.strip() and not line.startswith(indent + " ") and not line.startswith("#"):
            skipping = False
        kept.append("" if skipping else line)
    return "\n".join(kept)
