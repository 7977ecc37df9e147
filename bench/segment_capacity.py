# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the aifactory.topology.segment_capacity module on 100,000 nodes against 6 nodes.

Uses bench/run.py's GB200 NVL72 model generator (18-node racks, the last one partial) and a
stand-in scontrol that prints ``scontrol show nodes --json`` for every node, with a seeded 2 %
of nodes drained or down, so the module runs its real path (JSON parsing included). The module
runs as its own process (``python -m``), as Ansible runs it; the table gives wall times (min and
median of --repeat runs) and max RSS. Goal of issue 12: the large run within 2 s of the small one.
``--scontrol-mb 25,50`` also runs the large model with the stand-in's output padded to about that
many MB (real scontrol prints some 60 fields per node, 100,000 nodes about 250 MB): how reading and
parsing grow with the size of scontrol's answer (issue 22: quadratic before, linear now).
It measures only; nothing is asserted.
Usage: ``python bench/segment_capacity.py [--nodes N] [--repeat K] [--scontrol-mb MB,...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import run as bench  # noqa: E402  (bench/run.py: model generator and process timing)

MODULE = "ansible_collections.aifactory.topology.plugins.modules.segment_capacity"
BLOCK_SIZES = [18, 36, 72, 144]
OUT_RATE = 0.02


def node_names(nodes):
    shape = bench.model_shape(nodes)
    width = max(4, len(str(shape["racks"])))
    names = []
    for rack in range(1, shape["racks"] + 1):
        size = bench.RACK_SIZE if rack < shape["racks"] else shape["last_rack_nodes"]
        names += [f"gb200-r{rack:0{width}d}-n{i:02d}" for i in range(1, size + 1)]
    return names


def write_scontrol(directory, nodes, size_bytes=None):
    """A stand-in scontrol that prints the JSON of a real 26.05 `show nodes --json` (the fields used),
    padded with a per-node ``extra`` string to about ``size_bytes`` when given."""
    rng = random.Random(12)
    entries = []
    for name in node_names(nodes):
        roll = rng.random()
        state = ["IDLE"] if roll >= OUT_RATE else (["IDLE", "DRAIN"] if roll < OUT_RATE / 2 else ["DOWN"])
        entries.append({"name": name, "state": state, "cpus": 144, "partitions": ["gpu"]})
    document = {"nodes": entries, "errors": [], "warnings": []}
    text = json.dumps(document)
    if size_bytes and size_bytes > len(text):
        padding = "x" * ((size_bytes - len(text)) // len(entries) - len(', "extra": ""'))
        for entry in entries:
            entry["extra"] = padding
        text = json.dumps(document)
    data = directory / "nodes.json"
    data.write_text(text, encoding="utf-8")
    script = directory / "scontrol"
    script.write_text(f"#!/bin/sh\nexec cat {data}\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def compact_model(path):
    """The compact model, as topology_info returns it and the segment_report role passes it on."""
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover  # noqa: E402

    return discover("simulation", {"model_path": str(path)}, {}).to_compact()


def cpu_seconds(report):
    text = Path(report).read_text(encoding="utf-8") if Path(report).exists() else ""
    found = re.findall(r"(?:User|System) time \(seconds\): ([0-9.]+)", text)
    return sum(float(value) for value in found) if found else None


def measure(nodes, repeat, root, env, scontrol_bytes=None):
    directory = Path(tempfile.mkdtemp(prefix=f"capacity-{nodes}-", dir=root))
    model = directory / "model.yaml"
    bench.write_model(model, nodes)
    args = {"model": compact_model(model), "block_sizes": BLOCK_SIZES,
            "scontrol_path": str(write_scontrol(directory, nodes, scontrol_bytes))}
    (directory / "module").mkdir()
    args_file = directory / "module" / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}), encoding="utf-8")
    walls, cpus, rss, result = [], [], [], None
    for _attempt in range(repeat):
        wall, peak, done = bench.run_process([sys.executable, "-m", MODULE, str(args_file)], env, directory, directory)
        result = json.loads(done.stdout)
        if done.returncode or result.get("failed"):
            raise RuntimeError(f"module failed on {nodes} nodes: {result.get('msg')}")
        walls.append(wall)
        cpus.append(cpu_seconds(directory / "rusage.txt") or 0.0)
        rss.append(peak or 0.0)
    json_mb = (directory / "nodes.json").stat().st_size / 1e6
    return {"nodes": nodes, "racks": len(result["blocks"]), "json_mb": round(json_mb, 1), "min_s": round(min(walls), 3),
            "median_s": round(statistics.median(walls), 3), "cpu_min_s": round(min(cpus), 3),
            "cpu_median_s": round(statistics.median(cpus), 3), "max_rss_mb": round(max(rss), 1),
            "idle": result["summary"]["idle"], "unsegmented_ranges": len(result["unsegmented_feasible"])}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scontrol-mb", default="", help="comma-separated sizes of the padded scontrol output")
    options = parser.parse_args(argv)
    padded_sizes = [float(size) for size in options.scontrol_mb.split(",") if size.strip()]
    root, temporary = bench.collection_root()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root)] + sys.path))
    scratch = tempfile.mkdtemp(prefix="bench-capacity-")
    try:
        small = measure(6, options.repeat, scratch, env)
        large = measure(options.nodes, options.repeat, scratch, env)
        padded = [measure(options.nodes, options.repeat, scratch, env, int(size * 1e6)) for size in padded_sizes]
    finally:
        if temporary:
            bench.remove_collection_root(root)
        import shutil  # pylint: disable=import-outside-toplevel
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{'nodes':>8} {'racks':>6} {'JSON MB':>8} {'wall min s':>10} {'wall median s':>13} {'CPU min s':>9} "
          f"{'CPU median s':>12} {'max RSS MB':>10} {'idle':>7} {'-N ranges':>9}")
    for row in (small, large, *padded):
        print(f"{row['nodes']:>8} {row['racks']:>6} {row['json_mb']:>8} {row['min_s']:>10} {row['median_s']:>13} "
              f"{row['cpu_min_s']:>9} {row['cpu_median_s']:>12} {row['max_rss_mb']:>10} {row['idle']:>7} "
              f"{row['unsegmented_ranges']:>9}")
    print(f"difference: wall min {large['min_s'] - small['min_s']:.3f} s, CPU min "
          f"{large['cpu_min_s'] - small['cpu_min_s']:.3f} s (goal: at most 2 s); load average {os.getloadavg()[0]:.1f}")
    print(json.dumps({"small": small, "large": large, "padded": padded, "machine": bench.machine_info()}))


if __name__ == "__main__":
    main()
