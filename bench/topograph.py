# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the slurm_topology module process, as Ansible runs it, against NVIDIA Topograph.

Both read the same GB200 NVL72 simulation model (``bench/run.py`` generates it) and write the
same Slurm ``topology.conf``: Topograph through a small Go driver that runs its own request path
for the simulation provider and the ``slurm`` engine (model file -> graph -> GenerateOutput), the
collection through a one-task ``ansible-playbook`` with ``block_naming: topograph`` and
``header: ""``. The two outputs must be byte-identical; the script says so, or shows the first
difference.

Timed, per process, with ``os.wait4``: wall time (from just before the process starts until it is
reaped) and CPU time (user + system) of the process and its threads. The module process is the
one Ansible starts for the task (the AnsiballZ payload on the target): an
``ansible_python_interpreter`` wrapper measures it the same way. Runs alternate (Topograph, module,
Topograph, module, ...) so machine load hits both alike; min and median are reported. Nothing is
asserted: it measures and prints (and writes ``bench/results/topograph.json``).

The Go driver is not part of this repository. Pass ``--topograph-driver PATH`` or set
``TOPOGRAPH_DRIVER``: PATH is the built driver, or its Go source directory (with ``go.mod``),
which is then built with ``go build`` (needs Go and the Go module proxy). Without a driver, or
without Go for a source directory, the script prints why and exits 0 without measuring.
The driver takes ``-model FILE -plugin topology/block|topology/tree [-block-sizes 18,36,72]
-out FILE``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import run as bench_run  # noqa: E402  pylint: disable=wrong-import-position

FQCN = "aifactory.topology.slurm_topology"
BLOCK_SIZES = [18, 36, 72]
SKIP_EXIT = 0

# The ansible_python_interpreter: runs the real interpreter as a child, waits for it with
# os.wait4 and appends {wall, cpu, maxrss_kb} to the file named in its first line's variable.
_INTERPRETER = r"""#!{python}
import json, os, sys, time
argv = [{python!r}] + sys.argv[1:]
started = time.perf_counter()
pid = os.posix_spawn(argv[0], argv, os.environ)
_pid, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - started
with open({record!r}, "a", encoding="utf-8") as handle:
    handle.write(json.dumps({{"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                             "maxrss_kb": usage.ru_maxrss}}) + "\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def find_driver(option, work):
    """(path of the driver binary, None) or (None, why it is missing)."""
    given = option or os.environ.get("TOPOGRAPH_DRIVER")
    if not given:
        return None, ("no Topograph driver: pass --topograph-driver PATH or set TOPOGRAPH_DRIVER "
                      "(the built driver, or its Go source directory)")
    path = Path(given).expanduser().resolve()
    if path.is_file() and os.access(path, os.X_OK):
        return path, None
    if path.is_dir() and (path / "go.mod").is_file():
        go = shutil.which("go")
        if go is None:
            return None, f"the Topograph driver {path} is Go source and Go is not installed (no 'go' on PATH)"
        binary = work / "topograph-driver"
        print(f"building the Topograph driver: go build in {path}")
        done = subprocess.run([go, "build", "-o", str(binary), "."], cwd=path, capture_output=True, text=True,
                              check=False)
        if done.returncode:
            return None, f"go build failed in {path}: {(done.stderr or done.stdout).strip()[-600:]}"
        return binary, None
    return None, f"the Topograph driver {path} is neither an executable nor a Go source directory with go.mod"


def timed(cmd, cwd):
    """(wall s, cpu s, max RSS KB, stdout+stderr) of one process, waited for with os.wait4."""
    with tempfile.TemporaryFile() as output:
        started = time.perf_counter()
        process = subprocess.Popen(cmd, cwd=cwd, stdout=output, stderr=subprocess.STDOUT)  # pylint: disable=consider-using-with
        _pid, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        text = output.read().decode("utf-8", "replace")
    if process.returncode:
        raise RuntimeError(f"{cmd[0]} failed (rc={process.returncode}): {text[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, text


class ModuleRunner:
    """One-task ansible-playbook runs of slurm_topology; measures the module process only."""

    def __init__(self, coll_root, work):
        self.work = work
        self.record = work / "module-process.jsonl"
        self.interpreter = work / "module-interpreter"
        self.interpreter.write_text(_INTERPRETER.format(python=sys.executable, record=str(self.record)),
                                    encoding="utf-8")
        self.interpreter.chmod(0o755)
        cfg = work / "ansible.cfg"
        cfg.write_text("[defaults]\nretry_files_enabled = False\n", encoding="utf-8")
        self.env = dict(os.environ)
        self.env.update({
            "ANSIBLE_CONFIG": str(cfg), "ANSIBLE_COLLECTIONS_PATH": str(coll_root), "ANSIBLE_NOCOLOR": "1",
            "PYTHONPATH": os.pathsep.join([str(coll_root)] + ([self.env["PYTHONPATH"]] if self.env.get("PYTHONPATH") else [])),
        })
        self.playbook = shutil.which("ansible-playbook", path=os.path.dirname(sys.executable) + os.pathsep
                                     + self.env.get("PATH", ""))

    def run(self, model, plugin, dest):
        args = {"provider": {"name": "simulation", "params": {"model_path": str(model)}}, "plugin": plugin,
                "block_naming": "topograph", "header": "", "dest": str(dest)}
        if plugin == "topology/block":
            args["block_sizes"] = BLOCK_SIZES
        if dest.exists():
            dest.unlink()
        return self.task(FQCN, args)

    def task(self, module, args):
        """(wall s, cpu s, max RSS KB) of the module process of one task."""
        playbook = self.work / "playbook.json"
        playbook.write_text(json.dumps([{"name": "bench", "hosts": "localhost", "gather_facts": False,
                                         "tasks": [{"name": "bench", module: args}]}]), encoding="utf-8")
        if self.record.exists():
            self.record.unlink()
        done = subprocess.run([self.playbook, "-i", "localhost,", "-c", "local",
                               "-e", f"ansible_python_interpreter={self.interpreter}", str(playbook)],
                              env=self.env, cwd=self.work, capture_output=True, text=True, check=False)
        if done.returncode or not self.record.exists():
            raise RuntimeError(f"ansible-playbook failed (rc={done.returncode}):\n{done.stdout[-3000:]}"
                               f"{done.stderr[-2000:]}")
        records = [json.loads(line) for line in self.record.read_text(encoding="utf-8").splitlines()]
        if len(records) != 1:
            raise RuntimeError(f"expected one module process, the interpreter ran {len(records)}")
        return records[0]["wall"], records[0]["cpu"], records[0]["maxrss_kb"]


def first_difference(a, b):
    lines_a, lines_b = a.splitlines(), b.splitlines()
    for number, (left, right) in enumerate(zip(lines_a, lines_b), start=1):
        if left != right:
            return f"line {number}: topograph {left!r} != module {right!r}"
    return f"lengths differ: topograph {len(lines_a)} lines, module {len(lines_b)} lines"


def stats(values):
    return {"min": round(min(values), 4), "median": round(statistics.median(values), 4),
            "all": [round(v, 4) for v in values]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--nodes", default="10000,100000", help="model sizes, comma separated (default 10000,100000)")
    parser.add_argument("--plugins", default="topology/block,topology/tree",
                        help="Slurm plugins to compare (default topology/block,topology/tree)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side per case (default 3)")
    parser.add_argument("--topograph-driver", help="the Topograph driver binary or its Go source directory "
                                                   "(default: $TOPOGRAPH_DRIVER)")
    parser.add_argument("--out", help="keep models and outputs in this directory (default: a temp dir)")
    parser.add_argument("--results", default=str(bench_run.RESULTS / "topograph.json"), help="results JSON path")
    options = parser.parse_args(argv)
    sizes = [int(n) for n in options.nodes.split(",") if n.strip()]
    plugins = [p.strip() for p in options.plugins.split(",") if p.strip()]
    if options.repeat < 1 or not sizes or min(sizes) < 1:
        parser.error("--nodes and --repeat must be positive")
    if any(plugin not in ("topology/block", "topology/tree") for plugin in plugins):
        parser.error("--plugins takes topology/block and topology/tree")

    work = Path(options.out).resolve() if options.out else Path(tempfile.mkdtemp(prefix="aifactory-topograph-"))
    work.mkdir(parents=True, exist_ok=True)
    coll_root, temporary_root = bench_run.collection_root()
    try:
        driver, why = find_driver(options.topograph_driver, work)
        if driver is None:
            print(f"SKIPPED: {why}")
            return SKIP_EXIT
        module = ModuleRunner(coll_root, work)
        if module.playbook is None:
            print("SKIPPED: ansible-playbook not found (install ansible-core)")
            return SKIP_EXIT
        info = bench_run.machine_info()
        print(f"machine: {info['nproc']} CPUs, {info['cpu_model']}; python {info['python']}, "
              f"ansible-core {info['ansible_core']}, PyYAML {info['pyyaml']}; load average {info['loadavg_at_start']}")
        print(f"topograph driver: {driver}")
        # The floor of any Python module as Ansible runs it: interpreter start-up, the AnsiballZ
        # wrapper and ansible.module_utils.basic (imported from the payload zip, compiled each run).
        floor = [module.task("ansible.builtin.ping", {}) for _attempt in range(options.repeat)]
        floor = {"wall_s": stats([v[0] for v in floor]), "cpu_s": stats([v[1] for v in floor]),
                 "max_rss_mb": round(max(v[2] for v in floor) / 1024.0, 1)}
        print(f"ansible.builtin.ping module process (the floor of any module): wall {floor['wall_s']['median']:.3f} s "
              f"cpu {floor['cpu_s']['median']:.3f} s {floor['max_rss_mb']:.0f} MB")
        cases = []
        for nodes in sizes:
            model = work / f"model-{nodes}.yaml"
            model_bytes = bench_run.write_model(model, nodes)
            for plugin in plugins:
                kind = plugin.split("/")[1]
                tg_out, mod_out = work / f"topograph-{nodes}-{kind}.conf", work / f"module-{nodes}-{kind}.conf"
                tg_cmd = [str(driver), "-model", str(model), "-plugin", plugin, "-out", str(tg_out)]
                if plugin == "topology/block":
                    tg_cmd[-2:-2] = ["-block-sizes", ",".join(map(str, BLOCK_SIZES))]
                runs = {"topograph": [], "module": []}
                for _attempt in range(options.repeat):
                    wall, cpu, rss, _text = timed(tg_cmd, work)
                    runs["topograph"].append((wall, cpu, rss))
                    runs["module"].append(module.run(model, plugin, mod_out))
                identical = tg_out.read_bytes() == mod_out.read_bytes()
                case = {"nodes": nodes, "model_bytes": model_bytes, "plugin": plugin, "identical": identical,
                        "output_bytes": len(mod_out.read_bytes())}
                if not identical:
                    case["difference"] = first_difference(tg_out.read_text(encoding="utf-8"),
                                                          mod_out.read_text(encoding="utf-8"))
                for side, values in runs.items():
                    case[side] = {"wall_s": stats([v[0] for v in values]), "cpu_s": stats([v[1] for v in values]),
                                  "max_rss_mb": round(max(v[2] for v in values) / 1024.0, 1)}
                for measure in ("wall_s", "cpu_s"):
                    case[f"ratio_{measure}"] = round(case["module"][measure]["median"]
                                                     / case["topograph"][measure]["median"], 2)
                cases.append(case)
                print(f"{nodes:>7} nodes {plugin:<15} topograph wall {case['topograph']['wall_s']['median']:.3f} s "
                      f"cpu {case['topograph']['cpu_s']['median']:.3f} s {case['topograph']['max_rss_mb']:.0f} MB | "
                      f"module wall {case['module']['wall_s']['median']:.3f} s cpu {case['module']['cpu_s']['median']:.3f} s "
                      f"{case['module']['max_rss_mb']:.0f} MB | ratio wall {case['ratio_wall_s']:.2f}x "
                      f"cpu {case['ratio_cpu_s']:.2f}x | "
                      f"{'byte-identical' if identical else 'OUTPUTS DIFFER: ' + case['difference']}")
        results = {
            "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(["python", "bench/topograph.py"] + (argv if argv is not None else sys.argv[1:])),
            "repeat": options.repeat, "machine": info, "loadavg_at_end": bench_run.loadavg(),
            "ping_module_process": floor, "cases": cases,
        }
        results_path = Path(options.results)
        results_path.parent.mkdir(parents=True, exist_ok=True)
        results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {results_path}")
        return 0 if all(case["identical"] for case in cases) else 1
    finally:
        if not options.out:
            shutil.rmtree(work, ignore_errors=True)
        if temporary_root:
            bench_run.remove_collection_root(coll_root)


if __name__ == "__main__":
    sys.exit(main())
