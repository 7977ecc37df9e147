# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the YAML safety scan costs: load the 100,000-node simulation model with and without it.

``_yaml.safe_load`` first walks the document's events (depth and alias-expansion limits,
docs/security.md), then loads it with libyaml. This prints the median of ``--repeat`` loads
of the model bench/run.py generates, both ways. It measures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench_run  # noqa: E402  # pylint: disable=wrong-import-position


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root, temporary = bench_run.collection_root()
    try:
        import yaml

        from ansible_collections.aifactory.topology.plugins.module_utils import _yaml

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.yaml"
            bench_run.write_model(path, args.nodes)
            text = path.read_text()
            timings = {"libyaml load only": [], "check_limits + load (safe_load)": [], "check_limits alone": []}
            for _round in range(args.repeat):
                for label, call in (("libyaml load only", lambda: yaml.load(text, Loader=_yaml._LOADER)),
                                    ("check_limits + load (safe_load)", lambda: _yaml.safe_load(text)),
                                    ("check_limits alone", lambda: _yaml.check_limits(text))):
                    started = time.perf_counter()
                    call()
                    timings[label].append(time.perf_counter() - started)
        print(f"{args.nodes} nodes, {len(text) / 1e6:.1f} MB of YAML, median of {args.repeat}:")
        for label, values in timings.items():
            print(f"  {label:34} {statistics.median(values):6.3f} s")
    finally:
        if temporary:
            bench_run.remove_collection_root(root)


if __name__ == "__main__":
    main()
