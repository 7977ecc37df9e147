# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Variables as an Ansible argument spec types them, from the text that ``-e`` and AWX surveys give.

Ansible checks a role's meta/argument_specs.yml before the role's tasks, but keeps each value as
it was given: ``-e slurm_topology_admin_allow_groups=wheel`` stays the string ``wheel``, which a
task's ``join(',')`` wrote as ``w,h,e,e,l``. Tasks read the values typed here instead, where the
forms Ansible users pass are accepted:

- a list: a list; a comma-separated string (items stripped, empty ones dropped, so ``""`` is the
  empty list); JSON or YAML flow text (``["gpu", "debug"]``, ``[gpu, debug]``);
- a dict: a dict; JSON or YAML flow text (``{"gpu": "nvl72"}``); Ansible's ``key=value`` text;

then Ansible's own ArgumentSpecValidator converts the elements and checks every type, as the
role's validation did. Anything else is an error that names the variable.
"""

from __future__ import annotations


from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.aifactory.topology.plugins.module_utils._base import json_text
from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import clip


class VariableError(ValueError):
    """A variable that cannot be typed as its spec says; the message names the variable."""


def _from_text(name, value, kind):
    """A list or dict given as text, as a list or dict (other values are returned as they are)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    opener = "[" if kind == "list" else "{"
    if text.startswith(opener):
        try:
            parsed = json_text.loads(text)
        except ValueError:
            try:  # YAML flow, as people type it ([gpu, debug]); PyYAML reads JSON's surrogate pairs wrongly
                parsed = _yaml.safe_load(text)
            except _yaml.YAMLError as exc:
                raise VariableError(f"{name}: {clip(value)} starts like a {kind} but is not JSON or YAML: "
                                    f"{str(exc).splitlines()[0]}") from None
        if not isinstance(parsed, list if kind == "list" else dict):
            raise VariableError(f"{name} must be a {kind}, got {clip(value)}")
        return parsed
    if not text:
        return [] if kind == "list" else {}
    if kind == "list":
        return [item.strip() for item in text.split(",") if item.strip()]
    return value  # key=value text: Ansible's dict conversion reads it


def _plain(value):
    """``value`` as plain lists and dicts: the validator deep-copies its input, and Ansible 2.19's lazy
    containers template their items in that copy outside the templating context (their plugins then
    fail to load)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def typed_variables(values, spec, prefix=""):
    """``values`` (variable name -> value) typed by ``spec`` (name -> argument spec of that variable).

    The result is keyed by the names without ``prefix`` (``slurm_topology_block_sizes`` ->
    ``block_sizes`` for ``prefix='slurm_topology_'``).
    """
    if not isinstance(values, dict) or not isinstance(spec, dict):
        raise VariableError("typed_variables needs a mapping of variables and a mapping of their argument specs")
    unknown = sorted(str(name) for name in values if name not in spec)
    if unknown:
        raise VariableError(f"no argument spec for {', '.join(unknown)}")
    options = {name: dict(spec[name], required=False) for name in values}
    given = {name: _from_text(name, _plain(value), options[name].get("type"))
             for name, value in values.items() if value is not None}
    for name, value in given.items():
        if options[name].get("elements") == "str" and isinstance(value, list):
            # Ansible's str conversion would make [2] the text "[2]" and null the empty string.
            for index, item in enumerate(value):
                if item is None or isinstance(item, (list, dict)):
                    raise VariableError(f"{name}[{index}] must be a string, got {clip(item)}")
    result = ArgumentSpecValidator(options).validate(given, validate_role_argument_spec=True)
    if result.error_messages:
        raise VariableError("; ".join(result.error_messages))
    typed = result.validated_parameters
    return {name[len(prefix):] if prefix and name.startswith(prefix) else name: typed.get(name) for name in values}
