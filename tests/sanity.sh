#!/usr/bin/env bash
# Run `ansible-test sanity` on a clean copy of the collection, without containers.
#
# ansible-test needs the collection at .../ansible_collections/<namespace>/<name> and must
# not see local state (.venv; .collections, a symlink loop back to this checkout; build/).
# So this copies the files git would ship (tracked plus untracked-not-ignored) into a
# temporary tree and runs there with `--local --requirements`: the controller is the
# project venv; each sanity test gets its own virtual environment with its pinned
# requirements from PyPI, cached by ansible-test under ~/.ansible/test/venv (so only the
# first run pays for the installs).
#
# Usage: tests/sanity.sh [extra ansible-test arguments, e.g. --test pep8]
# Environment: VENV (default: .venv, made by `make setup`), SANITY_PYTHON (default 3.11).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${VENV:-$root/.venv}
python_version=${SANITY_PYTHON:-3.11}

if [[ ! -x $venv/bin/ansible-test ]]; then
    echo "sanity: $venv/bin/ansible-test not found; run 'make setup' first" >&2
    exit 2
fi
# ansible-test looks up python$python_version on PATH: make that the venv's interpreter.
export PATH="$venv/bin:$PATH"
# ansible-test must see only the copy below, never this checkout through .collections.
unset ANSIBLE_COLLECTIONS_PATH ANSIBLE_COLLECTIONS_PATHS ANSIBLE_CONFIG PYTHONPATH

# ansible-test bootstraps pip into each virtual environment it creates with a get-pip
# script downloaded from ci-files.testing.ansible.com, which CI cannot reach (only PyPI
# is reachable). If that script is not cached yet, cache a stand-in taking the same
# command line: it installs pip from the interpreter's bundled ensurepip wheel, then
# pip-installs the requested packages (e.g. pip==24.2) from PyPI, as the original does.
cache=$HOME/.ansible/test/cache
pip_versions=$(sed -n "s/^ *pip='\([0-9.]*\)',\$/\1/p" \
    "$("$venv/bin/python" -c 'import ansible_test._internal.python_requirements as m; print(m.__file__)')")
mkdir -p "$cache"
for pip_version in ${pip_versions:-24.2}; do
    script=$cache/get_pip_${pip_version//./_}.py
    [[ -e $script ]] && continue
    cat > "$script.tmp" <<'PY'
"""Stand-in for get-pip.py, written by aifactory.topology tests/sanity.sh."""
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
# A subprocess, because ensurepip.bootstrap() points PIP_CONFIG_FILE at /dev/null in
# os.environ, which would hide the machine's pip configuration (CA bundle, index).
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"], stdout=subprocess.DEVNULL)
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "--quiet", *args]))
PY
    mv "$script.tmp" "$script"
    echo "sanity: cached a get-pip stand-in at $script"
done

namespace=$(sed -n 's/^namespace: *//p' "$root/galaxy.yml")
name=$(sed -n 's/^name: *//p' "$root/galaxy.yml")
work=$(mktemp -d "${TMPDIR:-/tmp}/aifactory-sanity.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
dest=$work/ansible_collections/$namespace/$name
mkdir -p "$dest"

# The files git would ship; tracked files deleted in the working tree are left out.
(cd "$root" && git ls-files -z --cached --others --exclude-standard) |
    (cd "$root" && while IFS= read -r -d '' f; do
        if [[ -e $f || -L $f ]]; then printf '%s\0' "$f"; fi
    done) |
    (cd "$root" && tar --null --no-recursion -T - -cf -) |
    tar -xf - -C "$dest"

# Tests skipped on purpose, each with the reason:
#   (none) Every default sanity test runs, on the controller Python $python_version only;
#   other Pythons would need containers, which this machine and CI do not have.
skip=()

cd "$dest"
echo "sanity: $("$venv/bin/ansible-test" --version) on Python $python_version in $dest"
"$venv/bin/ansible-test" sanity --local --python "$python_version" --requirements --color no \
    "${skip[@]}" "$@"
