# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the cabling comparison (topology_compare's engine) on a rail-optimised InfiniBand fabric.

Generates the ibnetdiscover text of ``--units`` scalable units of ``--nodes`` nodes with ``--rails`` HCAs each
(one leaf per rail and unit, one spine), with one crossed rail and one node cabled into another unit, reads it
with the ``infiniband`` provider, and times the comparison against the design (one leaf per unit). Prints the
discovery and comparison times (median of --repeat) and the findings; it measures only, nothing is asserted.
Usage: ``python bench/cabling.py [--units 32] [--nodes 32] [--rails 8] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.ib_rails import rail_fabric  # noqa: E402  # pylint: disable=wrong-import-position


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=32)
    parser.add_argument("--nodes", type=int, default=32)
    parser.add_argument("--rails", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    # pylint: disable=import-outside-toplevel  # after the path is set
    from ansible_collections.aifactory.topology.plugins.module_utils._engines import cabling
    from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import infiniband

    def host(unit, node):
        return f"su{unit:03d}-n{node:03d}"

    cables = {(host(2, args.nodes), rail): (1, rail) for rail in range(args.rails)}  # cabled into unit 1
    cables.update({(host(1, 2), 0): (1, 1), (host(1, 2), 1): (1, 0)})  # a crossed rail
    text = rail_fabric(args.units, args.nodes, args.rails, cables, host_name=host)
    design = Topology()
    design.add_switch("spine")
    for unit in range(1, args.units + 1):
        design.add_switch(f"su{unit}", parent="spine")
        for node in range(1, args.nodes + 1):
            design.add_node(host(unit, node), switch=f"su{unit}")
    design.validate()
    options = cabling.CABLING.build({})
    discover_times, compare_times = [], []
    for _run in range(args.repeat):
        started = time.perf_counter()
        observed = infiniband.discover({"ibnetdiscover": {"n": text}}, {}, lambda message: None)
        discover_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        report = cabling.compare(design, observed, options)
        compare_times.append(time.perf_counter() - started)
    print(f"{args.units * args.nodes} nodes, {args.units * args.nodes * args.rails} HCAs, "
          f"{args.units * args.rails + 1} switches, {len(text) // 1024} KiB of ibnetdiscover")
    print(f"discovery  {statistics.median(discover_times):.3f} s (median of {args.repeat})")
    print(f"comparison {statistics.median(compare_times):.3f} s (median of {args.repeat})")
    print("findings:", {kind: count for kind, count in report["counts"].items() if count})


if __name__ == "__main__":
    main()
