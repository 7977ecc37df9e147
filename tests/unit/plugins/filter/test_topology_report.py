from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aifactory.topology.plugins.filter.topology_report import FilterModule
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology

FILTERS = FilterModule().filters()


def _discovery(quarantined=0, racks=True):
    """A discovery's result as topology_info returns it: rack r1 whole (4 of 4 trays), rack r2 with one tray
    quarantined and one reporting nothing, and ``quarantined`` nodes quarantined outside any rack."""
    topology = Topology()
    topology.rack_trays = 4
    for rack, serial, trays in (("r1", "S1", (1, 2, 3, 4)), ("r2", "S2", (1, 2, 4))):
        for tray in trays:
            node = f"{rack}n{tray}"
            topology.add_node(node, domain=rack)
            if racks:
                topology.locate(node, {"chassis_serial_number": serial, "slot_number": tray, "tray_index": tray})
    topology.quarantine("r2n2", "nvidia_smi", "fabric state Partition Assigned False", unhealthy=True)
    for index in range(quarantined):
        topology.quarantine(f"bad{index:02d}", "inventory", f"reason {index}")
    return {"summary": topology.summary(), "quarantined": topology.quarantine_report()}


def test_quarantine_lines_name_the_first_ten_then_count_the_rest():
    lines = FILTERS["quarantine_lines"](_discovery(quarantined=11))
    assert len(lines) == 11 and lines[-1] == "  and 2 more"
    assert lines[0] == "  r2n2 (unhealthy, nvidia_smi): fabric state Partition Assigned False"
    assert lines[1] == "  bad00 (invalid, inventory): reason 0"
    assert FILTERS["quarantine_lines"](_discovery(quarantined=11), 3)[-1] == "  and 9 more"
    assert FILTERS["quarantine_lines"]({"summary": {"quarantined": 0}, "quarantined": []}) == []


def test_rack_lines_name_the_racks_not_whole():
    lines = FILTERS["rack_lines"](_discovery())
    assert lines == ["racks by hardware (domain, chassis): 2, not whole: 1",
                     "  r2 (chassis S2): 2 of 4 trays schedulable, quarantined: r2n2, missing: 1"]
    assert FILTERS["rack_lines"](_discovery(racks=False)) == []
    assert FILTERS["rack_lines"](_discovery(), 0) == ["racks by hardware (domain, chassis): 2, not whole: 1"]


@pytest.mark.parametrize("name", ["quarantine_lines", "rack_lines"])
def test_filters_refuse_what_is_no_discovery_result(name):
    with pytest.raises(AnsibleFilterError, match=f"{name}: the input must be a discovery's result"):
        FILTERS[name](["r1"])
    with pytest.raises(AnsibleFilterError, match=f"{name}: limit must be a whole number of 0 or more, got -1"):
        FILTERS[name]({"summary": {}}, -1)
