"""The metrics and alert rules against the REAL thing: Debian's Prometheus and node_exporter on 127.0.0.1.

node_exporter reads a textfile directory (only its textfile collector on), the regenerate event
source serves GET /metrics over TLS, and a Prometheus of its own (config and storage in tmp_path,
scrape and rule evaluation every second) scrapes both and evaluates the shipped alert rules.
Assertions go through Prometheus's HTTP API, polled with a bounded deadline: the metrics arrive
with their labels, and AifactoryTopologyMapStale fires for a target whose last success is old
(a file written with an old timestamp, rather than waiting) and not for a fresh one.
``promtool check rules`` and ``promtool test rules`` check the rules file itself.

The binaries come from the Debian packages prometheus and prometheus-node-exporter (Makefile
APT_PACKAGES); without them these tests skip, which fails under CI=true (tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from ansible_collections.aifactory.topology.extensions.eda.plugins.event_source import regenerate
from ansible_collections.aifactory.topology.plugins.module_utils._engines import metrics as _metrics
from tests.ansible_run import REPO, ansible_env, tool

from tests.integration.eda_support import TOKEN, free_port, post_generate, tls_files

RULES = REPO / "files" / "prometheus" / "aifactory-topology-alerts.yml"
RULE_TESTS = REPO / "files" / "prometheus" / "aifactory-topology-alerts.test.yml"
DEADLINE = 90  # seconds: a bound on every wait, never a measure
DAY = 24 * 3600


def binary(name):
    found = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").is_file() else None)
    if found is None:
        pytest.skip(f"PROMETHEUS TESTS SKIPPED: {name} is not installed (Debian packages prometheus and "
                    "prometheus-node-exporter; make system-packages)")
    return found


def test_promtool_checks_and_tests_the_shipped_rules():
    promtool = binary("promtool")
    checked = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60,
                             check=False)
    assert checked.returncode == 0 and "SUCCESS: 6 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = subprocess.run([promtool, "test", "rules", RULE_TESTS.name], capture_output=True, text=True,
                            timeout=120, check=False, cwd=RULE_TESTS.parent)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


class Process:
    """A server started by this test, ended by this test (its own pid only), its output in a log file."""

    def __init__(self, name, argv, workdir):
        self.name = name
        self.log_path = Path(workdir) / f"{name}.log"
        self.log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, cwd=workdir)

    def output(self):
        return self.log_path.read_text(errors="replace")[-3000:]

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)
        self.log.close()


class Endpoint:
    """The regenerate event source's real main() on a thread of its own, TLS on 127.0.0.1."""

    def __init__(self, workdir):
        self.certfile, self.keyfile, self.cafile = tls_files(workdir)
        self.port = free_port()
        self.args = {"token": TOKEN, "certfile": self.certfile, "keyfile": self.keyfile, "host": "127.0.0.1",
                     "port": self.port, "delay": 0.1, "max_wait": 1}
        self.loop = asyncio.new_event_loop()
        self.task = None
        self.error = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        asyncio.set_event_loop(self.loop)
        queue = asyncio.Queue()
        self.task = self.loop.create_task(regenerate.main(queue, self.args))
        try:
            self.loop.run_until_complete(self.task)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # noqa: BLE001 (reported by the test)
            self.error.append(exc)
        finally:
            self.loop.close()

    def stop(self):
        if self.task is not None:
            self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(timeout=20)


def api(port, path, **query):
    url = f"http://127.0.0.1:{port}/api/v1/{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (loopback)
            return json.loads(response.read())["data"]
    except (urllib.error.URLError, ConnectionError):
        return None


def wait_for(what, probe, processes):
    """``probe()``'s first true value within DEADLINE seconds; a failure with the servers' output otherwise."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        for process in processes:
            if process.process.poll() is not None:
                pytest.fail(f"{process.name} ended (rc {process.process.returncode}) while waiting for {what}:\n"
                            f"{process.output()}")
        value = probe()
        if value:
            return value
        time.sleep(0.25)  # a poll interval, not a synchronisation: the condition is what is waited on
    pytest.fail(f"no {what} within {DEADLINE} s:\n" + "\n".join(f"--- {p.name}\n{p.output()}" for p in processes))


def value_of(port, query):
    """{target or reason label: value} of an instant query, or {} while it has no result."""
    data = api(port, "query", query=query)
    if not data:
        return {}
    return {tuple(sorted(item["metric"].items())): float(item["value"][1]) for item in data["result"]}


def firing(port, alertname):
    data = api(port, "alerts") or {"alerts": []}
    return [alert["labels"] for alert in data["alerts"] if alert["labels"]["alertname"] == alertname
            and alert["state"] == "firing"]


def write_with_the_module(directory):
    """The slurm textfile, written by the real module through ansible (its FQCN, the venv's interpreter)."""
    args = json.dumps({"directory": str(directory), "target": "slurm", "started": time.time(),
                       "results": [{"changed": True, "summary": {"nodes": 54, "blocks": 4,
                                                                 "placeholders": ["nvl-4"]}}]})
    run = subprocess.run([tool("ansible"), "localhost", "-c", "local", "-e",
                          f"ansible_python_interpreter={tool('python')}", "-m",
                          "aifactory.topology.topology_metrics", "-a", args],
                         capture_output=True, text=True, env=ansible_env(), cwd=REPO, timeout=300, check=False)
    assert run.returncode == 0 and "CHANGED" in run.stdout, run.stdout + run.stderr


def write_old_success(directory, target, age):
    """A textfile whose last success is ``age`` seconds old (rendered by the module's own code)."""
    now = time.time()
    run = _metrics.METRICS.build({"directory": str(directory), "target": target, "failed": True, "started": now - 5})
    values = _metrics.metrics(run, {"last_success_timestamp_seconds": now - age, "nodes": 18}, now)
    text = _metrics.render(values, target)
    temporary = Path(directory) / f".{target}.tmp"
    temporary.write_text(text)
    temporary.rename(Path(directory) / f"{_metrics.PREFIX}{target}.prom")


def test_prometheus_scrapes_both_and_the_stale_map_alert_fires(tmp_path):
    prometheus = binary("prometheus")
    node_exporter = binary("prometheus-node-exporter")
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    write_with_the_module(textfiles)
    endpoint = Endpoint(tmp_path)
    processes = []
    try:
        exporter_port, prometheus_port = free_port(), free_port()
        processes.append(Process("node_exporter", [
            node_exporter, f"--web.listen-address=127.0.0.1:{exporter_port}", "--collector.disable-defaults",
            "--collector.textfile", f"--collector.textfile.directory={textfiles}"], tmp_path))
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)],
            "scrape_configs": [
                {"job_name": "node", "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]},
                {"job_name": "regenerate", "scheme": "https", "tls_config": {"ca_file": endpoint.cafile},
                 "static_configs": [{"targets": [f"127.0.0.1:{endpoint.port}"]}]},
            ],
        }
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
        processes.append(Process("prometheus", [
            prometheus, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{prometheus_port}", "--web.enable-lifecycle"], tmp_path))

        # Both targets up, as Prometheus sees them.
        def both_up():
            found = value_of(prometheus_port, "up")
            return found if len(found) == 2 and all(found.values()) else None

        up = wait_for("both targets up", both_up, processes)
        assert {dict(labels)["job"] for labels in up} == {"node", "regenerate"}

        # The run's textfile arrived through node_exporter, labelled with its target.
        nodes = wait_for("the slurm textfile metrics", lambda: value_of(
            prometheus_port, 'aifactory_topology_nodes{target="slurm"}'), processes)
        assert list(nodes.values()) == [54.0]
        assert list(value_of(prometheus_port, 'aifactory_topology_placeholder_blocks{target="slurm"}').values()) == [1]

        # The endpoint's counts: one accepted request, one refused, one debounced run.
        assert post_generate(endpoint.port, endpoint.cafile, TOKEN, b'{"reason": "prometheus test"}')[0] == 202
        assert post_generate(endpoint.port, endpoint.cafile, "wrong-token-0123456789")[0] == 401

        def endpoint_counts():
            found = {name: value for name, query in (
                ("accepted", "aifactory_topology_regenerate_requests_accepted_total"),
                ("refused", "sum(aifactory_topology_regenerate_requests_refused_total)"),
                ("runs", "aifactory_topology_regenerate_runs_total"))
                for value in value_of(prometheus_port, query).values()}
            # The three instant queries may read two different scrapes (seen under load: runs 1 while
            # accepted was still 0); counters only grow, so wait until each has counted something and
            # let the assertion below catch a count that is too high.
            return found if len(found) == 3 and all(value >= 1 for value in found.values()) else None

        counts = wait_for("the endpoint's counts", endpoint_counts, processes)
        assert counts == {"accepted": 1, "refused": 1, "runs": 1}
        assert list(value_of(prometheus_port, "aifactory_topology_regenerate_last_request_timestamp_seconds > 0"))

        # Runs stopped two days ago for the Kubernetes map: the stale-map alert fires for it alone.
        assert firing(prometheus_port, "AifactoryTopologyMapStale") == []
        write_old_success(textfiles, "kubernetes", 2 * DAY)
        alerts = wait_for("AifactoryTopologyMapStale firing", lambda: firing(
            prometheus_port, "AifactoryTopologyMapStale"), processes)
        assert [(alert["target"], alert["severity"]) for alert in alerts] == [("kubernetes", "critical")]
        assert endpoint.error == []
    finally:
        for process in reversed(processes):
            process.stop()
        endpoint.stop()
