# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run every hostile case of docs/security.md in its own process; count outcomes per class.

The cases are registered here; how each runs in its own child process (``--case NAME``), is
killed after ``--limit`` seconds (a hang) and is judged (clear error, unhandled, wrong output,
hang, data lost, secret printed) is tests/hostile_campaign.py, which
tests/integration/test_hostile_campaign.py shares: there every case is a test that fails
unless it is decided as documented. This script prints each case's verdict, time and peak
memory, then the table per class of docs/security.md.

``python tests/hostile_cases.py [--limit 30] [--only TEXT] [--json FILE]``. Needs the collection
importable (as bench/run.py arranges) and, for the HTTP cases, nothing but 127.0.0.1; the cases
that mount file systems, make device nodes or set chattr +i need root.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.hostile_campaign, tests.fault_http
from tests.hostile_campaign import (  # noqa: E402  # pylint: disable=wrong-import-position
    CASES, VERDICTS, DataLost, ModuleFailed, WrongOutput, case, make_collection_importable, run_case, run_in_child)

CLASSES = ["simulation and compact models", "inventory variables", "ibnetdiscover text",
           "options and destinations", "kill -9 and concurrency", "shrink guard", "secrets", "HTTP providers",
           "event sources and the regenerate webhook", "credential chains"]


# -- helpers used by the cases (run in the child) ----------------------------------------------

def discover(name, params, creds=None):
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover as run
    warnings = []
    run(name, params, creds or {}, warnings.append)
    return warnings


def simulation(tmp, text, mode="w"):
    path = tmp / "model.yaml"
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text)
    return discover("simulation", {"model_path": str(path)})


def compact(data):
    from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
    return Topology.from_compact(dict({"format": "aifactory.topology/v1"}, **data))


def module(tmp, args, check=False, diff=False, name="slurm_topology", timeout=None):
    """Run a module as Ansible does (python -m, args file); ModuleFailed(msg) or the result."""
    args_file = tmp / f"args-{time.monotonic_ns()}.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check, _ansible_diff=diff)}))
    proc = subprocess.run([sys.executable, "-m", f"ansible_collections.aifactory.topology.plugins.modules.{name}",
                           str(args_file)], capture_output=True, text=True, timeout=timeout, check=False)
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        raise RuntimeError(f"module printed no JSON (rc={proc.returncode}): {proc.stderr[-300:]}") from None
    if result.get("exception") or "Traceback" in proc.stderr:
        raise RuntimeError("module traceback: " + (result.get("exception") or proc.stderr)[-300:])
    if result.get("failed"):
        raise ModuleFailed(result.get("msg", ""))
    return result


MODEL = {"format": "aifactory.topology/v1", "switches": {"leaf": None},
         "nodes": [{"nodes": "n[1-10]", "switch": "leaf", "domain": "r1"}]}
GOOD_CONF = "SwitchName=leaf Nodes=n[1-10]\n"


def render(tmp, **args):
    dest = args.pop("dest", None)
    base = {"model": args.pop("model", MODEL)}
    if dest is not None:
        base["dest"] = str(dest)
    base.update(args)
    return module(tmp, base)


# -- simulation and compact models -----------------------------------------------------------------

M = "simulation and compact models"
for label, text in {
    "nodes: [null]": "blocks: [{nodes: [null]}]", "nodes: [yes]": "blocks: [{nodes: [yes]}]",
    "nodes: [{a: 1}]": "blocks: [{nodes: [{a: 1}]}]", "nodes: [1.5]": "blocks: [{nodes: [1.5]}]",
    "nodes: 5": "blocks: [{nodes: 5}]", "numeric switch name": "switches: {1101: {}}\nblocks: [{nodes: [n1]}]",
    "numeric child switch": "switches: {s: {switches: [7]}}\nblocks: [{nodes: [n1]}]",
    "label value 1": "blocks: [{nodes: [n1], labels: {a: 1}}]",
    "node name with newline": 'blocks: [{nodes: ["n1\\nSwitchName=rogue"]}]',
    "switch name with comma": 'switches: {"s,1": {}}\nblocks: [{nodes: [n1], switch: "s,1"}]',
    "domain with '='": 'blocks: [{nodes: [n1], annotations: {accelerator.topology.test/domain: "r=1"}}]',
    "domain as integer": "blocks: [{nodes: [n1], annotations: {accelerator.topology.test/domain: 4}}]",
    "alias bomb": "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)),
    "deep flow nesting": "blocks: " + "[" * 100000 + "]" * 100000,
    "deep block nesting": "blocks:\n" + "".join("  " * i + "- \n" for i in range(5000)),
    "four 400k hostlists": "blocks:\n" + "".join(f"- {{nodes: ['g{i}n[1-400000]']}}\n" for i in range(4)),
    "5000-digit range": "blocks: [{nodes: ['n[" + "0" * 5000 + "1-2]']}]",
    "10 MB name": "blocks: [{nodes: ['" + "x" * 10_000_000 + "[']}]",
    "empty file": "", "a list, not a mapping": "- 1\n- 2\n",
    "unknown top-level key": "switchs: {}\nblocks: [{nodes: [n1]}]",
}.items():
    case(M, f"simulation {label}")(lambda tmp, text=text: simulation(tmp, text))

# Slurm's hostlist grammar separates names by commas and white space: "n 1" is two valid names.
case(M, "simulation hostlist 'n 1' is the nodes n and 1, as in Slurm", expect="ok")(
    lambda tmp: simulation(tmp, 'blocks: [{nodes: ["n 1"]}]'))
case(M, "simulation non-UTF-8 file")(lambda tmp: simulation(tmp, b"blocks: [{nodes: [n\xff1]}]\n", "wb"))
case(M, "simulation binary garbage")(lambda tmp: simulation(tmp, bytes(range(256)) * 40, "wb"))


@case(M, "simulation model_path is a FIFO")
def hostile_case_1(tmp):
    os.mkfifo(tmp / "fifo")
    return discover("simulation", {"model_path": str(tmp / "fifo")})


@case(M, "simulation model_path is a directory")
def hostile_case_2(tmp):
    return discover("simulation", {"model_path": str(tmp)})


for label, data in {
    "nodes: 5": {"nodes": [{"nodes": 5}]}, "nodes: [null]": {"nodes": [{"nodes": [None]}]},
    "integer domain_order": {"nodes": [{"nodes": "n1"}], "domain_order": 5},
    "domain_order [5]": {"nodes": [{"nodes": "n1"}], "domain_order": [5]},
    "parent 5": {"switches": {"s": 5}, "nodes": [{"nodes": "n1"}]},
    "switch name with newline": {"switches": {"s\nSwitchName=x": None}, "nodes": [{"nodes": "n1"}]},
    "node hostlist with '='": {"nodes": [{"nodes": "n=1"}]},
    "label value 1": {"nodes": [{"nodes": "n1", "labels": {"a": 1}}]},
    "10 MB format": {"format": "x" * 10_000_000},
    "switch_names value with '#'": {"switches": {"s": None}, "switch_names": {"s": "#s"}, "nodes": [{"nodes": "n1"}]},
}.items():
    case(M, f"compact {label}")(lambda tmp, data=data: compact(data))


# -- inventory variables -------------------------------------------------------------------

I = "inventory variables"
for label, params in {
    "two switches, one name": {"switches": {"a": {"name": "leaf"}, "b": {"name": "leaf"}},
                               "nodes": [{"nodes": "n1", "switch": "a"}]},
    "nodes: 5": {"nodes": [{"nodes": 5}]},
    "nodes: [null]": {"nodes": [{"nodes": [None]}]},
    "host key 5": {"hosts": {5: {}}},
    "parent 7": {"switches": {"a": 7}, "nodes": [{"nodes": "n1"}]},
    "switch name with newline": {"switches": {"a": {"name": "x\nSwitchName=y"}}, "nodes": [{"nodes": "n1", "switch": "a"}]},
    "domain name with '='": {"domains": [{"name": "r=1", "nodes": "n1"}]},
    "domain name None": {"domains": [{"name": None, "nodes": "n1"}]},
    "sub_domain '#x'": {"domains": [{"name": "r1", "sub_domains": [{"name": "#x", "nodes": "n1"}]}]},
    "host domain with '['": {"hosts": {"n1": {"domain": "r[1]"}}},
    "host switch True": {"hosts": {"n1": {"switch": True}}, "switches": {"True": None}},
    "four 400k hostlists": {"nodes": [{"nodes": f"g{i}n[1-400000]"} for i in range(4)]},
    "10 MB unknown key": {"x" * 10_000_000: 1},
    "10 MB bad hostlist": {"nodes": [{"nodes": "x" * 10_000_000 + "["}]},
    "node name with NEL": {"hosts": {"n\u00851": {}}},
    "node name with U+2028": {"hosts": {"n\u20281": {}}},
}.items():
    case(I, f"inventory {label}")(lambda tmp, params=params: discover("inventory", params))


# -- ibnetdiscover text ----------------------------------------------------------------------

B = "ibnetdiscover text"
GOOD_IB = (REPO / "tests" / "fixtures" / "topograph" / "ibnetdiscover-example.out").read_text()
IB_LINES = GOOD_IB.splitlines(keepends=True)


def ib(text=None, **params):
    if text is not None:
        params["ibnetdiscover"] = {"n1": text}
    return discover("infiniband", params)


for fraction in (0.1, 0.25, 0.5, 0.75, 0.9, 0.99):
    cut = int(len(IB_LINES) * fraction)
    case(B, f"ibnetdiscover cut at line {cut}")(lambda tmp, cut=cut: ib("".join(IB_LINES[:cut])))
case(B, "ibnetdiscover cut mid-line")(lambda tmp: ib(GOOD_IB[:len(GOOD_IB) // 2]))


@case(B, "ibnetdiscover duplicated switch GUID")
def hostile_case_3(tmp):
    record = GOOD_IB[GOOD_IB.index("switchguid=0x2c5eab0300b87b40"):]
    return ib(GOOD_IB + "\n" + record[:record.index("\n\n") + 2])


def ib_quarantined(text, host):
    """A host's own bad description quarantines that host alone (docs/security.md, per-node quarantine)."""
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import discover as run
    topology = run("infiniband", {"ibnetdiscover": {"n1": text}})
    if list(topology.quarantined) != [repr(host)] or any(host in name for name in topology.nodes):
        raise WrongOutput(f"{host!r} was not quarantined alone: quarantined {list(topology.quarantined)}")
    return topology


for label, (old, new, host) in {
    "HCA described 'node[01-09] HCA-1'": ('"a08-p1-dgx-04-c01 mlx5_5"', '"node[01-09] HCA-1"', "node[01-09]"),
    "HCA described 'a=b mlx5_0'": ('"a08-p1-dgx-04-c01 mlx5_5"', '"a=b mlx5_5"', "a=b"),
    "HCA described '#x mlx5_0'": ('"a08-p1-dgx-04-c01 mlx5_5"', '"#x mlx5_5"', "#x"),
}.items():
    case(B, f"ibnetdiscover {label} quarantines that host", expect="ok")(
        lambda tmp, old=old, new=new, host=host: ib_quarantined(GOOD_IB.replace(old, new), host))
    case(B, f"ibnetdiscover {label}, invalid_nodes fail")(
        lambda tmp, old=old, new=new: ib(GOOD_IB.replace(old, new), invalid_nodes="fail"))
case(B, "ibnetdiscover switch described 'MF0;a b:MQM'")(
    lambda tmp: ib(GOOD_IB.replace('"MF0;A09-P1-IBLEAF-04-04:MQM9701/U1"', '"MF0;a,b:MQM9701/U1"')))
case(B, "ibnetdiscover node_map value null")(lambda tmp: ib(GOOD_IB, node_map={"H-e09d7303007a4bd8": None}))
case(B, "ibnetdiscover node_map value 5")(lambda tmp: ib(GOOD_IB, node_map={"a08-p1-dgx-04-c01": 5}))
case(B, "ibnetdiscover empty output")(lambda tmp: ib(""))
case(B, "ibnetdiscover header only")(lambda tmp: ib("# Topology file\n\n"))
case(B, "ibnetdiscover binary garbage")(lambda tmp: ib(bytes(range(256)).decode("latin-1") * 10))
case(B, "ibnetdiscover output is an integer")(lambda tmp: ib(5))


@case(B, "ibnetdiscover file non-UTF-8")
def hostile_case_4(tmp):
    (tmp / "ib.out").write_bytes(GOOD_IB.encode().replace(b"a08-p1-dgx-04-c01", b"a08-p1-dgx-04-c\xe901"))
    return ib(ibnetdiscover_files=[str(tmp / "ib.out")])


@case(B, "ibnetdiscover file is a FIFO")
def hostile_case_5(tmp):
    os.mkfifo(tmp / "fifo")
    return ib(ibnetdiscover_files=[str(tmp / "fifo")])


# -- options and destinations (the slurm_topology module, run as Ansible runs it) ---------------

O = "options and destinations"


@case(O, "topologies: {}")
def hostile_case_6(tmp):
    (tmp / "topology.yaml").write_text("- topology: default\n  cluster_default: true\n  flat: true\n")
    return render(tmp, dest=tmp / "topology.yaml", topologies={})


for label, args in {
    "header not a comment": {"header": "SwitchName=rogue Nodes=x[1-9]"},
    "header comment then record": {"header": "# ok\nSwitchName=rogue"},
    "block_name_pattern bad regexp": {"plugin": "topology/block", "block_name_pattern": {"regexp": "(", "format": "x"}},
    "block_name_pattern bad group": {"plugin": "topology/block", "block_name_pattern": {"regexp": "n(\\d)", "format": "$7"}},
    "block_name_pattern gives a space": {"plugin": "topology/block",
                                         "block_name_pattern": {"regexp": "n(\\d)", "format": "b $1"}},
    "block_name_pattern gives ','": {"plugin": "topology/block",
                                     "block_name_pattern": {"regexp": "n(\\d+)", "format": "b,x"}},
    "no_topology_switch with newline": {"no_topology_switch": "nt\nSwitchName=x"},
    "domain_order with '['": {"plugin": "topology/block", "domain_order": ["r[1]"]},
}.items():
    case(O, label)(lambda tmp, args=args: render(tmp, **args))


@case(O, "dest is a FIFO")
def hostile_case_7(tmp):
    os.mkfifo(tmp / "fifo")
    return render(tmp, dest=tmp / "fifo")


@case(O, "dest is a character device", needs_root=True)
def hostile_case_8(tmp):
    os.mknod(tmp / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return render(tmp, dest=tmp / "null")


@case(O, "dest is a directory")
def hostile_case_9(tmp):
    return render(tmp, dest=tmp)


@case(O, "dest directory missing")
def hostile_case_10(tmp):
    return render(tmp, dest=tmp / "missing" / "topology.conf")


def _attribute_case(tmp, attribute):
    dest = tmp / "topology.conf"
    old = GOOD_CONF.replace("10", "9")
    dest.write_text(old)
    try:
        return render(tmp, dest=dest, **attribute)
    finally:
        if dest.read_text() != old:
            raise DataLost(f"{dest} was replaced although the task failed")


for label, attribute in {"invalid owner": {"owner": "no-such-user-aifactory"},
                         "invalid mode": {"mode": "u=banana"}}.items():
    case(O, label)(functools.partial(_attribute_case, attribute=attribute))


@case(O, "--diff of a symlinked dest shows the link", expect="ok")
def hostile_case_12(tmp):
    (tmp / "target.conf").write_text("SwitchName=old Nodes=n[1-10]\n")
    (tmp / "topology.conf").symlink_to(tmp / "target.conf")
    args_file = tmp / "a.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"model": MODEL, "dest": str(tmp / "topology.conf"),
                                                             "_ansible_diff": True, "_ansible_check_mode": True}}))
    out = subprocess.run([sys.executable, "-m", "ansible_collections.aifactory.topology.plugins.modules.slurm_topology",
                          str(args_file)], capture_output=True, text=True, check=False)
    result = json.loads(out.stdout)
    before = (result.get("diff") or {}).get("before", "")
    if result.get("failed"):
        raise ModuleFailed(result.get("msg"))
    # The link is followed: the target's content is what is replaced, and the header must say so.
    header = (result.get("diff") or {}).get("before_header", "")
    if "old" not in before or header != f"{tmp / 'topology.conf'} -> {tmp / 'target.conf'}":
        raise WrongOutput(f"the diff does not show what is replaced: {header!r}")


@contextlib.contextmanager
def _tmpfs(tmp, options):
    mount = tmp / "mnt"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _kept(dest, old, fn):
    try:
        return fn()
    finally:
        if dest.read_text() != old:
            raise DataLost(f"{dest} changed although the task failed")


@case(O, "dest on a full file system", needs_root=True)
def hostile_case_13(tmp):
    with _tmpfs(tmp, "size=8k") as mount:
        dest = mount / "topology.conf"
        dest.write_text(GOOD_CONF)
        big = {"format": "aifactory.topology/v1", "switches": {"leaf": None},
               "nodes": [{"nodes": f"n{i}x", "switch": "leaf"} for i in range(0, 40000, 7)]}
        return _kept(dest, GOOD_CONF, lambda: render(tmp, dest=dest, model=big, force=True))


@case(O, "dest on a read-only mount", needs_root=True)
def hostile_case_14(tmp):
    with _tmpfs(tmp, "size=64k") as mount:
        dest = mount / "topology.conf"
        dest.write_text(GOOD_CONF.replace("10", "9"))
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        return _kept(dest, GOOD_CONF.replace("10", "9"), lambda: render(tmp, dest=dest))


@case(O, "dest immutable (chattr +i)", needs_root=True)
def hostile_case_15(tmp):
    dest = tmp / "topology.conf"
    dest.write_text(GOOD_CONF.replace("10", "9"))
    subprocess.run(["chattr", "+i", str(dest)], check=True)
    try:
        return _kept(dest, GOOD_CONF.replace("10", "9"), lambda: render(tmp, dest=dest))
    finally:
        subprocess.run(["chattr", "-i", str(dest)], check=False)


# -- kill -9 and concurrency -----------------------------------------------------------------

K = "kill -9 and concurrency"


def _big_model(nodes):
    return {"format": "aifactory.topology/v1", "switches": {"leaf": None},
            "nodes": [{"nodes": f"n[1-{nodes}]", "switch": "leaf"}]}


@case(K, "kill -9 mid-write leaves no temporary file after the next run", expect="ok")
def hostile_case_16(tmp):
    dest = tmp / "topology.conf"
    args_file = tmp / "a.json"
    model = {"format": "aifactory.topology/v1", "switches": {f"s{i}": None for i in range(20000)},
             "nodes": [{"nodes": f"n{i}", "switch": f"s{i}"} for i in range(20000)]}
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"model": model, "dest": str(dest)}}))
    command = [sys.executable, "-m", "ansible_collections.aifactory.topology.plugins.modules.slurm_topology",
               str(args_file)]
    for delay in (0.5, 0.8, 1.1, 1.4):
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # Also a temporary file as a run killed mid-write leaves it (the kills above may land before the write).
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    # Named as this host's runs name them (<pid>@<host>): another host's, on shared storage, is never removed.
    (tmp / f".topology.conf.aifactory-topology.{dead}@{os.uname().nodename}.x1y2z3").write_text("SwitchName=half")
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"model": _big_model(10), "dest": str(dest),
                                                             "force": True}}))
    subprocess.run(command, stdout=subprocess.DEVNULL, check=False)
    stale = [p.name for p in tmp.iterdir() if p.name.startswith(".")]
    if stale:
        raise WrongOutput(f"temporary files left beside dest: {stale}")


@case(K, "two concurrent runs cannot both pass the shrink guard", expect="ok")
def hostile_case_17(tmp):
    dest = tmp / "topology.conf"
    dest.write_text("SwitchName=leaf Nodes=n[1-100000]\n")
    procs = []
    for index, nodes in enumerate((85000, 80000)):  # each loses 15 % / 20 % of 100k: both must be refused
        args_file = tmp / f"a{index}.json"
        args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"model": _big_model(nodes), "dest": str(dest),
                                                                 "max_node_loss": 10}}))
        procs.append(subprocess.Popen([sys.executable, "-m",
                                       "ansible_collections.aifactory.topology.plugins.modules.slurm_topology",
                                       str(args_file)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    for proc in procs:
        proc.communicate()
    if dest.read_text() != "SwitchName=leaf Nodes=n[1-100000]\n":
        raise DataLost("a run dropped nodes past max_node_loss")


@case(K, "ten concurrent writers leave one whole file", expect="ok")
def hostile_case_18(tmp):
    dest = tmp / "topology.conf"
    procs, contents = [], set()
    for index in range(10):
        model = _big_model(1000 + index)
        args_file = tmp / f"w{index}.json"
        args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"model": model, "dest": str(dest), "force": True,
                                                                 "header": ""}}))
        contents.add(f"SwitchName=leaf Nodes=n[1-{1000 + index}]\n")
        procs.append(subprocess.Popen([sys.executable, "-m",
                                       "ansible_collections.aifactory.topology.plugins.modules.slurm_topology",
                                       str(args_file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for proc in procs:
        proc.wait()
    if dest.read_text() not in contents:
        raise DataLost("the file is not one whole result of one writer")
    if [p.name for p in tmp.iterdir() if p.name.startswith(".")]:
        raise WrongOutput("temporary files left")


# -- shrink guard ----------------------------------------------------------------------------

S = "shrink guard"
for label, value in {"nan": float("nan"), "inf": float("inf"), "-1": -1, "101": 101, "-inf": float("-inf")}.items():
    @case(S, f"max_node_loss {label}")
    def hostile_case_19(tmp, value=value):
        dest = tmp / "topology.conf"
        dest.write_text("SwitchName=leaf Nodes=n[1-100]\n")
        try:
            # json.dumps writes NaN/Infinity, which Ansible's JSON reader takes as floats.
            return render(tmp, dest=dest, max_node_loss=value, model=_big_model(10))
        finally:
            if dest.read_text() != "SwitchName=leaf Nodes=n[1-100]\n":
                raise DataLost("the guard was disabled: 90 of 100 nodes dropped")

for label, text in {"garbage": "\x00\x01 not a topology file", "bad hostlist": "SwitchName=leaf Nodes=n[1-\n",
                    "YAML alias bomb": "- &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
                        f"- &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)),
                    "unreadable YAML": "- topology: [\n"}.items():
    @case(S, f"current file {label} fails closed")
    def hostile_case_20(tmp, text=text):
        dest = tmp / "topology.conf"
        dest.write_text(text)
        try:
            return render(tmp, dest=dest)
        finally:
            if dest.read_text() != text:
                raise DataLost("a file the guard cannot read was replaced without force")


@case(S, "current file unreadable, force: true", expect="ok")
def hostile_case_21(tmp):
    dest = tmp / "topology.conf"
    dest.write_text("SwitchName=leaf Nodes=n[1-\n")
    render(tmp, dest=dest, force=True)
    if dest.read_text().endswith(GOOD_CONF) is False:
        raise WrongOutput("force did not write the file")


@case(S, "empty result over a full file")
def hostile_case_22(tmp):
    dest = tmp / "topology.conf"
    dest.write_text("SwitchName=leaf Nodes=n[1-100]\n")
    return render(tmp, dest=dest, no_topology_switch="", model={"format": "aifactory.topology/v1",
                                                                "nodes": [{"nodes": "x1"}]})


# -- secrets ---------------------------------------------------------------------------------

C = "secrets"
SECRET = "s3cr3t-VALUE-7f2a"
INSTANCES = [{"region": "r", "instances": {"i-1": "n1"}}]
for form, value in {"newline": SECRET + "\n", "CRLF": SECRET + "\r\n", "non-ASCII": SECRET + "\u00e9",
                    "NUL": SECRET + "\x00"}.items():
    case(C, f"lambda token with {form}", secret=SECRET)(lambda tmp, value=value: discover(
        "lambda", {"instances": INSTANCES, "workspace_id": "w", "api_url": "http://127.0.0.1:9"}, {"token": value}))
    case(C, f"netq password with {form}", secret=SECRET)(lambda tmp, value=value: discover(
        "netq", {"api_url": "http://127.0.0.1:9"}, {"username": "u", "password": value}))
case(C, "nscale token with newline", secret=SECRET)(lambda tmp: discover(
    "nscale", {"instances": INSTANCES, "api_url": "http://127.0.0.1:9", "organization": "o"}, {"token": SECRET + "\n"}))
case(C, "aws secret key with CRLF", secret=SECRET)(lambda tmp: discover(
    "aws", {"instances": INSTANCES}, {"access_key_id": "AKID", "secret_access_key": SECRET + "\r\n"}))
case(C, "gcp token with newline", secret=SECRET)(lambda tmp: discover(
    "gcp", {"instances": [{"region": "z", "instances": {"i-1": "n1"}}], "project_id": "p",
            "api_url": "http://127.0.0.1:9"}, {"access_token": SECRET + "\n"}))
case(C, "nebius token with newline", secret=SECRET)(lambda tmp: discover(
    "nebius", {"instances": INSTANCES, "project_id": "p"}, {"iam_token": SECRET + "\n"}))
case(C, "kubernetes api_key with newline", secret=SECRET)(lambda tmp: discover(
    "dra", {}, {"host": "https://127.0.0.1:9", "api_key": SECRET + "\n"}))


# -- HTTP providers (a local fault server; the lambda provider and the client) ---------------

H = "HTTP providers"
FAULTS = ["drip", "drip-headers", "silent", "loop", "loop-a", "garbage", "not-http", "huge", "gzip-bomb", "bad-gzip",
          "truncated", "bad-chunked", "cut-chunked", "deep-json"]


def with_faults(fn):
    from tests.fault_http import FaultServer
    with FaultServer() as server:
        return fn(server)


# The operator's bound for these cases: 5 s per attempt, default retries, 20 s per discovery
# (the defaults are 30 s and 600 s: the same faults then end at those bounds).
BOUNDS = {"timeout": 5, "discovery_timeout": 20}
for fault in FAULTS:
    case(H, f"lambda API {fault}")(lambda tmp, fault=fault: with_faults(
        lambda server: discover("lambda", dict(BOUNDS, instances=INSTANCES, workspace_id="w",
                                               api_url=server.url(f"/{fault}")), {"token": "t"})))
case(H, "lambda API pages forever with new tokens")(lambda tmp: with_faults(
    lambda server: discover("lambda", dict(BOUNDS, instances=INSTANCES, workspace_id="w", api_url=server.url("/pages")),
                            {"token": "t"})))
case(H, "lambda API repeats its page under new tokens")(lambda tmp: with_faults(
    lambda server: discover("lambda", {"instances": INSTANCES, "workspace_id": "w",
                                       "api_url": server.url("/same-page")}, {"token": "t"})))
case(H, "lambda API drips, retried until the discovery deadline")(lambda tmp: with_faults(
    lambda server: discover("lambda", {"instances": INSTANCES, "workspace_id": "w", "timeout": 3,
                                       "retry_attempts": 100, "retry_backoff": 0.1, "discovery_timeout": 15,
                                       "api_url": server.url("/drip")}, {"token": "t"})))
for fault in ("loop", "garbage", "bad-gzip", "cut-chunked", "deep-json"):
    @case(H, f"netq NMX {fault} only warns", expect="ok")
    def hostile_case_23(tmp, fault=fault):
        from ansible_collections.aifactory.topology.plugins.module_utils._providers import netq, validate
        from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology
        topology = Topology()
        topology.add_node("n1")
        warnings = []

        def add_domains(server):
            # The params as discover() hands them to the provider: validated, defaults filled in.
            params, _creds = validate("netq", {"api_url": server.url(f"/{fault}"), "timeout": 3},
                                      {"username": "u", "password": "p"})
            netq._add_nvlink_domains(topology, params, params["api_url"], ("u", "p"), warnings.append)

        with_faults(add_domains)
        if len(warnings) != 1:
            raise WrongOutput(f"expected one warning, got {warnings}")


# -- event sources and the regenerate webhook -------------------------------------------------------
# The webhook's real main() over TLS on 127.0.0.1 (tests/webhook_client.py); scontrol and nvidia-smi
# wrappers whose child keeps the pipes open; a kube-apiserver stand-in whose /readyz drips.

E = "event sources and the regenerate webhook"


def webhook(tmp, clients, **overrides):
    from tests.webhook_client import serving, tls_files
    return asyncio.run(serving(tls_files(tmp / "pki"), clients, **overrides))


def expect_status(answer, status):
    if answer[0] != status:
        raise WrongOutput(f"answered {answer[0]}, not {status}: {answer[1][:200]!r}")


def webhook_answers(writes, status):
    def hostile_case(tmp):
        from tests.webhook_client import exchange
        expect_status(webhook(tmp, lambda port, context: exchange(port, context, *writes)), status)
    return hostile_case


def webhook_head(*args, **kwargs):
    from tests.webhook_client import head
    return head(*args, **kwargs)


make_collection_importable()  # tests.webhook_client imports the collection when the cases are declared
BODY = json.dumps({"reason": "rack 7 replaced " + "x" * 20_000}).encode()
TOKEN_BYTES = b"a-token-of-32-characters-for-tests"
for label, writes, status in [
    ("a body in two TCP writes is read whole", [webhook_head(len(BODY)) + BODY[:10_000], BODY[10_000:]], 202),
    ("JSON nested 60,000 deep is a 400", [webhook_head(60_000) + b"[" * 60_000], 400),
    ("an Authorization header that is not UTF-8 is a 401", [webhook_head(token=b"Bearer \xff\xfe" + TOKEN_BYTES)], 401),
    ("a chunked body is a 411", [webhook_head(extra=b"Transfer-Encoding: chunked\r\n") + b"2\r\n{}\r\n0\r\n\r\n"], 411),
    ("a Content-Length of 10**18 is a 413, nothing read", [webhook_head(10 ** 18)], 413),
]:
    case(E, f"webhook: {label}", expect="ok")(webhook_answers(writes, status))

for label, partial in {"headers dripped": b"POST /v1/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthori",
                       "a body that stops": webhook_head(1000) + b'{"reason": ',
                       "no TLS handshake": b""}.items():
    @case(E, f"webhook: {label}: closed at request_timeout while another client is served", expect="ok")
    def hostile_case_webhook_stall(tmp, partial=partial):
        from tests.webhook_client import stalled_while_another_is_served
        served, held, _metrics = webhook(tmp, lambda port, context: stalled_while_another_is_served(
            port, context, partial), request_timeout=2)
        expect_status(served, 202)
        if held:
            raise WrongOutput(f"the stalled client was answered: {held[:200]!r}")


@case(E, "webhook: an encrypted keyfile without keyfile_password, on a terminal")
def hostile_case_webhook_encrypted_key(tmp):
    from cryptography.hazmat.primitives import serialization
    from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
    from tests.webhook_client import check_on_a_terminal, source_args, tls_files
    tls = tls_files(tmp / "pki")
    key = serialization.load_pem_private_key(Path(tls[1]).read_bytes(), None)
    encrypted = tmp / "encrypted.key"
    encrypted.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.BestAvailableEncryption(b"pass phrase 1")))
    # On a terminal, as an operator starts ansible-rulebook: OpenSSL's own callback would wait there.
    code, output = check_on_a_terminal(source_args(tls, keyfile=str(encrypted)))
    if code != 3:
        raise WrongOutput(f"not the collection's error (exit {code}): {output[-200:]!r}")
    raise TopologyError(output)


WEBHOOK_SECRET = "hostile-webhook-token-0123456789"


@case(E, "webhook: a token with a trailing newline (read from a file)", secret=WEBHOOK_SECRET)
def hostile_case_webhook_token_newline(tmp):
    from tests.webhook_client import regenerate, source_args, tls_files
    regenerate.check(source_args(tls_files(tmp / "pki"), token=WEBHOOK_SECRET + "\n"))


def _left_running(pidfile):
    from tests.unit.helpers import gone_or_zombie
    return not gone_or_zombie(int(pidfile.read_text()))


WRAPPER = "sleep 300 &\necho $! > '{pidfile}'\nexit 0\n"  # ssh ctl scontrol, a script: its child holds stdout


@case(E, "slurm_nodes: scontrol wrapper whose child holds the pipes")
def hostile_case_slurm_nodes_wrapper(tmp):
    from ansible_collections.aifactory.topology.extensions.eda.plugins.event_source import slurm_nodes
    from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda
    pidfile = tmp / "child.pid"
    args = _eda.source_args(slurm_nodes.SOURCE, {"scontrol": ["/bin/sh", "-c", WRAPPER.format(pidfile=pidfile),
                                                              "ssh"], "command_timeout": 2}, slurm_nodes.SPEC)
    try:
        asyncio.run(slurm_nodes.poll(args))
    finally:
        if _left_running(pidfile):
            raise WrongOutput("the hung child was left running")


@case(E, "topology_facts: nvidia-smi wrapper whose child holds the pipes", expect="ok")
def hostile_case_topology_facts_wrapper(tmp):
    pidfile, nvidia_smi = tmp / "child.pid", tmp / "nvidia-smi"
    nvidia_smi.write_text("#!/bin/sh\n" + WRAPPER.format(pidfile=pidfile))
    nvidia_smi.chmod(0o755)
    result = module(tmp, {"gather": ["nvlink"], "nvidia_smi_path": str(nvidia_smi), "timeout": 2},
                    name="topology_facts")
    if "killed with every process it started" not in str(result.get("warnings")):  # text or, in 2.19, dicts
        raise WrongOutput(f"no warning that nvidia-smi was killed: {result.get('warnings')}")
    if _left_running(pidfile):
        raise WrongOutput("the hung child was left running")


@case(E, "k8s_nodes: /readyz drips a header byte a second")
def hostile_case_readyz_drip(tmp):
    from ansible_collections.aifactory.topology.plugins.module_utils._events import k8s_watch as _k8s_watch
    from ansible_collections.aifactory.topology.plugins.module_utils._transport import k8s as _k8s
    from tests.fault_k8s import FakeApiServer
    with FakeApiServer() as api:
        api.readyz = "drip"
        config, _origin = _k8s.configuration({"host": api.url(), "api_key": "t0ken-never-logged"})
        try:
            _k8s_watch.wait_ready(_k8s.K8sClient(config), 2)
        finally:
            if api.readyz_answered.is_set():
                raise WrongOutput("the wait lasted until the server ended its drip, past ready_timeout")


# -- credential chains: metadata services, token and federation endpoints (issue 33) -------------------------
# A local fault server or fake in place of the EC2 instance metadata service, the OCI metadata service and
# federation endpoint, the GCE metadata server; each case with a 3 s discovery deadline.

K = "credential chains"
CHAIN = {"instances": [{"region": "us-phoenix-1", "instances": {"i-1": "n1"}}], "discovery_timeout": 3,
         "retry_backoff": 0}
AWS_CHAIN_CLEAN = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                   "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                   "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_EC2_METADATA_DISABLED")


def aws_from_metadata(endpoint, tmp, **settings):
    for name in AWS_CHAIN_CLEAN:
        os.environ.pop(name, None)
    os.environ.update(AWS_SHARED_CREDENTIALS_FILE=str(tmp / "none"), AWS_CONFIG_FILE=str(tmp / "none"),
                      AWS_EC2_METADATA_SERVICE_ENDPOINT=endpoint, **settings)
    return discover("aws", dict(CHAIN, endpoint_url="http://127.0.0.1:9"))


for fault, settings in {"drip": {"AWS_METADATA_SERVICE_TIMEOUT": "60", "AWS_METADATA_SERVICE_NUM_ATTEMPTS": "9"},
                        "huge": {}, "status": {"AWS_METADATA_SERVICE_NUM_ATTEMPTS": "9"}}.items():
    case(K, f"aws instance metadata service {fault}")(lambda tmp, fault=fault, settings=settings: with_faults(
        lambda server: aws_from_metadata(server.url(f"/{fault}"), tmp, **settings)))


def fake_api(route):
    from tests.integration.fake_apis import FakeHttpApi
    return FakeHttpApi(route)


def json_answer(document):
    from tests.integration.fake_apis import json_reply, text_reply
    return lambda request: (text_reply("session-token") if request.method == "PUT" else
                            text_reply("role") if request.path.endswith("/security-credentials/") else
                            json_reply(document))


for label, document in {"a numeric AccessKeyId": {"AccessKeyId": 5, "SecretAccessKey": "s3cr3t-VALUE-7f2a",
                                                  "Token": "t0ken-VALUE-7f2a", "Expiration": "2099-01-01T00:00:00Z"},
                        "a garbage Expiration": {"AccessKeyId": "ASIA", "SecretAccessKey": "s3cr3t-VALUE-7f2a",
                                                 "Token": "t0ken-VALUE-7f2a", "Expiration": "soon"},
                        "a list": [{"AccessKeyId": "ASIA"}]}.items():
    case(K, f"aws instance metadata credentials with {label}", secret=SECRET)(
        lambda tmp, document=document: aws_from_metadata(fake_api(json_answer(document)).url, tmp))


def oci_instance_principal(tmp, metadata_url, federation_url):
    os.environ["OCI_METADATA_BASE_URL"] = metadata_url
    return discover("oci", dict(CHAIN, federation_url=federation_url, identity_url="http://127.0.0.1:9",
                                compute_url="http://127.0.0.1:9"), {"auth": "instance_principal"})


for fault in ("status", "drip", "huge"):
    case(K, f"oci instance metadata service {fault}")(lambda tmp, fault=fault: with_faults(
        lambda server: oci_instance_principal(tmp, server.url(f"/{fault}/opc/v2"), server.url("/json"))))


def oci_metadata_then(fault):
    def run(tmp):
        from tests.integration.fake_oci import InstanceMetadataAndAuth
        metadata = fake_api(InstanceMetadataAndAuth())
        return with_faults(lambda server: oci_instance_principal(tmp, f"{metadata.url}/opc/v2", server.url(fault)))
    return run


case(K, "oci federation endpoint answers a 2 MB HTML page")(oci_metadata_then("/html?code=401"))
case(K, "oci federation endpoint redirects to another host")(oci_metadata_then("/redirect"))


@case(K, "gcp metadata token without expires_in", secret="ya29.s3cr3t-VALUE-7f2a")
def hostile_case_gcp_metadata_token(tmp):
    from tests.integration.fake_apis import json_reply
    server = fake_api(lambda request: json_reply({"access_token": "ya29.s3cr3t-VALUE-7f2a", "token_type": "Bearer"}))
    for name in ("GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS"):
        os.environ.pop(name, None)
    os.environ.update(GCE_METADATA_HOST=server.url.removeprefix("http://"), CLOUDSDK_CONFIG=str(tmp / "none"))
    return discover("gcp", dict(CHAIN, instances=[{"region": "z", "instances": {"1": "n1"}}], project_id="p",
                                api_url="http://127.0.0.1:9"))


# -- campaign ----------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case")
    parser.add_argument("--limit", type=float, default=30.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.case:
        run_case(args.case)
        return
    make_collection_importable()
    rows = []
    for hostile in CASES.values():
        if args.only.lower() not in f"{hostile.klass} {hostile.name}".lower():
            continue
        result = run_in_child(__file__, hostile.name, args.limit)
        rows.append({"class": hostile.klass, "case": hostile.name, "verdict": result.verdict,
                     "seconds": round(result.seconds, 2), "peak_mb": result.peak_mb, "message": result.message[:160]})
        print(f"{result.verdict:14} {result.seconds:6.2f} s {result.peak_mb:7.1f} MB  {hostile.klass}: {hostile.name}: "
              f"{result.message[:110]!r}", flush=True)
    _table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


def _table(rows):
    print()
    print("| class | tried | " + " | ".join(VERDICTS) + " | slowest s | peak MB |")
    print("|---|---" + "|---" * len(VERDICTS) + "|---|---|")
    for klass in CLASSES + ["total"]:
        mine = [row for row in rows if klass in ("total", row["class"])]
        if not mine:
            continue
        counts = [sum(1 for row in mine if row["verdict"] == verdict) for verdict in VERDICTS]
        print(f"| {klass} | {len(mine)} | " + " | ".join(str(count) for count in counts)
              + f" | {max(row['seconds'] for row in mine):.1f} | {max(row['peak_mb'] for row in mine):.0f} |")


if __name__ == "__main__":
    main()
