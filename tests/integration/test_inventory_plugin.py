"""The aifactory.topology.topology inventory plugin, through the real ansible-inventory.

Sources are configuration files written by each test: a provider (simulation, inventory), a
model file (the compact form topology_info returns, a Topograph model), Constructable options
and the jsonfile cache. Failures must fail the parse with the provider's message, with the setting docs/inventory.md
asks for and with the environment AWX gives an inventory update.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml

from tests.ansible_run import REPO, ansible_env, tool

ANSIBLE_INVENTORY = tool("ansible-inventory")
EXAMPLE_SOURCE = REPO / "inventories" / "topology" / "example.topology.yml"
MODELS = REPO / "tests" / "fixtures" / "topograph"
# What docs/inventory.md asks for: a source that fails to parse is fatal.
FATAL = {"ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "true"}
# What AWX sets for every inventory update (awx/main/constants.py STANDARD_INVENTORY_UPDATE_ENV).
AWX_INVENTORY_ENV = {"ANSIBLE_INVENTORY_UNPARSED_FAILED": "True", "ANSIBLE_INVENTORY_EXPORT": "True",
                     "ANSIBLE_VERBOSE_TO_STDERR": "True"}


def inventory(source, *args, env=None, cwd=REPO):
    return subprocess.run([ANSIBLE_INVENTORY, "-i", str(source), *args], capture_output=True, text=True,
                          env=ansible_env(**(env or {})), cwd=cwd, check=False)


def plain(data):
    """--list output without the ``__ansible_unsafe`` wrappers: the plugin's values are data, never templates."""
    if isinstance(data, dict):
        if set(data) == {"__ansible_unsafe"}:
            return data["__ansible_unsafe"]
        return {key: plain(value) for key, value in data.items()}
    if isinstance(data, list):
        return [plain(item) for item in data]
    return data


def listing(source, **kwargs):
    result = inventory(source, "--list", **kwargs)
    assert result.returncode == 0, result.stderr
    return plain(json.loads(result.stdout))


def members(data, group):
    return data.get(group, {}).get("hosts", [])


def write_source(path, **config):
    path.write_text(yaml.safe_dump({"plugin": "aifactory.topology.topology", **config}, sort_keys=False))
    return path


def test_example_source_graph_shows_the_fabric():
    result = inventory(EXAMPLE_SOURCE, "--graph")
    assert result.returncode == 0, result.stderr
    graph = result.stdout
    # core -> spine01 -> leaf01 -> rack01's first node, indented one level per tier.
    assert "  |--@switch_core:\n" in graph
    assert "  |  |--@switch_spine01:\n  |  |  |--@switch_leaf01:\n  |  |  |  |--gb200-r01-n01\n" in graph
    assert "  |--@domain_rack05:\n" in graph and "gb200-r05-n13" not in graph  # the tray out for repair
    data = listing(EXAMPLE_SOURCE)
    assert len(members(data, "domain_rack01")) == 18
    assert members(data, "domain_rack07") == []  # declared, not racked yet
    assert data["switch_spine02"]["children"] == ["switch_leaf03", "switch_leaf04"]
    hostvars = data["_meta"]["hostvars"]
    assert len(hostvars) == 18 * 6 + 17 + 4
    assert hostvars["gb200-r05-n14"] == {"ansible_connection": "local", "topology_domain": "rack05",
                                         "topology_sub_domain": None,
                                         "topology_switches": ["leaf03", "spine02", "core"]}
    assert hostvars["login01"]["topology_domain"] is None


def test_example_model_file_is_what_the_example_provider_discovers():
    """inventories/topology/example-model.json must not drift from inventories/example."""
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover

    provider = yaml.safe_load((REPO / "inventories/example/group_vars/all/topology.yml").read_text())["topology_provider"]
    model = json.loads((EXAMPLE_SOURCE.parent / "example-model.json").read_text())
    assert discover(provider["name"], provider["params"]).to_compact() == model


def test_provider_source_with_constructable_options(tmp_path):
    source = write_source(
        tmp_path / "cluster.topology.yml",
        provider={"name": "inventory", "params": {
            "switches": {"spine": None, "leaf-a": "spine", "leaf-b": "spine"},
            "domains": [{"name": "nvl-r01", "nodes": "gpu[01-02]", "switch": "leaf-a"},
                        {"name": "nvl-r02", "nodes": "gpu[03-04]", "switch": "leaf-b"}]}},
        domain_prefix="rack_", switch_prefix="sw_",
        compose={"ansible_host": "inventory_hostname ~ '.cluster.example'"},
        groups={"first_rack": "topology_domain == 'nvl-r01'"},
        keyed_groups=[{"key": "topology_switches[0]", "prefix": "leaf"}],
        strict=True)
    data = listing(source)
    assert members(data, "rack_nvl_r01") == ["gpu01", "gpu02"]
    assert data["sw_spine"]["children"] == ["sw_leaf_a", "sw_leaf_b"]
    assert members(data, "first_rack") == ["gpu01", "gpu02"]
    assert members(data, "leaf_leaf_b") == ["gpu03", "gpu04"]
    assert data["_meta"]["hostvars"]["gpu03"]["ansible_host"] == "gpu03.cluster.example"


def test_topograph_model_file_and_a_strict_compose_error(tmp_path):
    source = write_source(tmp_path / "sim.topology.yaml", model_path=str(MODELS / "medium.yaml"))
    data = listing(source)
    assert members(data, "domain_nvl2") == ["1201", "1202"]
    assert data["_meta"]["hostvars"]["1202"]["topology_switches"] == ["sw12", "sw21", "sw3"]
    strict = write_source(tmp_path / "strict.topology.yaml", model_path=str(MODELS / "medium.yaml"),
                          compose={"x": "no_such_variable.y"}, strict=True)
    result = inventory(strict, "--list", env=FATAL)
    assert result.returncode != 0 and "no_such_variable" in result.stderr


@pytest.mark.parametrize("env", [{"ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "true"}, AWX_INVENTORY_ENV],
                         ids=["any-unparsed-is-failed", "awx-inventory-update"])
def test_a_provider_failure_fails_the_parse_with_the_providers_message(tmp_path, env):
    source = write_source(tmp_path / "cluster.topology.yml",
                          provider={"name": "inventory", "params": {"domains": [{"name": "r1", "nodes": "gpu[01-"}]}})
    result = inventory(source, "--list", env=env)
    assert result.returncode != 0, result.stdout
    assert "params.domains[0].nodes" in result.stderr
    assert "gpu01" not in result.stdout
    unknown = write_source(tmp_path / "unknown.topology.yml", provider={"name": "nope"})
    result = inventory(unknown, "--graph", env=env)
    assert result.returncode != 0 and "unknown provider 'nope'; known providers:" in result.stderr


def test_colliding_group_names_fail_naming_both(tmp_path):
    source = write_source(tmp_path / "cluster.topology.yml", provider={"name": "inventory", "params": {
        "domains": [{"name": "nvl-r01", "nodes": "a"}, {"name": "nvl.r01", "nodes": "b"}]}})
    result = inventory(source, "--list", env=FATAL)
    assert result.returncode != 0
    assert "domain 'nvl-r01' and domain 'nvl.r01' both become group 'domain_nvl_r01'" in result.stderr


SPECIAL_NAMES = ["127.0.0.1", "localhost", "all", "ungrouped", "domain_rack02", "leaf_rack02"]


def test_nodes_ansible_treats_specially_are_skipped_each_with_a_warning(tmp_path):
    """An HCA described ``127.0.0.1 mlx5_5``, a node named like a group or like Ansible's own groups:
    the rest of the rack is the inventory, and each skipped node is named once."""
    model = {"format": "aifactory.topology/v1", "switches": {"rack02": None},
             "nodes": [{"nodes": ["gb200-r02-n01", "gb200-r02-n02", *SPECIAL_NAMES], "switch": "rack02",
                        "domain": "rack02"}]}
    (tmp_path / "model.json").write_text(json.dumps(model))
    source = write_source(tmp_path / "cluster.topology.yml", model_path="model.json",
                          keyed_groups=[{"key": "topology_switches[0]", "prefix": "leaf"}])
    result = inventory(source, "--list", env=FATAL)
    assert result.returncode == 0, result.stderr
    data = plain(json.loads(result.stdout))
    assert sorted(data["_meta"]["hostvars"]) == ["gb200-r02-n01", "gb200-r02-n02"]
    assert members(data, "domain_rack02") == ["gb200-r02-n01", "gb200-r02-n02"]
    assert members(data, "leaf_rack02") == ["gb200-r02-n01", "gb200-r02-n02"]  # a keyed group, not the node
    warnings = " ".join(result.stderr.split())  # Ansible wraps long warnings
    for name in SPECIAL_NAMES:
        assert warnings.count(f"node '{name}' is not made a host: its name ") == 1, (name, result.stderr)
    assert "Unexpected Exception" not in result.stderr
    # Every node refused: the inventory would be empty, so the source fails.
    model["nodes"][0]["nodes"] = ["127.0.0.1", "all"]
    (tmp_path / "model.json").write_text(json.dumps(model))
    refused = inventory(source, "--list", env=FATAL)
    assert refused.returncode != 0 and "every node (2) has a name Ansible treats specially" in refused.stderr


def test_source_needs_exactly_one_input(tmp_path):
    both = write_source(tmp_path / "both.topology.yml", model_path="x.json", provider={"name": "simulation"})
    result = inventory(both, "--list", env=FATAL)
    assert result.returncode != 0 and "set exactly one of provider and model_path" in result.stderr
    other = tmp_path / "hosts.yml"  # not a *topology.yml name: the plugin declines it
    other.write_text("plugin: aifactory.topology.topology\nmodel_path: x.json\n")
    declined = inventory(other, "--list")
    assert "could not be verified by inventory plugin" in declined.stderr


def test_a_model_path_that_is_a_fifo_or_not_utf8_fails_the_parse_naming_it(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    blocked = inventory(write_source(tmp_path / "fifo.topology.yml", model_path="fifo.json"), "--list", env=FATAL)
    assert blocked.returncode != 0 and f"model file {str(fifo)!r} is not a regular file (a FIFO)" in blocked.stderr
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"format: aifactory.topology/v1\nnodes: []\n# r\xe9seau\n")
    decoded = inventory(write_source(tmp_path / "latin1.topology.yml", model_path="latin1.yaml"), "--list", env=FATAL)
    assert decoded.returncode != 0 and f"model file {str(latin1)!r} is not UTF-8 text (line 3, byte 43)" in decoded.stderr


def test_cache_serves_the_model_until_flushed(tmp_path):
    model = tmp_path / "model.json"
    model.write_text(json.dumps({"format": "aifactory.topology/v1", "switches": {"leaf": None},
                                 "nodes": [{"nodes": "gpu[01-02]", "switch": "leaf", "domain": "r1"}]}))
    source = write_source(tmp_path / "cached.topology.yml", model_path="model.json", cache=True,
                          cache_plugin="ansible.builtin.jsonfile", cache_connection=str(tmp_path / "cache"),
                          cache_timeout=3600)
    assert members(listing(source), "domain_r1") == ["gpu01", "gpu02"]
    model.unlink()
    assert members(listing(source), "domain_r1") == ["gpu01", "gpu02"]  # from the cache, the file is gone
    flushed = inventory(source, "--list", "--flush-cache", env=FATAL)
    assert flushed.returncode != 0 and f"model file {str(model)!r}: No such file or directory" in flushed.stderr


def test_awx_scm_inventory_source_from_the_project(tmp_path):
    """As AWX syncs an SCM inventory source: a checkout of the project, the collection installed by the
    project sync from collections/requirements.yml, then `ansible-inventory --list --export` from the
    project root with AWX's inventory-update environment and without this checkout on any path."""
    from tests.integration.awx_support import clean_env, scm_checkout

    project = tmp_path / "project"
    scm_checkout(project)
    collections = tmp_path / "requirements_collections"
    sync = subprocess.run([tool("ansible-galaxy"), "collection", "install", "-r", "collections/requirements.yml",
                           "--collections-path", str(collections)], cwd=project, capture_output=True, text=True,
                          env=clean_env(ANSIBLE_COLLECTIONS_PATH=str(collections)), check=False)
    assert sync.returncode == 0, sync.stderr
    env = clean_env(ANSIBLE_COLLECTIONS_PATH=str(collections), **AWX_INVENTORY_ENV)
    source = "inventories/topology/example.topology.yml"
    imported = subprocess.run([tool("ansible-inventory"), "-i", source, "--list", "--export"], cwd=project,
                              capture_output=True, text=True, env=env, check=False)
    assert imported.returncode == 0, imported.stderr
    data = plain(json.loads(imported.stdout))
    assert members(data, "domain_rack02") == [f"gb200-r02-n{n:02d}" for n in range(1, 19)]
    assert data["switch_leaf01"]["hosts"] == members(data, "domain_rack01") + members(data, "domain_rack02")
    assert data["_meta"]["hostvars"]["gb200-r08-n18"]["topology_switches"] == ["leaf04", "spine02", "core"]
    # A broken source fails the update (AWX shows the provider's message), never imports an empty inventory.
    (project / "inventories/topology/example-model.json").write_text('{"format": "aifactory.topology/v1"}')
    broken = subprocess.run([tool("ansible-inventory"), "-i", source, "--list", "--export"], cwd=project,
                            capture_output=True, text=True, env=env, check=False)
    assert broken.returncode != 0 and "model.nodes must be a list of node groups" in broken.stderr


def test_provider_option_is_checked_as_the_modules_check_it(tmp_path):
    # The validator of the modules and providers, with the one unknown-key wording.
    unknown = write_source(tmp_path / "unknown.topology.yml", provider={"name": "simulation", "parms": {}})
    result = inventory(unknown, "--list", env=FATAL)
    assert result.returncode != 0
    assert "provider has unknown keys: parms; known: creds, name, params" in " ".join(result.stderr.split())
    nameless = write_source(tmp_path / "nameless.topology.yml", provider={"params": {}})
    result = inventory(nameless, "--list", env=FATAL)
    assert result.returncode != 0 and "provider: missing required arguments: name" in result.stderr
    # creds given as null (YAML's ~) is not given: its default, as before.
    nulls = write_source(tmp_path / "nulls.topology.yml",
                         provider={"name": "inventory", "params": {"domains": [{"name": "r1", "nodes": "gpu[01-02]"}]},
                                   "creds": None})
    assert sorted(listing(nulls, env=FATAL)["_meta"]["hostvars"]) == ["gpu01", "gpu02"]
