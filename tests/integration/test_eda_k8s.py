"""The k8s_topology rulebook end to end: REAL ansible-rulebook, REAL kube-apiserver (tools/k8s_testbed.py).

Proves: a rack of 18 nodes created in one burst becomes exactly one playbook run that labels all
18; a node's nvidia.com/gpu.clique change moves its domain label; a deleted node disappears from
the Slinky ConfigMap and the NFD objects; a kube-apiserver restart in the middle of the watch loses
no change; the playbook's own label writes (and node status updates) never trigger a run; the
regenerate endpoint refuses a request without the token and runs nothing for it, and the token
appears in no event and no log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import runpy
from pathlib import Path

import pytest
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist as _hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError
from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
from ansible_collections.aifactory.topology.plugins.module_utils._engines import nfd
from tests.integration.eda_support import TOKEN, Rulebook, free_port, post_generate, require_rulebook, tls_files
from tests.integration.k8s_support import TEST_LABEL, apply_rbac, client, make_nodes, new_id

pytestmark = [pytest.mark.k8s, pytest.mark.playbook]
CLIQUE = "nvidia.com/gpu.clique"
DOMAIN = "accelerator.topograph.run/domain"
SOURCES = Path(__file__).resolve().parents[2] / "extensions" / "eda" / "plugins" / "event_source"


def rack(prefix, number, count=18):
    return [f"{prefix}-r{number:02d}-n{n:02d}" for n in range(1, count + 1)]


def clique(number):
    return f"c0ffee.{number}"


def setup_rulebook(k8s, namespace, test_id, tmp_path, delay=1):
    """Inventory (what playbooks/k8s.yml reads) and rulebook variables (what the sources read)."""
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"k8s_topology": {"hosts": {
        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}}}))
    selector = {TEST_LABEL: test_id}
    (inventory / "group_vars" / "all.yml").write_text(yaml.safe_dump({
        "topology_provider": {"name": "dra", "params": {"node_selector": selector},
                              "creds": {"kubeconfig": str(k8s.kubeconfig)}},
        "k8s_topology_auth": {"kubeconfig": str(k8s.kubeconfig)},
        "k8s_topology_node_selector": selector,
        "k8s_topology_nfd_namespace": namespace,
        "k8s_topology_slinky": {"namespace": namespace, "configmap_name": "slurm-config", "plugin": "topology/block"},
    }))
    certfile, keyfile, cafile = tls_files(tmp_path)
    port = free_port()
    variables = {
        "k8s_topology_auth": {"kubeconfig": str(k8s.kubeconfig)},
        "k8s_topology_node_selector": selector,
        "topology_debounce_delay": delay,
        "topology_regenerate_token": TOKEN,
        "topology_regenerate_certfile": certfile,
        "topology_regenerate_keyfile": keyfile,
        "topology_regenerate_port": port,
    }
    return inventory, variables, port, cafile


def domains(api, test_id):
    return {item["metadata"]["name"]: (item["metadata"].get("labels") or {}).get(DOMAIN)
            for item in api.list(_k8s.node_path(), f"{TEST_LABEL}={test_id}")}


def slinky_nodes(api, namespace):
    conf = api.request("GET", _k8s.namespaced_path("/api/v1", namespace, "configmaps", "slurm-config"))
    text = conf["data"]["topology.conf"]
    return {name for hosts in re.findall(r"Nodes=(\S+)", text) for name in _hostlist.expand(hosts)}


def nfd_text(api, namespace):
    objects = api.list(_k8s.namespaced_path(nfd.API, namespace, "nodefeatures")) + \
        api.list(_k8s.namespaced_path(nfd.API, namespace, "nodefeaturegroups"))
    return json.dumps(objects)


def node_changes(events):
    return [event for event in events if any(c["kind"] == "node" for c in event["changes"])]


def first_rack(k8s, namespace, tmp_path, letter, nodes):
    """A test id, ``nodes`` nodes of rack 1 in clique 1, and the rulebook's inventory and variables."""
    require_rulebook()
    test_id = new_id()
    prefix = f"{letter}{test_id}"
    names = make_nodes(k8s, rack(prefix, 1, nodes), test_id, {n: {CLIQUE: clique(1)} for n in rack(prefix, 1, nodes)})
    return (test_id, prefix, names) + setup_rulebook(k8s, namespace, test_id, tmp_path)


def test_burst_clique_change_delete_and_refused_request(k8s, k8s_namespace, tmp_path):
    k8s.install_nfd_crds()
    test_id, prefix, first, inventory, variables, port, cafile = first_rack(k8s, k8s_namespace, tmp_path, "e", 2)
    api = client(k8s.kubeconfig)

    with Rulebook("k8s_topology", inventory, variables, tmp_path) as rulebook:
        rulebook.wait_runs(1)  # the start-up sync publishes what exists
        assert set(domains(api, test_id).values()) == {clique(1)}
        assert rulebook.events()[0]["changes"][0]["change"] == "started"

        # A new rack of 18 nodes, created in one burst: one event carrying all 18, one run.
        new_rack = rack(prefix, 2)
        make_nodes(k8s, new_rack, test_id, {n: {CLIQUE: clique(2)} for n in new_rack})
        rulebook.wait_runs(2)
        labelled = domains(api, test_id)
        assert all(labelled[name] == clique(2) for name in new_rack), labelled
        burst = node_changes(rulebook.events())
        assert len(burst) == 1 and burst[0]["count"] == 18
        assert sorted(c["name"] for c in burst[0]["changes"]) == new_rack
        assert {c["change"] for c in burst[0]["changes"]} == {"added"}

        # A node moves to another NVLink domain: its domain label follows.
        moved = new_rack[0]
        k8s.kubectl.patch("Node", moved, {"metadata": {"labels": {CLIQUE: clique(3)}}})
        rulebook.wait_runs(3)
        assert domains(api, test_id)[moved] == clique(3)
        change = node_changes(rulebook.events())[-1]["changes"]
        assert change == [{"kind": "node", "name": moved, "change": "modified",
                           "fields": {CLIQUE: {"old": clique(2), "new": clique(3)}}}]

        # A node is deleted: the Slinky ConfigMap and the NFD objects stop naming it.
        gone = new_rack[5]
        assert gone in slinky_nodes(api, k8s_namespace) and gone in nfd_text(api, k8s_namespace)
        k8s.delete_nodes([gone])
        rulebook.wait_runs(4)
        assert gone not in slinky_nodes(api, k8s_namespace)
        assert gone not in nfd_text(api, k8s_namespace)
        assert set(first) <= slinky_nodes(api, k8s_namespace)

        # Without the token, or with a wrong one: refused, nothing runs. With it: accepted, one run.
        assert post_generate(port, cafile)[0] == 401
        assert post_generate(port, cafile, token="not-the-token-at-all")[0] == 401
        status, _body = post_generate(port, cafile, token=TOKEN, body=b'{"reason": "switch replaced"}')
        assert status == 202
        rulebook.wait_runs(5)
        requests = [e for e in rulebook.events() if e["source"] == "aifactory.topology.regenerate"]
        assert len(requests) == 1 and requests[0]["count"] == 1
        assert requests[0]["changes"][0]["reason"] == "switch replaced"
        # Every run so far had an event, and every event a run: the refused requests made neither,
        # and the playbook's own label writes and status updates triggered nothing.
        assert len(rulebook.events()) == rulebook.runs() == 5
        assert TOKEN not in rulebook.log()


def test_apiserver_restart_mid_watch_loses_no_change(k8s, k8s_namespace, tmp_path):
    test_id, prefix, nodes, inventory, variables, _port, _cafile = first_rack(k8s, k8s_namespace, tmp_path, "w", 4)
    api = client(k8s.kubeconfig)
    with Rulebook("k8s_topology", inventory, variables, tmp_path) as rulebook:
        rulebook.wait_runs(1)
        k8s.restart_apiserver()
        # Right after the restart, before the source has reconnected: a clique change and a new node.
        k8s.kubectl.patch("Node", nodes[0], {"metadata": {"labels": {CLIQUE: clique(2)}}})
        late = make_nodes(k8s, [f"{prefix}-r01-n05"], test_id, {f"{prefix}-r01-n05": {CLIQUE: clique(1)}})
        rulebook.wait_for(lambda: domains(api, test_id).get(nodes[0]) == clique(2)
                          and domains(api, test_id).get(late[0]) == clique(1),
                          "the changes made during the restart to be labelled")
        assert "watch interrupted" in rulebook.log()
        changed = {c["name"] for e in node_changes(rulebook.events()) for c in e["changes"]}
        assert changed == {nodes[0], late[0]}


def run_source(args, until_events, what, timeout=120):
    """Run the k8s_nodes source's main() in this process until ``until_events(events)`` holds (``what``)."""
    module = runpy.run_path(str(SOURCES / "k8s_nodes.py"))
    events = []

    class Queue:
        @staticmethod
        async def put(event):
            events.append(event["topology_change"])

    async def main():
        task = asyncio.ensure_future(module["main"](Queue(), args))
        deadline = asyncio.get_running_loop().time() + timeout
        while not until_events(events):
            if task.done():
                task.result()  # raises the source's error
                raise AssertionError("the source ended")
            assert asyncio.get_running_loop().time() < deadline, \
                f"the k8s_nodes source gave no {what} within {timeout} s; events: {events}"
            await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return events

    return asyncio.run(main())


def test_watch_rbac_is_enough_and_needed(k8s, k8s_namespace):
    test_id = new_id()
    prefix = f"r{test_id}"
    names = make_nodes(k8s, rack(prefix, 1, 2), test_id, {n: {CLIQUE: clique(1)} for n in rack(prefix, 1, 2)})
    kubeconfig = apply_rbac(k8s, "k8s_nodes_watch.yaml", f"watcher-{test_id}", k8s_namespace, test_id)
    args = {"kubeconfig": str(kubeconfig), "node_selector": {TEST_LABEL: test_id}, "delay": 0.2, "max_wait": 5,
            "ready_timeout": 30}
    patched = []

    def moved(events):
        # The start-up event comes after the node list: a change from then on is in the watch.
        if events and not patched:
            k8s.kubectl.patch("Node", names[0], {"metadata": {"labels": {CLIQUE: clique(2)}}})
            patched.append(names[0])
        return len(events) >= 2

    events = run_source(args, moved, "event for the relabelled node")
    assert events[0]["changes"] == [{"kind": "source", "name": "aifactory.topology.k8s_nodes", "change": "started",
                                     "nodes": 2}]
    assert events[1]["changes"] == [{"kind": "node", "name": names[0], "change": "modified",
                                     "fields": {CLIQUE: {"old": clique(1), "new": clique(2)}}}]

    nobody = k8s.user_kubeconfig(f"nobody-{test_id}")
    with pytest.raises(RemoteAPIError,
                       match=r"^aifactory\.topology\.k8s_nodes: cannot list nodes: GET /api/v1/nodes: HTTP 403"):
        run_source(dict(args, kubeconfig=str(nobody)), lambda e: False, "error for a user without RBAC")


def test_slurmd_pods_are_watched_too(k8s, k8s_namespace):
    test_id = new_id()
    args = {"kubeconfig": str(k8s.kubeconfig), "node_selector": {TEST_LABEL: test_id}, "delay": 0.2, "max_wait": 5,
            "pod_selector": {"app.kubernetes.io/name": "slurmd"}, "pod_namespace": k8s_namespace}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "slurmd-0", "namespace": k8s_namespace, "labels": {"app.kubernetes.io/name": "slurmd"}},
           # No scheduler binds it: when an earlier test started kube-scheduler, a bind within the debounce
           # delay would fold a second change into the expected event.
           "spec": {"schedulerName": "aifactory-test-unscheduled", "containers": [{"name": "slurmd", "image": "slurmd:test"}]}}
    other = dict(pod, metadata={"name": "web-0", "namespace": k8s_namespace, "labels": {"app": "web"}})
    created = []

    def pod_added(events):
        if events and not created:  # listening: the start-up event came after the lists
            k8s.kubectl.create(other)
            k8s.kubectl.create(pod)
            created.append(True)
        return len(events) >= 2

    events = run_source(args, pod_added, "event for the new slurmd pod")
    assert events[1]["changes"] == [{"kind": "pod", "name": f"{k8s_namespace}/slurmd-0", "change": "added",
                                     "node": "", "ready": False}]
