"""The execution environment, built and used: playbooks/site.yml on the example inventory run
inside the EE image the way AWX runs a job, with the same result as outside.

The image is built from ee/execution-environment.yml by ansible-builder onto a locally built
Debian base image (tools/execution_environment.py; no registry is reachable here) and cached by
the hash of its inputs. A job is a private data dir with the project (an SCM-like copy of the
repository) and the project sync's collections (collections/requirements.yml, as AWX installs
them); ansible-runner starts it in a podman container of the EE image (process isolation), the
way AWX's receptor worker does. The same job without a container is the reference.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import ansible_runner
import pytest

from tests.ansible_run import tool
from tests.integration.awx_support import clean_env, job_events, run, scm_checkout

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import container_images  # noqa: E402
import execution_environment  # noqa: E402

# The example inventory writes its Slurm files to example-output/ beside the project's playbooks/.
OUTPUT = Path("project") / "example-output"


@pytest.fixture(scope="module")
def ee_image():
    reason = container_images.unavailable_reason()
    if reason:
        pytest.skip(f"SKIPPED: the execution environment cannot be built or run here: {reason}")
    os.environ.update(container_images.podman_env())
    return execution_environment.build()


def private_data_dir(base):
    """A job's private data dir: the project, the project sync into requirements_collections,
    and the inventory (the example's, with its group_vars) where ansible-runner takes it from."""
    scm_checkout(base / "project")
    # Only the inventory file and its group_vars: ansible-runner passes the whole directory as
    # the inventory (the example's files/ would be parsed as inventory sources).
    example = base / "project" / "inventories" / "example"
    shutil.copytree(example / "group_vars", base / "inventory" / "group_vars")
    shutil.copy2(example / "hosts.yml", base / "inventory" / "hosts.yml")
    collections = base / "requirements_collections"
    run([tool("ansible-galaxy"), "collection", "install", "-r", "collections/requirements.yml",
         "--collections-path", collections], cwd=base / "project",
        env=clean_env(ANSIBLE_COLLECTIONS_PATH=str(collections)))
    return base


def run_job(base, ident, **isolation):
    # Inside the container the private data dir is /runner; outside it is where it is.
    root = "/runner" if isolation else str(base)
    envvars = {"ANSIBLE_COLLECTIONS_PATH": f"{root}/requirements_collections", "ANSIBLE_NOCOLOR": "1"}
    with pytest.MonkeyPatch.context() as patch:
        for key in ("ANSIBLE_CONFIG", "PYTHONPATH", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS"):
            patch.delenv(key, raising=False)
        if not isolation:
            patch.setenv("PATH", clean_env()["PATH"])
        result = ansible_runner.run(private_data_dir=str(base), playbook="playbooks/site.yml", envvars=envvars,
                                    ident=ident, quiet=True, **isolation)
    artifacts = base / "artifacts" / ident
    return result, artifacts


@pytest.fixture(scope="module")
def jobs(ee_image, tmp_path_factory):
    inside = private_data_dir(tmp_path_factory.mktemp("ee-job"))
    outside = private_data_dir(tmp_path_factory.mktemp("local-job"))
    return {
        "image": ee_image,
        # As root in the container: the private data dir belongs to root here (AWX gives the
        # image's user, uid 1000, a private data dir of its own).
        "inside": (inside, *run_job(inside, "ee", process_isolation=True, process_isolation_executable="podman",
                                    container_image=ee_image, container_options=["--user=0"])),
        "outside": (outside, *run_job(outside, "local")),
    }


def written(directory):
    """{file name: content}; a backup's name (<file>.<pid>.<time>~) keeps only <file>~."""
    return {re.sub(r"\.\d+\.[\d-]+@[\d:]+~$", "~", str(path.relative_to(directory))): path.read_bytes()
            for path in directory.rglob("*") if path.is_file()}


def test_the_job_ran_in_a_podman_container_of_the_ee_image(jobs):
    result, artifacts = jobs["inside"][1:]
    assert (result.status, result.rc) == ("successful", 0), (artifacts / "stdout").read_text()
    command = json.loads((artifacts / "command").read_text())["command"]
    assert Path(command[0]).name == "podman" and command[1] == "run", command
    assert jobs["image"] in command, command
    # The interpreter of the job is the image's Python, not this machine's.
    events = job_events(artifacts)
    assert events and events[-1]["event"] == "playbook_on_stats"


def test_ee_image_has_the_ansible_core_this_suite_tests(jobs):
    version = container_images.podman("run", "--rm", jobs["image"], "ansible", "--version").stdout
    assert version.startswith("ansible [core 2.19."), version
    listed = container_images.podman("run", "--rm", jobs["image"], "ansible-galaxy", "collection", "list",
                                     "aifactory.topology").stdout
    assert "/usr/share/ansible/collections" in listed, listed


def test_same_result_inside_the_ee_as_outside(jobs):
    inside, result_in, artifacts_in = jobs["inside"]
    outside, result_out, artifacts_out = jobs["outside"]
    assert (result_out.status, result_out.rc) == ("successful", 0), (artifacts_out / "stdout").read_text()
    assert (result_in.status, result_in.rc) == ("successful", 0), (artifacts_in / "stdout").read_text()
    # Same tasks changed and nothing failed, host by host.
    for key in ("changed", "failures", "dark"):
        assert result_in.stats[key] == result_out.stats[key], (key, result_in.stats, result_out.stats)
    written_in, written_out = written(inside / OUTPUT), written(outside / OUTPUT)
    assert {"slurm.conf", "topology.yaml", "cli_filter.lua"} <= {str(p) for p in written_out}, sorted(written_out)
    assert written_in.keys() == written_out.keys()
    for name, content in written_out.items():
        assert written_in[name] == content, f"{name} differs between the EE job and the local job"
