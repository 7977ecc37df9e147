"""Run a module's main() in-process and capture what it returns (exit_json/fail_json)."""

from __future__ import annotations

import contextlib
import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes

try:  # ansible-core 2.19+
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core 2.17, 2.18 (make compat): the arguments are read from basic._ANSIBLE_ARGS

    @contextlib.contextmanager
    def patch_module_args(args):
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved


class ModuleExit(SystemExit):
    """What exit_json and fail_json raise here; SystemExit, as theirs do, so a module's ``except Exception`` lets it pass."""

    def __init__(self, result, failed):
        super().__init__(result)
        self.result = result
        self.failed = failed


def run_module(module, args, check_mode=False, diff=False, monkeypatch=None):
    """The module's result dict; result['failed'] is True when it called fail_json."""
    args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)

    def exit_json(self, **kwargs):
        raise ModuleExit(kwargs, False)

    def fail_json(self, msg, **kwargs):
        raise ModuleExit(dict(kwargs, msg=msg), True)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, text: warnings.append(text))
    with patch_module_args(json.loads(json.dumps(args))):
        with pytest.raises(ModuleExit) as info:
            module.main()
    result = dict(info.value.result, failed=info.value.failed, warnings=warnings)
    return result


class _ArgumentSpec(Exception):
    """Raised by AnsibleModule() in place of parsing arguments: carries the module's argument spec."""


def module_argument_spec(module, monkeypatch):
    """The argument spec the module's main() gives AnsibleModule, without running the module."""
    def capture(self, argument_spec, **kwargs):
        raise _ArgumentSpec(argument_spec)
    with monkeypatch.context() as patch:
        patch.setattr(basic.AnsibleModule, "__init__", capture)
        with pytest.raises(_ArgumentSpec) as info:
            module.main()
    return info.value.args[0]
