# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the Event-Driven Ansible sources and rulebooks with REAL parts (docs/performance.md).

1. Event-to-labels latency: the k8s_topology rulebook (real ansible-rulebook) on a private test-bed
   control plane; a node's ``nvidia.com/gpu.clique`` label is changed and the time until its
   ``accelerator.topograph.run/domain`` label follows is measured, ``--samples`` times, with the
   default 15 s debounce delay and with 1 s. p50/p95 over the samples.
2. Playbook runs for a burst of ``--burst`` new nodes (1 s delay): the goal is one.
3. At scale (``--nodes 1000,10000``): for each count, that many nodes (racks of 18, one clique per
   rack) and the k8s_topology rulebook reconciling only the labels (playbooks/k8s.yml without NFD and
   Slinky); the overhead above the debounce delay from one node's clique change to its domain label
   on the API server, p50/p95 over ``--samples``, each playbook run's task times (ansible.posix's
   profile_tasks in the rulebook's log), and where the time goes, stage by stage, outside Ansible:
   ``ansible-playbook`` start-up (a one-task playbook), the node list, the ``dra`` discovery, the
   label render and plan, the one patch. For Slurm (``--slurm-nodes 1000``): the slurm_topology
   rulebook (playbooks/site.yml, the ``inventory`` provider) on a real slurmctld with that many
   nodes; the inventory moves half of one rack out of its block, one node of it goes down, and the
   time until ``scontrol show topology`` shows the smaller block is measured (its overhead above the
   delay includes up to one poll interval, ``--slurm-interval``).
4. Idle cost of each source over a quiet ``--quiet`` seconds: each source's ``main`` alone in a
   Python process (k8s_nodes on the control plane, slurm_nodes polling the real slurmctld of
   tools/slurm_testbed.py every 10 s, regenerate listening), and the whole ansible-rulebook process
   of the k8s_topology rulebook (its JVM included): CPU seconds used (from /proc) and RSS.

Measures and prints only (and writes bench/results/eda.json). Usage, from the repository root with
the project's .venv: ``python bench/eda.py [--samples 5] [--burst 100] [--quiet 60] [--skip-slurm]
[--nodes 1000,10000] [--slurm-nodes 1000] [--only-scale]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / ".collections"))

import k8s_testbed  # noqa: E402
import yaml  # noqa: E402
import slurm_testbed  # noqa: E402
from tests.integration import eda_support  # noqa: E402
from tests.integration.k8s_support import TEST_LABEL, client, make_nodes  # noqa: E402
from tests.integration.test_eda_k8s import CLIQUE, DOMAIN, domains, setup_rulebook  # noqa: E402
from tests.integration.test_eda_slurm import rulebook_vars  # noqa: E402
from tests.integration.test_role_slurm_topology import blocks, write_inventory  # noqa: E402

from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels  # noqa: E402
from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels  # noqa: E402
from ansible_collections.aifactory.topology.plugins.module_utils._providers import kubernetes_nodes  # noqa: E402
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s  # noqa: E402
from ansible_collections.aifactory.topology.plugins.module_utils._writers import k8s_nodes as _k8s_nodes  # noqa: E402

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


RACK = 18
# profile_tasks' recap: "Discover the topology ------- 2.34s" (one block per playbook run).
TASK_TIME = re.compile(r"^(?P<task>\S.*?) -{3,} (?P<seconds>[\d.]+)s\s*$", re.M)


def scale_names(test_id, count):
    return [f"s{test_id}-r{i // RACK + 1:04d}-n{i % RACK + 1:02d}" for i in range(count)]


def create_many(api, names, labels):
    """POST the Nodes 8 at a time (kubectl one by one would take minutes at 10,000)."""
    def create(name):
        api.request("POST", _k8s.node_path(), body=k8s_testbed.node_manifest(name, labels(name)))

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(create, names))


def delete_many(api, names):
    def delete(name):
        api.request("DELETE", _k8s.node_path(name))

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(delete, names))


def timed(function, *args, **kwargs):
    """(seconds, result) of one call."""
    start = time.monotonic()
    result = function(*args, **kwargs)
    return round(time.monotonic() - start, 3), result


def seconds(function, *args, **kwargs):
    return timed(function, *args, **kwargs)[0]


def stages(plane, api, test_id, workdir, name, value):
    """Where a run's time goes, each stage alone outside Ansible, as the modules do it, plus the
    start-up of ansible-playbook itself (a one-task playbook on the same inventory)."""
    selector = {TEST_LABEL: test_id}
    params = {"node_selector": selector}
    creds = {"kubeconfig": str(plane.kubeconfig)}
    result = {}
    result["list_nodes_s"], listed = timed(api.list, _k8s.node_path(), f"{TEST_LABEL}={test_id}")
    result["list_nodes_rv0_s"] = seconds(api.request, "GET", _k8s.node_path(),
                                         {"labelSelector": f"{TEST_LABEL}={test_id}", "resourceVersion": "0"})
    result["discover_dra_s"], topology = timed(kubernetes_nodes.discover_dra, params, creds, lambda m: None)
    keys = _labels.LabelKeys(None, None)
    result["render_labels_s"], desired = timed(k8s_labels.desired_labels, topology, keys)
    result["writer_list_s"], nodes = timed(_k8s_nodes.list_nodes, api, f"{TEST_LABEL}={test_id}")
    result["plan_s"] = seconds(_k8s_nodes.plan_node_changes, nodes, desired, keys)
    result["model_json_mb"] = round(len(json.dumps(topology.to_compact())) / 1e6, 2)
    result["patch_one_s"] = seconds(plane.kubectl.patch, "Node", name, {"metadata": {"labels": {DOMAIN: value}}})
    playbook = workdir / "start-up.yml"
    playbook.write_text(json.dumps([{"name": "start-up", "hosts": "k8s_topology", "gather_facts": False,
                                     "tasks": [{"ansible.builtin.debug": {"msg": "up"}}]}]))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    start = time.monotonic()
    subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(workdir / "inventory"),
                    str(playbook)], check=True, capture_output=True, env=env, cwd=workdir)
    result["ansible_playbook_start_s"] = round(time.monotonic() - start, 3)
    return result, len(listed)


def task_times(log):
    """[{task: seconds}] per playbook run, from profile_tasks' recap after each PLAY RECAP."""
    runs = []
    for block in log.split("PLAY RECAP")[1:]:
        runs.append({m["task"].strip(): float(m["seconds"]) for m in TASK_TIME.finditer(block)})
    return runs


def scale_latency(plane, workdir, count, delay, samples):
    """The overhead above ``delay`` from a clique change to the domain label, ``count`` nodes."""
    test_id = f"{count}x{int(time.time()) % 100000}"
    names = scale_names(test_id, count)
    api = client(plane.kubeconfig)
    rack_of = {name: index // RACK + 1 for index, name in enumerate(names)}
    created = seconds(create_many, api, names, lambda n: {TEST_LABEL: test_id, CLIQUE: f"c.{rack_of[n]}"})
    inventory, variables, _port, _ca = setup_rulebook(plane, "default", test_id, workdir, delay=delay)
    group_vars = inventory / "group_vars" / "all.yml"
    settings = yaml.safe_load(group_vars.read_text())
    for key in ("k8s_topology_nfd_namespace", "k8s_topology_slinky"):  # the labels alone
        settings.pop(key)
    group_vars.write_text(yaml.safe_dump(settings))
    profile = {"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks"}
    times = []
    try:
        with eda_support.Rulebook("k8s_topology", inventory, variables, workdir, extra_env=profile) as rulebook:
            first = seconds(rulebook.wait_runs, 1, timeout=1800)
            for sample in range(samples):
                name = names[(sample * 7919) % count]
                value = f"x.{sample}"
                runs = rulebook.runs()
                start = time.monotonic()
                plane.kubectl.patch("Node", name, {"metadata": {"labels": {CLIQUE: value}}})
                rulebook.wait_for(lambda n=name, v=value: (api.request("GET", _k8s.node_path(n))["metadata"]
                                                           .get("labels", {}).get(DOMAIN) == v),
                                  "the domain label", timeout=600)
                times.append(time.monotonic() - start)
                rulebook.wait_runs(runs + 1, timeout=600)  # the run has ended before the next sample starts
            runs = task_times(rulebook.log())
        breakdown, listed = stages(plane, api, test_id, workdir, names[0], "c.1")
    finally:
        delete_many(api, names)
    overheads = [t - delay for t in times]
    return {"nodes": count, "listed": listed, "delay_s": delay, "samples": len(times), "create_s": created,
            "first_run_s": first,
            "overhead_p50_s": round(percentile(overheads, 0.5), 2),
            "overhead_p95_s": round(percentile(overheads, 0.95), 2),
            "all_overhead_s": [round(t, 2) for t in overheads],
            "task_s_per_run": runs[1:], "stages": breakdown, "load": os.getloadavg()}


def slurm_provider(count, half_of=None):
    """``inventory`` provider params: racks of 18, two per leaf; ``half_of``: that rack keeps n01-n09."""
    racks = -(-count // RACK)
    domains = []
    for rack in range(1, racks + 1):
        size = min(RACK, count - (rack - 1) * RACK)
        size = min(size, 9) if rack == half_of else size
        domains.append({"name": f"rack{rack:04d}", "nodes": f"gb200-r{rack:04d}-n[01-{size:02d}]",
                        "switch": f"leaf{(rack - 1) // 2 + 1:04d}"})
    switches = {"spine": None, **{f"leaf{leaf:04d}": "spine" for leaf in range(1, -(-racks // 2) + 1)}}
    return {"name": "inventory", "params": {"switches": switches, "domains": domains}}


def slurm_inventory(path, root, conf_dir, count, half_of=None):
    write_inventory(path, root, conf_dir)
    inventory = yaml.safe_load(path.read_text())
    inventory["all"]["vars"]["topology_provider"] = slurm_provider(count, half_of)
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))


def slurm_scale(workdir, count, delay, samples, interval):
    """Event (a node down, the inventory changed) to ``scontrol show topology``, ``count`` nodes."""
    root = slurm_testbed.build()
    names = [f"gb200-r{i // RACK + 1:04d}-n{i % RACK + 1:02d}" for i in range(count)]
    from ansible_collections.aifactory.topology.plugins.module_utils._base.hostlist import compress
    conf = slurm_testbed.slurm_conf(names, partitions=[
        f"PartitionName=gpu Nodes={compress(names)} Default=YES MaxTime=INFINITE State=UP"]) + \
        "SwitchType=switch/nvidia_imex\nSwitchParameters=imex_channel_count=2048\n"  # as the role's tests have it
    times = []
    with slurm_testbed.slurmctld(root, {"slurm.conf": conf}) as ctld:
        show = seconds(ctld.scontrol, "show", "nodes", "--json")
        inventory = workdir / "inventory.yml"
        slurm_inventory(inventory, root, ctld.conf_dir, count)
        variables = rulebook_vars(root, ctld.conf_dir, workdir, slurm_topology_poll_interval=interval,
                                  topology_debounce_delay=delay)
        profile = {"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks"}
        with eda_support.Rulebook("slurm_topology", inventory, variables, workdir, extra_env=profile) as rulebook:
            first = seconds(rulebook.wait_runs, 1, timeout=1800)
            for sample in range(samples):
                rack = sample + 1
                node = f"gb200-r{rack:04d}-n01"
                want = f"gb200-r{rack:04d}-n[01-09]"
                slurm_inventory(inventory, root, ctld.conf_dir, count, half_of=rack)
                runs = rulebook.runs()
                start = time.monotonic()
                ctld.scontrol("update", f"nodename={node}", "state=down", "reason=eda-bench")
                rulebook.wait_for(lambda r=f"rack{rack:04d}", w=want: (r, w) in
                                  {(b[0], b[2]) for b in blocks(ctld)}, "the smaller block", timeout=900)
                times.append(time.monotonic() - start)
                rulebook.wait_runs(runs + 1, timeout=900)
                runs = rulebook.runs()
                ctld.scontrol("update", f"nodename={node}", "state=resume")
                rulebook.wait_runs(runs + 1, timeout=900)  # the resume's run, before the next inventory
            runs = task_times(rulebook.log())
    overheads = [t - delay for t in times]
    return {"nodes": count, "delay_s": delay, "poll_interval_s": interval, "samples": len(times),
            "scontrol_show_nodes_json_s": show, "first_run_s": first,
            "overhead_p50_s": round(percentile(overheads, 0.5), 2),
            "overhead_p95_s": round(percentile(overheads, 0.95), 2),
            "all_overhead_s": [round(t, 2) for t in overheads], "task_s_per_run": runs[1:],
            "load": os.getloadavg()}


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
    parser.add_argument("--nodes", default="", help="node counts for the scale latency, e.g. 1000,10000")
    parser.add_argument("--slurm-nodes", default="", help="node counts of the Slurm scale latency, e.g. 1000")
    parser.add_argument("--slurm-interval", type=float, default=1.0, help="slurm_nodes poll interval at scale")
    parser.add_argument("--only-scale", action="store_true", help="only the scale latencies")
    options = parser.parse_args()
    eda_support.require_rulebook = lambda: None
    results = {"machine": {"cpus": os.cpu_count(), "load": os.getloadavg()}}
    counts = [int(n) for n in options.nodes.split(",") if n.strip()]
    slurm_counts = [int(n) for n in options.slurm_nodes.split(",") if n.strip()]
    with tempfile.TemporaryDirectory(prefix="eda-bench-") as tmp:
        for count in slurm_counts:
            workdir = Path(tmp) / f"slurm-{count}"
            workdir.mkdir()
            results[f"slurm_scale_{count}_nodes"] = slurm_scale(workdir, count, 1, options.samples,
                                                                options.slurm_interval)
            print(json.dumps(results[f"slurm_scale_{count}_nodes"]), flush=True)
    if options.only_scale:
        if counts:
            with tempfile.TemporaryDirectory(prefix="eda-bench-") as tmp, k8s_testbed.control_plane() as plane:
                scale(plane, Path(tmp), counts, options.samples, results)
        return report(results)
    with tempfile.TemporaryDirectory(prefix="eda-bench-") as tmp, k8s_testbed.control_plane() as plane:
        scale(plane, Path(tmp), counts, options.samples, results)
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
    return report(results)


def scale(plane, tmp, counts, samples, results):
    for count in counts:
        workdir = tmp / f"scale-{count}"
        workdir.mkdir()
        results[f"scale_{count}_nodes"] = scale_latency(plane, workdir, count, 1, samples)
        print(json.dumps(results[f"scale_{count}_nodes"]), flush=True)


def report(results):
    results["machine"]["load_after"] = os.getloadavg()
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / "eda.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
