"""Running the collection's rulebooks with the REAL ansible-rulebook (tests/integration/test_eda_*.py).

``Rulebook`` starts ``ansible-rulebook -r aifactory.topology.<name> -i <inventory> --vars <file>
--print-events`` as a subprocess (Java 17 from JAVA_HOME or /usr/lib/jvm), writes its output to a
log file and reads it back: the events it matched (one line each, as ``--print-events`` prints
them with ``-v``) and the playbook runs it made (one ``PLAY RECAP`` per run). Tests wait on
conditions with a bounded deadline, never on sleeps.
"""

from __future__ import annotations

import ast
import glob
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import k8s_testbed  # tools/ is on sys.path (tests/conftest.py)
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

TOKEN = "s3cret-regenerate-token-0123456789"
free_port = k8s_testbed.free_port


def java_home():
    """A Java 17+ home for drools (ansible-rulebook's rule engine), or None."""
    candidates = [os.environ.get("JAVA_HOME", "")] + sorted(glob.glob("/usr/lib/jvm/java-1[7-9]-*")) \
        + sorted(glob.glob("/usr/lib/jvm/java-2[0-9]-*"))
    for home in candidates:
        if home and os.path.isfile(os.path.join(home, "lib", "server", "libjvm.so")):
            return home
    return None


def rulebook_binary():
    venv = Path(sys.executable).parent / "ansible-rulebook"
    return str(venv) if venv.exists() else shutil.which("ansible-rulebook")


def require_rulebook():
    """Fail without ansible-rulebook (tests/requirements.txt installs it); skip loudly without Java (a failure
    under CI=true, tests/conftest.py)."""
    if not rulebook_binary():
        pytest.fail("ansible-rulebook is not installed, though tests/requirements.txt lists it: run make venv")
    if not java_home():
        pytest.skip("EDA TESTS SKIPPED: no Java 17+ JDK (JAVA_HOME or /usr/lib/jvm/java-17-*) for ansible-rulebook")


def tls_files(directory):
    """(certfile, keyfile, cafile) for the regenerate endpoint on 127.0.0.1, from the test bed's CA."""
    ca = k8s_testbed.CertificateAuthority(Path(directory) / "pki")
    cert, key = ca.issue("regenerate", "127.0.0.1", server=True)
    return str(cert), str(key), str(ca.cert_file)


def post_generate(port, cafile, token=None, body=b"{}"):
    """POST /v1/generate over TLS verified against ``cafile``; (status, body)."""
    request = urllib.request.Request(f"https://127.0.0.1:{port}/v1/generate", data=body, method="POST",
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {token}"} if token else {})})
    context = ssl.create_default_context(cafile=cafile)
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:  # noqa: S310 (loopback)
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class Rulebook:
    """One ansible-rulebook process; use as a context manager."""

    def __init__(self, name, inventory, variables, workdir, extra_env=None):
        self.name = name
        self.workdir = Path(workdir)
        self.vars_file = self.workdir / f"{name}-vars.yml"
        self.vars_file.write_text(yaml.safe_dump(variables))
        self.log_path = self.workdir / f"{name}.log"
        self.argv = [rulebook_binary(), "-r", f"aifactory.topology.{name}", "-i", str(inventory),
                     "--vars", str(self.vars_file), "--print-events", "-v"]
        self.env = dict(os.environ, JAVA_HOME=java_home() or "", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
                        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), **(extra_env or {}))
        self.process = None

    def start(self):
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                            cwd=self.workdir, stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def log(self):
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def runs(self):
        """Finished playbook runs (each prints one PLAY RECAP)."""
        return self.log().count("PLAY RECAP")

    def events(self):
        """The topology_change payloads of the events ansible-rulebook received, in order.

        ``--print-events`` prints each as a banner ``[received event]``, ``Event:`` and the event
        as a Python literal over several lines, closed by a line of asterisks.
        """
        found = []
        for block in re.findall(r"\[received event\] \*+\n.*?\nEvent:\n(.*?)\n\*{20,}", self.log(), re.S):
            event = ast.literal_eval(block)
            if "topology_change" in event:
                found.append(event["topology_change"])
        return found

    def alive(self):
        return self.process.poll() is None

    def wait_for(self, condition, what, timeout=240):
        """Poll ``condition`` while ansible-rulebook runs; its log tail in the error otherwise."""
        def done():
            if not self.alive():
                raise AssertionError(f"ansible-rulebook exited with {self.process.returncode} while waiting for "
                                     f"{what}:\n{self.log()[-5000:]}")
            return condition()
        try:
            return k8s_testbed.wait_until(done, timeout=timeout, what=what)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n{self.log()[-5000:]}") from None

    def wait_runs(self, count, timeout=240):
        self.wait_for(lambda: self.runs() >= count, f"{count} playbook runs of {self.name}", timeout)

    def wait_exit(self, timeout=120):
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"ansible-rulebook still runs after {timeout} s:\n{self.log()[-3000:]}") from None
