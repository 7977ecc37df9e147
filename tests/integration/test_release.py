"""Release tooling: the changelog fragments are valid, and the next release's notes announce what is new.

antsibull-changelog (tests/requirements.txt) finds new modules, filters and roles from their
``version_added``; everything else comes from changelogs/fragments/. docs/releasing.md says how
to make the release.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from tests.ansible_run import REPO, tool

GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())
RELEASED = set(yaml.safe_load((REPO / "changelogs" / "changelog.yaml").read_text())["releases"])


def version_added(path):
    if path.suffix == ".py":
        text = path.read_text()
        document = yaml.safe_load(text.split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0])
    else:
        document = yaml.safe_load(path.read_text())["DOCUMENTATION"]
    return str(document["version_added"]), document.get("module") or document.get("name")


def plugins():
    found = {}
    for path in sorted((REPO / "plugins" / "modules").glob("*.py")):
        found[path.stem] = ("Modules", *version_added(path))
    for path in sorted((REPO / "plugins" / "filter").glob("*.yml")):
        found[path.stem] = ("Plugins", *version_added(path))
    return found


def test_fragments_and_changelog_yaml_pass_antsibull_changelog_lint():
    lint = subprocess.run([tool("antsibull-changelog"), "lint"], cwd=REPO, capture_output=True, text=True, check=False)
    assert (lint.returncode, lint.stdout + lint.stderr) == (0, "")
    lint = subprocess.run([tool("antsibull-changelog"), "lint-changelog-yaml", "changelogs/changelog.yaml"],
                          cwd=REPO, capture_output=True, text=True, check=False)
    assert (lint.returncode, lint.stdout + lint.stderr) == (0, "")


def test_version_added_is_a_released_version_or_the_next_one():
    for name, (_kind, added, _doc_name) in plugins().items():
        assert added in RELEASED | {GALAXY["version"]}, f"{name}: version_added {added}"
    assert GALAXY["version"] not in RELEASED, "galaxy.yml must name the next release, not a released one"


@pytest.mark.playbook
def test_next_release_notes_announce_exactly_the_new_plugins_and_roles(tmp_path):
    notes_file = tmp_path / "notes.md"
    subprocess.run([sys.executable, str(REPO / "tools" / "release_notes.py"), "--date", "2026-12-01",
                    "--output", str(notes_file)], capture_output=True, text=True, check=True)
    notes = notes_file.read_text()
    version = GALAXY["version"]
    assert notes.startswith(f'<a id="v{version.replace(".", "-")}"></a>')
    assert "### Release Summary" in notes and "### Minor Changes" in notes

    def announced(section):
        """The escaped FQCNs listed under '### New <section>'."""
        text = notes.split(f"### New {section}\n", 1)[1].split("\n### ", 1)[0] if f"### New {section}\n" in notes else ""
        return {line[2:].split(" \\- ")[0] for line in text.splitlines() if line.startswith("* ")}

    def fqcn(name):
        return "aifactory\\.topology\\." + name.replace("_", "\\_")

    for name, (kind, added, _doc_name) in plugins().items():
        if added == version:
            assert fqcn(name) in announced(kind), f"{name} (version_added {added}) is not announced"
        else:
            assert fqcn(name) not in announced(kind), f"{name} was released in {added}"
    assert announced("Roles") == {fqcn(path.name) for path in (REPO / "roles").iterdir()}
