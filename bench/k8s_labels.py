# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: k8s_node_labels on 5,000 (or 25,000) nodes of a REAL kube-apiserver (tools/k8s_testbed.py).

Starts a private control plane with an audit policy that logs every write to Node objects, creates
N nodes (GB200 NVL72 racks of 18), then times three ``ansible-playbook`` runs of one
``aifactory.topology.k8s_node_labels`` task:

1. first reconcile (every node gets its labels);
2. no-change reconcile (must send zero writes);
3. one rack moved to another leaf switch (must send exactly 18 node writes).

Writes are counted from the API server's side twice: node resourceVersions before/after (what
was stored) and the audit log (PATCH/PUT requests that reached the server, dry runs excluded).
Then the obvious alternative, one ``kubernetes.core.k8s`` ``state: patched`` task per node (a
loop), is timed on ``--alt-nodes`` nodes for a first and a no-change run; its per-node cost is
extrapolated to N.

With ``--scheduler-topology``, Kueue's Topology and ResourceFlavor CRDs (from its Go module) are
installed and ``aifactory.topology.k8s_scheduler_topology`` runs twice on the labelled nodes (first
apply, then the no-change apply), and its render alone (the engine, in process) is timed. With
``--source``, the ``aifactory.topology.k8s_nodes`` event source runs in its own Python process on the
same nodes: the time to its first event (the first list), the time of three more lists as a ``410
Gone`` makes it list (``ResourceWatcher.relist``), the time from one node's clique change to its
event, and the process's peak and current RSS. Prints a table and writes
bench/results/k8s_labels.json. Measures only.

Usage: ``python bench/k8s_labels.py [--nodes 5000] [--alt-nodes 360] [--concurrency 8]
[--scheduler-topology] [--source]`` (from the repository root, with the project's .venv; needs the
test bed's binaries, and Kueue's module for ``--scheduler-topology``). The 25,000-node run of
docs/performance.md: ``--nodes 25000 --alt-nodes 0 --scheduler-topology --source``.
"""

from __future__ import annotations

import argparse
import json
import select
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / ".collections"))

import k8s_testbed  # noqa: E402  (tools/ is not a package)

from ansible_collections.aifactory.topology.plugins.module_utils._base import labels as _labels  # noqa: E402
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s  # noqa: E402
from ansible_collections.aifactory.topology.plugins.module_utils._writers.k8s import MERGE_PATCH  # noqa: E402

RACK = 18
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete]
    resources: [{group: "", resources: [nodes]}]
  - level: None
"""


def inventory_params(nodes, moved_rack=None):
    """Racks of 18 (the last may be partial), two racks per leaf, 32 leaves per spine, one core."""
    racks = -(-nodes // RACK)
    leaves = -(-racks // 2)
    spines = -(-leaves // 32)
    switches = {"core": None}
    switches.update({f"spine{s:03d}": "core" for s in range(1, spines + 1)})
    switches.update({f"leaf{leaf:04d}": f"spine{(leaf - 1) // 32 + 1:03d}" for leaf in range(1, leaves + 1)})
    switches["leaf-spare"] = "spine001"
    domains = []
    for rack in range(1, racks + 1):
        size = min(RACK, nodes - (rack - 1) * RACK)
        leaf = "leaf-spare" if rack == moved_rack else f"leaf{(rack - 1) // 2 + 1:04d}"
        domains.append({"name": f"rack{rack:04d}", "nodes": f"gb200-r{rack:04d}-n[01-{size:02d}]", "switch": leaf})
    return {"switches": switches, "domains": domains}


def node_names(nodes):
    return [f"gb200-r{(i // RACK) + 1:04d}-n{(i % RACK) + 1:02d}" for i in range(nodes)]


def create_nodes(api, names, label):
    def create(name):
        manifest = k8s_testbed.node_manifest(name, {"bench": label})
        api.request("POST", _k8s.node_path(), body=manifest)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(create, names))


def versions(api, label):
    return {item["metadata"]["name"]: item["metadata"]["resourceVersion"]
            for item in api.list(_k8s.node_path(), f"bench={label}")}


class AuditLog:
    def __init__(self, path):
        self.path = Path(path)
        self.offset = 0

    def writes_since_mark(self):
        """Node write requests (not dry runs) logged since the last call, by verb."""
        counts = {}
        if not self.path.exists():
            return counts
        with open(self.path, encoding="utf-8") as handle:
            handle.seek(self.offset)
            for line in handle:
                event = json.loads(line)
                if "dryRun=" in event.get("requestURI", ""):
                    continue
                counts[event["verb"]] = counts.get(event["verb"], 0) + 1
            self.offset = handle.tell()
        return counts


def run_playbook(workdir, name, tasks, env):
    playbook = workdir / f"{name}.yml"
    playbook.write_text(json.dumps([{"name": name, "hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    started = time.monotonic()
    result = subprocess.run([shutil.which("ansible-playbook") or "ansible-playbook", "-i", "localhost,", "-c", "local",
                             "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)],
                            capture_output=True, text=True, env=env, cwd=REPO, check=False)
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return elapsed


def ours(workdir, kubeconfig, nodes, label, concurrency, moved_rack=None):
    params = inventory_params(nodes, moved_rack)
    (workdir / "model.json").write_text(json.dumps(params))
    return [{"name": "labels", "aifactory.topology.k8s_node_labels": {
        "provider": {"name": "inventory", "params": "{{ lookup('file', '%s') | from_json }}" % (workdir / "model.json")},
        "kubeconfig": str(kubeconfig), "node_selector": {"bench": label}, "concurrency": concurrency}}]


def alternative(workdir, kubeconfig, nodes, moved_rack=None):
    """One kubernetes.core.k8s patch per node, with the same labels (and nulls for stale tiers)."""
    from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover

    desired = k8s_labels.desired_labels(discover("inventory", inventory_params(nodes, moved_rack)),
                                        _labels.LabelKeys())
    items = [{"name": name, "labels": labels} for name, labels in sorted(desired.items())]
    (workdir / "alt.json").write_text(json.dumps(items))
    return [{"name": "labels, one task per node", "kubernetes.core.k8s": {
        "state": "patched", "kind": "Node", "name": "{{ item.name }}", "kubeconfig": str(kubeconfig),
        "definition": {"metadata": {"labels": "{{ item.labels }}"}}},
        "loop": "{{ lookup('file', '%s') | from_json }}" % (workdir / "alt.json"),
        "loop_control": {"label": "{{ item.name }}"}}]


def scheduler_topology(workdir, kubeconfig, nodes, label, concurrency):
    params = inventory_params(nodes, moved_rack=3)  # the map as the labels step left it
    (workdir / "model.json").write_text(json.dumps(params))
    return [{"name": "scheduler topology", "aifactory.topology.k8s_scheduler_topology": {
        "provider": {"name": "inventory", "params": "{{ lookup('file', '%s') | from_json }}" % (workdir / "model.json")},
        "kubeconfig": str(kubeconfig), "node_selector": {"bench": label}, "consumers": ["kueue"],
        "name": "bench", "concurrency": concurrency}}]


def render_seconds(nodes):
    """The k8s_scheduler_topology engine alone on the model: levels and objects, best of three."""
    from ansible_collections.aifactory.topology.plugins.module_utils._engines import k8s_labels
    from ansible_collections.aifactory.topology.plugins.module_utils._engines import scheduler_topology as engine
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover

    topology = discover("inventory", inventory_params(nodes, moved_rack=3))
    keys = _labels.LabelKeys()
    options = engine.Options(["kueue"], keys, name="bench", flavor_node_labels={"bench": "ours"})
    best = None
    for _attempt in range(3):
        started = time.perf_counter()
        engine.render(topology, options)
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    return best


# Runs the k8s_nodes source as ansible-rulebook would (its main() with a queue), in this process; prints one
# JSON line per milestone on stdout. Extra lists are timed by calling the watcher's relist(), which is what a
# 410 Gone makes it do.
SOURCE_SCRIPT = r"""
import asyncio, json, sys, time
sys.path.insert(0, sys.argv[2])
from ansible_collections.aifactory.topology.extensions.eda.plugins.event_source import k8s_nodes
from ansible_collections.aifactory.topology.plugins.module_utils._events import k8s_watch

watchers = []
original_init = k8s_watch.ResourceWatcher.__init__
def remember(self, *args, **kwargs):
    original_init(self, *args, **kwargs)
    watchers.append(self)
k8s_watch.ResourceWatcher.__init__ = remember

def memory():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    return {key: int(fields[key].split()[0]) // 1024 for key in ("VmRSS", "VmHWM")}

def say(**data):
    print(json.dumps(data), flush=True)

async def run():
    queue = asyncio.Queue()
    started = time.monotonic()
    source = asyncio.ensure_future(k8s_nodes.main(queue, {"kubeconfig": sys.argv[1], "node_selector": {"bench": "ours"},
                                                          "delay": 0.1, "max_wait": 1, "stats_interval": 3600}))
    await asyncio.wait_for(queue.get(), 600)
    say(stage="first event", seconds=round(time.monotonic() - started, 3), nodes=len(watchers[0].known), **memory())
    lists = []
    for _ in range(3):
        begun = time.monotonic()
        await asyncio.to_thread(watchers[0].relist, False)
        lists.append(round(time.monotonic() - begun, 3))
    say(stage="relists", seconds=lists, **memory())
    line = await asyncio.to_thread(sys.stdin.readline)  # the parent changed one node's clique
    changed = time.monotonic()
    event = await asyncio.wait_for(queue.get(), 120)
    say(stage="change event", seconds=round(time.monotonic() - changed, 3), count=event["topology_change"]["count"],
        **memory())
    source.cancel()

asyncio.run(run())
"""


def source_case(kubeconfig, api, env):
    """The k8s_nodes source on the labelled nodes: (rows, memory) from SOURCE_SCRIPT's milestones."""
    process = subprocess.Popen([sys.executable, "-c", SOURCE_SCRIPT, str(kubeconfig), str(REPO / ".collections")],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    def milestone(timeout=900):
        ready = select.select([process.stdout], [], [], timeout)[0]
        if not ready:
            process.kill()
            raise RuntimeError("the k8s_nodes source gave no milestone in time")
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the k8s_nodes source ended: {process.stderr.read()[-3000:]}")
        return json.loads(line)

    try:
        first, relists = milestone(), milestone()
        name = node_names(1)[0]
        api.request("PATCH", _k8s.node_path(name), body={"metadata": {"labels": {"nvidia.com/gpu.clique": "bench-moved"}}},
                    content_type=MERGE_PATCH)
        process.stdin.write("changed\n")
        process.stdin.flush()
        change = milestone()
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return {"first_list_s": first["seconds"], "nodes": first["nodes"], "relists_s": relists["seconds"],
            "change_event_s": change["seconds"], "rss_mb_after_first_list": first["VmRSS"],
            "rss_mb_after_relists": relists["VmRSS"], "rss_mb_end": change["VmRSS"], "peak_rss_mb": change["VmHWM"]}


def measure(args):
    workdir = Path(tempfile.mkdtemp(prefix="aifactory-bench-k8s-"))
    policy = workdir / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    audit = AuditLog(workdir / "audit.log")
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"))
    rows = []
    with k8s_testbed.control_plane(run_dir=workdir / "plane", apiserver_args=[
            f"--audit-policy-file={policy}", f"--audit-log-path={audit.path}", "--audit-log-maxsize=0",
            "--max-requests-inflight=800", "--max-mutating-requests-inflight=400"]) as plane:
        api = _k8s.K8sClient.from_auth({"kubeconfig": str(plane.kubeconfig)}, environ={}, concurrency=8)
        started = time.monotonic()
        create_nodes(api, node_names(args.nodes), "ours")
        print(f"created {args.nodes} nodes in {time.monotonic() - started:.1f}s", file=sys.stderr)
        audit.writes_since_mark()

        def step(label, tasks, count_label, nodes):
            before = versions(api, count_label)
            seconds = run_playbook(workdir, label.replace(" ", "-"), tasks, env)
            after = versions(api, count_label)
            stored = sum(1 for name in after if before.get(name) != after[name])
            requests = audit.writes_since_mark()
            rows.append({"case": label, "nodes": nodes, "seconds": round(seconds, 2), "objects_written": stored,
                         "write_requests": sum(requests.values()), "by_verb": requests})
            print(f"{label}: {seconds:.2f}s, {stored} nodes written, requests {requests}", file=sys.stderr)

        step("ours: first reconcile", ours(workdir, plane.kubeconfig, args.nodes, "ours", args.concurrency),
             "ours", args.nodes)
        step("ours: no change", ours(workdir, plane.kubeconfig, args.nodes, "ours", args.concurrency), "ours", args.nodes)
        step("ours: one rack moved", ours(workdir, plane.kubeconfig, args.nodes, "ours", args.concurrency, moved_rack=3),
             "ours", args.nodes)

        if args.scheduler_topology:
            plane.install_kueue_crds()
            audit.writes_since_mark()
            tasks = scheduler_topology(workdir, plane.kubeconfig, args.nodes, "ours", args.concurrency)
            step("k8s_scheduler_topology: first apply", tasks, "ours", args.nodes)
            step("k8s_scheduler_topology: no change", tasks, "ours", args.nodes)
            rows.append({"case": "k8s_scheduler_topology: render alone (engine, in process)", "nodes": args.nodes,
                         "seconds": round(render_seconds(args.nodes), 3), "objects_written": 0, "write_requests": 0})
        if args.source:
            source = source_case(plane.kubeconfig, api, env)
            print(f"k8s_nodes source: {source}", file=sys.stderr)
            rows.append({"case": "k8s_nodes source: first list, to its first event", "nodes": source["nodes"],
                         "seconds": source["first_list_s"], "objects_written": 0, "write_requests": 0})
            rows.append({"case": "k8s_nodes source: relist (as after 410), slowest of 3", "nodes": source["nodes"],
                         "seconds": max(source["relists_s"]), "objects_written": 0, "write_requests": 0})
            rows.append({"case": "k8s_nodes source: one clique change to its event", "nodes": source["nodes"],
                         "seconds": source["change_event_s"], "objects_written": 0, "write_requests": 0})
            rows.append({"case": "k8s_nodes source: peak RSS (MB)", "nodes": source["nodes"],
                         "seconds": source["peak_rss_mb"], "objects_written": 0, "write_requests": 0, "source": source})

        if args.alt_nodes:
            # The alternative on its own nodes, so both start from unlabelled nodes.
            alt_names = [f"alt-{name}" for name in node_names(args.alt_nodes)]
            create_nodes(api, alt_names, "alt")
            audit.writes_since_mark()
            alt_params = alternative(workdir, plane.kubeconfig, args.alt_nodes)
            for task in alt_params:
                task["kubernetes.core.k8s"]["name"] = "alt-{{ item.name }}"
            step("kubernetes.core.k8s per node: first", alt_params, "alt", args.alt_nodes)
            step("kubernetes.core.k8s per node: no change", alt_params, "alt", args.alt_nodes)
        api.close()
    shutil.rmtree(workdir, ignore_errors=True)
    return rows


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--alt-nodes", type=int, default=360, help="nodes for the kubernetes.core loop (0: skip)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--scheduler-topology", action="store_true", help="also time k8s_scheduler_topology (Kueue)")
    parser.add_argument("--source", action="store_true", help="also measure the k8s_nodes event source")
    args = parser.parse_args(argv[1:])
    reason = k8s_testbed.unavailable_reason()
    if reason:
        print(f"k8s_labels benchmark needs the test bed: {reason}", file=sys.stderr)
        return 3
    rows = measure(args)
    for row in rows:
        if row["case"].startswith("kubernetes.core") and row["nodes"]:
            row["extrapolated_seconds_for_nodes"] = round(row["seconds"] / row["nodes"] * args.nodes, 1)
    print(f"\n{'case':45} {'nodes':>6} {'wall s':>8} {'written':>8} {'write requests':>15}")
    for row in rows:
        print(f"{row['case']:45} {row['nodes']:>6} {row['seconds']:>8.2f} {row['objects_written']:>8} "
              f"{row['write_requests']:>15}")
        if "extrapolated_seconds_for_nodes" in row:
            print(f"{'  (per node x ' + str(args.nodes) + ')':45} {args.nodes:>6} "
                  f"{row['extrapolated_seconds_for_nodes']:>8.1f}")
    results = BENCH / "results"
    results.mkdir(exist_ok=True)
    (results / "k8s_labels.json").write_text(json.dumps({
        "nodes": args.nodes, "concurrency": args.concurrency, "machine": f"{os.cpu_count()} CPUs, {platform.platform()}",
        "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
