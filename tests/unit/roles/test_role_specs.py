"""Each role's argument spec agrees with its defaults and with the modules its tasks pass options to.

A required option that defaults/main.yml sets is never checked (the default is always there); a
role option typed otherwise than the module option it is passed to refuses values the module
takes (an int role option refuses ``slurm_topology_max_node_loss: 2.5``).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ..plugins.modules.module_runner import module_argument_spec

ROLES = Path(__file__).resolve().parents[3] / "roles"
ROLE_NAMES = sorted(path.parent.parent.name for path in ROLES.glob("*/meta/argument_specs.yml"))
# A task argument that is a role option as it is, possibly through a type filter or dropped when empty.
PASSED_THROUGH = re.compile(r"^\{\{\s*(?P<option>\w+)(?:\s*\|\s*(?:bool|int|float))?"
                            r"(?:\s+if\s+(?P=option)\s*\|\s*length\s*>\s*0\s+else\s+omit|\s+or\s+omit)?\s*\}\}$")


def options(role):
    return yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]


def defaults(role):
    return yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()) or {}


def tasks(node):
    """Every task of a task file, those inside blocks included."""
    for task in node if isinstance(node, list) else []:
        yield task
        for section in ("block", "rescue", "always"):
            yield from tasks(task.get(section))


def passed_options(role):
    """(task file, module, module option, role option) for each role option a task passes to a module as it is."""
    for path in sorted((ROLES / role).glob("*/*.yml")):
        if path.parent.name not in ("tasks", "handlers"):
            continue
        for task in tasks(yaml.safe_load(path.read_text())):
            for action, arguments in task.items():
                if not action.startswith("aifactory.topology.") or not isinstance(arguments, dict):
                    continue
                for argument, value in arguments.items():
                    match = PASSED_THROUGH.match(value) if isinstance(value, str) else None
                    if match and match["option"] in options(role):
                        yield path.name, action.rsplit(".", 1)[1], argument, match["option"]


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_a_required_option_has_no_default(role):
    set_anyway = [name for name, option in options(role).items()
                  if option.get("required") and (name in defaults(role) or "default" in option)]
    assert set_anyway == []


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_the_defaults_are_the_spec_defaults_and_valid_for_it(role):
    spec = options(role)
    assert sorted(set(defaults(role)) - set(spec)) == []
    assert {name: value for name, value in defaults(role).items() if "default" in spec[name]} == {
        name: option["default"] for name, option in spec.items() if name in defaults(role)}
    unchecked = {name: {key: value for key, value in option.items() if key != "required"} for name, option in spec.items()}
    assert ArgumentSpecValidator(unchecked).validate(defaults(role)).error_messages == []


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_an_option_passed_to_a_module_has_the_module_option_type(role, monkeypatch):
    mismatched = []
    for task_file, module, argument, option in passed_options(role):
        plugin = importlib.import_module(f"ansible_collections.aifactory.topology.plugins.modules.{module}")
        module_type = module_argument_spec(plugin, monkeypatch)[argument].get("type", "str")
        role_type = options(role)[option].get("type", "str")
        if role_type not in (module_type, {"path": "str"}.get(module_type, module_type)):
            mismatched.append(f"{task_file}: {option} ({role_type}) -> {module}.{argument} ({module_type})")
    assert mismatched == []


def test_the_module_options_the_roles_pass_are_found():
    """The check above sees the options it is meant for (the role passes them as they are)."""
    found = {(module, argument, option) for role in ROLE_NAMES for _file, module, argument, option in passed_options(role)}
    assert ("slurm_topology", "max_node_loss", "slurm_topology_max_node_loss") in found
    assert ("segment_capacity", "min_share", "segment_report_min_share") in found
