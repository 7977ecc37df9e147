"""Fixtures the hostile tests share."""

from __future__ import annotations

import threading

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._writers import file as writer


@pytest.fixture
def lock_holder(tmp_path):
    """Another run holding the writers' lock on tmp_path until the event it yields is set.

    A thread of its own: the thread that holds the lock enters it again at once (see ``locked``).
    """
    holding, release = threading.Event(), threading.Event()

    def hold():
        with writer.locked(str(tmp_path / "any-file")):
            holding.set()
            release.wait()

    thread = threading.Thread(target=hold)
    thread.start()
    holding.wait()
    yield release
    release.set()
    thread.join()
