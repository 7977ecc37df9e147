from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover
from ansible_collections.aifactory.topology.plugins.module_utils._providers.simulation import from_model

from ...conftest_paths import MODELS


@pytest.mark.parametrize("model, nodes, switches, domains", [
    ("small-tree.yaml", 6, 3, 2),
    ("medium.yaml", 8, 7, 4),
    ("large.yaml", 96, 19, 12),
    ("nvl72.yaml", 72, 7, 4),
    ("dual-xclr-regular.yaml", 96, 19, 2),
    ("dual-xclr-irregular.yaml", 255, 34, 2),
])
def test_simulation_reads_topograph_models_unchanged(model, nodes, switches, domains):
    topo = discover("simulation", {"model_path": str(MODELS / model)})
    summary = topo.summary()
    assert (summary["nodes"], summary["switches"], summary["domains"]) == (nodes, switches, domains)


def test_simulation_maps_paths_domains_and_labels():
    topo = discover("simulation", {"model_path": str(MODELS / "medium.yaml")})
    node = topo.nodes["1202"]
    assert topo.path(node.switch) == ["sw12", "sw21", "sw3"]
    assert node.domain == "nvl2"
    assert node.labels == {"topology.kubernetes.io/region": "us-west", "topology.kubernetes.io/zone": "zone1"}
    regular = discover("simulation", {"model_path": str(MODELS / "dual-xclr-regular.yaml")})
    assert regular.nodes["srv1101"].sub_domain == "rack01"


@pytest.mark.parametrize("model, message", [
    ({"switches": {"a": {"switches": ["c"]}, "b": {"switches": ["c"]}}, "blocks": [{"nodes": ["n1"]}]},
     "switch 'c' has two parents: 'a' and 'b'"),
    ({"blocks": [{"switch": "ghost", "nodes": ["n1"]}]}, r"blocks\[0\].switch refers to unknown switch 'ghost'"),
    ({"blocks": [{"nodes": ["n[1-2]"]}, {"nodes": ["n2"]}]}, r"node 'n2' is in two blocks: blocks\[0\] and blocks\[1\]"),
    ({"blocks": [{"nodes": []}]}, r"blocks\[0\] has no nodes"),
    ({"switches": {"a": {"switches": ["b"]}, "b": {"switches": ["a"]}}, "blocks": [{"switch": "a", "nodes": ["n1"]}]},
     "switch cycle"),
    ({"switches": {"a": {"name": "b"}}, "blocks": [{"nodes": ["n1"]}]}, "name 'b' must equal the switch id"),
    ({"blocks": []}, "declares no blocks"),
    ({"switch": {}}, "model has unknown keys: switch; known: blocks, switches"),
])
def test_simulation_errors_name_the_offender(model, message):
    with pytest.raises(TopologyError, match=message):
        from_model(model).validate()


def test_simulation_file_errors(tmp_path):
    with pytest.raises(TopologyError, match="provider simulation: params: missing required arguments: model_path"):
        discover("simulation", {})
    with pytest.raises(TopologyError, match="No such file"):
        discover("simulation", {"model_path": str(tmp_path / "missing.yaml")})
    bad = tmp_path / "bad.yaml"
    bad.write_text("switches: [\n")
    with pytest.raises(TopologyError, match="is not valid YAML"):
        discover("simulation", {"model_path": str(bad)})


def test_unknown_provider_lists_the_known_ones():
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import PROVIDERS

    with pytest.raises(TopologyError, match="unknown provider 'netbox'; known providers: " + ", ".join(sorted(PROVIDERS))):
        discover("netbox", {})


INVENTORY = {
    "switches": {"core": None, "spine1": "core", "leaf1": {"parent": "spine1", "name": "L1"}, "leaf2": "spine1",
                 "leaf-svc": "core"},
    "domains": [
        {"name": "rack01", "nodes": "gb-r01-n[01-18]", "switch": "leaf1"},
        {"name": "rack02"},
        {"name": "rack03", "switch": "leaf2", "sub_domains": [{"name": "t1", "nodes": ["gb-r03-n[01-09]"]},
                                                              {"name": "t2", "nodes": "gb-r03-n[10-17]"}]},
    ],
    "nodes": [{"nodes": "svc[1-2]", "switch": "leaf-svc"}],
    "hosts": {"gb-r01-n01": {"domain": "rack01", "switch": "leaf1"}, "login1": {}},
}


def test_inventory_declares_racks_in_order_with_placeholders():
    topo = discover("inventory", INVENTORY)
    assert topo.domain_order == ["rack01", "rack02", "rack03"]
    assert topo.summary()["placeholder_domains"] == ["rack02"]
    assert topo.nodes["gb-r03-n12"].sub_domain == "t2"
    assert topo.nodes["gb-r03-n12"].switch == "leaf2"
    assert topo.switches["leaf1"].name == "L1"
    assert topo.nodes["login1"].switch is None
    assert len(topo.nodes) == 18 + 17 + 2 + 1


@pytest.mark.parametrize("params, message", [
    ({"domains": [{"name": "r1", "nodes": "n[1-"}]}, r"params.domains\[0\].nodes: unbalanced"),
    ({"domains": [{"name": "r1", "nodez": "n1"}]}, r"params.domains\[0\] has unknown keys: nodez"),
    ({"domains": [{"name": "r1", "nodes": "n1"}, {"name": "r1"}]}, "domain 'r1' is declared twice"),
    ({"domains": [{"name": "r1", "nodes": "n1"}, {"name": "r2", "nodes": "n1"}]}, "node 'n1' is in two domains"),
    ({"domains": [{"name": "", "nodes": "n1"}]}, r"params.domains\[0\].name: name must be a non-empty string"),
    ({"domains": "rack01"}, "provider inventory: params: .*option 'domains' is of type (<class ')?str('>)? and we were unable to convert to dict"),
    ({"switches": ["a"]}, "provider inventory: params: argument 'switches' is of type (<class ')?list('>)? and we were unable to convert to dict"),
    ({"switches": {"a": {"parent": None, "nmae": "x"}}}, "params.switches.a has unknown keys: nmae; known: name, parent"),
    ({"hosts": {"n1": {"rack": "x"}}}, "params.hosts.n1 has unknown keys: rack; known: domain, sub_domain, switch"),
    ({"switches": {"a": 1}}, "params.switches.a must be a parent id"),
    ({"nodes": [{"nodes": "n1", "switch": "ghost"}]}, "node 'n1' refers to unknown switch 'ghost'"),
    ({"domain": []}, "provider inventory: params has unknown keys: domain; known: accelerator, discovery_timeout, "
                     "domains, hosts, invalid_nodes, nodes, switches"),
    ({"domains": [{"name": "r1"}]}, "the topology is empty"),
])
def test_inventory_errors_name_the_field(params, message):
    with pytest.raises(TopologyError, match=message):
        discover("inventory", params)
