"""Hostile input to the model, the providers that read files or inventory, and the Slurm engines.

Names come from places the operator does not control (InfiniBand node descriptions are set by
any host with root on the fabric, cloud instance names by tenants): every one is checked once,
where the model is built, against what Slurm's files can hold. Property-based where it fits.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import common as _common
from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import AifactoryTopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology, TopologyError, name_problem
from ansible_collections.aifactory.topology.plugins.module_utils._providers import aws, discover, lambda_cloud, nebius, oci

from ..conftest_paths import FIXTURES

REPO = Path(__file__).resolve().parents[3]
GOOD_IB = (FIXTURES / "ibnetdiscover-example.out").read_text()
INJECTIONS = ["leaf1\nSwitchName=rogue Nodes=n[1-9]", "node[01-09]", "a,b", "a=b", "#x", "a b", "a\tb", "a\rb",
              "a\u2028b", "a\u0085b", "a\x00b", "a\u200bb", 'a"b', "a'b", "a\\b", " ", "", "x" * 254]
NON_STRINGS = [None, True, 5, 1.5, {"a": 1}, ["n1"]]
MAX_MESSAGE = 600  # no message quotes more than a short prefix of a value


# -- names -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", INJECTIONS + NON_STRINGS[1:])  # None means "not set" there
def test_every_model_entry_point_refuses_a_name_slurm_cannot_hold(name):
    calls = {
        "node": lambda t: t.add_node(name),
        "switch": lambda t: t.add_switch(name),
        "parent": lambda t: t.add_switch("leaf", parent=name),
        "switch display name": lambda t: t.add_switch("leaf", name=name),
        "domain of a node": lambda t: t.add_node("n1", domain=name),
        "declared domain": lambda t: t.declare_domain(name),
    }
    for what, call in calls.items():
        with pytest.raises(TopologyError) as info:
            call(Topology())
        assert len(str(info.value)) < MAX_MESSAGE, what


@given(st.text(st.characters(exclude_categories=["Cs"]), max_size=40))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_an_accepted_name_is_one_record_and_one_host_in_every_slurm_file(name):
    topo = Topology()
    try:
        topo.add_switch("leaf")
        topo.add_node(name, "leaf", domain=name)
    except TopologyError:
        assert name_problem(name) is not None
        return
    topo.validate()
    # The hostlist Slurm reads back is exactly this one node...
    assert hostlist.expand(hostlist.compress([name])) == [name]
    conf = slurm.render_tree_conf(topo)
    assert conf == f"SwitchName=leaf Nodes={hostlist.compress([name])}\n"
    # ...and topology.yaml loads back to the same strings.
    spec = slurm.TopologySpec("default", "topology/tree", cluster_default=True)
    loaded = _yaml.safe_load(slurm.render_topology_yaml(topo, [spec], slurm.BlockOptions()))
    assert hostlist.expand(loaded[0]["tree"]["switches"][0]["nodes"]) == [name]


@given(st.text(st.characters(exclude_categories=["Cs"]), max_size=60))
@example("A\n")  # found by this test: Python's "$" matched before the trailing newline, "A" was written plain
@settings(max_examples=500, deadline=None)
def test_yaml_scalar_never_folds_or_alters_a_string(text):
    assert _yaml.safe_load("key: " + slurm.yaml_scalar(text)) == {"key": text}


def test_two_switches_with_one_display_name_are_an_error():
    params = {"switches": {"sw1": {"name": "leaf"}, "sw2": {"name": "leaf"}}, "nodes": [{"nodes": "n1", "switch": "sw1"}]}
    with pytest.raises(TopologyError, match="switches 'sw1' and 'sw2' both have the name 'leaf'"):
        discover("inventory", params)


def test_an_hca_description_with_a_hostlist_quarantines_that_hca_naming_the_line():
    text = GOOD_IB.replace('"a08-p1-dgx-04-c01 mlx5_5"', '"node[01-09] mlx5_5"')
    reason = (r"ibnetdiscover output of n1, line \d+: HCA 'H-e09d7303007a4bd8' described "
              r"'node\[01-09\] mlx5_5': 'node\[01-09\]' contains '\['")
    warnings = []
    topology = discover("infiniband", {"ibnetdiscover": {"n1": text}}, warn=warnings.append)
    assert list(topology.quarantined) == ["'node[01-09]'"]
    record = topology.quarantined["'node[01-09]'"]
    assert (record.node, record.source, record.unhealthy) == (None, "infiniband", False)
    assert re.match(reason, record.reason)
    assert not any("[" in name for name in topology.nodes) and "a08-p1-dgx-04-c02" in topology.nodes
    assert [w for w in warnings if w.startswith("1 nodes quarantined (left out of the map): 'node[01-09]' (")]
    with pytest.raises(TopologyError, match=r"provider infiniband: 1 nodes have unusable data \(params.invalid_nodes "
                                            r"is fail\): 'node\[01-09\]' \(" + reason):
        discover("infiniband", {"ibnetdiscover": {"n1": text}, "invalid_nodes": "fail"})


@pytest.mark.parametrize("option, value, message", [
    ("no_topology_switch", "nt\nSwitchName=x", "no_topology_switch: 'nt\\\\nSwitchName=x' contains white space"),
    ("block_name_pattern", {"regexp": "(", "format": "x"}, "block_name_pattern.regexp: .* is not a regular expression"),
    ("block_name_pattern", {"regexp": "n(\\d)", "format": "$7"}, "block_name_pattern.format .* does not fit the regexp"),
    ("block_name_pattern", {"regexp": "n(\\d)", "format": "b $1"}, "contains white space"),
    ("block_name_pattern", {"regexp": "n(\\d)", "format": "b,$1"}, "contains ','"),
    ("domain_order", 5, "domain_order must be a list of domain names, got 5"),
    ("domain_order", [5], r"domain_order\[0\]: name must be a non-empty string, got int 5"),
])
def test_options_written_verbatim_are_checked(option, value, message):
    topo = Topology()
    topo.add_switch("leaf")
    for index in range(2):
        topo.add_node(f"n{index}", "leaf", domain=f"r{index}")
    topo.validate()
    with pytest.raises(TopologyError, match=message):
        if option == "no_topology_switch":
            slurm.render_tree_conf(topo, value)
        elif option == "domain_order":
            slurm.BlockOptions(domain_order=value)
        else:
            slurm.plan_blocks(topo, slurm.BlockOptions(name_pattern=value))


# -- non-string values -----------------------------------------------------------------------

def _simulation(tmp_path, text):
    path = tmp_path / "model.yaml"
    path.write_text(text)
    return discover("simulation", {"model_path": str(path)})


@pytest.mark.parametrize("model, message", [
    ("blocks: [{nodes: [null]}]", r"blocks\[0\].nodes\[0\]: expected a name \(a string\), got NoneType None"),
    ("blocks: [{nodes: [yes]}]", r"blocks\[0\].nodes\[0\]: expected a name \(a string\), got bool True"),
    ("blocks: [{nodes: [{a: 1}]}]", r"blocks\[0\].nodes\[0\]: expected a name \(a string\), got dict <dict>"),
    ("blocks: [{nodes: [1.5]}]", r"blocks\[0\].nodes\[0\]: expected a name \(a string\), got float 1.5"),
    ("blocks: [{nodes: 5}]", r"blocks\[0\].nodes must be a list of hostlist strings, got 5"),
    ("switches: {1101: {}}\nblocks: [{nodes: [n1]}]", r"switches: expected a name \(a string\), got int 1101"),
    ("switches: {s: {switches: [7]}}\nblocks: [{nodes: [n1]}]", r"switches.s.switches\[0\]: expected a name"),
    ("blocks: [{nodes: [n1], switch: 3}]", r"blocks\[0\].switch: expected a name"),
    ("blocks: [{nodes: [n1], labels: {a: 1}}]", r"label 'a': 1 must map a string to a string"),
    ("blocks: [{nodes: [n1], annotations: {accelerator.topology.test/domain: 4}}]", "must be a string, got 4"),
])
def test_simulation_values_that_are_not_names_are_refused(tmp_path, model, message):
    with pytest.raises(TopologyError, match=message):
        _simulation(tmp_path, model)


@pytest.mark.parametrize("data, message", [
    ({"nodes": [{"nodes": 5}]}, r"model.nodes\[0\].nodes must be a hostlist string or a list of them, got 5"),
    ({"nodes": [{"nodes": [None]}]}, r"model.nodes\[0\].nodes: hostlist entries must be strings, got None"),
    ({"nodes": [{"nodes": "n1"}], "domain_order": 5}, "model.domain_order must be a list of domain names, got 5"),
    ({"nodes": [{"nodes": "n1"}], "domain_order": [5]}, r"model.domain_order\[0\]: name must be a non-empty string"),
    ({"switches": {"s": 5}, "nodes": [{"nodes": "n1"}]}, r"model.switches\['s'\] must be a parent id or null, got 5"),
    ({"switches": {5: None}, "nodes": [{"nodes": "n1"}]}, r"model.switches\[5\]: name must be a non-empty string"),
    ({"nodes": [{"nodes": "n1", "labels": {"a": 1}}]}, "labels of node 'n1' must map strings to strings"),
])
def test_compact_model_values_of_the_wrong_type_are_refused(data, message):
    with pytest.raises(TopologyError, match=message):
        Topology.from_compact(dict(data, format="aifactory.topology/v1"))


def test_infiniband_node_map_values_must_be_names():
    with pytest.raises(TopologyError, match=r"params.node_map: 'H-1': None must map"):
        discover("infiniband", {"ibnetdiscover": {"n1": GOOD_IB}, "node_map": {"H-1": None}})


# -- files, nesting, resource limits -----------------------------------------------------------

def test_a_fifo_or_directory_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(TopologyError, match=r"simulation model_path '.*fifo' is not a regular file \(a FIFO\)"):
        discover("simulation", {"model_path": str(fifo)})
    with pytest.raises(TopologyError, match=r"ibnetdiscover_files: '.*fifo' is not a regular file \(a FIFO\)"):
        discover("infiniband", {"ibnetdiscover_files": [str(fifo)]})
    with pytest.raises(TopologyError, match=r"is not a regular file \(a directory\)"):
        discover("simulation", {"model_path": str(tmp_path)})


def test_files_that_are_not_utf8_are_an_error_naming_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_bytes(b"blocks:\n- nodes: [n\xff1]\n")
    with pytest.raises(TopologyError, match=r"bad.yaml' is not UTF-8 text \(line 2, byte 19\)"):
        discover("simulation", {"model_path": str(path)})
    ib = tmp_path / "ib.out"
    ib.write_bytes(GOOD_IB.encode().replace(b"a08-p1-dgx-04-c01", b"a08-p1-dgx-04-c\xe901"))
    with pytest.raises(TopologyError, match=r"ib.out' is not UTF-8 text \(line 11,"):
        discover("infiniband", {"ibnetdiscover_files": [str(ib)]})


# Every reader of a file an operator names: each goes through _input_file, so none blocks on a FIFO
# or fails with a raw UnicodeDecodeError. The OCI key's path is a credential and never shown.
FILE_READERS = {
    "simulation model_path": lambda path: discover("simulation", {"model_path": path}),
    "ibnetdiscover_files": lambda path: discover("infiniband", {"ibnetdiscover_files": [path]}),
    "inventory plugin model_path": _common.load_model_file,
    "oci creds.private_key_file": lambda path: oci.credentials(oci._sdk(), {
        "tenancy_id": "t", "user_id": "u", "fingerprint": "f", "private_key_file": path}, {}, "r"),
    "oci creds.config_file": lambda path: oci.credentials(oci._sdk(), {"auth": "config_file", "config_file": path},
                                                          {}, "r"),
    "nebius params.ca_bundle": lambda path: nebius._sdk(
        {"endpoint": "127.0.0.1:1", "tls": True, "validate_certs": True, "ca_bundle": path}, "token"),
    "nebius creds.private_key_file": lambda path: nebius._credentials(
        {"service_account_id": "s", "public_key_id": "k", "private_key_file": path}),
    "nebius creds.credentials_file": lambda path: nebius._credentials({"credentials_file": path}),
    "lambda creds.token_file": lambda path: lambda_cloud._workload_identity_token(
        {}, {"identity_lrn": "lrn:x", "token_file": path}, "http://127.0.0.1:1"),
}
# Readers of a credential's file: its path is left out of messages.
SECRET_PATHS = {"oci creds.private_key_file", "nebius creds.private_key_file", "nebius creds.credentials_file",
                "lambda creds.token_file"}


@pytest.mark.parametrize("reader", sorted(FILE_READERS))
def test_every_input_file_reader_refuses_a_fifo_and_text_that_is_not_utf8(tmp_path, reader):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(AifactoryTopologyError, match=r"is not a regular file \(a FIFO\)") as info:
        FILE_READERS[reader](str(fifo))
    latin1 = tmp_path / "latin1"
    latin1.write_bytes(b"format: aifactory.topology/v1\n# r\xe9seau\n")
    with pytest.raises(AifactoryTopologyError, match=r"is not UTF-8 text \(line 2, byte 33\)") as bad_text:
        FILE_READERS[reader](str(latin1))
    for message in (str(info.value), str(bad_text.value)):
        assert (str(tmp_path) in message) == (reader not in SECRET_PATHS)


def test_input_files_are_opened_by_input_file_only():
    """No plugin opens a file itself: _input_file reads inputs, the writer writes, node_facts reads sysfs."""
    allowed = {"plugins/module_utils/_base/input_file.py", "plugins/module_utils/_writers/file.py",
               "plugins/module_utils/_providers/node_facts.py"}
    opening = set()
    for path in [*(REPO / "plugins").rglob("*.py"), *(REPO / "extensions").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            function = node.func if isinstance(node, ast.Call) else None
            if isinstance(function, ast.Name) and function.id == "open" or (
                    isinstance(function, ast.Attribute) and function.attr in ("open", "fdopen", "read_text", "read_bytes")
                    and getattr(function.value, "id", None) != "_input_file"):
                opening.add(str(path.relative_to(REPO)))
    assert sorted(opening - allowed) == []


@pytest.mark.parametrize("text, message", [
    ("a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)),
     "aliases expand to more than 1000000 nodes"),
    # libyaml's own flow-depth limit (1000) answers first here; either way a clear error.
    ("blocks: " + "[" * 100000 + "]" * 100000, "nested more than 200 levels deep|exceeded maximum nesting depth"),
    ("blocks:\n" + "".join("  " * i + "- \n" for i in range(3000)), "nested more than 200 levels deep"),
    ("blocks: " + "{a: " * 5000 + "b" + "}" * 5000, "nested more than 200 levels deep"),
])
def test_yaml_bombs_and_deep_nesting_are_refused_before_loading(tmp_path, text, message):
    with pytest.raises(TopologyError, match=message):
        _simulation(tmp_path, text)


def test_the_hostlist_limit_applies_to_the_whole_run_not_each_expression():
    params = {"nodes": [{"nodes": f"g{index}n[1-400000]"} for index in range(4)]}
    with pytest.raises(TopologyError, match=r"params.nodes\[1\].nodes: hostlist 'g1n\[1-400000\]' expands to more "
                                            r"than 100000 hosts left of the run's 500000"):
        discover("inventory", params)
    with pytest.raises(TopologyError, match="has more than 18 digits"):
        discover("inventory", {"nodes": [{"nodes": "n[" + "0" * 5000 + "1-2]"}]})


def test_messages_quote_a_short_prefix_of_a_huge_value(tmp_path):
    huge = "x" * 5_000_000
    cases = [
        lambda: discover("inventory", {"nodes": [{"nodes": huge + "["}]}),
        lambda: discover("inventory", {"hosts": {huge: {}}, "domains": [{"name": huge}]}),
        lambda: Topology.from_compact({"format": huge}),
        lambda: discover("inventory", {huge: 1}),
        lambda: Topology().add_node("n1", labels={huge: 5}),
    ]
    for case in cases:
        with pytest.raises(TopologyError) as info:
            case()
        assert len(str(info.value)) < MAX_MESSAGE


# -- wrong results -----------------------------------------------------------------------------

@given(st.integers(min_value=12, max_value=GOOD_IB.count("\n") - 40))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_ibnetdiscover_output_cut_at_any_line_is_an_error(cut):
    lines = GOOD_IB.splitlines(keepends=True)
    with pytest.raises(TopologyError, match="cut off|no port line|no switch"):
        discover("infiniband", {"ibnetdiscover": {"n1": "".join(lines[:cut])}})


@given(st.binary(max_size=400))
@settings(max_examples=300, deadline=None)
def test_arbitrary_ibnetdiscover_text_is_a_topology_or_a_clear_error(data):
    text = data.decode("utf-8", errors="replace")
    try:
        discover("infiniband", {"ibnetdiscover": {"n1": text or "x"}})
    except TopologyError:
        pass


def test_a_duplicated_guid_is_an_error_not_a_replaced_switch():
    record = GOOD_IB[GOOD_IB.index("switchguid=0x2c5eab0300b87b40"):]
    record = record[:record.index("\n\n") + 2]
    with pytest.raises(TopologyError, match=r"device 'S-2c5eab0300b87b40' is listed twice \(first at line \d+\)"):
        discover("infiniband", {"ibnetdiscover": {"n1": GOOD_IB + "\n" + record}})


# -- one record, one node ------------------------------------------------------------------------

def test_a_cloud_record_that_names_one_switch_at_two_tiers_quarantines_its_node_not_the_run(monkeypatch):
    # A tenant-visible record whose path loops (spine, core, spine): the model would see a switch cycle.
    records = [{"InstanceId": "i-1", "NetworkNodes": ["nn-spine", "nn-core", "nn-spine"]},
               {"InstanceId": "i-2", "NetworkNodes": ["nn-core", "nn-spine", "nn-leaf"]}]
    monkeypatch.setattr(aws, "_page", lambda *_args: (records, None))
    topology = discover("aws", {"instances": [{"region": "r", "instances": {"i-1": "gpu1", "i-2": "gpu2"}}]},
                        {"access_key_id": "AKIDEXAMPLE", "secret_access_key": "s"})
    assert list(topology.nodes) == ["gpu2"] and topology.path("nn-leaf") == ["nn-leaf", "nn-spine", "nn-core"]
    assert topology.quarantined["gpu1"].reason == (
        "the aws API's networkNodeSet[0] of instance 'i-1' is 'nn-spine', as is its networkNodeSet[2]: one switch "
        "at two tiers of one path (a loop)")


STORAGE_FABRIC = (REPO / "tests" / "fixtures" / "infiniband" / "storage-on-compute-fabric.out").read_text()


def test_a_host_on_the_fabric_that_claims_a_compute_nodes_name_is_trusted_no_more_than_the_node():
    # Root on a storage server describes its HCA as gpu-03's, to take gpu-03's place (or put it on two leaves).
    claimed = STORAGE_FABRIC.replace('"stor-01 mlx5_0"', '"gpu-03 mlx5_0"')
    topology = discover("infiniband", {"ibnetdiscover": {"gpu-01": claimed}, "nodes": "gpu-[01-12]",
                                       "hcas": {"include": ["mlx5_0"]}})
    assert list(topology.quarantined) == ["gpu-03"] and "gpu-03" not in topology.nodes
    assert "both described 'gpu-03 mlx5_0'" in topology.quarantined["gpu-03"].reason
    assert {node.switch for node in topology.nodes.values()} == {
        "S-0c42a10300aa0211", "S-0c42a10300aa0212", "S-0c42a10300aa0221", "S-0c42a10300aa0222"}  # compute leaves


def test_hca_selection_that_keeps_storage_servers_as_nodes_is_refused_not_a_split_tree():
    with pytest.raises(TopologyError, match=r"^params.switches and params.hcas leave a tree of 3 roots that fabric "
                                            r"links join .*: a leaf of 2 hosts \(stor-\[01-02\]\)"):
        discover("infiniband", {"ibnetdiscover": {"gpu-01": STORAGE_FABRIC}, "hcas": {"include": ["mlx5_0"]}})


def test_grouped_ibnetdiscover_lines_are_skipped_whole_and_never_become_names():
    # -g's chassis lines carry text a chassis reports (a Xsigo host name): skipped, between records only.
    grouped = (REPO / "tests" / "fixtures" / "infiniband" / "director-grouped.out").read_text()
    plain = discover("infiniband", {"ibnetdiscover": {"n": grouped.replace("Chassis 1 (guid 0x98039b0300e1a000)\n", "")
                                                      .replace("Non-Chassis Nodes\n", "")}})
    hostile = grouped.replace("Chassis 1 (guid 0x98039b0300e1a000)\n",
                              "Chassis 1 (guid 0x98039b0300e1a000)\nHostname: n[01-99] SwitchName=evil,x\n")
    assert discover("infiniband", {"ibnetdiscover": {"n": hostile}}).to_compact() == plain.to_compact()
    with pytest.raises(TopologyError, match=r"line 6: not ibnetdiscover output: 'Chassis 1 \(guid 0x98039b0300e1a000\) "
                                            r"x'$"):
        discover("infiniband", {"ibnetdiscover": {"n": grouped.replace("0x98039b0300e1a000)\n",
                                                                       "0x98039b0300e1a000) x\n", 1)}})
