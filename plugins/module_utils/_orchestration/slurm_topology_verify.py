# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_topology_verify: what the running slurmctld has loaded against the topology file, and its own answers."""

from __future__ import annotations

import re
import time

from ansible_collections.aifactory.topology.plugins.module_utils._base import command as _command
from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._base.arguments import ArgumentSpec
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    CommandError,
    TopologyError,
    failing_cleanly,
)
from ansible_collections.aifactory.topology.plugins.module_utils._base.scontrol import SCONTROL
from ansible_collections.aifactory.topology.plugins.module_utils._engines import capacity, slurm_verify

VERIFY = ArgumentSpec({
    "path": {"type": "path", "required": True},
    "sbatch_path": {"type": "str", "default": "sbatch"},
    "probe": {"type": "bool", "default": True},
    "reconfigure": {"type": "bool", "default": False},
    "reconfigure_timeout": {"type": "float", "default": 120.0},
    "on_mismatch": {"type": "str", "choices": ["fail", "warn"], "default": "fail"},
})
SPEC = VERIFY.merge(SCONTROL)
MAX_FILE_BYTES = 64 * 1024 * 1024
POLL_SECONDS = 1.0  # between reads while a reconfigured controller loads the file
_PLACED = re.compile(r"on nodes (\S+) in partition (\S+)")


class Controller:
    """The scontrol and sbatch questions, each bounded by the scontrol timeout."""

    def __init__(self, options, sbatch_path):
        self.options = options
        self.sbatch_path = sbatch_path

    def scontrol(self, *args):
        return _command.run_checked(self.options.command(*args), timeout=self.options.scontrol_timeout)

    def loaded(self, layouts):
        """{name: Layout} the controller shows for every block or tree topology of the file.

        scontrol answers ``show topology`` with nothing, and success, when no controller is up: the
        controller's own ``ping`` comes first, so a dead controller is never read as an empty map."""
        _rc, out, err = _command.run_text(self.options.command("ping"), timeout=self.options.scontrol_timeout)
        said = next((line.strip() for line in (out + err).split("\n") if line.strip()), "")
        if not re.search(r"\bis UP\b", said):
            raise CommandError(f"scontrol ping says {said[:200]!r}" if said else "scontrol ping says nothing")
        shown = {}
        for layout in layouts:
            if layout.kind == "flat":
                continue  # a flat topology places nothing: scontrol shows nothing to compare
            args = ["show", "topology"] + ([] if layout.name == slurm_verify.CONF_TOPOLOGY else [layout.name])
            shown[layout.name] = slurm_verify.read_shown(layout.name, self.scontrol(*args))
        return shown

    def test_only(self, partition, size):
        argv = [self.sbatch_path, "--test-only", "-p", partition, "-N", str(size), f"--segment={size}", "--wrap=true"]
        _rc, out, err = _command.run_text(argv, timeout=self.options.scontrol_timeout)
        match = _PLACED.search(err) or _PLACED.search(out)
        return match.group(1) if match else None, (err or out).strip()[:300]


def compare(controller, layouts):
    """(differences, loaded): every line naming a topology and its blocks or switches; [] when all match."""
    try:
        loaded = controller.loaded(layouts)
    except CommandError as exc:
        return [f"the controller does not answer: {exc}"], {}
    found = []
    for layout in layouts:
        if layout.name in loaded:
            found.extend(slurm_verify.differences(layout, loaded[layout.name]))
    return found, loaded


def _partitions(controller, layouts):
    """topology name -> the first UP partition that uses it (a partition without Topology= uses the default)."""
    default = next((layout.name for layout in layouts if layout.default), None)
    found = {}
    for line in controller.scontrol("show", "partition", "-o").split("\n"):
        fields = dict(word.partition("=")[::2] for word in line.split() if "=" in word)
        if fields.get("PartitionName") and fields.get("State") == "UP":
            found.setdefault(fields.get("Topology") or default, fields["PartitionName"])
    return found


def probes(controller, layouts, warn):
    """(problems, asked): an sbatch --test-only question per block size of each block topology."""
    blocks = [layout for layout in layouts if layout.kind == "block" and layout.blocks]
    if not blocks:
        return [], []
    states = capacity.states_from_scontrol_json(controller.scontrol("show", "nodes", "--json"), warn)
    idle = frozenset(node for node, state in states.items() if state == "idle")
    partitions = _partitions(controller, layouts)
    problems, asked = [], []
    for layout in blocks:
        partition = partitions.get(layout.name)
        for size, group in slurm_verify.probe_plan(layout, idle):
            record = {"topology": layout.name, "size": size, "partition": partition}
            if partition is None:
                record["skipped"] = "no partition that is up uses this topology"
            elif group is None:
                record["skipped"] = f"no group of blocks has {size} idle nodes"
            else:
                answer, said = controller.test_only(partition, size)
                if answer is None:
                    record["skipped"] = f"sbatch --test-only did not place the job: {said}"
                else:
                    nodes = frozenset(hostlist.expand(answer))
                    record["answer"] = answer
                    problem = slurm_verify.probe_problem(layout, size, nodes)
                    record["fits"] = problem is None
                    if problem:
                        problems.append(problem)
            asked.append(record)
    return problems, asked


def run(module):
    """What the module does; exits the module."""
    params = module.params
    with failing_cleanly(module):
        if params["reconfigure_timeout"] <= 0 or params["reconfigure_timeout"] != params["reconfigure_timeout"]:
            raise TopologyError(f"reconfigure_timeout must be a number of seconds above 0, got "
                                f"{params['reconfigure_timeout']}")
        try:
            text = _input_file.read_text(params["path"], "path", max_bytes=MAX_FILE_BYTES)
        except _input_file.InputFileError as exc:
            raise TopologyError(str(exc)) from None
        layouts = slurm_verify.read_file(text, where=params["path"])
        controller = Controller(SCONTROL.build(params), params["sbatch_path"])
        found, _loaded = compare(controller, layouts)
        reconfigured = False
        if found and params["reconfigure"] and not module.check_mode:
            controller.scontrol("reconfigure")
            reconfigured = True
            # scontrol returns before the new controller has read the file: success is what it then shows.
            deadline = time.monotonic() + params["reconfigure_timeout"]
            while True:
                found, _loaded = compare(controller, layouts)
                if not found or time.monotonic() >= deadline:
                    break
                time.sleep(POLL_SECONDS)
            if found:
                found = [f"after scontrol reconfigure and {params['reconfigure_timeout']:g} s: {line}" for line in found]
        asked = []
        if not found and params["probe"]:
            problems, asked = probes(controller, layouts, module.warn)
            found.extend(problems)
        would_reconfigure = bool(found) and params["reconfigure"] and module.check_mode
        result = {
            "changed": reconfigured or would_reconfigure,
            "differences": found,
            "probes": asked,
            "summary": {"controller_mismatches": 0 if would_reconfigure else len(found),
                        "topologies": [layout.name for layout in layouts], "reconfigured": reconfigured,
                        "probes_asked": sum(1 for record in asked if "answer" in record)},
        }
        if found and not would_reconfigure:
            message = (f"the running slurmctld does not hold {params['path']} as written: " + "; ".join(found[:5])
                       + (f"; and {len(found) - 5} more" if len(found) > 5 else ""))
            if params["on_mismatch"] == "fail":
                module.fail_json(msg=message, **result)
            module.warn(message)
    module.exit_json(**result)
