"""Bad input to the collection's rulebooks fails at start, loudly, with REAL ansible-rulebook.

An unknown source option, a missing rulebook variable, an API server that does not answer and a
regenerate endpoint without TLS files each stop ansible-rulebook with an error that names the
problem; none runs a playbook, none idles. Secrets given to the sources appear in no log line.
"""

from __future__ import annotations

import yaml

from tests.integration.eda_support import TOKEN, Rulebook, free_port, require_rulebook, tls_files

API_KEY = "eyJhbGciOiJSUzI1NiJ9.never-in-a-log-line.0123456789"


def inventory(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": {"ansible_connection": "local"}}}}))
    return path


def failed_start(rulebook):
    rulebook.start()
    try:
        assert rulebook.wait_exit() != 0
    finally:
        rulebook.stop()
    assert rulebook.runs() == 0
    return rulebook.log()


def regenerate_vars(tmp_path):
    certfile, keyfile, _cafile = tls_files(tmp_path)
    return {"topology_regenerate_token": TOKEN, "topology_regenerate_certfile": certfile,
            "topology_regenerate_keyfile": keyfile, "topology_regenerate_port": free_port()}


def test_unknown_source_option(tmp_path):
    require_rulebook()
    rulebook_file = tmp_path / "custom.yml"
    rulebook_file.write_text(yaml.safe_dump([{
        "name": "custom", "hosts": "all",
        "sources": [{"aifactory.topology.slurm_nodes": {"scontrol": ["/bin/true"], "intervall": 5}}],
        "rules": [{"name": "r", "condition": "event.topology_change is defined",
                   "action": {"debug": None}}]}]))
    rulebook = Rulebook("custom", inventory(tmp_path), {}, tmp_path)
    rulebook.argv[2] = str(rulebook_file)
    log = failed_start(rulebook)
    assert "aifactory.topology.slurm_nodes has unknown keys: intervall; known:" in log, log[-3000:]


def test_missing_rulebook_variable(tmp_path):
    require_rulebook()
    variables = regenerate_vars(tmp_path)
    del variables["topology_regenerate_token"]
    log = failed_start(Rulebook("slurm_topology", inventory(tmp_path), dict(variables, slurm_topology_scontrol=[
        "sh", "-c", 'echo \'{"nodes": []}\'']), tmp_path))
    assert ("aifactory.topology.regenerate: option 'token': the rulebook variable 'topology_regenerate_token' "
            "is undefined") in log, log[-3000:]


def test_unreachable_api_server_and_no_secret_in_the_log(tmp_path):
    require_rulebook()
    port = free_port()  # nothing listens there
    variables = dict(regenerate_vars(tmp_path), k8s_topology_ready_timeout=2,
                     k8s_topology_auth={"host": f"https://127.0.0.1:{port}", "api_key": API_KEY,
                                        "validate_certs": False})
    log = failed_start(Rulebook("k8s_topology", inventory(tmp_path), variables, tmp_path))
    assert f"the Kubernetes API server https://127.0.0.1:{port} is not ready after 2 s" in log, log[-3000:]
    assert API_KEY not in log and TOKEN not in log


def test_regenerate_endpoint_needs_tls_files(tmp_path):
    require_rulebook()
    variables = dict(regenerate_vars(tmp_path), topology_regenerate_certfile=str(tmp_path / "missing.crt"),
                     slurm_topology_scontrol=["sh", "-c", 'echo \'{"nodes": []}\''])
    log = failed_start(Rulebook("slurm_topology", inventory(tmp_path), variables, tmp_path))
    assert f"aifactory.topology.regenerate: certfile {tmp_path / 'missing.crt'} does not exist" in log, log[-3000:]
    assert TOKEN not in log
