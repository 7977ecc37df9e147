"""The imex role's package path (imex_package_install: true), run for real by ansible-playbook on local hosts.

The role test cluster of imex_support (two racks of three nodes, ``ansible_connection: local``) with the
package task on: the driver branch is not given (imex_driver_branch empty), so the role reads it from each
node's driver version file (the aifactory.topology.imex_driver_branch filter), else from nvidia-smi, and
installs the IMEX package of that branch. The package manager is a stub module (``ansible_package_use``,
as ansible.builtin.package documents it), written into the playbook's ``library/``: it installs nothing and
records the package names it was asked for, so the test sees what a real host would install.

Proves: an R570 open-kernel-module version file gives nvidia-imex-570, an R580 proprietary one
nvidia-imex-580 (nvidia-imex-580.* on the RHEL family), and the file wins over nvidia-smi; an unreadable
file falls back to nvidia-smi; a version file with no version in it, or an unreadable one with nvidia-smi
printing nothing, fails that node with its name, the file and what to set, and nothing is installed or
written there, while imex_driver_branch lets such a node through.
"""

from __future__ import annotations

import json

import pytest

from tests.integration.imex_support import MEMBERS, RACKS, Cluster

pytestmark = pytest.mark.playbook

R570 = ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.124.06  Release Build  "
        "(dvs-builder@U16-I3-B13-3-1)  Tue Feb 25 01:33:28 UTC 2025\nGCC version:  gcc version 13.3.0\n")
R580 = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue Sep 23 09:34:02 UTC 2025\n"
        "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n")
GARBAGE = "NVRM version: NVIDIA UNIX Kernel Module (version unavailable)\nGCC version:  gcc\n"

STUB = '''#!/usr/bin/python
import json

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={"name": {"type": "list", "elements": "str", "required": True},
                                          "state": {"type": "str", "default": "present"}},
                           supports_check_mode=True)
    with open(LOG, "a") as log:
        log.write(json.dumps(module.params["name"]) + "\\n")
    module.exit_json(changed=True, msg="stub: would install " + ", ".join(module.params["name"]))


main()
'''


@pytest.fixture
def cluster(tmp_path):
    cluster = Cluster(tmp_path)
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "imex_test_package.py").write_text(f"LOG = {str(tmp_path / 'installed.log')!r}\n" + STUB)
    cluster.group_vars.update(imex_package_install=True, ansible_package_use="ansible.legacy.imex_test_package",
                              # Were the version file ignored, the package would name this branch.
                              imex_nvidia_smi_command=["echo", "999.1.1"])
    for host in MEMBERS:
        cluster.facts[host] = {"os_family": "Debian"}
    cluster.facts["gb200-r02-n10"]["os_family"] = "RedHat"
    cluster.seed_facts()
    return cluster


def installed(cluster):
    log = cluster.root / "installed.log"
    return sorted(name for line in log.read_text().splitlines() for name in json.loads(line)) if log.exists() else []


def version_file(cluster, name, text):
    path = cluster.root / name
    path.write_text(text)
    return str(path)


def test_the_package_matches_the_branch_of_the_driver_version_file(cluster):
    r570, r580 = version_file(cluster, "version-570", R570), version_file(cluster, "version-580", R580)
    for host in RACKS["rack01"]:
        cluster.hosts[host]["imex_driver_version_file"] = r570
    for host in RACKS["rack02"]:
        cluster.hosts[host]["imex_driver_version_file"] = r580
    # No readable version file (a directory): nvidia-smi's answer.
    cluster.hosts["gb200-r01-n10"].update(imex_driver_version_file=str(cluster.root),
                                          imex_nvidia_smi_command=["echo", "580.95.05\n580.95.05"])

    result = cluster.run()
    assert result.returncode == 0, result.output
    assert installed(cluster) == ["nvidia-imex-570"] * 2 + ["nvidia-imex-580"] * 3 + ["nvidia-imex-580.*"]
    assert result.stdout.count(f"nvidia-imex-570 (driver branch 570 from {r570}, Debian), installed") == 2
    assert result.stdout.count(f"nvidia-imex-580 (driver branch 580 from {r580}, Debian), installed") == 2
    assert f"nvidia-imex-580.* (driver branch 580 from {r580}, RedHat), installed" in result.stdout
    assert "nvidia-imex-580 (driver branch 580 from nvidia-smi, Debian), installed" in result.stdout
    assert "999" not in "".join(installed(cluster))
    assert all(cluster.path(host).exists() for host in MEMBERS)


def test_an_unknown_driver_branch_fails_the_node_and_installs_nothing(cluster):
    garbage = version_file(cluster, "version-garbage", GARBAGE)
    for host in RACKS["rack01"]:
        cluster.hosts[host]["imex_driver_version_file"] = garbage
    for host in RACKS["rack02"]:
        cluster.hosts[host].update(imex_driver_version_file=str(cluster.root / "no-such-file"),
                                   imex_nvidia_smi_command=["true"])
    cluster.hosts["gb200-r02-n2"]["imex_nvidia_smi_command"] = ["false"]
    # The way out the message names: the branch given.
    cluster.hosts["gb200-r01-n1"]["imex_driver_branch"] = "570"

    result = cluster.run()
    assert result.returncode != 0
    failed = {host for host, counts in result.recap.items() if counts["failed"]}
    assert failed == set(MEMBERS) - {"gb200-r01-n1"}, result.stdout
    assert installed(cluster) == ["nvidia-imex-570"]
    assert [host for host in MEMBERS if cluster.path(host).exists()] == ["gb200-r01-n1"]
    for host in ("gb200-r01-n2", "gb200-r01-n10"):
        assert (f"imex: the NVIDIA driver branch of {host} is unknown, so is the IMEX package that matches it: "
                f"{garbage} names no driver version (such as 570.124.06); set imex_driver_branch (such as 570) "
                "or imex_package_name") in result.stdout
    missing = cluster.root / "no-such-file"
    assert (f"imex: the NVIDIA driver branch of gb200-r02-n1 is unknown, so is the IMEX package that matches it: "
            f"{missing} could not be read (File not found: {missing}) and true printed no driver version; "
            "set imex_driver_branch") in result.stdout
    assert "and false printed no driver version (rc 1); set imex_driver_branch" in result.stdout
