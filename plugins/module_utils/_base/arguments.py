# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one check of a mapping of arguments against an Ansible argument spec, outside AnsibleModule.

Providers (params and creds), the inventory plugin's ``provider`` option and the Event-Driven
Ansible sources' arguments all go through ``validate``: Ansible's ``ArgumentSpecValidator`` (types,
choices, required, defaults, aliases, suboptions), unknown keys reported at every level in the one
wording of ``_errors.unknown_keys_message``, and one TopologyError for everything wrong:

    <prefix><where> has unknown keys: <keys>; known: <keys>
    <prefix><where>: <the validator's message>

joined with ``; ``. A value the validator quotes is masked (``********``) when it is a secret: every
value of a ``secret`` mapping (provider creds), and every value of an option marked ``no_log``.
"""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, unknown_keys_message

REDACTED = "********"


def _unknown_keys(value, spec, where, found):
    """(where, unknown keys, known keys) for every level of ``value`` that ``spec`` describes."""
    if not isinstance(value, dict):
        return found
    known = set(spec)
    for option in spec.values():
        known.update(option.get("aliases") or ())
    unknown = [key for key in value if key not in known]
    if unknown:
        found.append((where, unknown, spec))
    for key, option in spec.items():
        options, item = option.get("options"), value.get(key)
        if not options or item is None:
            continue
        if option.get("type") == "list" and isinstance(item, list):
            for index, element in enumerate(item):
                _unknown_keys(element, options, f"{where}.{key}[{index}]", found)
        else:
            _unknown_keys(item, options, f"{where}.{key}", found)
    return found


def _strings(value):
    """Every string inside ``value`` (what a masked message must not show)."""
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _strings(item)]
    return [str(value)] if value not in (None, "") and not isinstance(value, bool) else []


def _no_log_values(value, spec):
    """The strings given to options marked ``no_log``, at any depth of ``spec``."""
    if not isinstance(value, dict):
        return []
    found = []
    for key, option in spec.items():
        given = [value[name] for name in (key, *(option.get("aliases") or ())) if name in value]
        for item in given:
            if option.get("no_log"):
                found.extend(_strings(item))
            elif option.get("options"):
                for element in item if isinstance(item, list) else [item]:
                    found.extend(_no_log_values(element, option["options"]))
    return found


def validate(value, spec, where, prefix="", secret=False, none_is_unset=False):
    """``value`` (a mapping; None is empty) checked against ``spec``, defaults filled in.

    ``where`` names the mapping in messages (``params``, ``provider``, a source's name); ``prefix``
    comes before the whole message (``provider aws: ``); ``secret`` masks every value given;
    ``none_is_unset`` takes a known option given as None (YAML's ``~``, a template's ``default(None)``)
    as not given, so it gets its default.
    """
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise TopologyError(f"{prefix}{where} must be a mapping, got {type(value).__name__}")
    if none_is_unset:
        value = {key: item for key, item in value.items() if item is not None or key not in spec}
    messages = [unknown_keys_message(place, unknown, known) for place, unknown, known in _unknown_keys(value, spec, where, [])]
    result = ArgumentSpecValidator(spec).validate(value)
    # Unknown keys are reported above, per level, with the keys known there; the validator's own
    # messages may quote a value, and a secret one is masked.
    secrets = sorted(set(_strings(value) if secret else _no_log_values(value, spec)), key=len, reverse=True)
    for error in result.errors:
        if not isinstance(error, UnsupportedError):
            message = str(error)
            for text in secrets:
                message = message.replace(text, REDACTED)
            messages.append(f"{where}: {message}")
    if messages:
        raise TopologyError(prefix + "; ".join(messages))
    return result.validated_parameters


class ArgumentSpec:
    """One concern's options: the argument spec, its constraints and the doc fragment that documents it.

    As community.crypto's ``ArgumentSpec``: a module merges the concerns it takes
    (``PROVIDER.merge(RENDER, SHRINK_GUARD)``) and builds its AnsibleModule with
    ``**spec.module_kwargs()``; the constraints travel with their options, never spliced by hand.
    ``fragments`` names the doc fragments (``aifactory.topology.render.LAYOUT``, without the
    collection) that document exactly these options; ``options_class``, where the concern has one,
    is the dataclass its consumer (an engine) takes, built by ``build``: the defaults are stated
    here once, and a caller outside Ansible (a test, an event source) gets the same ones.

    ``checks``: what Ansible's constraint words cannot say in the collection's wording (a provider's
    ``preset`` that sets labels given too, two credentials that go together): functions of the
    checked values that return a message, or None. ``check`` runs them after the validator: the
    providers' params and creds are checked so (``_providers.validate``), with every unknown key an error.
    """

    CONSTRAINTS = ("mutually_exclusive", "required_one_of", "required_together", "required_if", "required_by")

    def __init__(self, argument_spec, fragments=(), options_class=None, checks=(), **constraints):
        unknown = set(constraints) - set(self.CONSTRAINTS)
        if unknown:
            raise TypeError(f"unknown constraints: {', '.join(sorted(unknown))}")
        self.argument_spec = dict(argument_spec)
        self.fragments = tuple(fragments)
        self.options_class = options_class
        self.checks = tuple(checks)
        self.constraints = {name: list(constraints.get(name) or ()) for name in self.CONSTRAINTS
                            if name != "required_by"}
        self.constraints["required_by"] = dict(constraints.get("required_by") or {})

    def merge(self, *others):
        """A new spec with the options and constraints of this one and ``others``; an option twice is an error."""
        merged = ArgumentSpec(self.argument_spec, self.fragments, checks=self.checks)
        merged.constraints = {name: list(value) if name != "required_by" else dict(value)
                              for name, value in self.constraints.items()}
        for other in others:
            twice = set(merged.argument_spec) & set(other.argument_spec)
            if twice:
                raise ValueError(f"options in two argument specs: {', '.join(sorted(twice))}")
            merged.argument_spec.update(other.argument_spec)
            merged.fragments += other.fragments
            merged.checks += other.checks
            for name, value in other.constraints.items():
                if name == "required_by":
                    merged.constraints[name].update(value)
                else:
                    merged.constraints[name].extend(value)
        return merged

    def module_kwargs(self):
        """``argument_spec`` and the constraints that are set, as AnsibleModule takes them."""
        kwargs = {"argument_spec": self.argument_spec}
        kwargs.update({name: value for name, value in self.constraints.items() if value})
        return kwargs

    def validate(self, params, where="options"):
        """This spec's options of ``params`` (a mapping that may hold other options too; an option by its alias
        too), checked, defaults filled in.

        Values already validated (a module's ``params``) come back unchanged; the constraints are
        checked by AnsibleModule (and, outside it, are the caller's: what an engine takes has none).
        """
        names = set(self.argument_spec)
        names.update(alias for option in self.argument_spec.values() for alias in option.get("aliases") or ())
        own = {key: value for key, value in (params or {}).items() if key in names}
        return validate(own, self.argument_spec, where, none_is_unset=True)

    def check(self, value, where, prefix="", secret=False):
        """``value`` (the whole mapping: a key not in the spec is an error) checked, defaults filled in, then ``checks``.

        ``where``, ``prefix`` and ``secret`` as for ``validate``; the checks' messages come after ``prefix`` too.
        """
        values = validate(value, self.argument_spec, where, prefix=prefix, secret=secret)
        problems = [message for message in (check(values) for check in self.checks) if message]
        if problems:
            raise TopologyError(prefix + "; ".join(problems))
        return values

    def build(self, params, where="options", **given):
        """The ``options_class`` instance of this spec's options in ``params``: the one way to build it.

        ``given``: what the options class takes besides this spec's options (values of another concern,
        already built), passed on as they are.
        """
        values = self.validate(params, where)
        return self.options_class(**{key: values.get(key) for key in self.argument_spec}, **given)
