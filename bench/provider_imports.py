# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Import cost of each cloud provider: what a run that names it imports, in a fresh interpreter.

For each provider, a new ``python`` process imports ``_providers`` (the registry, as every task
does) and then the provider's module and the SDK modules its ``discover`` imports; the wall time of
those imports (median of ``--repeat`` processes) and the number of modules they load are printed.
Other providers' runs never pay this: ``_providers`` imports a provider only when a task names it
(tests/integration/test_lazy_providers.py).

    python bench/provider_imports.py [--providers oci,nebius] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "ansible_collections.aifactory.topology.plugins.module_utils._providers"
# provider -> (its module, the SDK modules its discover() imports).
IMPORTS = {
    "oci": ("oci", ["oci", "oci.identity", "oci.core"]),
    "nebius": ("nebius", ["nebius.sdk", "nebius.api.nebius.compute.v1", "nebius.base.service_account.static",
                          "nebius.aio.token.imds"]),
}
PROBE = """
import importlib, json, sys, time
import {package}
before = set(sys.modules)
start = time.perf_counter()
for name in {modules!r}:
    importlib.import_module(name)
print(json.dumps({{"seconds": time.perf_counter() - start, "modules": len(set(sys.modules) - before)}}))
"""


def collections_root():
    """A directory holding ansible_collections/aifactory/topology -> this checkout."""
    try:
        import ansible_collections.aifactory.topology  # noqa: F401  # pylint: disable=unused-import
        return None
    except ImportError:
        root = Path(tempfile.mkdtemp(prefix="bench-imports-"))
        (root / "ansible_collections" / "aifactory").mkdir(parents=True)
        (root / "ansible_collections" / "aifactory" / "topology").symlink_to(REPO)
        return root


def measure(provider, repeat, root):
    module, sdk = IMPORTS[provider]
    code = PROBE.format(package=PACKAGE, modules=[f"{PACKAGE}.{module}", *sdk])
    env_path = [str(root)] if root else []
    runs = []
    for _run in range(repeat):
        done = subprocess.run([sys.executable, "-c", f"import sys; sys.path[:0] = {env_path!r}\n{code}"],
                              capture_output=True, text=True, check=True, timeout=120)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return statistics.median(run["seconds"] for run in runs), runs[-1]["modules"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--providers", default=",".join(IMPORTS))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = collections_root()
    print("| provider | SDK modules imported | import time (s, median) | modules loaded |")
    print("|---|---|---:|---:|")
    for provider in args.providers.split(","):
        seconds, modules = measure(provider, args.repeat, root)
        print(f"| {provider} | {', '.join(IMPORTS[provider][1])} | {seconds:.2f} | {modules} |")


if __name__ == "__main__":
    main()
