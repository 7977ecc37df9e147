"""A heartbeat for long builds: a line on stderr at least every minute while a step runs.

Cold builds of the test beds take minutes (docs/testing.md); without output a newcomer cannot
tell a slow build from a hung one.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

INTERVAL_SECONDS = 60.0


@contextlib.contextmanager
def heartbeat(prefix: str, step: str, interval: float = INTERVAL_SECONDS, stream=None):
    """Print ``prefix: step: still running (N min M s)`` every ``interval`` seconds until the block ends."""
    done = threading.Event()
    started = time.monotonic()

    def beat():
        while not done.wait(interval):
            elapsed = int(time.monotonic() - started)
            print(f"{prefix}: {step}: still running ({elapsed // 60} min {elapsed % 60:02d} s)",
                  file=stream or sys.stderr, flush=True)

    thread = threading.Thread(target=beat, name=f"heartbeat {step}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
