"""run_in_child gives each case's process an environment of its own.

The campaign spawns cases from pool threads while pytest, in the main thread, sets and removes
PYTEST_CURRENT_TEST around every test: a child that inherited the process's environ array could
read it while it is reallocated, and execve failed with EFAULT ("Bad address") once in CI.
"""

from __future__ import annotations

import os
import sys

from tests import hostile_campaign


def test_each_case_gets_a_private_copy_of_the_environment(monkeypatch, tmp_path):
    seen = {}

    class Recording(hostile_campaign._MeasuredPopen):
        def __init__(self, args, **kwargs):
            seen.update(kwargs)
            super().__init__([sys.executable, "-c", 'print(\'{"result": "ok"}\')'], **kwargs)

    monkeypatch.setattr(hostile_campaign, "_MeasuredPopen", Recording)
    monkeypatch.setitem(hostile_campaign.CASES, "recorded", hostile_campaign.Case(
        "class", "recorded", "ok", None, False, lambda tmp: None))
    monkeypatch.setenv("AIFACTORY_RUNNER_PROBE", "1")
    result = hostile_campaign.run_in_child(tmp_path / "unused.py", "recorded", 30)
    assert result.verdict == hostile_campaign.GOOD_VERDICT
    assert seen["env"] == dict(os.environ)
    assert seen["env"] is not os.environ
