# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the Event-Driven Ansible sources and rulebooks with REAL parts (docs/performance.md).

1. Event-to-labels latency: the k8s_topology rulebook (real ansible-rulebook) on a private test-bed
   control plane; a node's ``nvidia.com/gpu.clique`` label is changed and the time until its
   ``accelerator.topograph.run/domain`` label follows is measured, ``--samples`` times, with the
   default 15 s debounce delay and with 1 s. p50/p95 over the samples.
2. Playbook runs for a burst of ``--burst`` new nodes (1 s delay): the goal is one.
3. Idle cost of each source over a quiet ``--quiet`` seconds: each source's ``main`` alone in a
   Python process (k8s_nodes on the control plane, slurm_nodes polling the real slurmctld of
   tools/slurm_testbed.py every 10 s, regenerate listening), and the whole ansible-rulebook process
   of the k8s_topology rulebook (its JVM included): CPU seconds used (from /proc) and RSS.

Measures and prints only (and writes bench/results/eda.json). Usage, from the repository root with
the project's .venv: ``python bench/eda.py [--samples 5] [--burst 100] [--quiet 60] [--skip-slurm]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / ".collections"))

import k8s_testbed  # noqa: E402
import slurm_testbed  # noqa: E402
from tests.integration import eda_support  # noqa: E402
from tests.integration.k8s_support import TEST_LABEL, client, make_nodes  # noqa: E402
from tests.integration.test_eda_k8s import CLIQUE, domains, setup_rulebook  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def rss_mb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def latency(plane, namespace, workdir, delay, samples):
    test_id = f"lat{int(time.time())}{delay}"
    names = [f"b{test_id}-r01-n{n:02d}" for n in range(1, 19)]
    make_nodes(plane, names, test_id, {n: {CLIQUE: "c.1"} for n in names})
    inventory, variables, _port, _ca = setup_rulebook(plane, namespace, test_id, workdir, delay=delay)
    api = client(plane.kubeconfig)
    times = []
    with eda_support.Rulebook("k8s_topology", inventory, variables, workdir) as rulebook:
        rulebook.wait_runs(1, timeout=300)
        for sample in range(samples):
            value = f"c.{sample + 2}"
            runs = rulebook.runs()
            start = time.monotonic()
            plane.kubectl.patch("Node", names[sample % len(names)], {"metadata": {"labels": {CLIQUE: value}}})
            rulebook.wait_for(lambda v=value, s=sample: domains(api, test_id)[names[s % len(names)]] == v,
                              "the domain label", timeout=300)
            times.append(time.monotonic() - start)
            rulebook.wait_runs(runs + 1)  # the run has ended before the next sample starts
    return {"delay_s": delay, "samples": len(times), "p50_s": round(percentile(times, 0.5), 2),
            "p95_s": round(percentile(times, 0.95), 2), "all_s": [round(t, 2) for t in times]}


def burst(plane, namespace, workdir, count):
    test_id = f"burst{int(time.time())}"
    first = [f"b{test_id}-r01-n01"]
    make_nodes(plane, first, test_id, {first[0]: {CLIQUE: "c.1"}})
    inventory, variables, _port, _ca = setup_rulebook(plane, namespace, test_id, workdir, delay=1)
    api = client(plane.kubeconfig)
    names = [f"b{test_id}-r{n // 18 + 2:02d}-n{n % 18 + 1:02d}" for n in range(count)]
    with eda_support.Rulebook("k8s_topology", inventory, variables, workdir) as rulebook:
        rulebook.wait_runs(1, timeout=300)
        start = time.monotonic()
        make_nodes(plane, names, test_id, {n: {CLIQUE: "c.2"} for n in names})
        created = time.monotonic() - start
        rulebook.wait_for(lambda: all(v == "c.2" for k, v in domains(api, test_id).items() if k in names)
                          and len(domains(api, test_id)) == count + 1, "all nodes labelled", timeout=600)
        labelled = time.monotonic() - start
        events = [e for e in rulebook.events() if any(c["kind"] == "node" for c in e["changes"])]
        runs = rulebook.runs() - 1
    return {"nodes": count, "create_s": round(created, 2), "all_labelled_s": round(labelled, 2),
            "events": len(events), "playbook_runs": runs, "changes_per_event": [e["count"] for e in events]}


HARNESS = textwrap.dedent("""
    import asyncio, json, runpy, sys
    sys.path.insert(0, sys.argv[3])
    module = runpy.run_path(sys.argv[1])
    class Queue:
        async def put(self, event):
            print(json.dumps(event), flush=True)
    asyncio.run(module["main"](Queue(), json.loads(sys.argv[2])))
""")


def idle(plane, workdir, quiet, ctld=None, root=None):
    """CPU seconds and RSS of each source alone, and of ansible-rulebook, over one quiet period."""
    sources = REPO / "extensions" / "eda" / "plugins" / "event_source"
    certfile, keyfile, _ca = eda_support.tls_files(workdir)
    runs = {"k8s_nodes": {"kubeconfig": str(plane.kubeconfig), "node_selector": {TEST_LABEL: "idle"}},
            "regenerate": {"token": eda_support.TOKEN, "certfile": certfile, "keyfile": keyfile,
                           "port": eda_support.free_port()}}
    if ctld is not None:
        runs["slurm_nodes"] = {"scontrol": ["chroot", str(root), "scontrol"],
                               "slurm_conf": f"{ctld.conf_dir}/slurm.conf"}
    processes = {name: subprocess.Popen([sys.executable, "-c", HARNESS, str(sources / f"{name}.py"), json.dumps(args),
                                         str(REPO / ".collections")], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=dict(os.environ, JAVA_HOME=""))
                 for name, args in runs.items()}
    inventory, variables, _port, _ca = setup_rulebook(plane, "default", "idle", workdir)
    rulebook = eda_support.Rulebook("k8s_topology", inventory, variables, workdir).start()
    try:
        rulebook.wait_runs(1, timeout=300)
        # The start-up run is over and every source is up; the quiet period starts now.
        pids = {**{name: p.pid for name, p in processes.items()}, "ansible-rulebook k8s_topology": rulebook.process.pid}
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        time.sleep(quiet)  # the measured quiet period itself
        result = {name: {"cpu_s": round(cpu_seconds(pid) - before[name], 3),
                         "cpu_percent": round(100 * (cpu_seconds(pid) - before[name]) / quiet, 2),
                         "rss_mb": round(rss_mb(pid), 1)} for name, pid in pids.items()}
    finally:
        rulebook.stop()
        for process in processes.values():
            process.terminate()
            process.wait()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--quiet", type=float, default=60.0)
    parser.add_argument("--skip-slurm", action="store_true")
    options = parser.parse_args()
    eda_support.require_rulebook = lambda: None
    results = {"machine": {"cpus": os.cpu_count(), "load": os.getloadavg()}}
    with tempfile.TemporaryDirectory(prefix="eda-bench-") as tmp, k8s_testbed.control_plane() as plane:
        plane.install_nfd_crds()
        namespace = "eda-bench"
        plane.kubectl.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        for delay in (1, 15):
            workdir = Path(tmp) / f"latency-{delay}"
            workdir.mkdir()
            results[f"latency_delay_{delay}s"] = latency(plane, namespace, workdir, delay, options.samples)
            print(json.dumps(results[f"latency_delay_{delay}s"]), flush=True)
        workdir = Path(tmp) / "burst"
        workdir.mkdir()
        results["burst"] = burst(plane, namespace, workdir, options.burst)
        print(json.dumps(results["burst"]), flush=True)
        workdir = Path(tmp) / "idle"
        workdir.mkdir()
        if options.skip_slurm or slurm_testbed.unavailable_reason():
            results["idle"] = idle(plane, workdir, options.quiet)
        else:
            root = slurm_testbed.build()
            nodes = {f"gb200-r{r:02d}-n{n:02d}" for r in range(1, 5) for n in range(1, 19)}
            with slurm_testbed.slurmctld(root, {"slurm.conf": slurm_testbed.slurm_conf(nodes)}) as ctld:
                start = time.monotonic()
                for _call in range(10):
                    ctld.run("scontrol", "show", "nodes", "--json")
                results["scontrol_show_nodes_json_s"] = round((time.monotonic() - start) / 10, 3)
                results["idle"] = idle(plane, workdir, options.quiet, ctld, root)
        print(json.dumps(results["idle"]), flush=True)
    results["machine"]["load_after"] = os.getloadavg()
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / "eda.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
