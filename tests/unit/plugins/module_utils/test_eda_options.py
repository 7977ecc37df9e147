"""The event sources build the modules' options through the modules' one spec (issue 32, item 3).

A default changed in ``_base/scontrol.py`` is the same for the modules that run scontrol
(segment_capacity, slurm_topology) and for the slurm_nodes source; a default changed in the Kubernetes
connection spec (``_transport/k8s_auth.CONNECTION``) is the same for the Kubernetes modules and for the
k8s_nodes source: each path builds a real client (host and token given, so nothing is read and no request sent).
"""

from __future__ import annotations

import runpy
import types

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.aifactory.topology.extensions.eda.plugins.event_source import regenerate
from ansible_collections.aifactory.topology.plugins.module_utils._base.scontrol import SCONTROL, ScontrolOptions
from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import k8s_module
from ansible_collections.aifactory.topology.plugins.module_utils._transport.k8s_auth import CONNECTION, ConnectionOptions
from ansible_collections.aifactory.topology.plugins.modules import (
    k8s_node_annotations, k8s_node_labels, k8s_scheduler_topology, nfd_topology, segment_capacity, slurm_topology)
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


# -- the Kubernetes connection: the modules and the k8s_nodes source, one spec (_transport/k8s_auth.CONNECTION) --

K8S_NODES = REPO / "extensions/eda/plugins/event_source/k8s_nodes.py"
# host with a token: nothing else is read (no kubeconfig, no service account), no request is sent.
DIRECT = {"host": "https://127.0.0.1:6443", "api_key": "t0ken-for-the-options-test"}


def source_client(args):
    """The client the k8s_nodes source connects with, for its arguments ``args``: its own ``connect``."""
    source = runpy.run_path(str(K8S_NODES))
    return source["connect"](_eda.source_args(source["SOURCE"], args, source["SPEC"]))


def module_client(module, monkeypatch, args):
    """(client, write options) ``module`` connects with for the task arguments ``args``: its argument spec's values
    (defaults filled in by Ansible's validator, as AnsibleModule does) through ``k8s_module.connect``."""
    spec = module_argument_spec(module, monkeypatch)
    params = ArgumentSpecValidator(spec).validate(dict(args)).validated_parameters
    return k8s_module.connect(types.SimpleNamespace(params=params, check_mode=False))


def test_the_source_and_the_modules_connect_with_the_same_defaults_from_the_one_spec(monkeypatch):
    from_source = source_client(DIRECT)
    assert from_source.timeout == 60.0 and from_source.host == DIRECT["host"] and from_source.source == "host"
    for module in (k8s_node_labels, k8s_node_annotations, nfd_topology):
        client, writes = module_client(module, monkeypatch, DIRECT)
        assert (client.timeout, client.host, client.source) == (from_source.timeout, from_source.host, "host")
        assert (writes.concurrency, writes.conflict_retries, writes.check_mode) == (8, 5, False)
        assert client.api.configuration.connection_pool_maxsize == writes.concurrency


def test_a_connection_default_changed_in_the_spec_changes_on_both_paths(monkeypatch):
    monkeypatch.setitem(CONNECTION.argument_spec["request_timeout"], "default", 90.0)
    assert source_client(DIRECT).timeout == 90.0
    for module in (k8s_node_labels, k8s_scheduler_topology):
        assert module_client(module, monkeypatch, DIRECT)[0].timeout == 90.0
    # The regenerate endpoint's request_timeout is another concept (its deadline on its clients): its own default.
    assert regenerate.ENDPOINT.build({"token": "x"}).request_timeout == 10.0


def test_the_source_takes_the_auth_options_on_their_own_or_in_auth_and_the_modules_aliases():
    options = _eda.k8s_connection_options(_eda.source_args("src", {
        "auth": {"host": "https://in-auth", "api_key": "t0ken-in-auth", "verify_ssl": "no", "context": "c"},
        "host": "https://on-its-own", "request_timeout": 5}, _eda.K8S_CONNECTION_SPEC))
    assert options == ConnectionOptions(kubeconfig=None, context="c", host="https://on-its-own", api_key="t0ken-in-auth",
                                        validate_certs=False, ca_cert=None, client_cert=None, client_key=None,
                                        request_timeout=5.0)
    assert "t0ken" not in repr(options)
    with pytest.raises(_eda.TopologyError, match=r"src\.auth has unknown keys: hots; known: api_key, ca_cert"):
        _eda.source_args("src", {"auth": {"hots": "x"}}, _eda.K8S_CONNECTION_SPEC)
