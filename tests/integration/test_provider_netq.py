"""The netq provider end to end against a NetQ + NMX server started here on 127.0.0.1.

The server reproduces the documented request and response shapes (and checks them): login
with a JSON body, premises, opid selection with the login token, the topology graph with the
premises token, ``timestamp=0`` and the fixed query body, NMX compute nodes with Basic auth.
Failures are injected per route: throttling, 5xx, a server that never answers, bad bodies.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover
from ansible_collections.aifactory.topology.plugins.modules import slurm_topology, topology_info
from tests.tls_certs import self_signed, server_context
from tests.integration.fake_apis import (
    HANG,
    NO_WAIT,
    json_reply,
    text_reply,
)
from tests.ansible_run import ansible_env, run_playbook
from tests.unit.plugins.modules.module_runner import run_module

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "topograph"
GRAPH = json.loads((FIXTURES / "netq-topologyGraph.json").read_text())
COMPUTE_NODES = json.loads((FIXTURES / "netq-computeNodes.json").read_text())
USERNAME, PASSWORD = "topology-reader", "N3tQ-pa55word-e2e-4b1d"
DOMAIN = "3fbfc98b-7f95-4749-ab11-bd351a2aab3e"

LOGIN = "/api/netq/auth/v1/login"
SELECT = "/api/netq/auth/v1/select/opid/"
FETCH = "/api/netq/telemetry/v1/object/topologygraph/fetch-topology"
NMX = "/nmx/v1/compute-nodes"


def nmx_nodes_named(*names):
    """The fixture's compute nodes, renamed to hosts of the fixture graph."""
    return [dict(node, Name=name) for node, name in zip(COMPUTE_NODES, names)]


def route_of(request):
    return request.method, SELECT if request.path.startswith(SELECT) else request.path


class NetqApi:
    """NetQ's API as documented, as a fake_http route; ``inject[route]`` replies come first."""

    def __init__(self):
        self.premises = [
            {"name": "lab", "namespace": "ns-lab", "opid": 30001, "config_key_viewed": False},
            {"name": "dc1", "namespace": "ns-dc1", "opid": 30002, "config_key_viewed": True},
        ]
        self.graphs = {30002: GRAPH}
        self.compute_nodes = nmx_nodes_named("dgx-01", "dgx-02")
        self.inject = {}
        self.server = self.url = None

    @property
    def requests(self):
        return self.server.requests

    def routes(self):
        return [route_of(request) for request in self.requests]

    def __call__(self, request):
        route = route_of(request)
        if self.inject.get(route):
            return self.inject[route].pop(0)
        auth = request.headers.get("authorization", "")
        if route == ("POST", LOGIN):
            if request.headers.get("content-type") != "application/json":
                return json_reply({"error": "expected application/json"}, 415)
            if json.loads(request.body or b"{}") != {"username": USERNAME, "password": PASSWORD}:
                return json_reply({"error": "invalid credentials"}, 401)
            return json_reply({"id": USERNAME, "access_token": "login-token", "expires_at": 1767225600000,
                               "is_cloud": False, "premises": self.premises, "customer_id": 0})
        if route == ("GET", SELECT):
            opid = int(request.path[len(SELECT):])
            if auth != "Bearer login-token":
                return json_reply({"error": "bad token"}, 401)
            if opid not in {p["opid"] for p in self.premises}:
                return json_reply({"error": "unknown opid"}, 404)
            return json_reply({"access_token": f"premises-token-{opid}", "expires_at": 1767225600000})
        if route == ("POST", FETCH):
            token = auth.removeprefix("Bearer premises-token-")
            if not token.isdigit() or int(token) not in self.graphs:
                return json_reply({"error": "select a premises first"}, 401)
            if request.query != {"timestamp": "0"} or json.loads(request.body) != {"filters": [], "subgroupNestingDepth": 2}:
                return json_reply({"error": "bad query"}, 400)
            return json_reply(self.graphs[int(token)])
        if route == ("GET", NMX):
            if auth != "Basic " + base64.b64encode(f"{USERNAME}:{PASSWORD}".encode()).decode():
                return json_reply({"error": "unauthorized"}, 401)
            return json_reply(self.compute_nodes)
        return json_reply({"error": "not found"}, 404)


@pytest.fixture
def server(fake_http):
    api = NetqApi()
    api.server = fake_http(api)
    api.url = api.server.url
    return api


def params(api, **extra):
    return {**NO_WAIT, "api_url": api.url, **extra}


CREDS = {"username": USERNAME, "password": PASSWORD}


def run(api, creds=None, **extra):
    warnings = []
    return discover("netq", params(api, **extra), CREDS if creds is None else creds, warnings.append), warnings


def test_login_premises_graph_and_nmx_domains_end_to_end(server):
    topology, warnings = run(server)
    assert warnings == []
    assert topology.to_compact() == {
        "format": "aifactory.topology/v1",
        "switches": {"node0": "node3", "node3": None, "node9": "node3"},
        "switch_names": {"node0": "net-unit-l1", "node3": "net-unit-s1", "node9": "net-unit-l2"},
        "nodes": [{"nodes": "dgx-[03-04]", "switch": "node0"}, {"nodes": "dgx-[05-08]", "switch": "node9"},
                  {"nodes": "dgx-[01-02]", "switch": "node0", "domain": DOMAIN}],
        # NMX's LocationInfo: where each tray is (the racks of the summary).
        "locations": {"dgx-01": {"chassis_serial_number": "1825024170029", "slot_number": 5, "tray_index": 4,
                                 "host_id": 1, "domain": DOMAIN},
                      "dgx-02": {"chassis_serial_number": "1825024170029", "slot_number": 22, "tray_index": 12,
                                 "host_id": 1, "domain": DOMAIN}},
    }
    assert topology.summary()["racks"] == [{
        "rack": f"{DOMAIN} (chassis 1825024170029)", "domain": DOMAIN, "chassis_serial_number": "1825024170029",
        "trays": ["dgx-01", "dgx-02"], "schedulable": 2}]
    assert server.routes() == [("POST", LOGIN), ("GET", SELECT), ("POST", FETCH), ("GET", NMX)]
    login, select, fetch, nmx = server.requests
    assert login.headers["content-type"] == "application/json" and login.headers["accept"] == "application/json"
    # Only the premises with config_key_viewed is selected, with the login token; its own token fetches.
    assert select.path == SELECT + "30002" and select.headers["authorization"] == "Bearer login-token"
    assert fetch.headers["authorization"] == "Bearer premises-token-30002" and fetch.query == {"timestamp": "0"}
    assert json.loads(fetch.body) == {"filters": [], "subgroupNestingDepth": 2}
    assert nmx.headers["authorization"].startswith("Basic ")


def test_every_premises_with_config_key_viewed_is_read_with_ids_kept_apart(server):
    server.premises[0]["config_key_viewed"] = True
    server.graphs[30001] = json.loads(json.dumps(GRAPH).replace('"dgx-', '"gpu-'))
    topology, _warnings = run(server, nmx=False)
    assert sorted(topology.switches) == [f"{opid}.{sid}" for opid in (30001, 30002) for sid in ("node0", "node3", "node9")]
    assert topology.nodes["gpu-01"].switch == "30001.node0" and topology.nodes["dgx-01"].switch == "30002.node0"
    # NetQ's switch names repeat across the two premises: Slurm gets the unique ids instead.
    assert all(switch.name is None for switch in topology.switches.values())


def test_nodes_restricts_the_hosts_and_unknown_ones_are_reported(server):
    topology, warnings = run(server, nodes="dgx-0[1-2],login1")
    assert sorted(topology.nodes) == ["dgx-01", "dgx-02", "login1"]
    assert topology.nodes["login1"].switch is None
    assert topology.to_compact()["switches"] == {"node0": "node3", "node3": None}  # no leaf without requested hosts
    assert warnings == ["1 nodes are not in the NetQ topology and get no switch: login1"]


def test_429_with_retry_after_is_honoured(server, sleeps):
    server.inject[("POST", FETCH)] = [json_reply({"error": "slow down"}, 429, {"Retry-After": "3"})]
    server.inject[("GET", SELECT)] = [text_reply("", 503)]
    topology, _warnings = run(server, retry_backoff=0.25, retry_after_max=60)
    assert sleeps == [0.25, 3.0] and len(topology.nodes) == 8
    assert server.routes().count(("POST", FETCH)) == 2


def test_5xx_is_retried_with_bounded_backoff_then_reported(server, sleeps):
    server.inject[("POST", FETCH)] = [text_reply("internal error", 500)] * 3
    with pytest.raises(RemoteAPIError, match=rf"POST {re.escape(server.url)}{FETCH}: HTTP 500 after 3 attempts"):
        run(server, retry_attempts=3, retry_backoff=0.5)
    assert sleeps == [0.5, 1.0] and server.routes().count(("POST", FETCH)) == 3
    # The same run succeeds once the server recovers.
    server.inject[("POST", FETCH)] = [text_reply("", 502), text_reply("", 504)]
    assert len(run(server)[0].nodes) == 8


def test_a_server_that_never_answers_times_out(server):
    server.inject[("POST", LOGIN)] = [HANG, HANG]
    with pytest.raises(RemoteAPIError, match=r"POST .*/api/netq/auth/v1/login: ReadTimeout after 2 attempts"):
        run(server, timeout=0.2, retry_attempts=2)


@pytest.mark.parametrize("route, body, message", [
    (("POST", LOGIN), "<html>gateway</html>", r"login: the response is not JSON: '<html>gateway</html>'"),
    (("POST", LOGIN), '{"token": "x"}', r"login: missing access_token, premises"),
    (("POST", LOGIN), '{"access_token": "x", "premises": {}}', r"login: premises must be a list of objects"),
    (("GET", SELECT), '{"token": "x"}', r"premises 'dc1' \(opid 30002\): GET .*/select/opid/30002: missing access_token"),
    (("POST", FETCH), '{"nodes": []}', r"premises 'dc1' \(opid 30002\): the topology graph must be a list with one object"),
    (("POST", FETCH), '[{"nodes": [{"compounded_nodes": [{"name": "n", "tier": 1}]}], "links": []}]',
     r"nodes\[0\].compounded_nodes\[0\]: missing id"),
])
def test_malformed_bodies_are_clear_errors(server, route, body, message):
    server.inject[route] = [text_reply(body, content_type="application/json")]
    with pytest.raises(RemoteAPIError, match=message):
        run(server)


def graph_with(change):
    """The fixture graph with ``change(node)`` applied to host dgx-03's record."""
    graph = json.loads(json.dumps(GRAPH))
    for group in graph[0]["nodes"]:
        for node in group["compounded_nodes"]:
            if node["name"] == "dgx-03":
                change(node)
    return graph


@pytest.mark.parametrize("change, identifier, reason", [
    (lambda node: node.update(name="dgx-03,evil"), "'dgx-03,evil'", "host name 'dgx-03,evil' contains"),
    (lambda node: node.pop("tier"), "dgx-03", "compounded_nodes[5]: missing tier"),
    (lambda node: node.update(tier="host"), "dgx-03", "tier must be an integer, got 'host'"),
], ids=["host-name-not-a-name", "no-tier", "tier-not-an-integer"])
def test_one_malformed_host_record_quarantines_that_host_and_the_others_are_mapped(server, change, identifier, reason):
    server.graphs[30002] = graph_with(change)
    topology, warnings = run(server)
    assert len(topology.nodes) == 7 and "dgx-03" not in topology.nodes and "dgx-01" in topology.nodes
    assert list(topology.quarantined) == [identifier] and topology.quarantined[identifier].source == "netq"
    assert reason in topology.quarantined[identifier].reason
    assert any(w.startswith("1 nodes quarantined (left out of the map): ") for w in warnings)
    with pytest.raises(TopologyError, match=r"params.invalid_nodes is fail\)"):
        run(server, invalid_nodes="fail")


def test_one_nmx_domain_that_is_not_a_name_quarantines_that_node_only(server):
    server.compute_nodes = [dict(COMPUTE_NODES[0], Name="dgx-01", DomainUUID="dom BlockName=evil"),
                            dict(COMPUTE_NODES[1], Name="dgx-02")]
    topology, warnings = run(server)
    assert "dgx-01" not in topology.nodes and topology.nodes["dgx-02"].domain == COMPUTE_NODES[1]["DomainUUID"]
    assert "DomainUUID 'dom BlockName=evil' contains" in topology.quarantined["dgx-01"].reason
    assert any(w.startswith("1 nodes quarantined (left out of the map): dgx-01 (") for w in warnings)


def test_an_nmx_unhealthy_tray_is_quarantined_as_unhealthy_and_a_bad_place_as_invalid(server):
    server.compute_nodes = [dict(COMPUTE_NODES[0], Name="dgx-01", Health="DEGRADED"),
                            dict(COMPUTE_NODES[1], Name="dgx-02",
                                 LocationInfo=dict(COMPUTE_NODES[1]["LocationInfo"], TrayIndex="twelve"))]
    topology, warnings = run(server)
    assert "dgx-01" not in topology.nodes and "dgx-02" not in topology.nodes
    record = topology.quarantined["dgx-01"]
    assert record.unhealthy and record.reason.endswith("[0]: NMX reports Health 'DEGRADED', not 'HEALTHY'")
    assert not topology.quarantined["dgx-02"].unhealthy
    assert "[1].LocationInfo: location: nvidia-smi output of dgx-02, row 1: platform.tray_index must be a whole number " \
           "from 0 to 255, got 'twelve'" in topology.quarantined["dgx-02"].reason
    # The unhealthy tray stays in its rack, reported as quarantined.
    assert topology.summary()["racks"][0]["quarantined"] == ["dgx-01"]


def test_wrong_credentials_fail_at_login_without_retrying_and_never_show_the_password(server):
    with pytest.raises(RemoteAPIError, match=r'login: HTTP 401: \{"error": "invalid credentials"\}'):
        run(server, creds={"username": USERNAME, "password": "wrong-password"})
    assert len(server.requests) == 1
    # A server echoing the request body: the message carries no password.
    server.inject[("POST", LOGIN)] = [json_reply({"error": "bad request", "echo": {"password": PASSWORD}}, 400)]
    with pytest.raises(RemoteAPIError) as info:
        run(server)
    assert PASSWORD not in str(info.value) and '"password": "********"' in str(info.value)


def test_credentials_come_from_the_environment_when_creds_are_empty(server, monkeypatch):
    monkeypatch.setenv("NETQ_USERNAME", USERNAME)
    monkeypatch.setenv("NETQ_PASSWORD", PASSWORD)
    assert len(run(server, creds={})[0].nodes) == 8
    monkeypatch.delenv("NETQ_PASSWORD")
    with pytest.raises(TopologyError, match=r"the netq provider needs creds.password \(or the environment variable NETQ_PASSWORD\)"):
        run(server, creds={})
    with pytest.raises(TopologyError, match=r"provider netq: creds has unknown keys: token; known: password, username"):
        run(server, creds={"token": "x"})


def test_no_requested_node_in_the_graph_is_an_error_not_a_tree_of_orphans(server):
    with pytest.raises(TopologyError, match="none of params.nodes is a host"):
        run(server, nodes="gpu[01-08]")


def test_no_premises_with_config_key_viewed_is_an_error(server):
    server.premises[1]["config_key_viewed"] = False
    with pytest.raises(TopologyError, match="none of the 2 premises has config_key_viewed set"):
        run(server)


@pytest.mark.parametrize("injected, reason", [
    ([text_reply("nmx down", 500)] * 5, r"GET .*/nmx/v1/compute-nodes: HTTP 500 after 5 attempts"),
    ([text_reply("no such endpoint", 404)], r"HTTP 404: no such endpoint"),
    ([json_reply({"nodes": []})], r"expected a list of compute nodes"),
])
def test_nmx_failure_leaves_the_tree_without_domains_and_warns(server, injected, reason):
    server.inject[("GET", NMX)] = list(injected)
    topology, warnings = run(server)
    assert len(topology.nodes) == 8 and not any(node.domain for node in topology.nodes.values())
    assert len(warnings) == 1 and re.search("NVLink domains from NMX are not available, so the topology has no "
                                            "accelerator domains: .*" + reason, warnings[0])


def test_nmx_nodes_unknown_to_the_tree_are_left_out_and_reported(server):
    server.compute_nodes = COMPUTE_NODES  # named node1 and node2 in the fixture
    topology, warnings = run(server)
    assert not any(node.domain for node in topology.nodes.values())
    assert warnings == ["2 NMX compute nodes are not nodes of the topology and are left out: node[1-2]"]


def test_a_separate_nmx_url_is_used_and_nmx_can_be_skipped(server, fake_http):
    nmx = NetqApi()
    nmx.server = fake_http(nmx)
    topology, _warnings = run(server, nmx_url=nmx.server.url)
    assert nmx.routes() == [("GET", NMX)] and ("GET", NMX) not in server.routes()
    assert topology.nodes["dgx-01"].domain == DOMAIN
    run(server, nmx=False)
    assert ("GET", NMX) not in server.routes()


# -- TLS ------------------------------------------------------------------------------------

@pytest.fixture
def tls_server(tmp_path, fake_http):
    cert_path, key_path = self_signed(tmp_path, "netq.test", ca=True)
    context = server_context(cert_path, key_path)
    api = NetqApi()
    api.server = fake_http(api)
    # fake_http speaks plain HTTP; wrapping its listening socket keeps the file descriptor its
    # accept loop is already waiting on, so from now on every connection is TLS.
    api.server.server.socket = context.wrap_socket(api.server.server.socket, server_side=True)
    api.url = api.server.url.replace("http://", "https://")
    api.ca_bundle = str(cert_path)
    return api


def test_tls_is_verified_by_default_and_ca_bundle_makes_it_pass(tls_server):
    with pytest.raises(RemoteAPIError, match=r"POST https://127.0.0.1:\d+/api/netq/auth/v1/login: TLS verification failed"
                                             r".*set ca_bundle"):
        run(tls_server)
    assert tls_server.requests == []  # the handshake failed before any request was made
    topology, warnings = run(tls_server, ca_bundle=tls_server.ca_bundle)
    assert len(topology.nodes) == 8 and warnings == []
    assert topology.nodes["dgx-01"].domain == DOMAIN  # NMX went through the same verified TLS
    assert [request.path for request in tls_server.requests] == [LOGIN, SELECT + "30002", FETCH, NMX]


# -- modules and playbooks --------------------------------------------------------------------

def test_topology_info_then_slurm_topology_render_the_netq_tree(server, monkeypatch, tmp_path):
    provider = {"name": "netq", "params": params(server), "creds": CREDS}
    found = run_module(topology_info, {"provider": provider}, monkeypatch=monkeypatch)
    assert not found["failed"], found
    assert found["summary"]["nodes"] == 8 and found["summary"]["switches"] == 3 and found["summary"]["domains"] == 1
    dest = tmp_path / "topology.conf"
    rendered = run_module(slurm_topology, {"model": found["topology"], "plugin": "topology/tree", "dest": str(dest)},
                          monkeypatch=monkeypatch)
    assert rendered["changed"] and not rendered["failed"]
    assert dest.read_text().splitlines()[1:] == [
        "# net-unit-s1=node3", "SwitchName=net-unit-s1 Switches=net-unit-l[1-2]",
        "# net-unit-l1=node0", "SwitchName=net-unit-l1 Nodes=dgx-[01-04]",
        "# net-unit-l2=node9", "SwitchName=net-unit-l2 Nodes=dgx-[05-08]"]


def test_a_malformed_graph_fails_the_module_and_writes_nothing(server, monkeypatch, tmp_path):
    server.inject[("POST", FETCH)] = [json_reply([])]
    dest = tmp_path / "topology.conf"
    provider = {"name": "netq", "params": params(server), "creds": CREDS}
    result = run_module(slurm_topology, {"provider": provider, "plugin": "topology/tree", "dest": str(dest)},
                        monkeypatch=monkeypatch)
    assert result["failed"] and "the topology graph must be a list with one object" in result["msg"]
    assert not dest.exists()


@pytest.mark.playbook
def test_netq_password_never_appears_in_verbose_playbook_output(server, tmp_path):
    """creds are no_log; a password from the environment is scrubbed from error messages too.

    The environment variables are the controller's (exported before ansible-playbook), not a
    task's ``environment:``, which Ansible prints in its EXEC line at -vvv.
    """
    provider = {"name": "netq", "params": params(server), "creds": CREDS}
    echoing = {"name": "netq", "params": params(server, api_url=server.url + "/echo")}
    playbook = tmp_path / "netq.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Discover from NetQ", "hosts": "localhost", "gather_facts": False,
        "tasks": [
            {"name": "Discover", "aifactory.topology.topology_info": {"provider": provider}, "register": "found"},
            {"name": "Show", "ansible.builtin.debug": {"var": "found"}},
            {"name": "Render",
             "aifactory.topology.slurm_topology": {"model": "{{ found.topology }}", "plugin": "topology/tree"}},
            {"name": "Discover with the password from the environment, against a server that echoes it",
             "aifactory.topology.topology_info": {"provider": echoing}, "ignore_errors": True},
        ],
    }]))
    server.inject[("POST", "/echo" + LOGIN)] = [json_reply({"error": "bad request", "got": PASSWORD}, 400)]
    result = run_playbook("-vvvv", "-i", "localhost,", "-c", "local",
                          "-e", "ansible_python_interpreter={{ ansible_playbook_python }}", playbook,
                          env=ansible_env(NETQ_USERNAME=USERNAME, NETQ_PASSWORD=PASSWORD))
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r'\bnodes"?: 8\b', result.stdout)  # the module really ran and its result was printed
    assert "SwitchName=net-unit-s1 Switches=net-unit-l[1-2]" in result.stdout
    # The last task read the password from the controller's environment and the server echoed it.
    assert 'HTTP 400: {"error": "bad request", "got": "********"}' in result.stdout
    assert server.routes().count(("POST", LOGIN)) == 1 and server.routes().count(("POST", "/echo" + LOGIN)) == 1
    assert PASSWORD not in result.stdout + result.stderr


@pytest.mark.parametrize("fault", ["/loop", "/garbage", "/bad-gzip", "/cut-chunked", "/deep-json", "/drip"])
def test_any_nmx_failure_only_warns_as_documented(server, fault):
    """NMX is best effort (docs/providers/netq.md): a redirect loop, a bad or cut body, a drip: the tree, a warning."""
    from tests.fault_http import FaultServer

    with FaultServer() as faults:
        # The fault server serves its fault at any path below it; NMX_COMPUTE_NODES is appended.
        topology, warnings = run(server, nmx_url=faults.url(fault + "?"), timeout=2)
    assert topology.nodes["dgx-01"].domain is None and "node0" in topology.switches
    assert len(warnings) == 1 and warnings[0].startswith("NVLink domains from NMX are not available")
