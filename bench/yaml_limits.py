# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What loading a model costs: the 100,000-node simulation model, ``_yaml.safe_load`` against libyaml.

``_yaml.safe_load`` walks the document's events once, checking the depth and alias-expansion
limits (docs/security.md) and building the data as it goes; before, it scanned the events and
then let libyaml's loader compose and construct the document (``check_limits`` + load). This
prints the median of ``--repeat`` loads of the model bench/run.py generates, each way. It
measures only; nothing is asserted.
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

        from ansible_collections.aifactory.topology.plugins.module_utils._base import yaml as _yaml

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.yaml"
            bench_run.write_model(path, args.nodes)
            text = path.read_text()
            cases = (("libyaml load only", lambda: yaml.load(text, Loader=_yaml._LOADER)),
                     ("check_limits + libyaml load (before)",
                      lambda: (_yaml.check_limits(text), yaml.load(text, Loader=_yaml._LOADER))),
                     ("check_limits alone", lambda: _yaml.check_limits(text)),
                     ("safe_load (one pass)", lambda: _yaml.safe_load(text)))
            timings = {label: [] for label, _call in cases}
            for _round in range(args.repeat):
                for label, call in cases:
                    started = time.perf_counter()
                    call()
                    timings[label].append(time.perf_counter() - started)
        print(f"{args.nodes} nodes, {len(text) / 1e6:.1f} MB of YAML, median of {args.repeat}:")
        for label, values in timings.items():
            print(f"  {label:38} {statistics.median(values):6.3f} s")
    finally:
        if temporary:
            bench_run.remove_collection_root(root)


if __name__ == "__main__":
    main()
