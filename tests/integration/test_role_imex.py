"""The imex role, run for real by ansible-playbook on a simulated cluster.

Two NVL72-like racks of three nodes and a service node are inventory hosts with
``ansible_connection: local``; each host's files go to its own directory under the test's
temporary directory (the role's paths are variables), the package and service tasks are off
(no GPUs, no systemd here). The topology model comes from aifactory.topology.topology_info, as
in site.yml. Facts (distribution, addresses) are seeded into a jsonfile fact cache where a test
needs them.

Proves: each member's nodes_config.cfg lists exactly its rack's addresses, in the domain's
node order (natural sort, not inventory order), identical on every member; the service node
is skipped with a message; --check --diff shows both files and writes nothing; a second run
changes nothing; a change in one rack touches only that rack; address conflicts fail with the
domain, node and address named and nothing written on any host; facts, interfaces and --limit;
config.cfg keys; the health-check wait; k8s mode's channel device and no peer list.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml

from tests.ansible_run import REPO
from tests.integration.imex_support import MEMBERS, ORDER, PLAYBOOK, RACKS, SERVICE, Cluster


pytestmark = pytest.mark.playbook


@pytest.fixture
def cluster(tmp_path):
    return Cluster(tmp_path)


def changed(result, hosts=None):
    return {host: counts["changed"] for host, counts in result.recap.items()
            if host != "localhost" and (hosts is None or host in hosts)}


def rack_file(rack):
    by_node = {host.rsplit("-", 1)[1]: address for host, address in RACKS[rack].items()}
    return "".join(f"{by_node[node]}\n" for node in ORDER)


def files(cluster):
    return {path: (cluster.root / path).read_bytes() for path in cluster.written()}


def test_slurm_mode_end_to_end(cluster):
    # Facts as a gathering would leave them: distribution, default route address, an ib0 interface.
    for rack in RACKS.values():
        for host, address in rack.items():
            cluster.facts[host] = {"os_family": "Debian", "ib0": {"ipv4": {"address": address}},
                                   "default_ipv4": {"address": address.replace("10.0.", "192.168.")}}
    for host in RACKS["rack02"]:
        cluster.facts[host]["os_family"] = "RedHat"
    cluster.facts["gb200-r02-n10"]["os_family"] = "Debian"
    cluster.seed_facts()
    # Driver branches: rack01 from the loaded driver's version file, rack02 from nvidia-smi, one set explicitly.
    version_file = cluster.root / "nvidia-version"
    version_file.write_text("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.124.06  Release Build  "
                            "(dvs-builder@U16-I3-B13-3-1)  Tue Feb 25 01:33:28 UTC 2025\nGCC version:  gcc version 13.3.0\n")
    for host in RACKS["rack01"]:
        cluster.hosts[host]["imex_driver_version_file"] = str(version_file)
    for host in RACKS["rack02"]:
        cluster.hosts[host]["imex_nvidia_smi_command"] = ["echo", "580.95.05\n580.95.05"]
    cluster.hosts["gb200-r02-n10"]["imex_driver_branch"] = "590"
    cluster.group_vars.update(imex_config={"LOG_LEVEL": 5, "IMEX_ENABLE_AUTH_ENCRYPTION": False, "BIND_INTERFACE_IP": None,
                                           "STATS_FILE_NAME": "/var/log/imex-stats.log", "IMEX_CONN_WAIT_TIMEOUT": 70},
                              imex_config_extra_keys=["IMEX_CONN_WAIT_TIMEOUT"])

    # 1. --check --diff before anything exists: both files of every member are shown, nothing is written.
    check = cluster.run("--check", "--diff")
    assert check.returncode == 0, check.output
    assert cluster.written() == []
    for rack in ("rack01", "rack02"):
        diff = "".join(f"+{line}\n" for line in rack_file(rack).splitlines())
        assert check.stdout.count(diff) == 3, check.stdout  # one nodes_config.cfg diff per member
    assert check.stdout.count("+IMEX_NODE_CONFIG_FILE=") == 6
    assert all(count > 0 for count in changed(check, MEMBERS).values())

    # 2. The real run: each member lists its own rack, in node order, identical on every member.
    first = cluster.run()
    assert first.returncode == 0, first.output
    for rack, hosts in RACKS.items():
        for host in hosts:
            assert cluster.path(host).read_text() == rack_file(rack), host
            assert stat.S_IMODE(cluster.path(host).stat().st_mode) == 0o644
    assert rack_file("rack01") == "10.0.1.1\n10.0.1.2\n10.0.1.10\n"
    # One task writes the directory, config.cfg and nodes_config.cfg (aifactory.topology.imex_config): one change.
    assert changed(first) == {**{host: 1 for host in MEMBERS}, SERVICE: 0}
    assert "IMEX: 2 NVLink domain(s) planned: rack01, rack02" in first.stdout
    assert "imex: gb200-r01-n2 (node gb200-r01-n2, 10.0.1.2) is in NVLink domain rack01" in first.stdout
    # The service node is skipped with the reason, and gets nothing.
    assert f"imex: skipped: {SERVICE} (node {SERVICE}) has no NVLink domain in the topology model" in first.stdout
    assert not (cluster.root / "hosts" / SERVICE).exists()
    # config.cfg: NVIDIA's defaults in documented order, the overrides, the peer file path.
    config = cluster.path("gb200-r02-n1", "config.cfg").read_text()
    settings = [line for line in config.splitlines() if not line.startswith("#")]
    assert settings[:4] == ["LOG_LEVEL=5", "LOG_FILE_NAME=/var/log/nvidia-imex.log", "LOG_APPEND_TO_LOG=1",
                            "LOG_FILE_MAX_SIZE=1024"]
    assert "STATS_FILE_NAME=/var/log/imex-stats.log" in settings and "IMEX_ENABLE_AUTH_ENCRYPTION=0" in settings
    assert f"SERVER_PORT=50000\nIMEX_NODE_CONFIG_FILE={cluster.path('gb200-r02-n1')}\n" in config
    assert settings[-1] == "IMEX_CONN_WAIT_TIMEOUT=70"
    assert not any(line.startswith("BIND_INTERFACE_IP") for line in settings)
    assert "# NVLink domain rack02;" in config
    # The package each node would get: distribution and driver branch.
    assert first.stdout.count(f"nvidia-imex-570 (driver branch 570 from {version_file}, Debian)") == 3
    assert first.stdout.count("nvidia-imex-580.* (driver branch 580 from nvidia-smi, RedHat)") == 2
    assert "nvidia-imex=590.* (driver branch 590 from imex_driver_branch, Debian)" in first.stdout
    assert first.stdout.count("not managed (imex_package_install: false)") == 6
    # The files changed, but the service is not managed (imex_service_manage: false): the restart handler is
    # not notified, so it costs no node a task (the Molecule scenario imex proves the restart where it is managed).
    assert "RUNNING HANDLER" not in first.stdout

    # 3. Converged: a second run changes nothing.
    second = cluster.run()
    assert second.returncode == 0, second.output
    assert set(changed(second).values()) == {0}, second.stdout
    assert "RUNNING HANDLER" not in second.stdout

    # 4. Addresses from facts: rack01 from ansible_default_ipv4, rack02 from interface ib0. A member whose
    #    imex_address disagrees with its facts stops every host; no file changes.
    cluster.group_vars["imex_address_source"] = "facts"
    for host in RACKS["rack02"]:
        cluster.hosts[host]["imex_interface"] = "ib0"
    cluster.hosts["gb200-r02-n1"]["imex_address"] = "10.0.2.100"
    before = files(cluster)
    result = cluster.run()
    assert result.returncode != 0
    assert ("domain rack02: node gb200-r02-n1: imex_address 10.0.2.100 differs from the address in its facts "
            "(interface ib0) 10.0.2.1") in result.stdout
    assert "IMEX: nothing was written on any host" in result.stdout
    assert "Write config.cfg and nodes_config.cfg" not in result.stdout
    assert files(cluster) == before

    # 5. With the disagreement fixed, check mode shows rack01 moving to its default route addresses and
    #    leaves rack02 (same addresses on ib0) alone; nothing is written.
    cluster.hosts["gb200-r02-n1"]["imex_address"] = "10.0.2.1"
    for host in RACKS["rack01"]:
        del cluster.hosts[host]["imex_address"]
    check = cluster.run("--check", "--diff")
    assert check.returncode == 0, check.output
    assert check.stdout.count("-10.0.1.1\n-10.0.1.2\n-10.0.1.10\n+192.168.1.1\n+192.168.1.2\n+192.168.1.10\n") == 3
    assert changed(check) == {**{host: 1 for host in RACKS["rack01"]}, **{host: 0 for host in RACKS["rack02"]}, SERVICE: 0}
    assert files(cluster) == before

    # 6. A re-imaged node alone (--limit): the other members' addresses come from the inventory.
    del cluster.group_vars["imex_address_source"]
    for host, address in RACKS["rack01"].items():
        cluster.hosts[host]["imex_address"] = address
    for path in cluster.path("gb200-r01-n2").parent.iterdir():
        path.unlink()
    result = cluster.run("--limit", "localhost,gb200-r01-n2")
    assert result.returncode == 0, result.output
    assert "IMEX: 1 NVLink domain(s) planned: rack01" in result.stdout
    assert files(cluster) == before
    assert changed(result) == {"gb200-r01-n2": 1}  # config.cfg and nodes_config.cfg, rewritten by one task


def test_problems_fail_before_anything_is_written_anywhere(cluster):
    # Settings: every problem of every host at once.
    cluster.group_vars["imex_config"] = {"IMEX_CONN_WAIT_TIMEOUT": 70}
    cluster.hosts["gb200-r02-n1"]["imex_driver_branch"] = "r570"
    result = cluster.run()
    assert result.returncode != 0
    assert "imex_config: unknown key(s) IMEX_CONN_WAIT_TIMEOUT. Documented keys: LOG_LEVEL," in result.stdout
    assert "imex_driver_branch must be the driver's major version such as 570" in result.stdout
    assert cluster.written() == []
    del cluster.group_vars["imex_config"], cluster.hosts["gb200-r02-n1"]["imex_driver_branch"]

    # Addresses: a duplicate in a rack, an invalid one, one shared across racks; all reported, none written.
    cluster.hosts["gb200-r02-n10"]["imex_address"] = "10.0.2.1"
    cluster.hosts["gb200-r01-n2"]["imex_address"] = "10.0.1.300"
    cluster.hosts["gb200-r01-n10"]["imex_address"] = "10.0.2.2"
    result = cluster.run()
    assert result.returncode != 0
    assert "domain rack01: node gb200-r01-n2: imex_address: '10.0.1.300' is not a valid IP address" in result.stdout
    assert "domain rack02: nodes gb200-r02-n1 and gb200-r02-n10 have the same address 10.0.2.1" in result.stdout
    assert ("domain rack02: node gb200-r02-n2 has address 10.0.2.2, which node gb200-r01-n10 of domain rack01 has too"
            in result.stdout)
    assert "IMEX: nothing was written on any host" in result.stdout
    assert "Write config.cfg and nodes_config.cfg" not in result.stdout  # no host went on
    assert cluster.written() == []

    # A member outside the play (--limit) without imex_address: its address is unknown, refuse.
    cluster.hosts["gb200-r01-n2"]["imex_address"] = "10.0.1.2"
    del cluster.hosts["gb200-r01-n10"]["imex_address"]
    result = cluster.run("--limit", "localhost,gb200-r01-n1")
    assert result.returncode != 0
    assert ("domain rack01: node gb200-r01-n10: not in this play (left out by --limit, unreachable or failed) and no "
            "imex_address in the inventory") in result.stdout
    assert cluster.written() == []


def write_fake_imex_ctl(path: Path, answers: list[str]):
    """A stand-in for nvidia-imex-ctl -N -j: prints the next answer each time (the last one forever)."""
    path.write_text(f"""#!/bin/sh
count_file="$0.$(basename "$(dirname "$(dirname "$(dirname "$4")")")").count"
n=$(cat "$count_file" 2>/dev/null || echo 0)
echo $((n + 1)) > "$count_file"
set -- {' '.join(repr(a) for a in answers)}
shift $(( n < $# - 1 ? n : $# - 1 ))
echo "$1"
""")
    path.chmod(0o755)


def test_health_check_waits_for_the_domain_to_be_up(cluster):
    rack01 = "localhost," + ",".join(RACKS["rack01"])
    ctl = cluster.root / "nvidia-imex-ctl"
    write_fake_imex_ctl(ctl, ['{"status": "DOWN"}', "not json yet", '{"status": "UP", "nodes": {}}'])
    cluster.group_vars.update(imex_health_check=True, imex_ctl_path=str(ctl),
                              imex_health_check_retries=5, imex_health_check_delay=0)
    cluster.hosts["gb200-r01-n10"]["imex_ctl_path"] = str(cluster.root / "absent-ctl")
    result = cluster.run("--limit", rack01)
    assert result.returncode == 0, result.output
    assert result.stdout.count("FAILED - RETRYING: [gb200-r01-n1]: Wait until nvidia-imex-ctl") == 2
    assert "imex: health check skipped on gb200-r01-n10:" in result.stdout
    assert (cluster.root / "nvidia-imex-ctl.gb200-r01-n1.count").read_text().strip() == "3"

    # A domain that never comes up fails after the bounded number of attempts.
    write_fake_imex_ctl(ctl, ['{"status": "DEGRADED"}'])
    for count in cluster.root.glob("nvidia-imex-ctl.*.count"):
        count.unlink()
    cluster.group_vars["imex_health_check_retries"] = 2
    result = cluster.run("--limit", rack01)
    assert result.returncode != 0
    assert (cluster.root / "nvidia-imex-ctl.gb200-r01-n1.count").read_text().strip() == "3"  # first try + 2 retries
    assert result.recap["gb200-r01-n1"]["failed"] == 1 and result.recap["gb200-r01-n10"]["failed"] == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="k8s mode creates a character device with mknod, which needs root")
def test_k8s_mode_creates_the_channel_device_and_no_peer_list(cluster):
    devices = cluster.root / "proc-devices"
    devices.write_text("Character devices:\n  1 mem\n195 nvidia\n241 nvidia-caps-imex-channels\n"
                       "Block devices:\n  8 sd\n")
    cluster.group_vars.update(imex_mode="k8s", imex_proc_devices_path=str(devices),
                              imex_channel_dir=f"{cluster.root}/hosts/{{{{ inventory_hostname }}}}/dev/channels",
                              imex_channel_module_param=True,
                              imex_modprobe_conf_path=f"{cluster.root}/modprobe-{{{{ inventory_hostname }}}}.conf")
    no_driver = cluster.root / "proc-devices-without-imex"
    no_driver.write_text("Character devices:\n  1 mem\n")
    cluster.hosts["gb200-r02-n10"]["imex_proc_devices_path"] = str(no_driver)
    # The three hosts the assertions read (a member, a member without the driver, the service node):
    # k8s mode writes no peer list, so the other members would only repeat gb200-r01-n1, at about 0.4
    # CPU-seconds a task each (docs/testing.md, "Where the test steps' CPU goes").
    limit = ("--limit", f"localhost,gb200-r01-n1,gb200-r02-n10,{SERVICE}")

    check = cluster.run("--check", *limit)
    assert check.returncode == 0, check.output
    assert not (cluster.root / "hosts").exists() and not list(cluster.root.glob("modprobe-*"))  # nothing at all

    result = cluster.run(*limit)
    assert result.returncode == 0, result.output
    channel = cluster.root / "hosts" / "gb200-r01-n1" / "dev" / "channels" / "channel0"
    info = channel.lstat()
    assert stat.S_ISCHR(info.st_mode) and os.major(info.st_rdev) == 241 and os.minor(info.st_rdev) == 0
    assert stat.S_IMODE(info.st_mode) == 0o666
    assert not list((cluster.root / "hosts").rglob("*.cfg"))  # no config.cfg, no nodes_config.cfg
    modprobe = cluster.root / "modprobe-gb200-r01-n1.conf"
    assert "options nvidia NVreg_CreateImexChannel0=1\n" in modprobe.read_text()
    assert f"imex: skipped: {SERVICE} (node {SERVICE}) has no NVLink domain in the topology model" in result.stdout
    assert f"not created: {no_driver} has no nvidia-caps-imex-channels" in result.stdout
    assert not (cluster.root / "hosts" / "gb200-r02-n10" / "dev" / "channels" / "channel0").exists()

    again = cluster.run(*limit)
    assert again.returncode == 0 and set(changed(again).values()) == {0}, again.stdout

    # After a driver change the major number differs: the stale device is replaced.
    devices.write_text(devices.read_text().replace("241 nvidia-caps", "242 nvidia-caps"))
    result = cluster.run(*limit)
    assert result.returncode == 0, result.output
    assert os.major(channel.lstat().st_rdev) == 242
    assert changed(result, ["gb200-r01-n1"]) == {"gb200-r01-n1": 2}  # removed, created


def test_k8s_mode_without_a_topology_prepares_every_host_of_the_play(cluster):
    """No imex_topology: no host is skipped. The play defines no topology_discovered anywhere, which
    also proves that nothing in the role (its argument specs included) needs one."""
    (cluster.root / "plain.yml").write_text(yaml.safe_dump([{
        "name": "IMEX for Kubernetes", "hosts": "imex_nodes", "gather_facts": False,
        "roles": [{"role": "aifactory.topology.imex", "imex_mode": "k8s", "imex_channel_create": False}]}]))
    result = cluster.run("--limit", f"gb200-r01-n1,{SERVICE}", playbook="plain.yml")
    assert result.returncode == 0, result.output
    for host in ("gb200-r01-n1", SERVICE):
        assert f"imex: {host} prepared for Kubernetes ComputeDomains; no nodes_config.cfg is written" in result.stdout
    assert "skipped:" not in result.stdout
    assert "channel0: not managed (imex_channel_create: false)" in result.stdout
    assert not (cluster.root / "hosts").exists()


def test_booleans_given_as_strings_on_the_command_line(cluster):
    """`-e name=false` is the string "false": every boolean of the role goes through `| bool`."""
    rack01 = "localhost," + ",".join(RACKS["rack01"])
    result = cluster.run("--limit", rack01, "-e", "imex_package_install=false", "-e", "imex_service_manage=no",
                         "-e", "imex_health_check=true", "-e", f"imex_ctl_path={cluster.root}/absent-ctl")
    assert result.returncode == 0, result.output
    assert "not managed (imex_package_install: false)" in result.stdout
    assert "service nvidia-imex: not managed (imex_service_manage: false)" in result.stdout
    assert "imex: health check skipped on gb200-r01-n1:" in result.stdout
    assert cluster.path("gb200-r01-n1").read_text() == rack_file("rack01")

    modprobe = cluster.root / "modprobe.conf"
    result = cluster.run("--limit", "localhost,gb200-r01-n1", "-e", "imex_mode=k8s",
                         "-e", "imex_channel_create=false", "-e", "imex_channel_module_param=true",
                         "-e", f"imex_modprobe_conf_path={modprobe}")
    assert result.returncode == 0, result.output
    assert "channel0: not managed (imex_channel_create: false)" in result.stdout
    assert "options nvidia NVreg_CreateImexChannel0=1\n" in modprobe.read_text()


FLEET_PLAYBOOK = [PLAYBOOK[0], {"name": "IMEX at fleet scale", "ansible.builtin.import_playbook": str(REPO / "playbooks" / "imex.yml"),
                                "vars": {"imex_fleet_hosts": "imex_nodes"}}]


def visited(result):
    """The inventory hosts the node play ran on (the recap lists only hosts that ran a task)."""
    return sorted(host for host in result.recap if host != "localhost")


def test_fleet_playbook_visits_only_the_domains_that_changed(cluster):
    """playbooks/imex.yml, as site.yml and rack_bringup.yml import it: the controller plans every domain,
    visits the members of the domains never applied or changed, and records the domains applied in full."""
    (cluster.root / "fleet.yml").write_text(yaml.safe_dump(FLEET_PLAYBOOK, sort_keys=False))
    state = cluster.root / "state" / "imex-applied.json"
    fleet = ("-e", f"imex_state_file={state}")

    def run(*extra):
        return cluster.run(*fleet, *extra, playbook="fleet.yml")

    # imex.yml imports the role without Ansible's own check of its arguments: the role's first task checks every
    # option by the same spec, and a wrong value stops every node before anything is written.
    refused = run("-e", "imex_address_source=bogus")
    assert refused.returncode != 0
    assert "value of imex_address_source must be one of: auto, variable, facts, got: bogus" in " ".join(refused.output.split())
    assert cluster.written() == [] and not state.exists()

    # Check mode with nothing applied yet: every member is visited, both files shown, nothing written.
    check = run("--check", "--diff")
    assert check.returncode == 0, check.output
    assert cluster.written() == [] and not state.exists()
    assert check.stdout.count("+IMEX_NODE_CONFIG_FILE=") == 6
    assert "IMEX: 6 of 7 node(s) of imex_nodes to visit (imex_verify: changed)" in check.stdout

    # The first run visits every member (the service node is reported by the controller) and records both racks.
    first = run()
    assert first.returncode == 0, first.output
    assert visited(first) == sorted(MEMBERS)
    assert "new domain(s): 2: rack01, rack02" in first.stdout
    assert f"imex: skipped: {SERVICE} (node {SERVICE}) has no NVLink domain in the topology model" in first.stdout
    for rack, hosts in RACKS.items():
        for host in hosts:
            assert cluster.path(host).read_text() == rack_file(rack), host
    recorded = json.loads(state.read_text())
    assert recorded["format"] == 1 and sorted(recorded["domains"]) == ["rack01", "rack02"]
    assert stat.S_IMODE(state.stat().st_mode) == 0o600

    # Steady state: no node is visited and nothing changes, the state file included.
    second = run()
    assert second.returncode == 0, second.output
    assert visited(second) == [] and second.recap["localhost"]["changed"] == 0
    assert "IMEX: 0 of 7 node(s) of imex_nodes to visit" in second.stdout
    assert "unchanged domain(s): 2: rack01, rack02" in second.stdout

    # One node of rack02 gets a new address: only rack02's members are visited, and rewritten.
    cluster.hosts["gb200-r02-n2"]["imex_address"] = "10.0.2.20"
    moved = run()
    assert moved.returncode == 0, moved.output
    assert visited(moved) == sorted(RACKS["rack02"])
    assert changed(moved) == {host: 1 for host in RACKS["rack02"]}
    assert cluster.path("gb200-r02-n1").read_text() == "10.0.2.1\n10.0.2.20\n10.0.2.10\n"
    assert run().recap.keys() == {"localhost"}

    # A file edited by hand is not seen by a run that visits nothing; imex_verify=all visits every node and
    # restores it, changing nothing else.
    cluster.path("gb200-r01-n1").write_text("10.9.9.9\n")
    assert visited(run()) == []
    assert cluster.path("gb200-r01-n1").read_text() == "10.9.9.9\n"
    verify = run("-e", "imex_verify=all")
    assert verify.returncode == 0, verify.output
    assert visited(verify) == sorted(MEMBERS + [SERVICE])
    assert changed(verify) == {**{host: 0 for host in MEMBERS + [SERVICE]}, "gb200-r01-n1": 1}
    assert cluster.path("gb200-r01-n1").read_text() == rack_file("rack01")

    # A setting of rack01 changes, applied on one of its nodes only (--limit): rack01 is not recorded, so the
    # next run visits all of rack01 again, and it changes the two nodes left.
    for host in RACKS["rack01"]:
        cluster.hosts[host]["imex_config"] = {"LOG_LEVEL": 2}
    limited = run("--limit", "localhost,gb200-r01-n1")
    assert limited.returncode == 0, limited.output
    assert visited(limited) == ["gb200-r01-n1"] and changed(limited) == {"gb200-r01-n1": 1}
    assert json.loads(state.read_text())["domains"]["rack01"] == recorded["domains"]["rack01"]
    rest = run()
    assert rest.returncode == 0, rest.output
    assert visited(rest) == sorted(RACKS["rack01"])
    assert changed(rest) == {"gb200-r01-n1": 0, "gb200-r01-n10": 1, "gb200-r01-n2": 1}
    assert "LOG_LEVEL=2" in cluster.path("gb200-r01-n2", "config.cfg").read_text()
    assert json.loads(state.read_text())["domains"]["rack01"] != recorded["domains"]["rack01"]
    assert visited(run()) == []
