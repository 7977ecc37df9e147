# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: what importing each provider costs, and that it stays out of the other providers' runs.

For each provider module of the registry, a new interpreter runs ``python -X importtime -c
"load(name)"`` (``_providers.load``, what a task does before discovery); the script reads the
import log and prints, per provider: the cumulative import time of the provider module (its SDK
included; for a provider whose discover() imports its SDK later, LAZY_IMPORTS, those modules too and the
sum of every module's own time), the share of the SDK's top-level packages, how many modules it added, the wall time
of the whole process, and which SDKs of the other providers were imported (must be none).
Median of --repeat runs. ``--module NAME`` (repeatable) also times ``import NAME`` alone, in
``--python`` (another interpreter, such as a venv holding a library the collection does not
require, to compare one). It only measures and prints; nothing is asserted.

Usage: ``python bench/provider_imports.py [--repeat 5] [--module google.cloud.compute_v1 --python PATH]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "ansible_collections.aifactory.topology.plugins.module_utils._providers"
# Top-level packages of each SDK (and of the libraries they bring).
SDKS = {"boto3": "aws", "botocore": "aws", "google": "gcp", "grpc": "nebius", "kubernetes": "kubernetes",
        "oci": "oci", "nebius": "nebius", "cryptography": "(shared)", "requests": "(shared)", "urllib3": "(shared)"}
# The SDK modules a provider's discover() imports only when it runs (not when the provider module loads), so a
# run that names the provider pays them too: measured with them, as the sum of every module's own import time.
LAZY_IMPORTS = {
    "oci": ["oci", "oci.identity", "oci.core"],
    "nebius": ["nebius.sdk", "nebius.api.nebius.compute.v1", "nebius.base.service_account.static", "nebius.aio.token.imds"],
    "gcp": ["google.auth", "google.auth.transport.requests"],
}


def collections_path():
    """A directory holding ansible_collections/aifactory/topology (this checkout)."""
    for candidate in (REPO / ".collections", REPO.parents[2]):
        if (candidate / "ansible_collections" / "aifactory" / "topology").exists():
            return candidate
    raise SystemExit("make .collections/ansible_collections/aifactory/topology a symlink to this checkout first")


def import_log(python, code, env):
    """(wall seconds, {module: (self us, cumulative us)}) of one interpreter running ``code``."""
    started = time.perf_counter()
    done = subprocess.run([python, "-X", "importtime", "-c", code], capture_output=True, text=True, env=env,
                          check=True)
    wall = time.perf_counter() - started
    modules = {}
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            own, cumulative, name = (part.strip() for part in line[len("import time:"):].split("|"))
            if own.isdigit():
                modules[name.strip()] = (int(own), int(cumulative))
    return wall, modules


def measure(python, code, env, repeat, top=None):
    walls, cumulative, sdk_time, counts, sdks = [], [], [], [], set()
    for _run in range(repeat):
        wall, modules = import_log(python, code, env)
        walls.append(wall)
        counts.append(len(modules))
        cumulative.append(modules.get(top, (0, 0))[1] if top else sum(own for own, _c in modules.values()))
        sdk_time.append(sum(own for name, (own, _c) in modules.items() if name.split(".")[0] in SDKS))
        sdks |= {name.split(".")[0] for name in modules if name.split(".")[0] in SDKS}
    return {"import_s": statistics.median(cumulative) / 1e6, "sdk_s": statistics.median(sdk_time) / 1e6,
            "modules": int(statistics.median(counts)), "wall_s": statistics.median(walls), "sdks": sorted(sdks)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--module", action="append", default=[], help="also time `import MODULE` alone")
    parser.add_argument("--python", default=sys.executable, help="the interpreter for --module")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(collections_path()))
    sys.path.insert(0, str(collections_path()))
    from ansible_collections.aifactory.topology.plugins.module_utils._providers._specs import PROVIDERS  # noqa: E402

    baseline = measure(sys.executable, f"import {PACKAGE}", env, args.repeat, top=PACKAGE)
    print(f"python {sys.version.split()[0]}, median of {args.repeat} runs; `_providers` alone: "
          f"{baseline['import_s'] * 1000:.0f} ms, {baseline['modules']} modules, process {baseline['wall_s']:.2f} s")
    print(f"{'provider':<18}{'import ms':>10}{'SDK ms':>8}{'modules':>9}{'process s':>11}  SDK packages imported")
    seen = set()
    for name, provider in sorted(PROVIDERS.items()):
        if provider.module in seen:
            continue
        seen.add(provider.module)
        code = f"from {PACKAGE} import load; load({name!r})"
        lazy = LAZY_IMPORTS.get(name)
        if lazy:
            code += f"; import {', '.join(lazy)}"
        found = measure(sys.executable, code, env, args.repeat, top=None if lazy else f"{PACKAGE}.{provider.module}")
        print(f"{provider.module:<18}{found['import_s'] * 1000:>10.0f}{found['sdk_s'] * 1000:>8.0f}"
              f"{found['modules']:>9}{found['wall_s']:>11.2f}  {', '.join(found['sdks']) or '-'}")
    for module in args.module:
        found = measure(args.python, f"import {module}", dict(os.environ), args.repeat)
        print(f"import {module} ({args.python}): {found['import_s'] * 1000:.0f} ms of imports, "
              f"{found['modules']} modules, process {found['wall_s']:.2f} s")


if __name__ == "__main__":
    main()
