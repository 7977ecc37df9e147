"""The slurm_nodes event source builds the modules' scontrol options through their one spec (issue 32, item 3).

A default changed in ``_base/scontrol.py`` is the same for the modules that run scontrol
(segment_capacity, slurm_topology) and on the event path.
"""

from __future__ import annotations

import runpy

from ansible_collections.aifactory.topology.plugins.module_utils._base.scontrol import SCONTROL, ScontrolOptions
from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
from ansible_collections.aifactory.topology.plugins.modules import segment_capacity, slurm_topology
from tests.unit.plugins.modules.module_runner import module_argument_spec
from ...conftest_paths import REPO

SOURCE = REPO / "extensions/eda/plugins/event_source/slurm_nodes.py"


def source_scontrol_options(args):
    """What the slurm_nodes source runs scontrol with, for its arguments ``args``."""
    source = runpy.run_path(str(SOURCE))
    return _eda.scontrol_options(_eda.source_args(source["SOURCE"], args, source["SPEC"]))


def module_scontrol_options(module, monkeypatch):
    """What ``module`` runs scontrol with when the task gives no scontrol option: its spec's defaults, built."""
    spec = module_argument_spec(module, monkeypatch)
    defaults = {name: spec[name]["default"] for name in ("scontrol_path", "scontrol_timeout")}
    return SCONTROL.build(defaults)


def test_the_source_and_the_modules_get_the_same_scontrol_defaults_from_the_one_spec(monkeypatch):
    from_source = source_scontrol_options({})
    assert from_source == ScontrolOptions("scontrol", 60.0, ("scontrol",))
    for module in (segment_capacity, slurm_topology):
        from_module = module_scontrol_options(module, monkeypatch)
        assert from_module == ScontrolOptions("scontrol", 60.0)
        assert from_module.scontrol_timeout == from_source.scontrol_timeout
        assert from_module.command("show", "nodes", "--json") == from_source.command("show", "nodes", "--json")


def test_a_default_changed_in_the_spec_changes_on_both_paths(monkeypatch):
    monkeypatch.setitem(SCONTROL.argument_spec["scontrol_timeout"], "default", 90.0)
    assert source_scontrol_options({}).scontrol_timeout == 90.0
    assert module_scontrol_options(segment_capacity, monkeypatch).scontrol_timeout == 90.0


def test_the_source_keeps_its_own_names_and_command_line():
    options = source_scontrol_options({"scontrol": ["ssh", "ctl", "scontrol"], "command_timeout": 5})
    assert options.scontrol_timeout == 5.0
    assert options.command("show", "nodes", "--json") == ["ssh", "ctl", "scontrol", "show", "nodes", "--json"]
