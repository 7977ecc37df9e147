"""Integration tests against a REAL slurmctld 26.05 (Debian sid chroot, tools/slurm_testbed.py).

What is proved here, and how (the Slurm facts behind it: docs/slurm-facts.md; the test bed: docs/testing.md):

* every golden file under tests/golden/ (and a few files rendered by the collection's own engines)
  is loaded by ``slurmctld -D -c``; ``scontrol show topology`` then lists exactly the file's nodes,
  blocks in file order, aggregated blocks on aligned positions, and the switches of a tree;
* ``sbatch --test-only`` places jobs where the rendered topology says they must go (segments per
  rack, incomplete racks, placeholders keeping positions, flat and tree partitions via topology.yaml);
* a broken file makes slurmctld refuse to start (so the harness really validates), and the
  collection's own BlockSizes check never accepts what Slurm rejects.

Every slurmctld gets its own free TCP port, so these tests do not collide with another controller
on the machine. Nothing here sleeps: ``slurm_testbed`` waits for ``scontrol ping`` (or process exit).
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import pytest
import slurm_testbed as testbed  # tools/ is on sys.path (tests/conftest.py)
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm
from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm_files as job
from ansible_collections.aifactory.topology.plugins.module_utils._base.hostlist import compress, expand
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover
from ansible_collections.aifactory.topology.plugins.module_utils._writers import shrink_guard

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(os.environ.get("AIFACTORY_GOLDEN_DIR") or REPO / "tests" / "golden")  # override: try other files

pytestmark = pytest.mark.slurm

NOT_AVAILABLE = "Requested node configuration is not available"


# -- the test bed ------------------------------------------------------------------------------

slurm_conf = testbed.slurm_conf


@contextlib.contextmanager
def controller(root, files):
    """testbed.slurmctld, but a start failure fails the test with Slurm's own log."""
    try:
        with testbed.slurmctld(root, files) as ctld:
            assert "UP" in ctld.scontrol("ping"), "scontrol ping did not report UP"
            yield ctld
    except testbed.StartFailed as exc:
        pytest.fail(f"slurmctld refused the configuration:\n{exc}\n--- files ---\n"
                    + "\n".join(f"## {name}\n{text}" for name, text in files.items()))


def nodes_of(hostlist_text) -> set[str]:
    return set(expand(hostlist_text)) if hostlist_text else set()


def placed(ctld, *args) -> set[str]:
    return nodes_of(ctld.placement(*args))


# -- parsing Slurm's output and the files ------------------------------------------------------

def records(text):
    """One dict per non-empty line of `key=value` tokens (scontrol output or topology.conf)."""
    result = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            result.append({key.lower(): value for key, value in re.findall(r"(\w+)=(\S*)", line)})
    return result


def parse_conf(text):
    """(kind, spec) for a topology.conf: kind 'block' -> (blocks, sizes), 'tree' -> switches, else None."""
    recs = records(text)
    if any("blockname" in rec for rec in recs):
        blocks = [(rec["blockname"], nodes_of(rec.get("nodes"))) for rec in recs if "blockname" in rec]
        sizes = [rec["blocksizes"] for rec in recs if "blocksizes" in rec]
        return "block", (blocks, [int(v) for v in sizes[-1].split(",")] if sizes else None)
    if any("switchname" in rec for rec in recs):
        return "tree", {rec["switchname"]: (nodes_of(rec.get("switches")), nodes_of(rec.get("nodes")))
                        for rec in recs if "switchname" in rec}
    return None, None


def parse_yaml(text):
    """[(name, kind, spec)] for a topology.yaml, or None if the text is not one."""
    data = yaml.safe_load(text)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data or not all(isinstance(e, dict) and "topology" in e for e in data):
        return None
    entries = []
    for entry in data:
        name = str(entry["topology"])
        if entry.get("block") is not None:
            block = entry["block"]
            sizes = block.get("block_sizes")
            if sizes is not None and not isinstance(sizes, list):
                sizes = [sizes]
            blocks = [(str(b["block"]), nodes_of(b.get("nodes"))) for b in block.get("blocks") or []]
            entries.append((name, "block", (blocks, sizes)))
        elif entry.get("tree") is not None:
            switches = {str(s["switch"]): (nodes_of(s.get("children")), nodes_of(s.get("nodes")))
                        for s in entry["tree"].get("switches") or []}
            entries.append((name, "tree", switches))
        else:
            entries.append((name, "flat", None))
    return entries


def check_blocks(blocks, sizes, shown):
    """`scontrol show topology` (block) agrees with the file's blocks, order and sizes. Returns its nodes."""
    recs = records(shown)
    base = [rec for rec in recs if "blockname" in rec]
    aggregated = [rec for rec in recs if "aggregatedblock" in rec]
    assert [rec["blockname"] for rec in base] == [name for name, _members in blocks], "block names/order differ"
    assert [int(rec["blockindex"]) for rec in base] == list(range(len(blocks))), "BlockIndex is not file order"
    for rec, (name, members) in zip(base, blocks):
        assert nodes_of(rec.get("nodes")) == members, f"block {name}: nodes differ"
    if sizes:
        base_size = sizes[0]
    else:  # omitted BlockSizes: base = node count of the first block with nodes (docs/slurm-facts.md, block rules)
        base_size = next(len(members) for _name, members in blocks if members)
    assert {int(rec["blocksize"]) for rec in base} == {base_size}, "base BlockSize differs"
    position = {name: index for index, (name, _members) in enumerate(blocks)}
    for rec in aggregated:
        size = int(rec["blocksize"])
        span, remainder = divmod(size, base_size)
        assert remainder == 0 and span & (span - 1) == 0, f"{rec}: size not base * 2^k"
        if sizes:
            assert size in sizes[1:], f"{rec}: aggregated size {size} not in BlockSizes {sizes}"
        members = expand(rec["aggregatedblock"])
        assert all(m in position for m in members), f"{rec}: members are not blocks of the file"
        first = position[members[0]]
        assert [position[m] for m in members] == list(range(first, first + len(members))), f"{rec}: not contiguous"
        assert first % span == 0 and span // 2 < len(members) <= span, f"{rec}: not an aligned group"
        union = set().union(*(dict(blocks)[m] for m in members))
        assert nodes_of(rec.get("nodes")) == union, f"{rec}: nodes are not the union of its blocks"
    return set().union(*(nodes_of(rec.get("nodes")) for rec in base)) if base else set()


def check_switches(switches, shown):
    """`scontrol show topology` (tree) agrees with the file's switches. Returns the leaf nodes."""
    recs = {rec["switchname"]: rec for rec in records(shown) if "switchname" in rec}
    assert set(recs) == set(switches), "switch names differ"

    def below(name):
        children, members = switches[name]
        return set(members).union(*(below(c) for c in children)) if children else set(members)

    for name, (children, members) in switches.items():
        rec = recs[name]
        assert nodes_of(rec.get("switches")) == children, f"switch {name}: child switches differ"
        assert nodes_of(rec.get("nodes")) == below(name), f"switch {name}: nodes differ"
        level = int(rec["level"])
        if not children:
            assert level == 0, f"leaf switch {name} is not Level=0"
        else:
            assert all(level > int(recs[c]["level"]) for c in children), f"switch {name}: level not above children"
    return set().union(*(m for _children, m in switches.values())) if switches else set()


def keys_kept(written, loaded, where="topology.yaml"):
    """Every key of the file survives into `scontrol show topoconf` (Slurm silently drops unknown keys)."""
    if isinstance(written, dict):
        assert isinstance(loaded, dict), f"{where}: Slurm did not load a mapping"
        dropped = set(map(str, written)) - set(map(str, loaded))
        assert not dropped, f"{where}: keys ignored by Slurm (typo?): {sorted(dropped)}"
        for key, value in written.items():
            keys_kept(value, loaded[str(key)], f"{where}.{key}")
    elif isinstance(written, list) and isinstance(loaded, list):
        assert len(written) == len(loaded), f"{where}: {len(written)} items written, {len(loaded)} loaded"
        if where == "topology.yaml":  # Slurm sorts the cluster_default entry first: match by name
            by_name = {str(entry.get("topology")): entry for entry in loaded if isinstance(entry, dict)}
            loaded = [by_name.get(str(entry.get("topology")), {}) if isinstance(entry, dict) else entry
                      for entry in written]
        for index, (a, b) in enumerate(zip(written, loaded)):
            keys_kept(a, b, f"{where}[{index}]")


BAD_LOG = ("Invalid hostnames", "lookup failure", "Ignoring", "fatal:")


def yaml_nodes(entries):
    """Every node the parsed topology.yaml entries place (blocks and tree switches)."""
    nodes = set()
    for _name, kind, spec in entries:
        if kind == "block":
            nodes.update(*(m for _block, m in spec[0]))
        elif kind == "tree":
            nodes.update(*(m for _children, m in spec.values()))
    return nodes


def verify_topology_file(root, filename, text):
    """Load `text` (a topology.conf or topology.yaml) in a real slurmctld and compare what it shows."""
    if filename.endswith((".yaml", ".yml")):
        entries = parse_yaml(text)
        if entries is None:
            pytest.fail(f"{filename} is not a topology.yaml (no list of `topology:` entries)")
        nodes = yaml_nodes(entries)
        names = [name for name, _kind, _spec in entries]
        partitions = [f"PartitionName=topo{i} Nodes=ALL Topology={name}" for i, name in enumerate(names)]
        partitions.append("PartitionName=all Nodes=ALL Default=YES")
        files = {"slurm.conf": slurm_conf(nodes or {"spare01"}, partitions=partitions), "topology.yaml": text}
    else:
        kind, spec = parse_conf(text)
        if kind is None:
            pytest.fail(f"{filename} is neither a block (BlockName=) nor a tree (SwitchName=) topology.conf")
        nodes = shrink_guard.nodes_in_file(text)
        entries = [("default", kind, spec)]
        files = {"slurm.conf": slurm_conf(nodes or {"spare01"}, plugin=f"topology/{kind}"), "topology.conf": text}

    with controller(root, files) as ctld:
        shown_nodes = set()
        for index, (name, kind, spec) in enumerate(entries):
            args = ["show", "topology"] + ([name] if filename.endswith((".yaml", ".yml")) else [])
            if kind == "flat":
                continue
            shown = ctld.scontrol(*args)
            if kind == "block":
                shown_nodes |= check_blocks(spec[0], spec[1], shown)
            else:
                shown_nodes |= check_switches(spec, shown)
            if filename.endswith((".yaml", ".yml")):
                part = ctld.scontrol("show", "partition", f"topo{index}")
                assert f"Topology={name}" in part.split(), f"partition topo{index} is not bound to {name}"
        assert shown_nodes == nodes, "scontrol show topology does not list the file's nodes"
        if filename.endswith((".yaml", ".yml")):
            keys_kept(yaml.safe_load(text), yaml.safe_load(ctld.scontrol("show", "topoconf")))
        log = ctld.log()
        bad = [line for line in log.splitlines() if any(word in line for word in BAD_LOG)]
        if nodes and not filename.endswith((".yaml", ".yml")):
            bad += [line for line in log.splitlines() if "lack access" in line]
        assert not bad, "slurmctld complained about the file:\n" + "\n".join(bad)


# -- 1. golden files ---------------------------------------------------------------------------

def _golden_params():
    files = sorted(p for p in GOLDEN.rglob("*") if p.is_file() and p.suffix in (".conf", ".yaml", ".yml"))
    assert files, f"{GOLDEN} has no *.conf or *.yaml files"
    return [pytest.param(p, id=str(p.relative_to(GOLDEN))) for p in files]


@pytest.mark.parametrize("path", _golden_params())
def test_golden_file_loads_in_slurmctld(slurm_root, path):
    verify_topology_file(slurm_root, path.name, path.read_text(encoding="utf-8"))


def _racks(count, placeholders=(), size=18, switch=None):
    domains = []
    for rack in range(1, count + 1):
        name = f"rack{rack:02d}"
        domain = {"name": name}
        if rack not in placeholders:
            domain["nodes"] = f"gb200-r{rack:02d}-n[01-{size:02d}]"
        if switch and rack not in placeholders:
            domain["switch"] = switch
        domains.append(domain)
    return domains


def _mixed_model():
    """8 racks (rack03 an empty placeholder), a 2-leaf CPU fabric, named switches."""
    return discover("inventory", {
        "switches": {"core": None, "leaf-gpu": "core", "leaf-cpu1": "core", "leaf-cpu2": "core",
                     "spine": {"parent": None, "name": "spine-display"}},
        "domains": _racks(8, placeholders={3}, switch="leaf-gpu"),
        "nodes": [{"nodes": "cpu[01,03,05,07]", "switch": "leaf-cpu1"},
                  {"nodes": "cpu[02,04,06,08]", "switch": "leaf-cpu2"}],
    })


def _rendered_cases():
    model = _mixed_model()
    gpus = sorted(n for n in model.nodes if n.startswith("gb200"))
    cpus = sorted(n for n in model.nodes if n.startswith("cpu"))
    specs = [slurm.TopologySpec("nvl72", "topology/block", nodes=gpus, block_sizes=[18, 36, 72, 144],
                                cluster_default=True),
             slurm.TopologySpec("fabric", "topology/tree", nodes=cpus),
             slurm.TopologySpec("admin", "topology/flat")]
    gpu_only = discover("inventory", {"domains": _racks(8, placeholders={3})})
    ragged = Topology()
    for rack, count in ((1, 18), (2, 17), (3, 18)):
        for n in range(1, count + 1):
            ragged.add_node(f"gb-r{rack}-n{n:02d}", domain=f"nvl{rack}")
    ragged.validate()
    return {
        "block-domain-placeholder.conf": slurm.render_block_conf(
            gpu_only, slurm.BlockOptions(block_sizes=[18, 36, 72, 144])),
        "block-topograph-ragged.conf": slurm.render_block_conf(
            ragged, slurm.BlockOptions(block_sizes=[18, 36], naming="topograph")),
        "tree-named-switches.conf": slurm.render_tree_conf(
            discover("inventory", {
                "switches": {"sw-spine": {"parent": None, "name": "spine"},
                             "sw-l1": {"parent": "sw-spine", "name": "leaf1"},
                             "sw-l2": {"parent": "sw-spine", "name": "leaf2"}},
                "nodes": [{"nodes": "cpu[01-04]", "switch": "sw-l1"}, {"nodes": "cpu[05-08]", "switch": "sw-l2"}],
            })),
        "block-tree-flat.yaml": slurm.render_topology_yaml(model, specs, slurm.BlockOptions()),
    }


RENDERED = ("block-domain-placeholder.conf", "block-topograph-ragged.conf", "tree-named-switches.conf",
            "block-tree-flat.yaml")


@pytest.fixture(scope="module")
def rendered():
    cases = _rendered_cases()
    assert sorted(cases) == sorted(RENDERED)
    return cases


@pytest.mark.parametrize("filename", RENDERED)
def test_rendered_file_loads_in_slurmctld(slurm_root, rendered, filename):
    """Files rendered by the engines right now (golden-like; independent of tests/golden/)."""
    verify_topology_file(slurm_root, filename, rendered[filename])


def test_shrink_guard_reads_the_nodes_slurm_loads_from_a_headed_topology_yaml(slurm_root, rendered):
    """nodes_in_file() on the file as the module writes it (with header) == the nodes slurmctld loads."""
    text = job.with_header(rendered["block-tree-flat.yaml"], job.DEFAULT_HEADER)
    entries = parse_yaml(text)
    expected = yaml_nodes(entries)
    verify_topology_file(slurm_root, "headed.yaml", text)  # Slurm itself loads the headed file fine
    assert shrink_guard.nodes_in_file(text) == expected


# -- 2. placement with sbatch --test-only --------------------------------------------------------

def _start_rendered(root, topology, options):
    conf = slurm.render_block_conf(topology, options)
    return controller(root, {"slurm.conf": slurm_conf(shrink_guard.nodes_in_file(conf), plugin="topology/block"),
                             "topology.conf": conf})


def _by_rack(nodes):
    racks = {}
    for node in nodes:
        racks.setdefault(re.match(r"gb200-(r\d+)-", node).group(1), set()).add(node)
    return racks


def _rack(number, count=18):
    return {f"gb200-r{number:02d}-n{n:02d}" for n in range(1, count + 1)}


class TestSegmentsOverTwoRacks:
    """a. two complete NVL72 racks, block_sizes [18, 36]."""

    @pytest.fixture(scope="class")
    @classmethod
    def ctld(cls, slurm_root):
        topo = discover("inventory", {"domains": _racks(2)})
        with _start_rendered(slurm_root, topo, slurm.BlockOptions(block_sizes=[18, 36])) as ctld:
            yield ctld

    def test_segment_16_takes_16_nodes_in_each_rack(self, ctld):
        racks = _by_rack(placed(ctld, "-N32", "--segment=16"))
        assert {rack: len(nodes) for rack, nodes in racks.items()} == {"r01": 16, "r02": 16}

    def test_without_segment_the_split_is_uneven(self, ctld):
        # The contrast that makes the test above meaningful: Slurm 26.05.5 fills one rack (18 + 14).
        racks = _by_rack(placed(ctld, "-N32"))
        assert sorted(len(nodes) for nodes in racks.values()) == [14, 18]


class TestIncompleteRack:
    """b. a 17-node rack (incomplete) next to a 10-node rack, block_sizes [18]."""

    @pytest.fixture(scope="class")
    @classmethod
    def ctld(cls, slurm_root):
        topo = discover("inventory", {"domains": [{"name": "rack01", "nodes": "gb200-r01-n[01-17]"},
                                                  {"name": "rack02", "nodes": "gb200-r02-n[01-10]"}]})
        with _start_rendered(slurm_root, topo, slurm.BlockOptions(block_sizes=[18])) as ctld:
            yield ctld

    def test_17_node_job_fills_the_incomplete_rack(self, ctld):
        assert placed(ctld, "-N17") == _rack(1, 17)

    def test_base_block_sized_job_never_spans_racks(self, ctld):
        # 27 nodes are free, but an 18-node job must fit in one base block: Slurm refuses it.
        with pytest.raises(testbed.PlacementRefused, match=NOT_AVAILABLE):
            ctld.placement("-N18")


class TestPlaceholderKeepsPositions:
    """c. 8 racks in domain order, rack03 an empty placeholder, block_sizes [18, 36, 72, 144]."""

    @pytest.fixture(scope="class")
    @classmethod
    def ctld(cls, slurm_root):
        topo = discover("inventory", {"domains": _racks(8, placeholders={3})})
        with _start_rendered(slurm_root, topo, slurm.BlockOptions(block_sizes=[18, 36, 72, 144])) as ctld:
            yield ctld

    def test_blocks_and_aggregates_follow_positions(self, ctld):
        recs = records(ctld.scontrol("show", "topology"))
        base = [(r["blockname"], int(r["blockindex"]), r.get("nodes", "")) for r in recs if "blockname" in r]
        assert base == [(f"rack{i:02d}", i - 1, "" if i == 3 else f"gb200-r{i:02d}-n[01-18]") for i in range(1, 9)]
        aggregated = {(r["aggregatedblock"], int(r["blocksize"])): nodes_of(r["nodes"])
                      for r in recs if "aggregatedblock" in r}
        racks = {i: _rack(i) for i in (1, 2, 4, 5, 6, 7, 8)}
        assert aggregated == {
            ("rack[01-02]", 36): racks[1] | racks[2],
            ("rack[03-04]", 36): racks[4],  # the placeholder keeps rack04 at position 3
            ("rack[05-06]", 36): racks[5] | racks[6],
            ("rack[07-08]", 36): racks[7] | racks[8],
            ("rack[01-04]", 72): racks[1] | racks[2] | racks[4],
            ("rack[05-08]", 72): racks[5] | racks[6] | racks[7] | racks[8],
            ("rack[01-08]", 144): set().union(*racks.values()),
        }

    def test_72_nodes_land_on_the_only_complete_aligned_group(self, ctld):
        assert placed(ctld, "-N72") == _rack(5) | _rack(6) | _rack(7) | _rack(8)

    def test_72_nodes_are_refused_when_that_group_loses_a_node(self, ctld):
        # rack01, rack02, rack04 + 3 racks' worth elsewhere are free, but no aligned 72-node group is
        # complete: without the placeholder, rack[01,02,04,05] would be one and Slurm would place the job.
        with pytest.raises(testbed.PlacementRefused, match=NOT_AVAILABLE):
            ctld.placement("-N72", "-x", "gb200-r07-n01")

    def test_36_nodes_land_on_an_aligned_pair(self, ctld):
        # Free complete aligned pairs: only rack05+rack06. (Without the placeholder the only one
        # would be rack04+rack05.)
        assert placed(ctld, "-N36", "-x", "gb200-r01-n01,gb200-r07-n01") == _rack(5) | _rack(6)

    def test_consolidated_18_node_segments_land_on_an_aligned_pair(self, ctld):
        assert placed(ctld, "-N36", "--segment=18", "--consolidate-segments",
                      "-x", "gb200-r01-n01,gb200-r07-n01") == _rack(5) | _rack(6)

    def test_18_node_segments_take_whole_racks(self, ctld):
        # Each 18-node segment is its own base-block request: two whole racks, but NOT necessarily an
        # aligned pair (Slurm 26.05.5 picks rack06 + rack08 here); alignment needs --consolidate-segments.
        racks = _by_rack(placed(ctld, "-N36", "--segment=18", "-x", "gb200-r07-n01"))
        assert len(racks) == 2
        assert all(nodes == _rack(int(rack[1:])) for rack, nodes in racks.items())


class TestTopologyYamlPartitions:
    """d./e. topology.yaml: nvl72 block (cluster default), fabric tree, admin flat (Hidden)."""

    @pytest.fixture(scope="class")
    @classmethod
    def model(cls):
        topo = Topology()
        topo.add_switch("spine")
        topo.add_switch("leaf1", parent="spine")
        topo.add_switch("leaf2", parent="spine")
        topo.add_switch("nvsw")
        for rack in range(1, 5):
            topo.declare_domain(f"rack{rack:02d}")
            if rack == 2:
                continue  # placeholder: rack01's pair is incomplete
            for n in range(1, 19):
                topo.add_node(f"gb200-r{rack:02d}-n{n:02d}", switch="nvsw", domain=f"rack{rack:02d}")
        for i in range(1, 9):  # interleaved names: "the first 4 by name" spans both leaves
            topo.add_node(f"cpu{i:02d}", switch="leaf1" if i % 2 else "leaf2")
        return topo.validate()

    @pytest.fixture(scope="class")
    @classmethod
    def ctld(cls, slurm_root, model):
        gpus = sorted(n for n in model.nodes if n.startswith("gb200"))
        cpus = sorted(n for n in model.nodes if n.startswith("cpu"))
        specs = [slurm.TopologySpec("nvl72", "topology/block", nodes=gpus, block_sizes=[18, 36],
                                    cluster_default=True),
                 slurm.TopologySpec("fabric", "topology/tree", nodes=cpus),
                 slurm.TopologySpec("admin", "topology/flat")]
        text = slurm.render_topology_yaml(model, specs, slurm.BlockOptions())
        partitions = [f"PartitionName=gpu Nodes={compress(gpus)} Topology=nvl72 Default=YES",
                      "PartitionName=admin Nodes=ALL Topology=admin Hidden=YES",
                      f"PartitionName=fabric Nodes={compress(cpus)} Topology=fabric"]
        with controller(slurm_root, {"slurm.conf": slurm_conf(model.nodes, partitions=partitions),
                                     "topology.yaml": text}) as ctld:
            yield ctld

    def test_partitions_are_bound_to_their_topologies(self, ctld):
        for partition, topology in (("gpu", "nvl72"), ("admin", "admin"), ("fabric", "fabric")):
            assert f"Topology={topology}" in ctld.scontrol("show", "partition", partition).split()
        assert "Hidden=YES" in ctld.scontrol("show", "partition", "admin").split()

    def test_flat_admin_partition_spans_racks(self, ctld):
        racks = _by_rack(placed(ctld, "-p", "admin", "-N20", "-x", "cpu[01-08]"))
        assert len(racks) > 1

    def test_flat_admin_partition_uses_what_the_block_partition_cannot(self, ctld):
        # Only rack01 and rack03 are left: 36 nodes, but not an aligned pair (rack02 is a placeholder).
        excluded = "cpu[01-08],gb200-r04-n[01-18]"
        racks = _by_rack(placed(ctld, "-p", "admin", "-N20", "-x", excluded))
        assert set(racks) == {"r01", "r03"}
        with pytest.raises(testbed.PlacementRefused, match=NOT_AVAILABLE):
            ctld.placement("-p", "gpu", "-N20", "-x", excluded)

    def test_block_partition_keeps_20_nodes_in_an_aligned_pair(self, ctld):
        assert placed(ctld, "-p", "gpu", "-N20") <= _rack(3) | _rack(4)

    def test_tree_partition_keeps_4_nodes_under_one_leaf(self, ctld):
        assert placed(ctld, "-p", "fabric", "-N4") in ({"cpu01", "cpu03", "cpu05", "cpu07"},
                                                       {"cpu02", "cpu04", "cpu06", "cpu08"})

    def test_show_topology_fabric_lists_the_switches(self, ctld):
        recs = {r["switchname"]: r for r in records(ctld.scontrol("show", "topology", "fabric"))}
        assert set(recs) == {"spine", "leaf1", "leaf2"}
        assert (recs["spine"]["level"], nodes_of(recs["spine"]["switches"])) == ("1", {"leaf1", "leaf2"})
        assert nodes_of(recs["leaf1"]["nodes"]) == {"cpu01", "cpu03", "cpu05", "cpu07"}
        assert nodes_of(recs["leaf2"]["nodes"]) == {"cpu02", "cpu04", "cpu06", "cpu08"}


# -- 3. broken files make slurmctld fail --------------------------------------------------------

_TWO_RACKS = sorted(_rack(1) | _rack(2))


def _block_conf(sizes="18,36", rack01="gb200-r01-n[01-18]"):
    return f"BlockName=rack01 Nodes={rack01}\nBlockName=rack02 Nodes=gb200-r02-n[01-18]\nBlockSizes={sizes}\n"


def _block_yaml(sizes="[18, 36]", name="nvl72"):
    return (f"- topology: {name}\n  cluster_default: true\n  block:\n    block_sizes: {sizes}\n    blocks:\n"
            "      - block: rack01\n        nodes: gb200-r01-n[01-18]\n"
            "      - block: rack02\n        nodes: gb200-r02-n[01-18]\n")


def _conf_files(text):
    return {"slurm.conf": slurm_conf(_TWO_RACKS, plugin="topology/block"), "topology.conf": text}


def _yaml_files(text, partition_topology="nvl72"):
    return {"slurm.conf": slurm_conf(_TWO_RACKS, partitions=[
        f"PartitionName=gpu Nodes=ALL Default=YES Topology={partition_topology}"]), "topology.yaml": text}


# (good files, broken files, Slurm's fatal message); the good twin proves the failure is the defect's.
BROKEN = {
    "conf-blocksizes-18-54": (_conf_files(_block_conf("18,36")), _conf_files(_block_conf("18,54")),
                              "fatal: Invalid BlockSizes value: 54"),
    "yaml-blocksizes-18-54": (_yaml_files(_block_yaml("[18, 36]")), _yaml_files(_block_yaml("[18, 54]")),
                              "fatal: Invalid BlockSizes value in topology nvl72"),
    "conf-malformed-node-name": (_conf_files(_block_conf()), _conf_files(_block_conf(rack01="gb200-r01-n[01-")),
                                 "fatal: Invalid node name (gb200-r01-n[01-) in block config (rack01)"),
    "yaml-unknown-partition-topology": (_yaml_files(_block_yaml()), _yaml_files(_block_yaml(), "nvl27"),
                                        "Requested topology configuration is not available"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_file_stops_slurmctld(slurm_root, case):
    good, broken, message = BROKEN[case]
    with controller(slurm_root, good):
        pass
    with pytest.raises(testbed.StartFailed) as failure:
        with testbed.slurmctld(slurm_root, broken):
            pass
    assert message in str(failure.value)


# Slurm's verdict (topology.conf, 26.05.5) vs the collection's validate_block_sizes().
BLOCK_SIZES = [
    # sizes, Slurm accepts, collection accepts
    ([18, 36, 72, 144], True, True),
    ([18, 18 * 2 ** 15], True, True),
    ([18, 54], False, False),
    ([36, 18], False, False),
    ([18, 27], False, False),
    ([0], False, False),
    ([18, 18 * 2 ** 16], False, False),
    ([18, 18], True, False),        # Slurm tolerates a repeated size; the collection is stricter
    ([18, 36, 36], True, False),
]


@pytest.mark.parametrize("sizes,slurm_accepts,collection_accepts", BLOCK_SIZES,
                         ids=[",".join(map(str, s)) for s, _slurm, _ours in BLOCK_SIZES])
def test_block_sizes_rule_matches_slurm(slurm_root, sizes, slurm_accepts, collection_accepts):
    files = _conf_files(_block_conf(",".join(map(str, sizes))))
    try:
        with testbed.slurmctld(slurm_root, files):
            started = True
    except testbed.StartFailed as exc:
        assert "Invalid BlockSizes value" in str(exc)
        started = False
    assert started == slurm_accepts
    try:
        slurm.validate_block_sizes(sizes)
        accepted = True
    except TopologyError:
        accepted = False
    assert accepted == collection_accepts
    assert slurm_accepts or not accepted, "the collection accepts block sizes that slurmctld rejects"
