"""playbooks/node_facts.yml run for real by ansible-playbook on local hosts, and the imex fleet play planning
with the addresses it cached.

Proves: the first run visits every node and writes the cache (0600); the next visits none and changes
nothing; an entry older than node_facts_max_age is visited, and only it, and one younger than it but older
than its jittered age (node_facts_max_age_jitter) too, unless the jitter is 0; node_facts_refresh, and the nodes
an EDA event names (ansible_eda.event, as ansible-rulebook passes it), visit exactly those nodes; --check
gathers but writes no cache; --limit keeps the other nodes' entries; a node that fails to gather keeps no
fresh entry and is visited again next run; the merged facts are on localhost for the discovery; and
playbooks/imex.yml plans domains whose addresses come only from facts with the cached addresses, so a
steady-state run visits no node.
"""

from __future__ import annotations

import json
import stat
import time

import pytest
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._base import fact_cache
from tests.ansible_run import REPO
from tests.integration.imex_support import MEMBERS, PLAYBOOK, RACKS, SERVICE, Cluster

pytestmark = pytest.mark.playbook
HOSTS = ["n1", "n2", "n3", "n4"]
GATHER = ["hostname", "network"]


@pytest.fixture
def cluster(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.hosts = {host: {} for host in HOSTS}
    cluster.group_vars.update({"node_facts_hosts": "imex_nodes", "node_facts_gather": GATHER,
                               "node_facts_cache_file": str(tmp_path / "cache" / "node-facts.json")})
    play = [{"name": "Node facts", "ansible.builtin.import_playbook": str(REPO / "playbooks" / "node_facts.yml")},
            {"name": "Show them", "hosts": "localhost", "gather_facts": False, "tasks": [{
                "name": "Show", "ansible.builtin.debug": {
                    "msg": "topology_node of {{ hostvars['localhost'].node_facts_topology | dictsort | map('first') | join(',') }}"}}]}]
    (tmp_path / "facts.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    return cluster


def visited(result):
    return sorted(host for host in result.recap if host != "localhost")


def cache(cluster):
    return json.loads((cluster.root / "cache" / "node-facts.json").read_text())


def run(cluster, *extra):
    result = cluster.run(*extra, playbook="facts.yml")
    assert result.returncode == 0, result.output
    return result


def test_only_missing_aged_and_refreshed_nodes_are_visited(cluster):
    path = cluster.root / "cache" / "node-facts.json"

    # Check mode gathers (the discovery needs the facts) but writes no cache.
    check = run(cluster, "--check")
    assert visited(check) == HOSTS and not path.exists()
    assert "topology_node of n1,n2,n3,n4" in check.stdout

    first = run(cluster)
    assert visited(first) == HOSTS
    assert "node facts: 4 of 4 node(s) of imex_nodes to visit (max age 86400 s, jitter 0.2): missing 4 (n1, n2, n3, n4)" in first.stdout
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    written = cache(cluster)
    assert sorted(written["nodes"]) == HOSTS and written["format"] == 1
    entry = written["nodes"]["n1"]
    assert entry["gather"] == sorted(GATHER) and "stale" not in entry
    assert entry["facts"]["topology_node"]["hostname"] and entry["facts"]["network"]["default_ipv4"]["address"]

    # Steady state: nothing visited, nothing written; the facts are still there for the discovery.
    second = run(cluster)
    assert visited(second) == [] and second.recap["localhost"]["changed"] == 0
    assert "node facts: 0 of 4 node(s)" in second.stdout and "topology_node of n1,n2,n3,n4" in second.stdout
    assert cache(cluster) == written

    # An entry older than the age is visited, and only it.
    aged = cache(cluster)
    aged["nodes"]["n2"]["gathered_at"] = time.time() - 90000
    path.write_text(json.dumps(aged))
    again = run(cluster)
    assert visited(again) == ["n2"] and "aged 1 (n2)" in again.stdout
    assert cache(cluster)["nodes"]["n2"]["gathered_at"] > written["nodes"]["n2"]["gathered_at"]
    assert visited(run(cluster, "-e", "node_facts_max_age=0")) == HOSTS

    # An entry a little younger than the max age, whose own age (jitter 0.2, the default) is below 80000 s:
    # visited by default, not with the jitter off.
    jittered = cache(cluster)
    gathered_at = next(at for at in range(int(time.time()) - 86000, 0, -1)
                       if fact_cache.entry_age("n1", at, 86400, 0.2) < 80000)
    jittered["nodes"]["n1"]["gathered_at"] = gathered_at
    path.write_text(json.dumps(jittered))
    assert visited(run(cluster, "-e", "node_facts_max_age_jitter=0")) == []
    assert visited(run(cluster)) == ["n1"]

    # A refresh (what an event passes) visits exactly the nodes it names; so does an EDA event itself.
    assert visited(run(cluster, "-e", "node_facts_refresh=n3")) == ["n3"]
    event = {"ansible_eda": {"event": {"topology_change": {"source": "slurm_nodes", "count": 1, "changes": [
        {"kind": "slurm_node", "name": "n4", "change": "down"}]}}}}
    assert visited(run(cluster, "-e", json.dumps(event))) == ["n4"]

    # --limit: only the limited aged node is visited; the other aged node keeps its entry, marked stale.
    limited_cache = cache(cluster)
    for host in ("n1", "n2"):
        limited_cache["nodes"][host]["gathered_at"] = 1.0
    path.write_text(json.dumps(limited_cache))
    limited = run(cluster, "--limit", "localhost,n1")
    assert visited(limited) == ["n1"]
    after = cache(cluster)
    assert after["nodes"]["n1"]["gathered_at"] > 1.0 and "stale" not in after["nodes"]["n1"]
    assert after["nodes"]["n2"]["facts"] == limited_cache["nodes"]["n2"]["facts"] and after["nodes"]["n2"]["stale"]
    assert after["nodes"]["n3"] == limited_cache["nodes"]["n3"]
    assert visited(run(cluster)) == ["n2"]
    assert visited(run(cluster)) == []


def test_a_node_that_fails_to_gather_is_visited_again(cluster):
    cluster.hosts["n3"] = {"ansible_python_interpreter": "/nonexistent/python"}
    first = cluster.run(playbook="facts.yml")
    assert first.returncode != 0 and first.recap["n3"]["failed"] == 1
    assert sorted(cache(cluster)["nodes"]) == ["n1", "n2", "n4"]
    assert visited(cluster.run(playbook="facts.yml")) == ["n3"]
    cluster.hosts["n3"] = {}
    assert visited(run(cluster)) == ["n3"]
    assert visited(run(cluster)) == []


def test_imex_plans_with_the_cached_addresses(tmp_path):
    """Members without imex_address: their addresses are in the node facts cache, so the controller plans
    every domain and a steady-state run of the imex play visits no node (not even to gather facts)."""
    cluster = Cluster(tmp_path)
    for host in MEMBERS:
        cluster.hosts[host] = {}
    cache_file = tmp_path / "node-facts.json"
    nodes = {host: {"gathered_at": time.time(), "gather": ["network"],
                    "facts": {"network": {"default_ipv4": {"address": address}}}}
             for rack in RACKS.values() for host, address in rack.items()}
    nodes[SERVICE] = {"gathered_at": time.time(), "gather": ["network"], "facts": {"network": {}}}
    cache_file.write_text(json.dumps({"format": 1, "nodes": nodes}))
    cluster.group_vars.update({"node_facts_hosts": "imex_nodes", "node_facts_gather": ["network"],
                               "node_facts_cache_file": str(cache_file),
                               "imex_state_file": str(tmp_path / "imex-applied.json")})
    play = [{"name": "Node facts", "ansible.builtin.import_playbook": str(REPO / "playbooks" / "node_facts.yml")},
            PLAYBOOK[0],
            {"name": "IMEX", "ansible.builtin.import_playbook": str(REPO / "playbooks" / "imex.yml"),
             "vars": {"imex_fleet_hosts": "imex_nodes"}}]
    (tmp_path / "site.yml").write_text(yaml.safe_dump(play, sort_keys=False))

    first = cluster.run(playbook="site.yml")
    assert first.returncode == 0, first.output
    assert "new domain(s): 2: rack01, rack02" in first.stdout
    assert visited(first) == sorted(MEMBERS)
    assert cluster.path("gb200-r02-n1").read_text() == "10.0.2.1\n10.0.2.2\n10.0.2.10\n"
    # No member gathers network facts again: the cache has its address.
    gathered = first.stdout.split("Gather network facts for the IMEX address]")[1].split("TASK [")[0]
    assert "ok: [" not in gathered and "changed: [" not in gathered

    second = cluster.run(playbook="site.yml")
    assert second.returncode == 0, second.output
    assert visited(second) == [] and "unchanged domain(s): 2: rack01, rack02" in second.stdout
