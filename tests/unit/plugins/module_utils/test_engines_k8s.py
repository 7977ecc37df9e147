"""Kubernetes engines (labels, NFD, Slinky) against Topograph's vectors and examples (docs/kubernetes.md)."""

from __future__ import annotations

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels
from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels, nfd, slinky
from ansible_collections.aifactory.topology.plugins.module_utils._writers import k8s_nodes
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover

from ...conftest_paths import FIXTURES, MODELS

LONG_ID = "S3very-very-long-id-to-check-label-value-limits-of-63-characters"
TIER = _labels.FABRIC_PREFIX


def sim(model, **params):
    return discover("simulation", {"model_path": str(MODELS / model), **params})


# -- labels -----------------------------------------------------------------------------------

def test_long_values_hash_exactly_as_topograph():
    assert len(LONG_ID) == 64
    assert _labels.label_value(LONG_ID) == "xf946c4acef2d5939"
    assert _labels.label_value(LONG_ID[:63]) == LONG_ID[:63]


def test_medium_node_1202_gets_topograph_ci_labels():
    labels = k8s_labels.desired_labels(sim("medium.yaml"), _labels.LabelKeys())
    assert labels["1202"] == {f"{TIER}0": "sw12", f"{TIER}1": "sw21", f"{TIER}2": "sw3",
                              "accelerator.topograph.run/domain": "nvl2"}
    assert len(labels) == 8


def test_multi_ib_example_node104_and_hashed_switch_id():
    topo = Topology()
    topo.add_switch("IB2")
    topo.add_switch("S1", "IB2")
    topo.add_switch("S2", "S1")
    topo.add_switch(LONG_ID, "S1")
    topo.add_node("Node104", "S2", "B1")
    topo.add_node("Node105", LONG_ID)
    labels = k8s_labels.desired_labels(topo.validate(), _labels.LabelKeys())
    assert labels["Node104"] == {"accelerator.topograph.run/domain": "B1", f"{TIER}0": "S2", f"{TIER}1": "S1",
                                 f"{TIER}2": "IB2"}
    assert labels["Node105"] == {f"{TIER}0": "xf946c4acef2d5939", f"{TIER}1": "S1", f"{TIER}2": "IB2"}


def test_sub_domain_only_with_a_domain():
    labels = k8s_labels.desired_labels(sim("dual-xclr-regular.yaml"), _labels.LabelKeys())
    assert labels["srv1101"]["accelerator.topograph.run/domain"] == "nvl-1"
    assert labels["srv1101"]["accelerator.topograph.run/sub-domain"] == "rack01"
    plain = k8s_labels.desired_labels(sim("medium.yaml"), _labels.LabelKeys())
    assert not any(_labels.SUB_DOMAIN_LABEL in value for value in plain.values())


def test_configured_keys_replace_tiers_by_index_and_the_domain_key():
    keys = _labels.LabelKeys(["example.com/leaf", "example.com/spine"], "example.com/nvlink")
    labels = k8s_labels.desired_labels(sim("medium.yaml"), keys)
    assert labels["1202"] == {"example.com/leaf": "sw12", "example.com/spine": "sw21", "example.com/nvlink": "nvl2"}
    # Topograph's default keys stay managed, so switching keys cleans the old ones up.
    assert keys.is_managed(f"{TIER}7") and keys.is_managed("accelerator.topograph.run/domain")
    assert keys.is_managed("example.com/leaf") and not keys.is_managed("example.com/other")
    assert not keys.is_managed(f"{TIER}x") and not keys.is_managed("kubernetes.io/hostname")


@pytest.mark.parametrize("fabric, accelerator, message", [
    (["a/b", "a/b"], None, "used more than once: a/b"),
    (["a/b"], "a/b", "used more than once: a/b"),
    (None, "accelerator.topograph.run/sub-domain", "used more than once"),
    (["bad key"], None, "fabric_labels[0]: 'bad key' is not a valid Kubernetes label key"),
    (None, "Upper.Case/x", "accelerator_label"),
    (None, "a/" + "n" * 64, "accelerator_label"),
])
def test_invalid_or_duplicate_keys_are_rejected(fabric, accelerator, message):
    with pytest.raises(TopologyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        _labels.LabelKeys(fabric, accelerator)


def test_a_value_the_api_server_would_refuse_quarantines_that_node_naming_the_label_and_value():
    topo = Topology()
    topo.add_switch("leaf")
    topo.add_switch("leaf:1")  # a valid Slurm name, not a label value
    topo.add_node("n1", "leaf", "3bd4c4b2:1.1")  # an nvidia-smi cluster UUID with ':' in the domain
    topo.add_node("n2", "leaf:1")
    topo.add_node("n3", "leaf", "rack1")
    topo.add_node("GPU4", "leaf")  # fine for Slurm, never a Kubernetes node name
    warnings = []
    labels = k8s_labels.desired_labels(topo.validate(), _labels.LabelKeys(), node_names=True, warn=warnings.append)
    assert labels == {"n3": {f"{TIER}0": "leaf", "accelerator.topograph.run/domain": "rack1"}}
    assert sorted(topo.nodes) == ["n3"]
    reasons = {record.node: (record.source, record.reason) for record in topo.quarantined.values()}
    assert reasons == {
        "n1": ("kubernetes labels", "label accelerator.topograph.run/domain (the domain): '3bd4c4b2:1.1' is not a "
                                    "valid Kubernetes label value (at most 63 letters, digits, '-', '_', '.', "
                                    "starting and ending with a letter or digit)"),
        "n2": ("kubernetes labels", "label fabric.topograph.run/tier-0 (the tier 0 switch): 'leaf:1' is not a valid "
                                    "Kubernetes label value (at most 63 letters, digits, '-', '_', '.', starting "
                                    "and ending with a letter or digit)"),
        "GPU4": ("kubernetes labels", "node name 'GPU4' can never be a Kubernetes node name: it is not lower-case "
                                      "letters, digits, '-' and '.', starting and ending with a letter or digit"),
    }
    assert len(warnings) == 1 and warnings[0].startswith("3 nodes quarantined (left out of the map): n1 (label ")


def test_a_node_name_nfd_cannot_put_in_its_node_name_label_quarantines_that_node():
    topo = Topology()
    topo.add_switch("leaf")
    long_name = "n" * 64  # a valid node name (RFC 1123 subdomain), too long for a label value
    topo.add_node(long_name, "leaf")
    topo.add_node("n1", "leaf")
    assert sorted(k8s_labels.desired_labels(topo.validate(), _labels.LabelKeys())) == ["n1", long_name]
    labels = k8s_labels.desired_labels(topo, _labels.LabelKeys(), name_label="nfd.node.kubernetes.io/node-name")
    assert sorted(labels) == ["n1"] and long_name in topo.quarantined


def test_every_node_refused_is_an_error_and_the_operators_no_topology_value_fails_the_run():
    topo = Topology()
    topo.add_switch("leaf:1")
    topo.add_node("n1", "leaf:1")
    with pytest.raises(TopologyError, match=r"every node was quarantined \(1\), so nothing is left to map: n1 "
                                            r"\(label fabric.topograph.run/tier-0"):
        k8s_labels.desired_labels(topo.validate(), _labels.LabelKeys())
    bare = Topology()
    bare.add_node("n1")
    with pytest.raises(TopologyError, match=r"no_topology_value: 'none\\n' is not a valid Kubernetes label value"):
        k8s_labels.desired_labels(bare.validate(), _labels.LabelKeys(), "none\n")
    assert "n1" in bare.nodes and not bare.quarantined


def test_nodes_without_switch_get_no_tier_unless_asked():
    topo = Topology()
    topo.add_switch("leaf")
    topo.add_node("gpu1", "leaf")
    topo.add_node("cpu1")
    keys = _labels.LabelKeys()
    assert k8s_labels.desired_labels(topo.validate(), keys)["cpu1"] == {}
    assert k8s_labels.desired_labels(topo, keys, "no-topology")["cpu1"] == {f"{TIER}0": "no-topology"}


def test_merge_patch_sets_changed_removes_stale_and_leaves_the_rest():
    keys = _labels.LabelKeys()
    current = {"kubernetes.io/hostname": "n1", f"{TIER}0": "old", f"{TIER}3": "stale", "team": "a",
               "accelerator.topograph.run/domain": "rack1"}
    desired = {f"{TIER}0": "leaf1", "accelerator.topograph.run/domain": "rack1"}
    assert k8s_nodes.merge_patch(current, desired, keys) == {f"{TIER}0": "leaf1", f"{TIER}3": None}
    assert k8s_nodes.merge_patch(dict(current, **{f"{TIER}0": "leaf1"}), desired, keys) == {f"{TIER}3": None}
    settled = {"kubernetes.io/hostname": "n1", f"{TIER}0": "leaf1", "accelerator.topograph.run/domain": "rack1"}
    assert k8s_nodes.merge_patch(settled, desired, keys) == {}
    assert k8s_nodes.merge_patch(settled, {}, keys) == {f"{TIER}0": None, "accelerator.topograph.run/domain": None}
    assert keys.managed(settled) == desired


# -- NFD --------------------------------------------------------------------------------------

def test_nfd_object_names_match_topograph_examples():
    assert nfd.stable_object_name("topograph-node", "node-a") == "topograph-node-node-a-66570ff0"
    assert nfd.stable_object_name("topograph-fabric-tier-0", "leaf-12") == "topograph-fabric-tier-0-leaf-12-e4a19be5"
    assert nfd.dns_label_part("--Rack_01..A--") == "rack-01-a"
    long_name = nfd.stable_object_name("topograph-node", "n" * 100)
    assert len(long_name) == 63 and long_name.startswith("topograph-node-nnn") and long_name.endswith("-" + long_name[-8:])
    assert nfd.stable_object_name("topograph-node", "___").startswith("topograph-node-value-")


def test_nfd_objects_for_medium():
    labels = k8s_labels.desired_labels(sim("medium.yaml"), _labels.LabelKeys())
    features, groups = nfd.build_objects(labels, "nfd")
    assert len(features) == 8
    # 4 leaves + 2 spines + 1 core + 4 domains
    assert len(groups) == 11
    feature = next(f for f in features if f["metadata"]["annotations"]["topograph.run/node-name"] == "1202")
    assert feature == {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeature",
        "metadata": {
            "name": nfd.stable_object_name("topograph-node", "1202"),
            "namespace": "nfd",
            "labels": {"nfd.node.kubernetes.io/node-name": "1202", "app.kubernetes.io/managed-by": "topograph",
                       "topograph.run/engine": "nfd", "topograph.run/resource": "nodefeature"},
            "annotations": {"topograph.run/node-name": "1202"},
        },
        "spec": {"features": {"attributes": {
            "system.name": {"elements": {"nodename": "1202"}},
            "topograph.network": {"elements": {"accelerator-domain": "nvl2", "fabric-tier-0": "sw12",
                                               "fabric-tier-1": "sw21", "fabric-tier-2": "sw3"}},
        }}},
    }
    group = next(g for g in groups if g["metadata"]["annotations"]["topograph.run/label-value"] == "sw12")
    assert group == {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureGroup",
        "metadata": {
            "name": nfd.stable_object_name("topograph-fabric-tier-0", "sw12"),
            "namespace": "nfd",
            "labels": {"app.kubernetes.io/managed-by": "topograph", "topograph.run/engine": "nfd",
                       "topograph.run/resource": "nodefeaturegroup", "topograph.run/group-type": "fabric-tier-0"},
            "annotations": {"topograph.run/label-key": f"{TIER}0", "topograph.run/label-value": "sw12"},
        },
        "spec": {"featureGroupRules": [{
            "name": "fabric-tier-0 equals sw12",
            "matchFeatures": [{"feature": "topograph.network",
                               "matchExpressions": {"fabric-tier-0": {"op": "In", "value": ["sw12"]}}}],
        }]},
    }
    names = [g["metadata"]["name"] for g in groups]
    assert names[0].startswith("topograph-accelerator-domain-nvl1-") and names[-1].startswith("topograph-fabric-tier-2-sw3-")


def test_nfd_sub_domain_attribute_and_invalid_node_names():
    labels = k8s_labels.desired_labels(sim("dual-xclr-regular.yaml"), _labels.LabelKeys())
    features, groups = nfd.build_objects(labels, "nfd")
    elements = features[0]["spec"]["features"]["attributes"]["topograph.network"]["elements"]
    assert elements["accelerator-sub-domain"] == "rack01" and elements["accelerator-domain"] == "nvl-1"
    assert sum(1 for g in groups if g["metadata"]["labels"]["topograph.run/group-type"] == "accelerator-sub-domain") == 12
    with pytest.raises(TopologyError, match="node name 'bad name' cannot be used"):
        nfd.build_objects({"bad name": {f"{TIER}0": "s"}}, "nfd")
    assert nfd.build_objects({"cpu1": {}}, "nfd") == ([], [])


# -- Slinky -----------------------------------------------------------------------------------

MEDIUM_TREE_SKELETON = """\
- topology: topo-0
  cluster_default: false
  tree:
    switches:
        - switch: sw3
          children: sw[21-22]
        - switch: sw21
          children: sw11
        - switch: sw22
          children: sw14
        - switch: sw11
        - switch: sw14
"""
MEDIUM_BLOCK_FULL = """\
- topology: topo-0
  cluster_default: false
  block:
    block_sizes:
        - 1
        - 2
    blocks:
        - block: block1
          nodes: "1101"
        - block: block2
          nodes: "1301"
"""
MEDIUM_COMBINED_SKELETON = """\
- topology: topo-0
  cluster_default: false
  tree:
    switches:
        - switch: sw3
          children: sw[21-22]
        - switch: sw21
          children: sw11
        - switch: sw22
          children: sw13
        - switch: sw11
        - switch: sw13
- topology: topo-1
  cluster_default: false
  block:
    block_sizes:
        - 1
        - 2
    blocks:
        - block: block1
        - block: block2
"""


def topologies(nodes, *plugins):
    """Topograph's slinky test layout: topo-<i> per plugin, all on the same nodes; ours needs one default."""
    specs = {f"topo-{i}": {"plugin": plugin, "nodes": nodes} for i, plugin in enumerate(plugins)}
    return specs


def render_medium(specs, skeleton):
    # Topograph's test has no cluster default; ours requires exactly one, so add a flat one and drop it.
    params = {"topologies": dict(specs, zz={"plugin": "topology/flat", "cluster_default": True}),
              "block_naming": "topograph"}
    content, _summary = slinky.render(sim("medium.yaml"), params, lambda message: None, skeleton=skeleton)
    return content.split("- topology: zz\n", maxsplit=1)[0], params


@pytest.mark.parametrize("plugins, nodes, skeleton, expected, specs", [
    (["topology/tree"], "1101,1402", True, MEDIUM_TREE_SKELETON,
     {"1101": "topo-0:sw3:sw21:sw11", "1402": "topo-0:sw3:sw22:sw14"}),
    (["topology/block"], "1101,1301", False, MEDIUM_BLOCK_FULL, {"1101": "topo-0:block1", "1301": "topo-0:block2"}),
    (["topology/tree", "topology/block"], "1101,1302", True, MEDIUM_COMBINED_SKELETON,
     {"1101": "topo-0:sw3:sw21:sw11,topo-1:block1", "1302": "topo-0:sw3:sw22:sw13,topo-1:block2"}),
])
def test_slinky_per_partition_yaml_and_dynamic_specs_match_topograph(plugins, nodes, skeleton, expected, specs):
    content, params = render_medium(topologies(nodes, *plugins), skeleton)
    assert content == expected
    assert slinky.dynamic_specs(sim("medium.yaml"), params) == specs


def test_slinky_cluster_wide_specs_use_raw_ids_and_block_names():
    medium = sim("medium.yaml")
    tree = slinky.dynamic_specs(medium, {})
    assert tree["1202"] == "default:sw3:sw21:sw12" and len(tree) == 8
    block = slinky.dynamic_specs(medium, {"plugin": "topology/block", "block_naming": "topograph"})
    assert block["1202"] == "default:block002"
    assert slinky.dynamic_specs(medium, {"plugin": "topology/block"})["1202"] == "default:nvl2"
    oci = sim("large.yaml", normalize_switch_names=True)
    assert slinky.dynamic_specs(oci, {})["srv1101"] == "default:core:spine-1:leaf-1-1"
    assert "cpu" not in slinky.dynamic_specs(_with_cpu_node(medium), {})


def _with_cpu_node(topology):
    topology.add_node("cpu")
    return topology


def test_slinky_content_is_the_slurm_text_without_header():
    params = {"plugin": "topology/block", "block_sizes": [8, 16, 32], "block_naming": "topograph",
              "block_name_pattern": {"regexp": "^srv([0-9]{2})", "format": "rack${1}"}}
    content, summary = slinky.render(sim("large.yaml"), params, lambda message: None)
    assert content == (FIXTURES / "expected.slinky-dra-block.conf").read_text()
    assert summary["blocks"] == 12
    tree = slinky.render(sim("large.yaml", normalize_switch_names=True), {}, lambda message: None)[0]
    assert tree == (FIXTURES / "expected.slinky-oci-sim-tree.conf").read_text()
    skeleton = slinky.render(sim("large.yaml"), params, lambda message: None, skeleton=True)[0]
    assert "Nodes=" not in skeleton and "BlockName=rack11\n" in skeleton
    with pytest.raises(TopologyError, match="cannot run scontrol"):
        slinky.render(sim("medium.yaml"), {"topologies": {"a": {"plugin": "topology/tree", "partition": "gpu",
                                                                "cluster_default": True}}}, lambda message: None)


def test_slinky_configmap_annotations():
    assert slinky.configmap_annotations("slurm") == {
        "topograph.run/engine": "slinky", "topograph.run/topology-managed-by": "topograph",
        "topograph.run/slurm-namespace": "slurm"}
    full = slinky.configmap_annotations("slurm", "topology/block", [8, 16], "2026-01-02T03:04:05Z")
    assert full["topograph.run/plugin"] == "topology/block" and full["topograph.run/block-sizes"] == "8,16"
    assert full["topograph.run/last-updated"] == "2026-01-02T03:04:05Z"
