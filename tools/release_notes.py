"""Preview the next release's notes with antsibull-changelog, without touching the checkout.

    python tools/release_notes.py [--version 0.2.0] [--output FILE]

Copies the files git would ship into a scratch ``ansible_collections/<namespace>/<name>`` tree,
runs ``antsibull-changelog release`` there (it reads the fragments in changelogs/fragments/ and
finds new modules, filters and roles from their ``version_added`` through ansible-doc), and
prints that release's section of the generated CHANGELOG.md. The version defaults to galaxy.yml's.

Making the release itself (docs/releasing.md): ``antsibull-changelog release`` in the checkout,
which moves the fragments into changelogs/changelog.yaml and rewrites CHANGELOG.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def executable(name: str) -> str:
    """The tool beside this interpreter (the project's .venv), else from PATH."""
    beside = Path(sys.executable).with_name(name)
    if beside.is_file():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} not found beside {sys.executable} or on PATH: run `make venv`")
    return found


def shipped_files() -> list[str]:
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                             capture_output=True, check=True).stdout.decode()
    return [name for name in listing.split("\0") if name and (REPO / name).exists()]


def section(changelog: str, version: str) -> str:
    """The part of CHANGELOG.md (antsibull's markdown) for one version."""
    anchor = f'<a id="v{version.replace(".", "-")}"></a>'
    start = changelog.index(anchor)
    following = re.search(r'^<a id="v[0-9][^"]*"></a>$', changelog[start + len(anchor):], re.M)
    end = start + len(anchor) + following.start() if following else len(changelog)
    return changelog[start:end].strip() + "\n"


def preview(version: str, date: str) -> str:
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="aifactory-release-notes-") as scratch:
        dest = Path(scratch) / "ansible_collections" / galaxy["namespace"] / galaxy["name"]
        for name in shipped_files():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target, follow_symlinks=False)
        env = {key: value for key, value in os.environ.items()
               if key not in ("ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS", "ANSIBLE_CONFIG", "PYTHONPATH")}
        # antsibull-changelog runs ansible-doc: the one of this environment, on the scratch copy only.
        env["PATH"] = f"{Path(executable('ansible-doc')).parent}{os.pathsep}{env.get('PATH', '')}"
        subprocess.run([executable("antsibull-changelog"), "release", "--version", version, "--date", date],
                       cwd=dest, env=env, check=True)
        return section((dest / "CHANGELOG.md").read_text(encoding="utf-8"), version)


def main(argv: list[str] | None = None) -> int:
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text(encoding="utf-8"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--version", default=galaxy["version"], help="the release to preview (default: galaxy.yml's)")
    parser.add_argument("--date", default=datetime.date.today().isoformat())
    parser.add_argument("--output", type=Path, help="also write the notes to this file")
    args = parser.parse_args(argv)
    notes = preview(args.version, args.date)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(notes, encoding="utf-8")
    sys.stdout.write(notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
