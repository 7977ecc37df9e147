"""Whether this run is CI's: one reading of the ``CI`` variable for the preflight and the tests.

Under CI a suite that cannot run is a failure, never a skip (docs/testing.md). ``CI`` counts as set
unless it is empty, ``0``, ``false`` or ``no`` (any case); the Makefile's ``SKIP_OR_FAIL`` reads it
the same way.
"""

from __future__ import annotations

import os

NOT_CI = ("", "0", "false", "no")


def under_ci(environ=None) -> bool:
    return (os.environ if environ is None else environ).get("CI", "").strip().lower() not in NOT_CI
