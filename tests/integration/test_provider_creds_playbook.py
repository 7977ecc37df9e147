"""Every cloud provider's secrets stay out of ansible-playbook -vvvv output.

For each provider the fake API answers successfully (so the module really ran and its result
was printed) and the test checks the server received the credential; then no secret value
may appear in stdout or stderr: not in the invocation echo, the result, warnings or errors.
"""

from __future__ import annotations

import re

import pytest
import yaml

from tests.ansible_run import run_playbook

from tests.integration import (
    test_provider_aws,
    test_provider_gcp,
    test_provider_lambda,
    test_provider_nebius,
    test_provider_nscale,
    test_provider_oci,
)

CASES = {"aws": test_provider_aws, "gcp": test_provider_gcp, "oci": test_provider_oci,
         "lambda": test_provider_lambda, "nebius": test_provider_nebius, "nscale": test_provider_nscale}

pytestmark = pytest.mark.playbook


@pytest.mark.parametrize("name", sorted(CASES))
def test_provider_secrets_never_appear_in_verbose_output(name, fake_http, fake_grpc, tmp_path):
    params, creds, secrets, credential_used = CASES[name].playbook_case(fake_http, fake_grpc)
    playbook = tmp_path / "discover.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": f"Discover with {name}", "hosts": "localhost", "gather_facts": False,
        "tasks": [{"name": "Discover", "aifactory.topology.topology_info": {
            "provider": {"name": name, "params": params, "creds": creds}}, "register": "found"},
            {"name": "Show", "ansible.builtin.debug": {"var": "found"}}],
    }]))
    result = run_playbook("-vvvv", "-i", "localhost,", "-c", "local",
                          "-e", "ansible_python_interpreter={{ ansible_playbook_python }}", playbook, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert re.search(r'\bnodes_without_domain"?: \d+', result.stdout), result.stdout  # the summary was printed
    assert "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in result.stdout  # the creds were masked in the echo
    assert credential_used()  # ... and still reached the API
    for secret in secrets:
        assert secret and secret not in output, f"a {name} secret appears in the -vvvv output"
