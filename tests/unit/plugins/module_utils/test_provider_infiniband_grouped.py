"""``ibnetdiscover -g`` (grouped) output: its chassis lines are skipped and its records read as usual, giving the
topology of the same fabric's plain output (fixtures of our own: tests/fixtures/infiniband/README.md)."""

from __future__ import annotations

import re

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._engines import slurm
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover

from ...conftest_paths import FIXTURES, REPO

OURS = REPO / "tests" / "fixtures" / "infiniband"
PLAIN = OURS / "director.out"
GROUPED = OURS / "director-grouped.out"


def run(**params):
    warnings = []
    topology = discover("infiniband", params, warn=warnings.append)
    return topology, warnings


def test_the_fixtures_are_one_fabric_printed_with_and_without_grouping():
    plain, grouped = PLAIN.read_text(encoding="utf-8"), GROUPED.read_text(encoding="utf-8")
    assert "Chassis 1 (guid 0x98039b0300e1a000)" in grouped and "Non-Chassis Nodes" in grouped
    assert "[1][ext 1]\t" in grouped and '"S-98039b0300e1a011"[1][ext 1]' in grouped
    assert "sysimgguid=0x98039b0300e1a000\t\t# Chassis 1" in grouped
    assert "\t# CS7500 Line 1 Chip 1" in grouped and "(0c42a10300bb0001)\t# \n" in grouped
    assert "Chassis" not in plain and "[ext" not in plain
    headers = re.compile(r'^(?:Switch|Ca)\t\d+ "[^"]+"\t\t# "[^"]*"', re.M)
    assert sorted(headers.findall(plain)) == sorted(headers.findall(grouped))  # the same 6 switches and 4 HCAs
    assert len(headers.findall(plain)) == 10


def test_grouped_output_gives_the_topology_of_the_plain_output_of_the_same_fabric():
    plain, plain_warnings = run(ibnetdiscover_files=[str(PLAIN)])
    grouped, grouped_warnings = run(ibnetdiscover={"gpu-01": GROUPED.read_text(encoding="utf-8")})
    assert grouped.to_compact() == plain.to_compact()
    assert slurm.render_tree_conf(grouped) == slurm.render_tree_conf(plain) == (
        "SwitchName=S-98039b0300e1a001 Switches=S-98039b0300e1a011\n"
        "SwitchName=S-98039b0300e1a011 Switches=DC2-LEAF-[1-2]\n"
        "# DC2-LEAF-1=S-0c42a10300bb0001\nSwitchName=DC2-LEAF-1 Nodes=gpu-[01-02]\n"
        "# DC2-LEAF-2=S-0c42a10300bb0002\nSwitchName=DC2-LEAF-2 Nodes=gpu-[03-04]\n")
    # The director's chips share its name: the merge keeps their ids, and says so, either way.
    assert grouped_warnings == plain_warnings == [
        "switches S-98039b0300e1a001, S-98039b0300e1a011 share the name 'dir-01'; they keep their ids as names"]


def test_topographs_example_grouped_as_ibnetdiscover_g_prints_it_gives_the_same_tree():
    # No chassis in it (every switch its own system): -g adds the Non-Chassis Nodes line and an empty comment
    # after each switchguid.
    plain = (FIXTURES / "ibnetdiscover-example.out").read_text(encoding="utf-8")
    grouped = plain.replace("\n\nvendid=", "\n\nNon-Chassis Nodes\n\nvendid=", 1)
    grouped = re.sub(r"^(switchguid=\S+)$", "\\1\t# ", grouped, flags=re.M)
    assert grouped.count("\t# \n") == plain.count("\nswitchguid=") > 30
    assert run(ibnetdiscover={"n": grouped})[0].to_compact() == run(ibnetdiscover={"n": plain})[0].to_compact()


@pytest.mark.parametrize("where", ["Chassis 2 (guid 0x98039b0300e1b000)", "Non-Chassis Nodes"])
def test_a_grouping_line_inside_a_record_is_refused_saying_to_run_without_g(where):
    text = GROUPED.read_text(encoding="utf-8").replace(
        '[2][ext 2]\t"S-0c42a10300bb0002"[33]', f'{where}\n[2][ext 2]\t"S-0c42a10300bb0002"[33]', 1)
    with pytest.raises(TopologyError, match=rf"ibnetdiscover output of n, line \d+: not ibnetdiscover output: "
                                            rf"'{re.escape(where)}' \(a line of ibnetdiscover -g inside a record: "
                                            rf"run ibnetdiscover without -g\)"):
        run(ibnetdiscover={"n": text})
