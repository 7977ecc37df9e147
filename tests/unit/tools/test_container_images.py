"""The image cache keys of tools/container_images.py and the local EE definition of
tools/execution_environment.py (pure functions; the builds themselves run in `make molecule`
and tests/integration/test_execution_environment.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools"))
import container_images  # noqa: E402
import execution_environment  # noqa: E402


@pytest.fixture
def recipes(tmp_path, monkeypatch):
    recipe = tmp_path / "node"
    recipe.mkdir()
    (recipe / "packages.txt").write_text("# comment\nsystemd\n\npython3\n")
    (recipe / "Containerfile").write_text("ARG BASE\nFROM ${BASE}\n")
    monkeypatch.setattr(container_images, "RECIPES", tmp_path)
    return recipe


def test_packages_skip_comments_and_blank_lines(recipes):
    assert container_images.packages("node") == ["systemd", "python3"]


def test_tag_follows_every_recipe_file(recipes):
    first = container_images.image_tag("node")
    assert first.startswith("localhost/aifactory-node:")
    assert container_images.image_tag("node") == first
    (recipes / "container-init").write_text("#!/bin/sh\n")
    second = container_images.image_tag("node")
    assert second != first
    (recipes / "Containerfile").write_text("ARG BASE\nFROM ${BASE}\nRUN true\n")
    assert container_images.image_tag("node") not in (first, second)


def test_root_depends_on_packages_only(recipes):
    root = container_images.root_tag("node")
    (recipes / "Containerfile").write_text("ARG BASE\nFROM ${BASE}\nRUN true\n")
    assert container_images.root_tag("node") == root
    (recipes / "packages.txt").write_text("systemd\n")
    assert container_images.root_tag("node") != root


def test_recipe_without_containerfile_is_refused(recipes):
    (recipes / "Containerfile").unlink()
    with pytest.raises(ValueError, match="needs Containerfile and packages.txt"):
        container_images.image_tag("node")


def test_podman_configuration_is_written_under_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AIFACTORY_CACHE", str(tmp_path))
    env = container_images.podman_env()
    conf = Path(env["CONTAINERS_CONF"]).read_text()
    assert Path(env["CONTAINERS_CONF"]).parent == tmp_path / "podman"
    assert 'runtime = "runc"' in conf and 'cgroup_manager = "cgroupfs"' in conf
    assert '"nofile=20000:20000", "nproc=32768:32768"' in conf
    assert f'network_config_dir = "{tmp_path / "podman" / "networks"}"' in conf
    assert f'graphroot = "{tmp_path / "podman" / "storage"}"' in Path(env["CONTAINERS_STORAGE_CONF"]).read_text()


def test_local_ee_definition_changes_only_base_python_and_package_manager(tmp_path):
    original = yaml.safe_load(execution_environment.EE_FILE.read_text())
    artifact = tmp_path / Path(original["additional_build_files"][0]["src"]).name
    local = execution_environment.local_definition("localhost/base:1", artifact, "localhost/ee:1")
    assert local["images"]["base_image"]["name"] == "localhost/base:1"
    assert local["dependencies"]["python_interpreter"] == {"python_path": execution_environment.EE_PYTHON}
    assert local["options"] == {**original["options"], "package_manager_path": "/usr/bin/apt-get",
                                "tags": ["localhost/ee:1"]}
    assert local["additional_build_files"][0] == {**original["additional_build_files"][0], "src": str(artifact)}
    for key in ("ansible_core", "ansible_runner", "galaxy"):
        assert local["dependencies"][key] == original["dependencies"][key]


def test_ee_build_mounts_the_hosts_ca_bundle_when_there_is_one(tmp_path, monkeypatch):
    bundle = tmp_path / "ca.crt"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.setenv("PIP_CERT", str(bundle))
    assert execution_environment.build_cli_args() == [
        "--network=host", f"--volume={bundle}:/etc/ssl/certs/ca-certificates.crt:ro"]
    monkeypatch.setenv("PIP_CERT", str(tmp_path / "missing.crt"))
    assert execution_environment.build_cli_args() == ["--network=host"]


def test_suite_file_chooses_the_debian_suite_and_the_root(recipes):
    assert container_images.suite("node") == "sid"
    root = container_images.root_tag("node")
    (recipes / "suite").write_text("trixie\n")
    assert container_images.suite("node") == "trixie"
    assert container_images.root_tag("node") != root
