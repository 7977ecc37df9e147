"""Every cloud provider's secrets stay out of ansible-playbook -vvvv output.

For each provider the fake API answers successfully (so the module really ran and its result
was printed) and the test checks the server received the credential; then no secret value
may appear in stdout or stderr: not in the invocation echo, the result, warnings or errors.
"""

from __future__ import annotations

import re

import pytest
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._providers._specs import PROVIDERS
from tests.ansible_run import ansible_env, run_playbook
from tests.integration import fake_aws, fake_gcp, fake_lambda, fake_nebius, fake_nscale, fake_oci
from tests.integration.fake_apis import printed_forms

# Every provider whose fake API helper module (tests/integration/fake_<name>.py) gives a playbook_case: a successful
# run with its secrets; with PLAYBOOK_FORMS, its other credential forms; with credential_chain_cases, the
# credentials its SDK finds itself.
HELPERS = {"aws": fake_aws, "gcp": fake_gcp, "lambda": fake_lambda, "nebius": fake_nebius, "nscale": fake_nscale,
           "oci": fake_oci}
CASES = {name: module for name, module in HELPERS.items() if hasattr(module, "playbook_case")}
# Providers with secrets (a no_log creds option) and no playbook_case, and why.
WITHOUT_PLAYBOOK_CASE = {
    "netq": "its own -vvvv test: test_provider_netq.py::test_netq_password_never_appears_in_verbose_playbook_output",
    "dra": "Kubernetes auth options: no -vvvv test yet (a successful run needs the kube-apiserver test bed)",
    "node_labels": "Kubernetes auth options: no -vvvv test yet (a successful run needs the kube-apiserver test bed)",
}

pytestmark = pytest.mark.playbook


def test_every_provider_with_secrets_has_a_playbook_case_or_a_stated_reason():
    with_secrets = {name for name, provider in PROVIDERS.items()
                    if any(option.get("no_log") for option in provider.creds.argument_spec.values())}
    assert with_secrets - set(CASES) == set(WITHOUT_PLAYBOOK_CASE)
    assert set(CASES) <= with_secrets


def run_verbose(playbook):
    """ansible-playbook -vvvv on localhost with the venv's interpreter (it has boto3 and grpcio)."""
    return run_playbook("-vvvv", "-i", "localhost,", "-c", "local",
                        "-e", "ansible_python_interpreter={{ ansible_playbook_python }}", playbook, timeout=300)


# Each further credential form an end-to-end test gives: PLAYBOOK_FORMS = {form: case builder}, run the same way.
FORMS = [(name, form) for name, module in sorted(CASES.items()) for form in sorted(getattr(module, "PLAYBOOK_FORMS", {}))]


@pytest.mark.parametrize("name", sorted(CASES))
def test_provider_secrets_never_appear_in_verbose_output(name, fake_http, fake_grpc, tmp_path):
    assert_secrets_stay_out(name, CASES[name].playbook_case(fake_http, fake_grpc), tmp_path)


@pytest.mark.parametrize("name, form", FORMS, ids=[f"{name}-{form}" for name, form in FORMS])
def test_every_credential_form_keeps_its_secrets_out_of_verbose_output(name, form, fake_http, fake_grpc, tmp_path):
    assert_secrets_stay_out(name, CASES[name].PLAYBOOK_FORMS[form](fake_http, fake_grpc, tmp_path), tmp_path)


def assert_secrets_stay_out(name, case, tmp_path):
    params, creds, secrets, credential_used = case
    playbook = tmp_path / "discover.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": f"Discover with {name}", "hosts": "localhost", "gather_facts": False,
        "tasks": [{"name": "Discover", "aifactory.topology.topology_info": {
            "provider": {"name": name, "params": params, "creds": creds}}, "register": "found"},
            {"name": "Show", "ansible.builtin.debug": {"var": "found"}}],
    }]))
    result = run_verbose(playbook)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert re.search(r'\bnodes_without_domain"?: \d+', result.stdout), result.stdout  # the summary was printed
    assert "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in result.stdout  # the creds were masked in the echo
    assert credential_used()  # ... and still reached the API
    for secret in secrets:
        assert secret and secret not in output, f"a {name} secret appears in the -vvvv output"


# A credential as it arrives from a YAML "|" block, a vault file or a copy-paste.
BAD_FORMS = {"newline": "{}\n", "crlf": "{}\r\n", "non-ascii": "{}\u00e9"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_credential_with_a_newline_crlf_or_non_ascii_character_fails_without_showing_it(
        name, fake_http, fake_grpc, tmp_path):
    """One playbook per provider: each bad form of its first secret is refused, and no form of it is printed."""
    params, creds, secrets, _credential_used = CASES[name].playbook_case(fake_http, fake_grpc)
    key = next(key for key, value in creds.items() if value == secrets[0])
    tasks = []
    for form, template in BAD_FORMS.items():
        bad = dict(creds, **{key: template.format(secrets[0])})
        tasks += [{"name": f"Discover with a {form} credential", "aifactory.topology.topology_info": {
            "provider": {"name": name, "params": params, "creds": bad}}, "register": f"found_{form.replace('-', '_')}",
            "ignore_errors": True},
            {"name": "Show", "ansible.builtin.debug": {"var": f"found_{form.replace('-', '_')}"}}]
    playbook = tmp_path / "discover.yml"
    playbook.write_text(yaml.safe_dump([{"name": f"Bad {name} credentials", "hosts": "localhost",
                                         "gather_facts": False, "tasks": tasks}]))
    result = run_verbose(playbook)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output  # every failure was ignored, none crashed the run
    assert output.count(f"Module failed: creds.{key} contains a line break (a trailing newline") == 2, output
    assert f"Module failed: creds.{key} contains a control or non-ASCII character; the value is not shown" in output
    assert "Traceback" not in output
    for secret in secrets:
        # Not the value, not its start (requests would quote 'Bearer <token>\\n' with the escape).
        assert secret[:12] not in output, f"a {name} secret appears in the -vvvv output"


# -- credentials the provider's SDK finds itself (a credential chain), for each form it handles ------------------

# Providers whose helper gives credential_chain_cases(start_http, tmp_path): a list of
# {id, params, creds, environment, secrets, used[, fails]}.
CHAIN_MODULES = {name: module for name, module in HELPERS.items() if hasattr(module, "credential_chain_cases")}
CHAIN_CASE_IDS = {"aws": ["aws-imdsv2-instance-profile", "aws-shared-credentials-profile"],
                  "gcp": ["gcp-service-account-key-file", "gcp-service-account-key-inline",
                          "gcp-workload-identity-federation", "gcp-metadata-server", "gcp-metadata-server-refuses"]}
# Variables of the machine running the tests that would give the SDKs other credentials.
AMBIENT = ("AWS_", "GOOGLE_", "CLOUDSDK_", "GCE_")


@pytest.mark.parametrize("name, case_id", [(name, case) for name, cases in sorted(CHAIN_CASE_IDS.items())
                                           for case in cases])
def test_credentials_from_the_chain_never_appear_in_verbose_output_or_the_log(name, case_id, fake_http, tmp_path):
    case = next(case for case in CHAIN_MODULES[name].credential_chain_cases(fake_http, tmp_path) if case["id"] == case_id)
    playbook = tmp_path / "discover.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": f"Discover with {name}", "hosts": "localhost", "gather_facts": False,
        "tasks": [{"name": "Discover", "aifactory.topology.topology_info": {
            "provider": {"name": name, "params": case["params"], "creds": case["creds"]}},
            "register": "found", "ignore_errors": True},
            {"name": "Show", "ansible.builtin.debug": {"var": "found"}}],
    }]))
    log = tmp_path / "ansible.log"
    environment = {key: value for key, value in ansible_env().items() if not key.startswith(AMBIENT)}
    result = run_playbook("-vvvv", "-i", "localhost,", "-c", "local",
                          "-e", "ansible_python_interpreter={{ ansible_playbook_python }}", playbook, timeout=300,
                          env=dict(environment, ANSIBLE_LOG_PATH=str(log), **case["environment"]))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert case["used"]()  # the credential reached the server
    if case.get("fails"):
        assert "GCP credentials from the GCE metadata server: the token request was refused" in output, output
    else:
        assert re.search(r'\bnodes_without_domain"?: \d+', result.stdout), result.stdout
    logged = log.read_text(errors="replace")
    assert "Discover" in logged
    for secret in case["secrets"]:
        for form in printed_forms(secret):
            assert form not in output and form not in logged, f"a {name} secret ({case_id}) appears in the output"
