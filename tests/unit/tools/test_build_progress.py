"""tools/build_progress.heartbeat: a long build says it is alive, and stops saying so when it ends."""

from __future__ import annotations

import io
import threading

from build_progress import heartbeat


class Lines(io.StringIO):
    """A stream that signals each line written."""

    def __init__(self):
        super().__init__()
        self.wrote = threading.Event()

    def write(self, text):
        written = super().write(text)
        if text.endswith("\n"):
            self.wrote.set()
        return written


def test_heartbeat_prints_while_the_step_runs_and_stops_after():
    stream = Lines()
    with heartbeat("slurm-testbed", "debootstrap", interval=0.01, stream=stream):
        assert stream.wrote.wait(timeout=30), "no heartbeat line within 30 s"
    after = stream.getvalue()
    assert after.startswith("slurm-testbed: debootstrap: still running (0 min 00 s)\n")
    # The thread is joined on exit: nothing more is written afterwards.
    assert not any(thread.name.startswith("heartbeat ") for thread in threading.enumerate())
    assert stream.getvalue() == after


def test_a_step_shorter_than_the_interval_prints_nothing():
    stream = Lines()
    with heartbeat("k8s-testbed", "go build", interval=3600, stream=stream):
        pass
    assert stream.getvalue() == ""
