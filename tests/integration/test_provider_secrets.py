"""No secret of any form leaves a provider: not in an error, a warning, the module result, -vvv or Ansible's log.

Issue 33, class 1. The adversary is an API or a proxy in front of it that echoes the request (its token, its
password, its body) in an error, and a metadata service whose answer botocore would log. Secrets are planted
with the characters that defeat a naive search (quotes, ``%``, ``+``, ``/``, ``=``, a backslash, unicode) in
every form a credential takes: creds params, the environment (AWX injects cloud credentials there) and what a
metadata service serves. The servers answer on 127.0.0.1 (tests/integration/fake_apis.py).
"""

from __future__ import annotations

import json
import re
import subprocess
from urllib.parse import quote

import pytest
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError
from tests.ansible_run import ansible_env, run_playbook, tool
from tests.integration.fake_apis import NO_WAIT, discover, printed_forms, text_reply
from tests.integration.fake_aws import IMDS_SESSION_TOKEN, INSTANCE_CREDS, REFUSED_IMDS_DOCUMENT, Imds
from tests.integration.fake_aws import error_reply, instance_xml, topology_reply
from tests.integration.fake_gcp import METADATA_TOKEN, metadata_server

ONE = [{"region": "r1", "instances": {"i-1": "n1"}}]
# ASCII (what an HTTP header can carry) and awkward; each form its own value, so a leak names its form.
ENV_TOKEN = 'env-token"q\'%2B+/=\\AWX'
PARAM_TOKEN = 'param-token"q\'%+/=\\P'
PASSWORD = 'netq-pa"ss\'%+/=\\word'
# Unicode cannot be sent in a header: such a credential is refused by name, and must not be printed either.
UNICODE_TOKEN = "unicode-token-\u00e9\u2603-\"q\"%+/="


def echo(request):
    """A proxy that refuses and quotes the request's credentials and body, raw, URL-encoded and JSON-escaped."""
    seen = " | ".join([request.headers.get("authorization", ""), request.headers.get("x-amz-security-token", ""),
                       request.body.decode("utf-8", errors="replace")])
    return text_reply(json.dumps({"error": f"refused {seen}", "url": quote(seen, safe="")}), status=401,
                      content_type="application/json")


def aws_echo(request):
    token = request.headers.get("x-amz-security-token", "")
    return error_reply(403, "UnauthorizedOperation",
                       f"denied {token} {quote(token, safe='')}".replace("&", "&amp;").replace("<", "&lt;"))


SHARED_CLIENT_CASES = {
    "gcp": ({"project_id": "p"}, {}, {"GOOGLE_OAUTH_ACCESS_TOKEN": ENV_TOKEN}),
    "lambda": ({"workspace_id": "ws"}, {}, {"LAMBDA_API_TOKEN": ENV_TOKEN}),
    "nscale": ({"organization": "org"}, {}, {"NSCALE_TOKEN": ENV_TOKEN}),
    "netq": ({}, {"username": "admin"}, {"NETQ_PASSWORD": PASSWORD}),
}


@pytest.mark.parametrize("name", sorted(SHARED_CLIENT_CASES))
def test_an_error_body_that_echoes_an_environment_credential_never_shows_it(fake_http, monkeypatch, name):
    """Every provider on the shared HTTP client: the error detail quotes the body, scrubbed of the run's secrets."""
    extra, creds, environment = SHARED_CLIENT_CASES[name]
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    server = fake_http(echo)
    params = dict(NO_WAIT, api_url=server.url, **extra)
    if name != "netq":
        params["instances"] = ONE
    with pytest.raises(RemoteAPIError, match=r"HTTP 401: .*refused .*\*{8}") as info:
        discover(name, params, creds)
    secret = next(iter(environment.values()))
    assert server.requests  # the credential was sent, and echoed
    for form in printed_forms(secret) | {quote(secret, safe="")}:
        assert form not in str(info.value), form


# -- the whole run at -vvv with Ansible's log_path: modules, and the inventory plugin in the controller -----------

def _task(name, provider, params, creds=None, environment=None):
    task = {"name": name, "aifactory.topology.topology_info": {
        "provider": {"name": provider, "params": params, "creds": creds or {}}},
        "register": "found", "ignore_errors": True}
    if environment:
        task["environment"] = environment
    return [task, {"name": f"Show {name}", "ansible.builtin.debug": {"var": "found"}}]


# Variables of the machine running the tests that would give the SDKs other credentials.
AMBIENT = ("AWS_", "GOOGLE_", "CLOUDSDK_", "GCE_", "LAMBDA_", "NSCALE_", "NETQ_")


def _clean_environment(tmp_path, **extra):
    environment = {key: value for key, value in ansible_env().items() if not key.startswith(AMBIENT)}
    return dict(environment, AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), AWS_CONFIG_FILE=str(tmp_path / "none"),
                CLOUDSDK_CONFIG=str(tmp_path / "no-gcloud"), **extra)


def _assert_nowhere(secrets, *texts):
    for secret in secrets:
        for form in printed_forms(secret) | {quote(secret, safe="")}:
            for text in texts:
                assert form not in text, f"a secret ({secret!r}) appears as {form!r}"


# What AWX injects into the job's environment for its cloud credentials (the modules inherit it).
AWX_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": ENV_TOKEN,
                   "AWS_SESSION_TOKEN": ENV_TOKEN + "2", "LAMBDA_API_TOKEN": ENV_TOKEN + "3", "NETQ_PASSWORD": PASSWORD}


def without_aws_keys(imds):
    """A task's environment: no AWS keys (botocore skips empty ones), so the chain reaches this metadata service."""
    return {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
            "AWS_EC2_METADATA_SERVICE_ENDPOINT": imds.url}


@pytest.mark.playbook
def test_no_secret_of_any_form_reaches_the_result_the_verbose_output_or_the_log(fake_http, tmp_path):
    aws_api, json_api = fake_http(aws_echo), fake_http(echo)
    aws_ok = fake_http(lambda request: topology_reply([instance_xml("i-1", ["c", "s", "l"])]))
    imds = Imds(fake_http)
    # botocore logged such a refusal whole, secret key and token included: what the log file got.
    imds_failing = Imds(fake_http, document=REFUSED_IMDS_DOCUMENT)
    imds_unicode = Imds(fake_http, document=dict(INSTANCE_CREDS, SecretAccessKey=UNICODE_TOKEN,
                                                 Expiration="2099-01-01T00:00:00Z"))
    gce = metadata_server(fake_http)
    gce_host = gce.url.removeprefix("http://")
    aws_params = dict(NO_WAIT, instances=ONE, endpoint_url=aws_api.url)
    tasks = (
        _task("aws creds params, echoed", "aws", aws_params,
              {"access_key_id": "AKIDPARAM", "secret_access_key": PARAM_TOKEN, "session_token": PARAM_TOKEN + "2"})
        + _task("aws environment, echoed", "aws", aws_params)
        + _task("aws instance metadata, echoed", "aws", aws_params, environment=without_aws_keys(imds))
        + _task("aws instance metadata, refused", "aws", aws_params, environment=without_aws_keys(imds_failing))
        + _task("aws instance metadata, unicode", "aws", aws_params, environment=without_aws_keys(imds_unicode))
        + _task("aws instance metadata, success", "aws", dict(aws_params, endpoint_url=aws_ok.url),
                environment=without_aws_keys(imds))
        + _task("gcp metadata token, echoed", "gcp", dict(NO_WAIT, instances=ONE, project_id="p", api_url=json_api.url),
                environment={"GCE_METADATA_HOST": gce_host, "GCE_METADATA_IP": gce_host})
        + _task("lambda environment token, echoed", "lambda",
                dict(NO_WAIT, instances=ONE, workspace_id="ws", api_url=json_api.url))
        + _task("lambda unicode token", "lambda", dict(NO_WAIT, instances=ONE, workspace_id="ws", api_url=json_api.url),
                {"token": UNICODE_TOKEN})
        + _task("nscale creds token, echoed", "nscale", dict(NO_WAIT, instances=ONE, organization="org",
                                                             api_url=json_api.url), {"token": PARAM_TOKEN + "3"})
        + _task("netq environment password, echoed", "netq", dict(NO_WAIT, api_url=json_api.url), {"username": "admin"}))
    playbook = tmp_path / "discover.yml"
    playbook.write_text(yaml.safe_dump([{"name": "Secrets", "hosts": "localhost", "gather_facts": False,
                                         "tasks": tasks}]))
    log = tmp_path / "ansible.log"
    result = run_playbook("-vvv", "-i", "localhost,", "-c", "local",
                          "-e", "ansible_python_interpreter={{ ansible_playbook_python }}", playbook, timeout=300,
                          env=_clean_environment(tmp_path, ANSIBLE_LOG_PATH=str(log), **AWX_CREDENTIALS))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert re.search(r"ok=\d+ .*failed=0 .*ignored=10", output), output  # ten tasks failed as they must, one passed
    assert "nodes_without_domain" in result.stdout
    assert output.count("********") >= 7, output  # the echoes were there, masked
    assert "Code is 'AssumeRoleUnauthorizedAccess', not Success" in output
    assert "SecretAccessKey contains a control or non-ASCII character" in output
    logged = log.read_text(errors="replace")
    assert "aws instance metadata, refused" in logged
    secrets = [PARAM_TOKEN, PARAM_TOKEN + "2", PARAM_TOKEN + "3", ENV_TOKEN, ENV_TOKEN + "2", ENV_TOKEN + "3",
               PASSWORD, UNICODE_TOKEN, INSTANCE_CREDS["SecretAccessKey"], INSTANCE_CREDS["Token"], IMDS_SESSION_TOKEN,
               METADATA_TOKEN]
    _assert_nowhere(secrets, output, logged)


@pytest.mark.playbook
def test_the_inventory_plugin_logs_no_instance_credentials_in_the_controller(fake_http, tmp_path):
    """The inventory plugin runs the provider in the controller's process, where Ansible's log handler is."""
    imds_failing = Imds(fake_http, document=REFUSED_IMDS_DOCUMENT)
    imds = Imds(fake_http)
    aws_api = fake_http(aws_echo)
    aws_ok = fake_http(lambda request: topology_reply([instance_xml("i-1", ["c", "s", "l"])]))
    log = tmp_path / "ansible.log"
    outputs = []
    for metadata, api, name in ((imds_failing, aws_ok, "refused"), (imds, aws_api, "echoed"), (imds, aws_ok, "ok")):
        source = tmp_path / f"{name}.topology.yml"
        source.write_text(yaml.safe_dump({"plugin": "aifactory.topology.topology", "provider": {
            "name": "aws", "params": dict(NO_WAIT, instances=ONE, endpoint_url=api.url)}}))
        done = subprocess.run([tool("ansible-inventory"), "-vvv", "-i", str(source), "--list"], capture_output=True,
                              text=True, check=False, timeout=120,
                              env=_clean_environment(tmp_path, ANSIBLE_LOG_PATH=str(log),
                                                     AWS_EC2_METADATA_SERVICE_ENDPOINT=metadata.url))
        outputs.append(done.stdout + done.stderr)
    assert "Code is 'AssumeRoleUnauthorizedAccess', not Success" in outputs[0], outputs[0]
    assert "denied ******** ********" in outputs[1], outputs[1]
    assert '"n1"' in outputs[2], outputs[2]
    _assert_nowhere([INSTANCE_CREDS["SecretAccessKey"], INSTANCE_CREDS["Token"], IMDS_SESSION_TOKEN],
                    *outputs, log.read_text(errors="replace"))


@pytest.mark.playbook
def test_a_kubeconfig_token_an_api_server_echoes_is_not_in_the_output_or_the_log(fake_http, tmp_path):
    """A Kubernetes module's failure (k8s_node_labels, a dra provider on the same kubeconfig) at -vvv with log_path."""
    token = 'kube-t0ken"q%2B+/=\\LOG'

    def apiserver(request):
        seen = request.headers.get("authorization", "")
        return text_reply(json.dumps({"kind": "Status", "status": "Failure", "reason": "Unauthorized", "code": 401,
                                      "message": f"Unauthorized: {seen} ({quote(seen, safe='')})"}), status=401,
                          content_type="application/json")

    server = fake_http(apiserver)
    config = tmp_path / "kubeconfig"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": server.url}}], "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
    playbook = tmp_path / "labels.yml"
    playbook.write_text(yaml.safe_dump([{"name": "Labels", "hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "Label the nodes", "aifactory.topology.k8s_node_labels": {
            "provider": {"name": "dra", "params": {}, "creds": {"kubeconfig": str(config)}},
            "kubeconfig": str(config)}, "register": "labelled", "ignore_errors": True},
        {"name": "Show the result", "ansible.builtin.debug": {"var": "labelled"}}]}]))
    log = tmp_path / "ansible.log"
    result = run_playbook("-vvv", "-i", "localhost,", "-c", "local",
                          "-e", "ansible_python_interpreter={{ ansible_playbook_python }}", playbook, timeout=300,
                          env=_clean_environment(tmp_path, ANSIBLE_LOG_PATH=str(log)))
    output = result.stdout + result.stderr
    assert result.returncode == 0 and re.search(r"failed=0 .*ignored=1", output), output
    assert server.requests and "HTTP 401 Unauthorized: Unauthorized: ********" in output, output
    logged = log.read_text(errors="replace")
    assert "HTTP 401 Unauthorized: Unauthorized: ********" in logged
    _assert_nowhere([token], output, logged)
