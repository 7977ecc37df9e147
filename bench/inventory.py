# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the aifactory.topology.topology inventory plugin on large GB200 models.

For each size (default 10,000 and 100,000 nodes; bench/run.py's model: NVL72 racks of 18, two
racks per leaf, leaf -> spine -> core) it measures:

* in process: the group layout (``_engines.ansible_groups.layout``) of the loaded model, wall time
  (min/median of --repeat runs) and tracemalloc peak;
* as a process: ``ansible-inventory --list`` on a plugin source reading the model file, the
  same with the jsonfile cache warm (the model is not read again), and, for scale, on a static
  YAML inventory holding the same hosts, groups and variables (Ansible's own cost of that many
  hosts), wall time and max RSS.

Measures and prints only (and writes bench/results/inventory.json); never asserts.
Usage: ``python bench/inventory.py [--nodes 10000 100000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench  # noqa: E402  (bench/run.py: model generator and measuring helpers)

ANSIBLE_INVENTORY = str(Path(sys.executable).with_name("ansible-inventory"))


def measure(nodes, repeat, scratch, env):
    from ansible_collections.aifactory.topology.plugins.module_utils._engines.ansible_groups import layout
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover

    model = scratch / f"model-{nodes}.yaml"
    bench.write_model(model, nodes)
    topology = discover("simulation", {"model_path": str(model)})
    records = []
    record, result = bench.measure_in_process(f"layout ({nodes:,} nodes)", lambda: layout(topology), repeat)
    record["groups"] = len(result.group_hosts)
    records.append(record)
    source = scratch / f"n{nodes}.topology.yml"
    source.write_text(f"plugin: aifactory.topology.topology\nmodel_path: {model.name}\ncache: true\n"
                      f"cache_plugin: ansible.builtin.jsonfile\ncache_connection: {scratch / f'cache-{nodes}'}\n")
    static = scratch / f"static-{nodes}.yml"
    static.write_text(json.dumps(static_inventory(result)))  # JSON is YAML
    for name, inventory, extra in (
            (f"ansible-inventory --list, model file ({nodes:,} nodes)", source, ["--flush-cache"]),
            (f"ansible-inventory --list, warm cache ({nodes:,} nodes)", source, []),
            (f"ansible-inventory --list, static YAML, same hosts ({nodes:,} nodes)", static, [])):
        seconds, peaks = [], []
        for _attempt in range(repeat):
            wall, rss, done = bench.run_process([ANSIBLE_INVENTORY, "-i", str(inventory), "--list", *extra],
                                                env, scratch, scratch)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed:\n{done.stderr[-2000:]}")
            seconds.append(wall)
            peaks.append(rss or 0.0)
        hosts = len(json.loads(done.stdout)["_meta"]["hostvars"])
        records.append(bench.summarize(name, "process", seconds, max(peaks), "max RSS", hosts=hosts))
    return records


def static_inventory(groups):
    """The same hosts, groups and host variables as a YAML inventory's ``all`` tree."""
    children = {name: {"hosts": {host: None for host in hosts}} for name, hosts in groups.group_hosts.items()}
    for name, members in groups.group_children.items():
        if members:
            children[name]["children"] = {child: None for child in members}
    hosts = {host: dict(variables) for host, variables in groups.hostvars.items()}
    return {"all": {"hosts": hosts, "children": children}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    root, temporary = bench.collection_root()
    scratch = Path(tempfile.mkdtemp(prefix="aifactory-bench-inventory-"))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(root), ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED="true")
    env.pop("ANSIBLE_CONFIG", None)
    try:
        records = [record for nodes in args.nodes for record in measure(nodes, args.repeat, scratch, env)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if temporary:
            bench.remove_collection_root(root)
    bench.print_table(records)
    bench.RESULTS.mkdir(exist_ok=True)
    (bench.RESULTS / "inventory.json").write_text(json.dumps(
        {"machine": bench.machine_info(), "loadavg": bench.loadavg(), "records": records}, indent=2) + "\n")


if __name__ == "__main__":
    main()
